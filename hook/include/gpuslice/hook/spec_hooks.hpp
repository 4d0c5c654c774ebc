// Running the hooks a CDI spec adds (createRuntime, prestart,
// createContainer: nvidia-ctk's create-symlinks and update-ldcache are
// createContainer hooks) when gpuslice-hook injected the devices itself:
// the engine read its hook list before the hook ran and will not run
// them. Each runs as the engine would run it: the container state on
// stdin, its own args and exactly its own env (never this process's, never
// the container's), killed at its timeout. Later stages are refused when
// planned (injection.hpp).
#pragma once

#include "gpuslice/hook/injection.hpp"

#include <string>
#include <vector>

namespace gpuslice::hook {

// In order; the first that fails (exit status, signal, timeout) is an Error
// naming it, with the end of what it wrote to stderr.
void run_spec_hooks(const std::vector<HookToRun> &hooks, const std::string &state_json);

} // namespace gpuslice::hook
