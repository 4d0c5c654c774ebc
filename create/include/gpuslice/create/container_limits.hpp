// GPU sharing for a container: its memory limit and compute share, and what
// the container needs so that libgpuslice-cuda.so enforces them.
//
// Limits come from what root wrote: the env of the claimed devices' CDI edits
// (GPUSLICE_MEMORY_LIMIT, GPUSLICE_COMPUTE_LIMIT, GPUSLICE_COMPUTE_POLICY), or,
// when the config accepts it, gpushare's ALIYUN_COM_GPU_MEM_CONTAINER (GiB)
// from the container's env, so an existing gpushare device plugin works
// unchanged. Never from anything else the container controls.
//
// Wiring (docs/region.md): a tmpfs at /run/gpuslice holding, each a
// read-only bind mount from the container's state dir on the host, the
// limits file, the region socket (the container's monitor answers there with
// the usage region) and the interposer; the node's activity table for the
// burst policy; /etc/ld.so.preload (the interposer first, then the image's
// own entries). In a writable root, /run and /etc are first bound onto
// themselves, so that no process of the container can rename them (or
// /run/gpuslice) away and start without the preload: a mount point cannot
// be renamed.
#pragma once

#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/sharing/limits.hpp"

#include <optional>
#include <string>

namespace gpuslice::create {

// In the container (the limits file and region socket are region.h's
// GS_DEFAULT_LIMITS_PATH and GS_DEFAULT_REGION_SOCKET, there).
inline constexpr const char *kSharingDir = "/run/gpuslice";
inline constexpr const char *kInterposerContainerPath = "/run/gpuslice/libgpuslice-cuda.so";
inline constexpr const char *kActivityContainerPath = "/run/gpuslice/activity";
inline constexpr const char *kRunDirName = "run";               // in the state dir: the container's /run/gpuslice
inline constexpr const char *kRegionSocketName = "region.sock"; // in run/

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
// an error. Throws Error naming the device and the variable.
std::optional<sharing::Limits> container_limits(const std::vector<ClaimedEnv> &claimed, const cdi::OciSpec &oci,
                                                const Config &config);

// The env names that carry a device's limits.
inline constexpr const char *kLimitEnvVars[] = {"GPUSLICE_MEMORY_LIMIT", "GPUSLICE_COMPUTE_LIMIT"};

// For a container that gets no limits: an error when its process env sets
// one of kLimitEnvVars all the same. That env is
// not a trusted source, but where it comes from a CDI spec an engine applied
// (containerd 1.7+ / 2.x with enable_cdi, a device passed only in the CRI
// CDIDevices field, which never reaches the runtime), starting the
// container would run a slice without its limit: fail closed.
void refuse_limits_not_claimed(const cdi::OciSpec &oci);

// The files of the container's state dir, computed before anything is
// written. Checks the image first: a symlink (or anything but a directory)
// on /etc, /run or /run/gpuslice, or anything but a regular file at
// /etc/ld.so.preload, is an error naming the path. `rootfs`: the
// container's root on the host, read (never executed).
struct SharingFiles {
  std::string limits;  // the limits file
  std::string preload; // /etc/ld.so.preload: the interposer, then the image's own entries
  bool burst = false;  // the activity table is mounted
};
SharingFiles plan_sharing_files(const sharing::Limits &limits, const std::string &rootfs);

// Adds the mounts to `oci`: sources in `container_dir` (the state dir on the
// host), the interposer from the config, the activity table from the state
// dir; pins (from `rootfs`, absolute) before the first mount inside them. Throws Error when the spec already
// mounts something where gpuslice's files go.
void add_sharing_mounts(cdi::OciSpec &oci, const SharingFiles &files, const std::string &container_dir,
                        const std::string &rootfs, const Config &config);

// The merged preload file: the interposer, then the image's entries (NUL
// bytes and over-long files refused).
std::string merged_preload(const std::optional<std::string> &image_preload);

} // namespace gpuslice::create
