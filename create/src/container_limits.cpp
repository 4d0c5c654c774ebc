#include "gpuslice/create/container_limits.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/rootfs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/create/bundle_spec.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <algorithm>
#include <charconv>

namespace gpuslice::create {

static_assert(std::string_view(GS_DEFAULT_REGION_SOCKET) == "/run/gpuslice/region.sock" &&
              std::string_view(GS_DEFAULT_LIMITS_PATH) == "/run/gpuslice/limits",
              "the interposer looks where the runtime mounts");

namespace {

constexpr std::size_t kMaxPreloadSize = 64 * 1024;

// Read-only, and nothing in it runs with privileges or as a device.
cdi::OciSpec bind_mount(const std::string &source, const std::string &destination) {
  return {{"destination", destination}, {"type", "bind"}, {"source", source}, {"options", {"rbind", "ro", "nosuid", "nodev"}}};
}

} // namespace

namespace {

int parse_percent(const std::string &text) {
  int percent = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), percent);
  if (ec != std::errc() || p != text.data() + text.size() || percent < 1 || percent > 100)
    throw Error("GPUSLICE_COMPUTE_LIMIT=" + quote(text) + " is not a percentage from 1 to 100");
  return percent;
}

// Which GPU a claimed device is on: GPUSLICE_GPU_UUID, else its
// NVIDIA_VISIBLE_DEVICES when that names one GPU by UUID; "*" when it does
// not say (an index would be renumbered inside the container).
std::string gpu_of(const std::vector<std::string> &env) {
  if (auto uuid = env_value(env, "GPUSLICE_GPU_UUID")) {
    if (uuid->rfind("GPU-", 0) != 0 || uuid->size() < 8 || uuid->find_first_of(" \t,:") != std::string::npos)
      throw Error("GPUSLICE_GPU_UUID=" + quote(*uuid) + " is not a GPU UUID (GPU-...)");
    return *uuid;
  }
  if (auto visible = env_value(env, "NVIDIA_VISIBLE_DEVICES");
      visible && visible->rfind("GPU-", 0) == 0 && visible->find_first_of(" \t,:") == std::string::npos)
    return *visible;
  return "*";
}

// What the slices of one GPU add up to.
struct GpuShare {
  std::string key;
  std::vector<std::string> devices; // the claimed devices on it, for messages
  uint64_t memory = 0;
  bool memory_all = true; // every slice set a memory limit
  int compute = 0;
  bool compute_all = true;
  std::optional<sharing::Policy> policy;
};

} // namespace

std::optional<sharing::Limits> container_limits(const std::vector<ClaimedEnv> &claimed, const cdi::OciSpec &oci,
                                                const Config &config) {
  std::vector<GpuShare> gpus;
  auto share_of = [&](const std::string &key) -> GpuShare & {
    for (auto &g : gpus)
      if (g.key == key)
        return g;
    return gpus.emplace_back(GpuShare{key, {}, 0, true, 0, true, std::nullopt});
  };
  for (const auto &device : claimed) {
    with_context("CDI device " + quote(device.name), [&] {
      const auto memory = env_value(device.env, "GPUSLICE_MEMORY_LIMIT");
      const auto compute = env_value(device.env, "GPUSLICE_COMPUTE_LIMIT");
      const auto policy = env_value(device.env, "GPUSLICE_COMPUTE_POLICY");
      if (!memory && !compute && !policy)
        return; // not a slice: the GPU is the container's whole
      const std::string gpu = gpu_of(device.env);
      // Memory: "8Gi" for the device's GPU, or a list naming GPUs itself.
      std::vector<sharing::DeviceLimit> entries;
      if (memory)
        entries = with_context("GPUSLICE_MEMORY_LIMIT", [&] { return sharing::parse_memory_limits(*memory); });
      else
        entries.push_back({"*", std::nullopt, std::nullopt, std::nullopt});
      for (auto &e : entries) {
        GpuShare &g = share_of(e.key == "*" ? gpu : e.key);
        g.devices.push_back(device.name);
        if (e.memory)
          g.memory += *e.memory;
        else
          g.memory_all = false;
        if (compute)
          g.compute += parse_percent(*compute);
        else
          g.compute_all = false;
        const auto pol = policy ? with_context("GPUSLICE_COMPUTE_POLICY", [&] { return sharing::parse_policy(*policy); })
                                : sharing::Policy::fixed;
        if (compute || policy) {
          if (g.policy && *g.policy != pol)
            throw Error("its compute policy " + std::string(sharing::policy_name(pol)) + " differs from " +
                        std::string(sharing::policy_name(*g.policy)) + " of another slice of the same GPU");
          g.policy = pol;
        }
      }
    });
  }
  for (const auto &g : gpus)
    if (g.key == "*" && g.devices.size() > 1)
      throw Error("CDI devices " + quote(g.devices[0]) + " and " + quote(g.devices[1]) +
                  " carry limits but do not say which GPU they are on: set GPUSLICE_GPU_UUID=GPU-... in each "
                  "device's containerEdits.env");
  const bool any_memory = std::any_of(gpus.begin(), gpus.end(), [](const GpuShare &g) { return g.memory_all; });
  if (!any_memory && config.accept_gpushare_env) {
    if (auto gib = env_value(process_env(oci), "ALIYUN_COM_GPU_MEM_CONTAINER")) {
      uint64_t n = 0;
      auto [p, ec] = std::from_chars(gib->data(), gib->data() + gib->size(), n);
      if (ec != std::errc() || p != gib->data() + gib->size() || n == 0 || n > (1u << 20))
        throw Error("ALIYUN_COM_GPU_MEM_CONTAINER=" + quote(*gib) + " is not a number of GiB");
      GpuShare &g = share_of("*");
      g.memory = n << 30;
      g.memory_all = true;
    }
  }
  if (gpus.empty())
    return std::nullopt;
  sharing::Limits limits;
  for (const auto &g : gpus) {
    sharing::DeviceLimit d{g.key, std::nullopt, std::nullopt, std::nullopt};
    if (g.memory_all)
      d.memory = g.memory;
    if (g.policy) {
      d.policy = g.policy;
      d.compute = g.compute_all ? std::min(g.compute, 100) : 100;
    }
    limits.devices.push_back(d);
  }
  return limits;
}

void refuse_limits_not_claimed(const cdi::OciSpec &oci) {
  const auto env = process_env(oci);
  for (const char *key : kLimitEnvVars)
    if (env_value(env, key))
      throw Error(std::string("the container's environment sets ") + key +
                  ", but no device it claims through a cdi.k8s.io/ container annotation carries a limit, so "
                  "gpuslice would not enforce it: refusing to start it unlimited. A device passed only in the "
                  "CRI CDIDevices field is applied by containerd (enable_cdi) without gpuslice-runtime seeing "
                  "it: the DRA driver or device plugin must also set the annotation (with podman's --device, add "
                  "--annotation cdi.k8s.io/NAME=DEVICE)");
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

namespace {

void expect_kind(const std::string &rootfs, const std::string &path, rootfs::PathKind want) {
  using rootfs::PathKind;
  const PathKind kind = rootfs::kind_in_root(rootfs, path);
  if (kind == PathKind::missing || kind == want)
    return;
  if (kind == PathKind::symlink)
    throw Error("the image's " + quote(path) + " is (or goes through) a symbolic link: gpuslice does not mount its "
                "files through links the image controls (runc and the kernel can resolve them differently)");
  throw Error("the image's " + quote(path) + " is not a " +
              (want == PathKind::directory ? "directory" : "regular file"));
}

// `path` is `dir` or inside it (both cleaned).
bool is_under(std::string_view path, std::string_view dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// Whether a mount of the spec has a (cleaned) destination that `match`es.
template <typename Match> bool any_mount(const cdi::OciSpec &oci, Match match) {
  auto mounts = oci.find("mounts");
  if (mounts == oci.end() || !mounts->is_array())
    return false;
  for (const auto &m : *mounts)
    if (m.is_object() && m.contains("destination") && m["destination"].is_string() &&
        match(fs::clean_path(m["destination"].get<std::string>())))
      return true;
  return false;
}

bool mounted_at(const cdi::OciSpec &oci, std::string_view destination) {
  return any_mount(oci, [&](const std::string &d) { return d == destination; });
}

bool mounted_under(const cdi::OciSpec &oci, std::string_view dir) {
  return any_mount(oci, [&](const std::string &d) { return is_under(d, dir); });
}

bool root_readonly(const cdi::OciSpec &oci) {
  auto root = oci.find("root");
  return root != oci.end() && bool_member(*root, "readonly", "root.readonly").value_or(false);
}

} // namespace

SharingFiles plan_sharing_files(const sharing::Limits &limits, const std::string &rootfs) {
  using rootfs::PathKind;
  for (const char *dir : {"/etc", "/run", kSharingDir})
    expect_kind(rootfs, dir, PathKind::directory);
  expect_kind(rootfs, "/etc/ld.so.preload", PathKind::regular);
  SharingFiles files;
  files.burst = std::any_of(limits.devices.begin(), limits.devices.end(),
                            [](const sharing::DeviceLimit &d) { return d.policy == sharing::Policy::burst; });
  sharing::Limits rendered = limits;
  if (files.burst)
    rendered.activity = kActivityContainerPath;
  files.limits = sharing::render_limits(rendered);
  const auto image_preload = with_context("image file /etc/ld.so.preload", [&] {
    return rootfs::read_file_in_root(rootfs, "/etc/ld.so.preload", kMaxPreloadSize, rootfs::Resolver::walk);
  });
  files.preload = merged_preload(image_preload);
  return files;
}

void add_sharing_mounts(cdi::OciSpec &oci, const SharingFiles &files, const std::string &container_dir,
                        const std::string &rootfs, const Config &config) {
  if (mounted_under(oci, kSharingDir) || mounted_at(oci, "/etc/ld.so.preload"))
    throw Error("the container already mounts something at " + quote(kSharingDir) + " or " +
                quote("/etc/ld.so.preload"));
  auto &mounts = oci["mounts"];
  if (!mounts.is_array())
    mounts = cdi::OciSpec::array();
  // Pins: /etc and /run bound onto themselves, so that they are mount points
  // nobody in the container can rename. Only where the root is writable (a
  // read-only root refuses the rename anyway). Non-recursive and first, so
  // that every later mount (the spec's, then ours) stacks on the pin and
  // keeps its own flags: a recursive bind made last would copy them, and
  // crun remounts such a copy read-write. First, not merely before the
  // mounts inside them: a destination like /var/run/secrets lands in /run
  // through the image's own links.
  if (!root_readonly(oci)) {
    auto at = mounts.begin();
    for (const char *dir : {"/etc", "/run"})
      if (!mounted_at(oci, dir)) // else a mount point already
        at = std::next(mounts.insert(at, cdi::OciSpec{{"destination", dir}, {"type", "bind"},
                                                       {"source", rootfs + dir}, {"options", {"bind"}}}));
  }
  // /run/gpuslice is the state dir's run/ (read-only): the region socket
  // there is found by name at each connect, so a monitor started again
  // after a crash binds a new socket that the container sees
  // (monitor_restart.hpp); a socket bound onto its own mount point would
  // stay dead with the monitor that made it. Its other names are empty
  // files commit makes, mount points for the binds below (none can be made
  // in a read-only mount).
  mounts.push_back({{"destination", kSharingDir},
                    {"type", "bind"},
                    {"source", container_dir + "/" + kRunDirName},
                    {"options", {"bind", "ro", "nosuid", "nodev", "noexec"}}});
  mounts.push_back(bind_mount(container_dir + "/limits", GS_DEFAULT_LIMITS_PATH));
  mounts.push_back(bind_mount(config.interposer_path, kInterposerContainerPath));
  if (files.burst)
    mounts.push_back(bind_mount(fs::clean_path(config.state_dir) + "/activity", kActivityContainerPath));
  mounts.push_back(bind_mount(container_dir + "/ld.so.preload", "/etc/ld.so.preload"));
}

} // namespace gpuslice::create
