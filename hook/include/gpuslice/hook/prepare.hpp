// gpuslice-hook at prestart or createRuntime: the container as gpuslice
// wants it, whoever created it.
//
// Created through gpuslice-runtime (its create made the container's state
// dir before runc ran, and wrote the devices into config.json), or by an
// earlier run of this hook: the init is recorded, nothing else.
//
// Otherwise (podman's and CRI-O's hooks.d, a plain runc or crun with the
// hook in config.json) the hook does the create path's work itself: the
// same requests, trust rules, CDI edits, admission and sharing plan as
// gpuslice-runtime (create::plan_create, one library), then, since the
// engine has already made the container's mounts and device nodes, what
// that plan adds: the state dir and monitor, the nodes and mounts inside
// the container (in_container.hpp), the device cgroup (device_cgroup.hpp),
// the CDI spec's own hooks (spec_hooks.hpp). Env the edits add cannot be
// given to a process that exists already: it is logged, and recorded for
// `gpuslice exec`. Any failure fails the container, its state dir removed.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/hook/state.hpp"

#include <string>
#include <vector>

namespace gpuslice::hook {

struct Prepared {
  bool injected = false;             // this run did the create path's work
  std::vector<std::string> devices;  // what it injected
  std::vector<std::string> warnings; // for the log
  std::vector<std::string> notes;    // for the log, at info
};

// `state_json`: the state as read, for the spec's hooks. Throws Error.
Prepared prepare_container(const ContainerState &state, const std::string &state_json, const Config &config,
                           const std::string &config_file);

} // namespace gpuslice::hook
