// The driver's own account of GPU memory per process (NVML): what no tenant
// can write, so what gpuslice-shim compares with a container's limits.
// Loaded at run time (dlopen "libnvidia-ml.so.1"): a node without the
// driver still runs containers, and says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpuslice::monitor {

struct GpuProcess {
  unsigned pid = 0;  // in this process's pid namespace (the host's)
  uint64_t used = 0; // bytes of device memory
};

struct GpuProcesses {
  std::string uuid; // "GPU-..."
  std::vector<GpuProcess> processes;
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

  struct Api;

private:
  explicit Nvml(void *handle, std::unique_ptr<Api> api);
  void *handle_;
  std::unique_ptr<Api> api_;
};

} // namespace gpuslice::monitor
