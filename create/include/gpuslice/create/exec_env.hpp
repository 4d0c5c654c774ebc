// The CDI env of a container for the processes `exec` starts in it.
//
// Why: containerd 1.6 builds an exec'd process (kubectl exec, exec probes,
// CRI ExecSync) from the spec it stored at create, not from the bundle
// gpuslice-runtime edited: the CDI edits' env (LD_LIBRARY_PATH of a driver,
// NVIDIA_VISIBLE_DEVICES, ...) is missing there and CUDA breaks in exec'd
// processes. So create records that env in the container's state dir, and
// `exec --process FILE` adds to FILE what the request does not set itself.
#pragma once

#include <string>
#include <vector>

namespace gpuslice::create {

inline constexpr const char *kCdiEnvFile = "cdi-env";

// The record of `env` (KEY=VALUE, as the CDI edits set them) that create
// puts in the container's state dir as kCdiEnvFile.
std::string cdi_env_text(const std::vector<std::string> &env);

// Adds the recorded CDI env of container `id` to the OCI process spec in
// `process_file` (replaced atomically), for each variable the process does
// not set; returns how many were added. A container without a record (no
// CDI device) is left alone. Throws Error naming the file.
std::size_t add_cdi_env(const std::string &process_file, const std::string &state_dir, const std::string &id);

} // namespace gpuslice::create
