// The per-container state directory on the host, <state-dir>/containers/<id>/
// (root, 0700): where gpuslice keeps what belongs to one container (its usage
// region and limits, its monitor's files). Created by the createRuntime (or
// prestart) hook, removed by the poststop hook; both idempotent, since a
// runtime may run a hook again after a failure.
#pragma once

#include <string>

namespace gpuslice::hook {

// Creates state_dir/containers/id (and the parents, 0711) without following
// symlinks; returns its path. Throws Error.
std::string create_container_dir(const std::string &state_dir, const std::string &id);

// Removes it with everything inside, without following symlinks; a missing
// directory is fine. Throws Error.
void remove_container_dir(const std::string &state_dir, const std::string &id);

} // namespace gpuslice::hook
