#include "gpuslice/shim/sharing.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/rootfs.hpp"
#include "gpuslice/sharing/region.hpp"

#include <algorithm>
#include <charconv>

namespace gpuslice::shim {

namespace {

constexpr std::size_t kMaxPreloadSize = 64 * 1024;

// The last value of KEY in a list of KEY=VALUE entries.
std::optional<std::string> env_value(const std::vector<std::string> &env, std::string_view key) {
  std::optional<std::string> out;
  for (const auto &e : env)
    if (e.size() > key.size() && e.compare(0, key.size(), key) == 0 && e[key.size()] == '=')
      out = e.substr(key.size() + 1);
  return out;
}

std::vector<std::string> process_env(const cdi::OciSpec &oci) {
  std::vector<std::string> out;
  auto p = oci.find("process");
  if (p == oci.end() || !p->is_object())
    return out;
  auto env = p->find("env");
  if (env == p->end() || !env->is_array())
    return out;
  for (const auto &e : *env)
    if (e.is_string())
      out.push_back(e.get<std::string>());
  return out;
}

cdi::OciSpec bind_mount(const std::string &source, const std::string &destination, bool writable) {
  return {{"destination", destination},
          {"type", "bind"},
          {"source", source},
          {"options", {"rbind", writable ? "rw" : "ro", "nosuid", "nodev"}}};
}

} // namespace

std::optional<sharing::Limits> container_limits(const cdi::ContainerEdits &edits, const cdi::OciSpec &oci,
                                                const Config &config) {
  auto memory = env_value(edits.env, "GPUSLICE_MEMORY_LIMIT");
  const auto compute = env_value(edits.env, "GPUSLICE_COMPUTE_LIMIT");
  const auto policy = env_value(edits.env, "GPUSLICE_COMPUTE_POLICY");
  if (!memory && config.accept_gpushare_env) {
    if (auto gib = env_value(process_env(oci), "ALIYUN_COM_GPU_MEM_CONTAINER")) {
      uint64_t n = 0;
      auto [p, ec] = std::from_chars(gib->data(), gib->data() + gib->size(), n);
      if (ec != std::errc() || p != gib->data() + gib->size() || n == 0 || n > (1u << 20))
        throw Error("ALIYUN_COM_GPU_MEM_CONTAINER=" + quote(*gib) + " is not a number of GiB");
      memory = std::to_string(n) + "Gi";
    }
  }
  if (!memory && !compute && !policy)
    return std::nullopt;
  sharing::Limits limits;
  if (memory)
    limits.devices = with_context("GPUSLICE_MEMORY_LIMIT", [&] { return sharing::parse_memory_limits(*memory); });
  if (compute || policy) {
    int percent = 100;
    if (compute) {
      auto [p, ec] = std::from_chars(compute->data(), compute->data() + compute->size(), percent);
      if (ec != std::errc() || p != compute->data() + compute->size() || percent < 1 || percent > 100)
        throw Error("GPUSLICE_COMPUTE_LIMIT=" + quote(*compute) + " is not a percentage from 1 to 100");
    }
    const auto pol = policy ? with_context("GPUSLICE_COMPUTE_POLICY", [&] { return sharing::parse_policy(*policy); })
                            : sharing::Policy::fixed;
    sharing::apply_compute(limits, percent, pol);
  }
  return limits;
}

std::string merged_preload(const std::optional<std::string> &image_preload) {
  std::string out = std::string(kInterposerContainerPath) + "\n";
  if (!image_preload)
    return out;
  if (image_preload->find('\0') != std::string::npos)
    throw Error("the image's /etc/ld.so.preload contains a NUL byte");
  if (image_preload->size() > kMaxPreloadSize)
    throw Error("the image's /etc/ld.so.preload is too large");
  out += *image_preload;
  if (!out.empty() && out.back() != '\n')
    out += '\n';
  return out;
}

void wire_sharing(cdi::OciSpec &oci, const sharing::Limits &limits, const std::string &container_dir,
                  const std::string &rootfs, const Config &config) {
  sharing::Limits with_activity = limits;
  const bool burst = std::any_of(limits.devices.begin(), limits.devices.end(),
                                 [](const sharing::DeviceLimit &d) { return d.policy == sharing::Policy::burst; });
  if (burst && with_activity.activity.empty()) {
    const std::string activity = fs::clean_path(config.state_dir) + "/activity";
    sharing::create_activity_file(activity);
    with_activity.activity = "/run/gpuslice/activity";
    // The node-wide activity file, shared by every burst container: a tenant
    // can write it, which at worst caps its neighbours to their own shares.
    auto &mounts = oci["mounts"];
    if (!mounts.is_array())
      mounts = cdi::OciSpec::array();
    mounts.push_back(bind_mount(activity, "/run/gpuslice/activity", true));
  }
  sharing::write_limits_file(container_dir + "/limits", with_activity);
  sharing::create_region(container_dir + "/region");
  const auto image_preload =
      with_context("image file /etc/ld.so.preload", [&] { return rootfs::read_file_in_root(rootfs, "/etc/ld.so.preload", kMaxPreloadSize); });
  fs::write_file_atomic(container_dir + "/ld.so.preload", merged_preload(image_preload), 0444, fs::Durability::atomic);

  auto &mounts = oci["mounts"];
  if (!mounts.is_array())
    mounts = cdi::OciSpec::array();
  mounts.push_back(bind_mount(config.interposer_path, kInterposerContainerPath, false));
  mounts.push_back(bind_mount(container_dir + "/limits", "/run/gpuslice/limits", false));
  mounts.push_back(bind_mount(container_dir + "/region", "/run/gpuslice/region", true));
  mounts.push_back(bind_mount(container_dir + "/ld.so.preload", "/etc/ld.so.preload", false));
}

} // namespace gpuslice::shim
