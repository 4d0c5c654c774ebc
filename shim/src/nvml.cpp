#include "gpuslice/shim/nvml.hpp"

#include "gpuslice/common/error.hpp"

extern "C" {
#include "gpuslice/cuda_api.h"
}

#include <dlfcn.h>

#include <algorithm>

namespace gpuslice::shim {

struct Nvml::Api {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  nvmlReturn_t (*count)(unsigned int *);
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *, unsigned long long);
};

namespace {

template <typename Fn> bool find(void *handle, const char *name, Fn &out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  return out != nullptr;
}

void check(nvmlReturn_t r, const char *call) {
  if (r != NVML_SUCCESS)
    throw Error(std::string(call) + " failed (NVML error " + std::to_string(static_cast<int>(r)) + ")");
}

} // namespace

std::unique_ptr<Nvml> Nvml::load(const std::string &library, std::string &why) {
  void *handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = ::dlerror();
    why = "cannot load " + library + (e ? std::string(": ") + e : std::string());
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  if (!find(handle, "nvmlInit_v2", api->init) || !find(handle, "nvmlShutdown", api->shutdown) ||
      !find(handle, "nvmlDeviceGetCount_v2", api->count) ||
      !find(handle, "nvmlDeviceGetHandleByIndex_v2", api->handle) || !find(handle, "nvmlDeviceGetUUID", api->uuid) ||
      !find(handle, "nvmlDeviceGetComputeRunningProcesses_v3", api->processes) ||
      !find(handle, "nvmlDeviceGetName", api->name) || !find(handle, "nvmlDeviceGetMemoryInfo", api->memory) ||
      !find(handle, "nvmlDeviceGetProcessUtilization", api->utilization)) {
    why = library + " lacks an NVML function gpuslice needs (driver older than 510?)";
    ::dlclose(handle);
    return nullptr;
  }
  if (nvmlReturn_t r = api->init(); r != NVML_SUCCESS) {
    why = "nvmlInit_v2 failed (NVML error " + std::to_string(static_cast<int>(r)) + ")";
    ::dlclose(handle);
    return nullptr;
  }
  return std::unique_ptr<Nvml>(new Nvml(handle, std::move(api)));
}

Nvml::Nvml(void *handle, std::unique_ptr<Api> api) : handle_(handle), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  ::dlclose(handle_);
}

namespace {

struct Device {
  nvmlDevice_t handle;
  std::string uuid;
};

std::vector<Device> all_devices(const Nvml::Api &api) {
  unsigned count = 0;
  check(api.count(&count), "nvmlDeviceGetCount_v2");
  std::vector<Device> devices;
  for (unsigned i = 0; i < count && i < 64; i++) {
    nvmlDevice_t device{};
    check(api.handle(i, &device), "nvmlDeviceGetHandleByIndex_v2");
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    check(api.uuid(device, uuid, sizeof uuid), "nvmlDeviceGetUUID");
    devices.push_back({device, uuid});
  }
  return devices;
}

} // namespace

std::vector<GpuInfo> Nvml::devices() const {
  std::vector<GpuInfo> gpus;
  for (const auto &d : all_devices(*api_)) {
    GpuInfo gpu;
    gpu.index = static_cast<unsigned>(gpus.size());
    gpu.uuid = d.uuid;
    char model[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    check(api_->name(d.handle, model, sizeof model), "nvmlDeviceGetName");
    gpu.model = model;
    nvmlMemory_t memory{};
    check(api_->memory(d.handle, &memory), "nvmlDeviceGetMemoryInfo");
    gpu.total = memory.total;
    gpu.used = memory.used;
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::vector<ProcessUtilization> Nvml::utilization(const std::string &uuid, unsigned long long *last_seen_us) const {
  for (const auto &d : all_devices(*api_)) {
    if (d.uuid != uuid)
      continue;
    std::vector<nvmlProcessUtilizationSample_t> samples(16);
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned n = 0;
    for (int attempt = 0; attempt < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
      n = static_cast<unsigned>(samples.size());
      r = api_->utilization(d.handle, samples.data(), &n, *last_seen_us);
      if (r == NVML_ERROR_INSUFFICIENT_SIZE)
        samples.resize(static_cast<std::size_t>(n) + 16);
    }
    if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED)
      return {}; // no sample since the last one; or a GPU that keeps none
    check(r, "nvmlDeviceGetProcessUtilization");
    std::vector<ProcessUtilization> out;
    for (unsigned k = 0; k < n && k < samples.size(); k++) {
      *last_seen_us = std::max(*last_seen_us, samples[k].timeStamp);
      out.push_back({samples[k].pid, std::min(samples[k].smUtil, 100u)});
    }
    return out;
  }
  return {};
}

std::vector<GpuProcesses> Nvml::processes() const {
  std::vector<GpuProcesses> gpus;
  for (const auto &d : all_devices(*api_)) {
    const nvmlDevice_t device = d.handle;
    GpuProcesses gpu;
    gpu.uuid = d.uuid;
    // The list can grow between the two calls: ask again, a few times.
    std::vector<nvmlProcessInfo_t> infos(16);
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned n = 0;
    for (int attempt = 0; attempt < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
      n = static_cast<unsigned>(infos.size());
      r = api_->processes(device, &n, infos.data());
      if (r == NVML_ERROR_INSUFFICIENT_SIZE)
        infos.resize(static_cast<std::size_t>(n) + 16);
    }
    check(r, "nvmlDeviceGetComputeRunningProcesses_v3");
    for (unsigned k = 0; k < n && k < infos.size(); k++)
      if (infos[k].usedGpuMemory != ~0ull) // NVML_VALUE_NOT_AVAILABLE
        gpu.processes.push_back({infos[k].pid, infos[k].usedGpuMemory});
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

} // namespace gpuslice::shim
