// A container's GPU limits: its memory limit and compute share per GPU,
// from what root wrote.
//
// Limits come from the env of the claimed devices' CDI edits
// (GPUSLICE_MEMORY_LIMIT, GPUSLICE_COMPUTE_LIMIT, GPUSLICE_COMPUTE_POLICY), or,
// when the config accepts it, gpushare's ALIYUN_COM_GPU_MEM_CONTAINER (GiB)
// from the container's env, so an existing gpushare device plugin works
// unchanged. Never from anything else the container controls. How they
// reach the container's processes: modifier_sharing.cpp, docs/region.md.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/sharing/limits.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gpuslice::create {

// In the container (the limits file and region socket are region.h's
// GS_DEFAULT_LIMITS_PATH and GS_DEFAULT_REGION_SOCKET, there).
inline constexpr const char *kSharingDir = "/run/gpuslice";
inline constexpr const char *kInterposerContainerPath = "/run/gpuslice/libgpuslice-cuda.so";
inline constexpr const char *kActivityContainerPath = "/run/gpuslice/activity";

// One claimed CDI device and the env its edits set (the spec's common
// edits, then the device's own).
struct ClaimedEnv {
  std::string name;
  std::vector<std::string> env;
};

// The container's limits, per GPU, or nullopt when it has none (the GPU is
// then not shared: no interposer is added). Limits belong to each claimed
// device and to the GPU it is on (GPUSLICE_GPU_UUID in its env, else its
// NVIDIA_VISIBLE_DEVICES when that is one GPU UUID, else every GPU: "*");
// slices of the same GPU add up (memory, compute capped at 100%; their
// policies must agree). Two limited devices that do not say their GPU are
// an error. `process_env`: the container's, read only for gpushare's
// variable. Throws Error naming the device and the variable.
std::optional<sharing::Limits> container_limits(const std::vector<ClaimedEnv> &claimed,
                                                const std::vector<std::string> &process_env, const Config &config);

// The env names that carry a device's limits.
inline constexpr const char *kLimitEnvVars[] = {"GPUSLICE_MEMORY_LIMIT", "GPUSLICE_COMPUTE_LIMIT"};

// For a container that gets no limits: an error when its process env sets
// one of kLimitEnvVars all the same. That env alone is no trusted source
// (the pod's author writes it), and a limit there that neither a claimed
// device nor one the engine applied gives (facts.cpp) would run a slice
// without its limit: fail closed.
void refuse_limits_not_claimed(const std::vector<std::string> &process_env);

// The merged preload file: the interposer, then the image's entries (NUL
// bytes and over-long files refused).
std::string merged_preload(const std::optional<std::string> &image_preload);

} // namespace gpuslice::create
