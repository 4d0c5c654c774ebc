// The verbs of gpuslice-runtime that do more than exec the low-level runtime
// for a container that has state (<state-dir>/containers/<id>): `create`
// and `delete`.
//
// Why the runtime and not gpuslice-hook: each hook is one more exec of a
// large static binary on the critical path of every GPU container (~2 ms on
// a small VM, more than all the rest of gpuslice's own work). The runtime
// sees both ends of a container's life anyway: the create makes the state
// and the delete removes it. A container without limits needs nothing more:
// its create is runc's exec, and its init is the one runc's pid file names
// (state::kInitPidFileRecord). One with limits has its init recorded once
// runc create has written its pid, and its monitor started (by a process
// that borrows this one's memory, while the create itself is runc's exec;
// by this process, runc's parent, on a kernel without pidfds). Only `run`
// (create, start and wait in one runc call) keeps gpuslice-hook at
// createRuntime: nothing else sees its init.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/runtime/command_line.hpp"
#include "gpuslice/create/modifiers.hpp"

#include <optional>
#include <string>

namespace gpuslice::runtime {

// `create` of a container without limits, its state dir made: runc is
// exec'd with cl.args in this process (the dir's creator, under the same
// pid), and nothing waits for it. The dir lives while runc does, then while
// the init its pid file names does (kInitPidFileRecord); a failed create
// leaves it stale, collected by the next create of the id or the
// collection that comes now and then, or removed by the delete containerd
// sends after a failed create. Throws Error when the exec fails (the dir
// removed).
[[noreturn]] void exec_create(const std::string &runtime, const CommandLine &cl, const Config &config,
                              state::ContainerDir state_dir);

// Runs `runtime cl.args` (the create of a container with limits) as a child that dies with this process
// (where exec_recording_init cannot), then records the init whose pid runc
// wrote to `pid_file` in the container's state dir and starts `monitor` on
// it. When runc fails, the state dir this process made is removed and
// runc's status returned. When the init cannot be recorded or the monitor
// not started, the container is deleted (runc delete --force) and the state
// removed; throws Error. The container never runs without its record, nor
// unmonitored: fail closed.
int create_recording_init(const std::string &runtime, const CommandLine &cl, const Config &config,
                          const std::string &pid_file, create::PendingMonitor monitor);

// `create` of a container with limits: runc is exec'd with cl.args, and a
// second process, which borrows this one's memory
// (init_recorder.cpp), waits for it to exit and then records the
// init whose pid it wrote to `pid_file`, and becomes `monitor` (taken
// over: monitor_start.hpp's create::MonitorInPlace);
// the caller sees runc's own exit. Without
// a pid file naming a process started after this one (runc failed: it
// writes the file last), the recorder removes the state dir; when the init
// cannot be recorded or the monitor not started, it deletes the container
// (runc delete --force), says why in the runtime's log and gpuslice's, and
// leaves the reason in the state dir (create::kCreateFailedFile) for `start` to
// refuse with. The recorder holds
// the dir's lock until then, so a `start` that comes first waits for it.
// `state_dir` is the container's, as the create made it (still open); the
// recorder's lock is taken on it.
// Returns, `monitor` untouched, when the recorder cannot be started (a
// kernel without pidfd_open): the caller runs create_recording_init
// instead. Throws Error when the monitor's program is not executable (the
// state removed) or the exec fails.
void exec_recording_init(const std::string &runtime, const CommandLine &cl, const Config &config,
                         state::ContainerDir state_dir, const std::string &pid_file,
                         create::PendingMonitor &monitor);

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

} // namespace gpuslice::runtime
