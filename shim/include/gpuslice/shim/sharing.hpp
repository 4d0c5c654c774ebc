// GPU sharing for a container: its memory limit and compute share, and what
// the container needs so that libgpuslice-cuda.so enforces them.
//
// Limits come from what root wrote: the env of the claimed devices' CDI edits
// (GPUSLICE_MEMORY_LIMIT, GPUSLICE_COMPUTE_LIMIT, GPUSLICE_COMPUTE_POLICY), or,
// when the config accepts it, gpushare's ALIYUN_COM_GPU_MEM_CONTAINER (GiB)
// from the container's env, so an existing gpushare device plugin works
// unchanged. Never from anything else the container controls.
//
// Wiring: in the container's state dir on the host, a read-only limits file,
// a writable usage region and an ld.so.preload (the interposer first, then
// the image's own entries); mounted at /run/gpuslice/limits (ro),
// /run/gpuslice/region (rw), /etc/ld.so.preload (ro), and the interposer
// itself read-only at kInterposerContainerPath.
#pragma once

#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/sharing/limits.hpp"

#include <optional>
#include <string>

namespace gpuslice::shim {

inline constexpr const char *kInterposerContainerPath = "/usr/lib/gpuslice/libgpuslice-cuda.so";

// The container's limits, or nullopt when it has none (the GPU is then not
// shared: no interposer is added). Throws Error naming the variable.
std::optional<sharing::Limits> container_limits(const cdi::ContainerEdits &edits, const cdi::OciSpec &oci,
                                                const Config &config);

// Writes the limits file, region and preload file into `container_dir` and
// adds their mounts to `oci`. `rootfs` is the container's root filesystem on
// the host, read (never executed) for the image's own /etc/ld.so.preload.
void wire_sharing(cdi::OciSpec &oci, const sharing::Limits &limits, const std::string &container_dir,
                  const std::string &rootfs, const Config &config);

// The merged preload file: the interposer, then the image's entries (NUL
// bytes and over-long files refused).
std::string merged_preload(const std::optional<std::string> &image_preload);

} // namespace gpuslice::shim
