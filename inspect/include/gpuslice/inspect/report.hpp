// What `gpuslice inspect` reports (docs/inspect.md): per GPU its model,
// memory allotted by limits, used (NVML) and total, and the number of
// containers; per container its pod, limits, both views of its usage (the
// interposer's region, which the tenant can write, and NVML's, which it
// cannot), its compute share and SM use, processes, and what its monitor
// did. Collected from the state dirs (each container's limits file and the
// status file its gpuslice-shim keeps) and NVML; rendered three ways.
#pragma once

#include "gpuslice/common/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuslice::inspect {

struct GpuRow {
  std::optional<unsigned> index; // NVML's; none for a GPU NVML does not list
  std::string uuid;              // "GPU-...", or "*": devices that name no GPU
  std::string model;
  std::optional<uint64_t> total, used; // NVML's
  uint64_t allotted = 0;               // the sum of its containers' memory limits
  int containers = 0;
};

struct ContainerGpu {
  std::string gpu; // as GpuRow::uuid
  std::optional<uint64_t> memory_limit;
  std::optional<int> compute_share; // percent
  std::string compute_policy;       // native, fixed, burst; empty: none set
  std::optional<uint64_t> used_interposer, used_nvml;
  std::optional<unsigned> sm_percent;
  std::vector<unsigned> processes;
};

struct ContainerRow {
  std::string id;
  std::string pod_namespace, pod_name; // empty when no CRI annotation named them
  std::string monitor;                 // "running" or "gone" (its gpuslice-shim)
  std::string action;                  // monitor.action it enforces
  unsigned breaches = 0, killed = 0, frozen = 0, bypasses = 0;
  std::vector<ContainerGpu> gpus;
};

struct NodeReport {
  std::vector<GpuRow> gpus;
  std::vector<ContainerRow> containers; // with limits only, by id
  std::string nvml_error;               // why NVML said nothing; empty when it did
};

// The node as the state dir of `config` and NVML (config.monitor_nvml_path)
// show it. Throws Error when the state dir cannot be read.
NodeReport collect(const Config &config);

// Renderings (stable: docs/inspect.md).
std::string to_table(const NodeReport &report, bool details);
std::string to_json(const NodeReport &report);
std::string to_prometheus(const NodeReport &report);

} // namespace gpuslice::inspect
