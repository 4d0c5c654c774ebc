#include "gpuslice/shim/admission.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <fcntl.h>

namespace gpuslice::shim {

namespace {
constexpr std::size_t kMaxLimitsFile = 64 * 1024;
} // namespace

std::set<std::string> gpus_of(const sharing::Limits &limits) {
  std::set<std::string> gpus;
  for (const auto &d : limits.devices)
    gpus.insert(d.key.rfind("GPU-", 0) == 0 ? d.key : kUnnamedGpu);
  return gpus;
}

std::map<std::string, int> containers_per_gpu(const std::string &state_dir) {
  std::map<std::string, int> count;
  for (const auto &dir : state::open_container_dirs(state_dir)) {
    UniqueFd f(::openat(dir.fd.get(), "limits", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!f && errno == ENOENT)
      continue; // a container without limits
    std::set<std::string> gpus{kUnnamedGpu};
    try {
      if (!f)
        throw system_error("cannot open it");
      gpus = gpus_of(sharing::parse_limits(fs::read_fd(f.get(), "limits", kMaxLimitsFile)));
    } catch (const Error &) {
      // counted on the unnamed GPU: a broken file must not free a place
    }
    for (const auto &g : gpus)
      count[g]++;
  }
  return count;
}

void admit(const sharing::Limits &limits, const Config &config) {
  if (config.max_containers_per_gpu <= 0)
    return;
  const auto count = containers_per_gpu(config.state_dir);
  for (const auto &gpu : gpus_of(limits)) {
    auto it = count.find(gpu);
    if (it == count.end() || it->second < config.max_containers_per_gpu)
      continue;
    const std::string which =
        gpu == kUnnamedGpu ? std::string("the GPU of CDI devices that name none (no GPUSLICE_GPU_UUID)") : "GPU " + gpu;
    throw Error(which + " already hosts " + std::to_string(it->second) + " containers with GPU limits (admission." +
                "max-containers-per-gpu = " + std::to_string(config.max_containers_per_gpu) + ")");
  }
}

} // namespace gpuslice::shim
