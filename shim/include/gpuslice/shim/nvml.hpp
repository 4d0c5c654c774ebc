// The driver's own account of GPU memory per process (NVML): what no tenant
// can write, so what gpuslice-shim compares with a container's limits.
// Loaded at run time (dlopen "libnvidia-ml.so.1"): a node without the
// driver still runs containers, and says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpuslice::shim {

struct GpuProcess {
  unsigned pid = 0;  // in this process's pid namespace (the host's)
  uint64_t used = 0; // bytes of device memory
};

struct GpuProcesses {
  std::string uuid; // "GPU-..."
  std::vector<GpuProcess> processes;
};

struct GpuInfo {
  unsigned index = 0;
  std::string uuid, model;
  uint64_t total = 0, used = 0; // bytes of device memory
};

// One process's share of a GPU's SMs (percent) over the last sample period.
struct ProcessUtilization {
  unsigned pid = 0;
  unsigned sm = 0;
};

class Nvml {
public:
  // nullptr when the library cannot be loaded or initialised; `why` says why.
  static std::unique_ptr<Nvml> load(const std::string &library, std::string &why);
  ~Nvml();
  Nvml(const Nvml &) = delete;
  Nvml &operator=(const Nvml &) = delete;

  // Every GPU and the processes using it. Throws Error naming the call.
  std::vector<GpuProcesses> processes() const;
  // Every GPU: its UUID, model and memory. Throws Error naming the call.
  std::vector<GpuInfo> devices() const;
  // Per-process SM utilization samples of the GPU `uuid` newer than
  // `*last_seen_us`, which moves to the newest; empty when none (or the
  // driver keeps none for this GPU). Throws Error naming the call.
  std::vector<ProcessUtilization> utilization(const std::string &uuid, unsigned long long *last_seen_us) const;

  struct Api;

private:
  explicit Nvml(void *handle, std::unique_ptr<Api> api);
  void *handle_;
  std::unique_ptr<Api> api_;
};

} // namespace gpuslice::shim
