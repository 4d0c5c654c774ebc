// The per-GPU admission cap (config admission.max-containers-per-gpu): a
// GPU hosts at most that many containers with limits, so that the slices
// a scheduler hands out cannot pile up on one GPU beyond what its
// time-slicing and memory can serve. Counted from the state directories of
// the node's live containers (their limits files name their GPUs), under
// the containers directory's lock, which commit holds until the new
// container's own limits file is in place: concurrent creates cannot both
// take the last place. A container that died without its poststop (a node
// crash, a SIGKILLed runtime) is stale, collected, and counts no more.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/sharing/limits.hpp"

#include <cstdint>
#include <functional>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpuslice::create {

// What CDI devices without a GPU UUID (limits keyed "*" or by ordinal) are
// on: one GPU as far as counting goes (a single-GPU node's).
inline constexpr const char *kUnnamedGpu = "*";

// The GPUs a limits file puts its container on: UUIDs as written, anything
// else kUnnamedGpu.
std::set<std::string> gpus_of(const sharing::Limits &limits);

struct GpuLoad {
  int containers = 0;
  uint64_t memory = 0; // the sum of their memory limits
  bool operator==(const GpuLoad &) const = default;
};

// The memory limits a limits file puts on each of its GPUs (keys as gpus_of).
std::map<std::string, uint64_t> memory_per_gpu(const sharing::Limits &limits);

// Containers with limits per GPU, from the state dirs of `state_dir`
// (collect_stale first: every dir there counts). A dir whose limits file
// is missing (no limits) counts nowhere; one that cannot be read or parsed
// is counted on kUnnamedGpu (never let a broken file free a place).
std::map<std::string, GpuLoad> load_per_gpu(const std::string &state_dir);

// The memory of the node's GPUs by UUID: from <state dir>/gpu-memory, else
// NVML (config.monitor_nvml_path, asked through gpuslice-shim), then kept
// there. A GPU's UUID names one board, whose memory never changes: what
// was asked once stays true; a GPU the file does not list is asked for
// again. Empty, with `why` set, when it cannot be known; `why` is then kept
// in <state dir>/gpu-memory-unknown, and for kAskAgainAfter the creates
// that follow take it from there (`said`: a create before them said it)
// rather than ask NVML again.
struct NodeGpus {
  std::map<std::string, uint64_t> memory;
  std::string why;
  bool said = false;
};
inline constexpr std::chrono::minutes kAskAgainAfter{10};
NodeGpus node_gpu_memory(const Config &config, const std::set<std::string> &needed);

// What admission decides by, read under state::lock_containers (held until
// the new container's limits file is in place): the load of the node's
// GPUs and their memory.
struct AdmissionFacts {
  std::map<std::string, GpuLoad> load;
  NodeGpus gpus;
};

// Throws Error naming the GPU and the setting when one of `limits`'s GPUs
// already hosts config.max_containers_per_gpu containers (0: no cap), or
// when its memory limits would add up to more than the GPU's memory
// (unless config.allow_memory_overcommit). Where the memory cannot be
// known, admits: a GPU NVML does not list adds a line to `warnings`; no
// NVML at all adds one to `notes` (info: the node has no NVML), unless a
// create before said it. Pure.
void check_admission(const sharing::Limits &limits, const AdmissionFacts &facts, const Config &config,
                     std::vector<std::string> &warnings, std::vector<std::string> &notes);

} // namespace gpuslice::create
