#include "gpuslice/dra/store.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"

#include <unistd.h>

#include <cerrno>

namespace gpuslice::dra {

namespace {

using nlohmann::json;

constexpr const char *kCheckpoint = "checkpoint.json";
constexpr int kCheckpointVersion = 1;

json device_json(const PreparedDevice &d) {
  return {{"request", d.request}, {"pool", d.pool}, {"device", d.device}, {"cdiDeviceIDs", d.cdi_ids},
          {"shareID", d.share_id}};
}

PreparedDevice device_of(const json &j) {
  return {j.at("request").get<std::string>(), j.at("pool").get<std::string>(), j.at("device").get<std::string>(),
          j.at("cdiDeviceIDs").get<std::vector<std::string>>(), j.at("shareID").get<std::string>()};
}

} // namespace

ClaimStore::ClaimStore(std::string cdi_root, std::string plugin_dir, std::string driver_name)
    : cdi_root_(std::move(cdi_root)), plugin_dir_(std::move(plugin_dir)), driver_name_(std::move(driver_name)) {
  fs::make_dir(cdi_root_, 0755);
  fs::make_dir(plugin_dir_, 0750);
  const std::string path = plugin_dir_ + "/" + kCheckpoint;
  if (::access(path.c_str(), F_OK) != 0)
    return;
  with_context("checkpoint " + quote(path), [&] {
    const json doc = parse_json<json>(fs::read_file(path));
    if (!doc.is_object() || doc.value("version", 0) != kCheckpointVersion)
      throw Error("not a version " + std::to_string(kCheckpointVersion) + " checkpoint");
    try {
      for (const auto &[uid, entry] : doc.at("claims").items()) {
        if (!safe_uid(uid))
          throw Error("claim uid " + quote(uid) + " is no uid");
        Entry e{entry.at("namespace").get<std::string>(), entry.at("name").get<std::string>(), {}};
        for (const auto &d : entry.at("devices"))
          e.devices.push_back(device_of(d));
        claims_.emplace(uid, std::move(e));
      }
    } catch (const json::exception &e) {
      throw Error(json_detail::reason(e.what()));
    }
  });
}

std::string ClaimStore::spec_path(const std::string &uid) const {
  if (!safe_uid(uid))
    throw Error("claim uid " + quote(uid) + " is not a Kubernetes uid");
  return cdi_root_ + "/" + claim_spec_file(driver_name_, uid);
}

std::optional<std::vector<PreparedDevice>> ClaimStore::prepared(const std::string &uid) const {
  const std::string path = spec_path(uid);
  const auto it = claims_.find(uid);
  if (it == claims_.end() || ::access(path.c_str(), F_OK) != 0)
    return std::nullopt;
  return it->second.devices;
}

void ClaimStore::add(const ClaimRef &ref, const ClaimSpec &spec) {
  // Renamed, not synced: a kill -9 leaves the old or the new file, and after
  // a power loss kubelet prepares every claim again (a checkpoint entry
  // whose spec is gone is prepared again: prepared()).
  fs::write_file_atomic(spec_path(ref.uid), spec.spec.dump(2) + "\n", 0644, fs::Durability::atomic);
  claims_[ref.uid] = Entry{ref.namespace_name, ref.name, spec.devices};
  unsaved_ = true;
}

void ClaimStore::remove(const std::string &uid) {
  const std::string path = spec_path(uid);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw system_error("cannot remove " + quote(path));
  if (claims_.erase(uid))
    unsaved_ = true;
}

void ClaimStore::save() {
  if (!unsaved_)
    return;
  json claims = json::object();
  for (const auto &[uid, e] : claims_) {
    json devices = json::array();
    for (const auto &d : e.devices)
      devices.push_back(device_json(d));
    claims[uid] = {{"namespace", e.namespace_name}, {"name", e.name}, {"devices", devices}};
  }
  const json doc = {{"version", kCheckpointVersion}, {"claims", claims}};
  fs::write_file_atomic(plugin_dir_ + "/" + kCheckpoint, doc.dump() + "\n", 0600, fs::Durability::atomic);
  unsaved_ = false;
}

} // namespace gpuslice::dra
