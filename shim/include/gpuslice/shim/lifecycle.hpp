// The verbs of gpuslice-runtime that do more than exec the low-level runtime
// for a container that has state (<state-dir>/containers/<id>): `create`
// and `delete`.
//
// Why the runtime and not gpuslice-hook: each hook is one more exec of a
// large static binary on the critical path of every GPU container (~2 ms on
// a small VM, more than all the rest of gpuslice's own work). The runtime
// sees both ends of a container's life anyway: it runs runc create as its
// child and records the init when runc has written its pid, and it removes
// the state at delete. Only `run` (create, start and wait in one runc call)
// keeps gpuslice-hook at createRuntime: nothing else sees its init.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/shim/command_line.hpp"
#include "gpuslice/shim/modifiers.hpp"

#include <optional>
#include <string>

namespace gpuslice::shim {

// Runs `runtime cl.args` (a create) as a child that dies with this process,
// then records the init whose pid runc wrote to `pid_file` in the
// container's state dir and starts `monitor` (a container with limits) on
// it. When runc fails, the state dir this process made is removed and
// runc's status returned. When the init cannot be recorded or the monitor
// not started, the container is deleted (runc delete --force) and the state
// removed; throws Error. The container never runs without its record, nor
// unmonitored: fail closed.
int create_recording_init(const std::string &runtime, const CommandLine &cl, const Config &config,
                          const std::string &pid_file, std::optional<PendingMonitor> monitor);

// `delete` of a container with state. A container whose init has ended
// (the usual delete, after the task exited) has stale state: removed first,
// then runc is exec'd. Otherwise runc runs as a child and the state goes
// only once runc has deleted the container: a refused delete (running, no
// --force) keeps the state its processes use. Returns runc's status.
int delete_with_state(const std::string &runtime, const CommandLine &cl, const Config &config);

// `run` of a container with state: runc runs as a child; `run` deletes the
// container when it ends, and its state goes then too (still there when
// detached: its init lives). Returns runc's status.
int run_with_state(const std::string &runtime, const CommandLine &cl, const Config &config);

} // namespace gpuslice::shim
