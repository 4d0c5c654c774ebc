#include "gpuslice/dra/plugin.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/log.hpp"

namespace gpuslice::dra {

Plugin::Plugin(PluginOptions options, nvidia::Driver driver, std::vector<PoolDevice> pool, ClaimGetter get_claim)
    : options_(std::move(options)), driver_(std::move(driver)), pool_(std::move(pool)),
      get_claim_(std::move(get_claim)), store_(options_.cdi_root, options_.plugin_dir, options_.driver_name) {}

std::vector<PreparedDevice> Plugin::prepare_one(const ClaimRef &ref) {
  // the store refuses a uid that is none (it names files after it)
  if (auto done = with_context("claim " + ref.namespace_name + "/" + ref.name, [&] { return store_.prepared(ref.uid); }))
    return *done; // kubelet asks again after a restart or a lost answer
  const auto allocated = allocated_devices(get_claim_(ref), ref, options_.driver_name, options_.node_name);
  const auto spec = claim_spec(ref, allocated,
                               SpecContext{driver_, pool_, options_.driver_name, options_.node_name, options_.hook_path});
  store_.add(ref, spec);
  log::line("info", "prepared claim " + ref.namespace_name + "/" + ref.name + " (" + ref.uid + "): " +
                        std::to_string(spec.devices.size()) + " device(s)");
  return spec.devices;
}

std::map<std::string, ClaimResult> Plugin::prepare(const std::vector<ClaimRef> &claims) {
  std::lock_guard lock(mutex_);
  std::map<std::string, ClaimResult> out;
  for (const auto &ref : claims) {
    ClaimResult &result = out[ref.uid];
    try {
      result.devices = prepare_one(ref);
    } catch (const std::exception &e) {
      result.error = e.what();
      log::line("error", std::string("cannot prepare: ") + e.what());
    }
  }
  try {
    store_.save();
  } catch (const std::exception &e) {
    // the entries stay unsaved: the next call saves them before it answers
    for (auto &[uid, result] : out)
      if (result.error.empty())
        result.error = std::string("cannot keep the checkpoint: ") + e.what();
    log::line("error", std::string("cannot keep the checkpoint: ") + e.what());
  }
  return out;
}

void Plugin::update(nvidia::Driver driver, std::vector<PoolDevice> pool) {
  std::lock_guard lock(mutex_);
  driver_ = std::move(driver);
  pool_ = std::move(pool);
}

std::map<std::string, std::string> Plugin::unprepare(const std::vector<ClaimRef> &claims) {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::string> out;
  for (const auto &ref : claims) {
    try {
      store_.remove(ref.uid);
      out[ref.uid] = "";
      log::line("info", "unprepared claim " + ref.namespace_name + "/" + ref.name + " (" + ref.uid + ")");
    } catch (const std::exception &e) {
      out[ref.uid] = "claim " + ref.namespace_name + "/" + ref.name + ": " + e.what();
      log::line("error", "cannot unprepare: " + out[ref.uid]);
    }
  }
  try {
    store_.save();
  } catch (const std::exception &e) {
    for (auto &[uid, error] : out)
      if (error.empty())
        error = std::string("cannot keep the checkpoint: ") + e.what();
  }
  return out;
}

} // namespace gpuslice::dra
