// How a create hands over to runc once its commit is done.
//
// Why the runtime and not gpuslice-hook: each hook is one more exec of a
// large static binary on the critical path of every GPU container. The
// runtime sees both ends of a container's life anyway: the create makes the
// state and the delete removes it. A container without limits needs nothing
// more: its create is runc's exec, and its init is the one runc's pid file
// names (the record's init_pid_file). One with limits has its init recorded
// once runc create has written its pid, and its monitor started (by a
// process that borrows this one's memory, while the create itself is runc's
// exec; by this process, runc's parent, on a kernel without pidfds). Only
// `run` (create, start and wait in one runc call) keeps gpuslice-hook at
// createRuntime: nothing else sees its init.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/create/monitor_setup.hpp"
#include "gpuslice/runtime/command_line.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <string>

namespace gpuslice::runtime {

// Removes what creates killed while writing the bundle's config.json left
// there (fs::remove_stale_temporaries); "" is the current directory.
void tidy_bundle(const std::string &bundle);

// `create` of a container without limits, its state dir made: runc is
// exec'd with cl.args in this process (the dir's creator, under the same
// pid), and nothing waits for it. The dir lives while runc does, then while
// the init its pid file names does; a failed create leaves it stale,
// collected by the next create of the id or the collection that comes now
// and then, or removed by the delete containerd sends after a failed
// create. Throws Error when the exec fails (the dir removed).
[[noreturn]] void exec_create(const std::string &runtime, const CommandLine &cl, const Config &config,
                              state::ContainerDir state_dir);

// `create` of a container with limits: runc is exec'd with cl.args, and a
// second process, which borrows this one's memory (init_recorder.cpp),
// waits for it to exit and then records the init whose pid it wrote to
// `pid_file`, and becomes `monitor`, running its loop until the first
// interval and then exec'ing gpuslice-shim in its place; the caller sees
// runc's own exit. Without a pid file naming a process started after this
// one (runc failed: it writes the file last), the recorder removes the
// state dir; when the init cannot be recorded or the monitor not started,
// it deletes the container (runc delete --force), says why in the runtime's
// log and gpuslice's, and leaves the reason in the record for `start` to
// refuse with. The recorder holds the dir's lock until then, so a `start`
// that comes first waits for it. `state_dir` is the container's, as the
// commit made it (still open). Returns, `monitor` untouched, when the
// recorder cannot be started (a kernel without pidfd_open): the caller runs
// create_recording_init instead. Throws Error when the monitor's program is
// not executable (the state removed) or the exec fails.
void exec_recording_init(const std::string &runtime, const CommandLine &cl, const Config &config,
                         state::ContainerDir state_dir, const std::string &pid_file, create::PendingMonitor &monitor);

// The same with runc as a child that dies with this process, then the init
// recorded and the monitor started (gpuslice-shim) by this process. When
// runc fails, the state dir this process made is removed and runc's status
// returned. When the init cannot be recorded or the monitor not started,
// the container is deleted (runc delete --force) and the state removed;
// throws Error. The container never runs without its record, nor
// unmonitored: fail closed.
int create_recording_init(const std::string &runtime, const CommandLine &cl, const Config &config,
                          const std::string &pid_file, create::PendingMonitor monitor);

} // namespace gpuslice::runtime
