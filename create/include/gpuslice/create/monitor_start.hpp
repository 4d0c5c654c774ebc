// Starting a container's monitor (gpuslice-shim), at create and again
// whenever it is found gone while the container runs.
//
// At create, in the container's state dir: run/ (the container's
// /run/gpuslice, bind-mounted read-only: the region socket, and empty mount
// points for the limits file, the interposer and the activity table), the
// usage region (a memfd) and its identity (`region-id`), the monitor's
// arguments (`monitor-args`) and, on SELinux nodes, the container's labels
// (`selinux`): everything a monitor started later needs.
//
// A monitor can die (the OOM killer, a mistaken kill -9); the container must
// not go on unmonitored, nor silently. Any later gpuslice-runtime call that
// names the container (start, state, exec: kubelet's exec probes call it
// every few seconds, ps, pause, resume, update, events) finds it gone and
// starts another, with the same arguments, on the same region: taken back
// from a process of the container that maps it (by the recorded inode,
// through /proc/PID/map_files), so that what the running processes have
// charged stays counted. Only when none maps it is a new one made. The
// socket is bound again in run/, where the container finds it at its next
// connect. Each restart is one line in gpuslice-runtime's log.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/create/modifiers.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <optional>
#include <string>

namespace gpuslice::create {

inline constexpr const char *kMonitorArgsFile = "monitor-args"; // NUL-separated
inline constexpr const char *kRegionIdFile = "region-id";       // sharing::to_text(RegionId)
inline constexpr const char *kLabelsFile = "selinux";           // mount label, process label: two lines

// At create: run/, the region, its socket and the monitor's arguments, for
// `ctx`'s container (commit); the monitor itself is not started. Throws Error.
PendingMonitor prepare_monitor(const state::ContainerDir &dir, const CreateContext &ctx);

// prepare_monitor, then the monitor, started at once: of ctx.init_pid when
// set (gpuslice-hook), else watching this process until it exits and then
// the init whose pid runc wrote to `pid_file` (`run`). Throws Error.
void start_monitor(const state::ContainerDir &dir, const CreateContext &ctx, const std::string &pid_file);

// Starts `monitor` on the init recorded in `dir` (which the caller holds
// locked: flock, as a restart does) and records it there: for a create that
// runs runc as a child (lifecycle.hpp's create_recording_init). Throws Error when
// the init is gone or the monitor cannot be started.
void launch_monitor(PendingMonitor monitor, const state::ContainerDir &dir);

// The monitor a create's init recorder becomes (lifecycle.hpp's
// exec_recording_init), rather than exec gpuslice-shim as launch_monitor
// does: it runs the monitor's loop itself, in the memory the create left
// it, until the first interval, and only then execs gpuslice-shim in its
// place (same pid: the record stays true) to check the driver's
// accounting, telling it which processes took the region meanwhile.
//
// Why: a container starts just after its create returns, and an exec of
// gpuslice-shim then (page tables, ld.so, libc and libstdc++ set-up: ~6 ms
// of CPU on a small VM, ~3 ms of a 2-CPU node's wall time) is paid by the
// container's start and by the next container's create; an interval later
// it competes with nothing, and a container that ends within the interval
// never pays it. Until the exec, `ps` shows gpuslice-runtime's command line
// under the name gpuslice-shim.
struct MonitorInPlace {
  PendingMonitor monitor;
  state::ProcessId creator; // of the state dir, which it removes at the end
  std::string state_dir, id;
};

// Under the lock of `dir`, where the init is recorded: watches the init,
// takes the name gpuslice-shim (comm) and records this process as the
// container's monitor. Throws Error.
MonitorInPlace take_monitor(PendingMonitor monitor, const state::ContainerDir &dir, const std::string &state_dir,
                            const std::string &id);

// Once the lock is released: detaches this process (its log let go) and
// runs the loop until the container ends, exec'ing gpuslice-shim at the
// first interval. Returns when the container has ended and its state dir
// is removed; a failed exec is one line in gpuslice-shim's log file (when
// there is one), and the loop goes on without the driver's accounting, as
// gpuslice-shim's does without NVML.
void run_monitor_in_place(MonitorInPlace monitor);

// Left in the state dir, with the reason, by a create whose init recorder
// could not record the init or start the monitor after runc had made the
// container (and deleted it again): the create had returned already, so
// the next `start` says why (lifecycle.hpp's exec_recording_init).
inline constexpr const char *kCreateFailedFile = "create-failed";

// What a container with limits that has no monitor is, for the caller:
// `start` must not let its processes run unmonitored; a probe or `state`
// must not fail for it.
enum class Unmonitored { refuse, tolerate };

// When container `id` has a monitor that is gone while its init lives,
// starts another; returns what it did, for the log (nullopt: nothing to
// do). Throws Error when it had to and could not, and, with
// Unmonitored::refuse, when the container's create failed or never
// finished (no init recorded) after it returned.
std::optional<std::string> restart_monitor_if_gone(const Config &config, const std::string &id,
                                                   Unmonitored unmonitored);

} // namespace gpuslice::create
