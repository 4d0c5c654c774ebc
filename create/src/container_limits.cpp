#include "gpuslice/create/container_limits.hpp"
#include "gpuslice/create/image.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/strings.hpp"

#include <algorithm>
#include <charconv>

namespace gpuslice::create {

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

std::optional<sharing::Limits> container_limits(const std::vector<ClaimedEnv> &claimed,
                                                const std::vector<std::string> &process_env, const Config &config) {
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
    if (auto gib = env_value(process_env, "ALIYUN_COM_GPU_MEM_CONTAINER")) {
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

void refuse_limits_not_claimed(const std::vector<std::string> &process_env) {
  for (const char *key : kLimitEnvVars)
    if (env_value(process_env, key))
      throw Error(std::string("the container's environment sets ") + key +
                  ", but neither a device it claims through a cdi.k8s.io/ container annotation nor one the engine "
                  "applied from a CDI spec (that device's GPUSLICE_ variables in the env and its device nodes in "
                  "linux.devices) carries that limit, so gpuslice would not enforce it: refusing to start it "
                  "unlimited");
}

std::string merged_preload(const std::optional<std::string> &image_preload) {
  std::string out = std::string(kInterposerContainerPath) + "\n";
  if (!image_preload)
    return out;
  if (image_preload->find('\0') != std::string::npos)
    throw Error("the image's /etc/ld.so.preload contains a NUL byte");
  if (image_preload->size() > kMaxImagePreloadSize)
    throw Error("the image's /etc/ld.so.preload is too large");
  out += *image_preload;
  if (!out.empty() && out.back() != '\n')
    out += '\n';
  return out;
}

} // namespace gpuslice::create
