// The monitor of one container (or of one `gpuslice exec`): a small process
// on the host, detached from whoever started it, that lives as long as the
// container and
//  - holds the container's usage region and hands it to each of the
//    container's processes that connects to the region socket (a descriptor
//    of its own per process: slot locks belong to open file descriptions);
//  - for the burst policy, copies the container's "busy until" from the
//    region into the node's activity table every few milliseconds;
//  - when the container's init exits (or its creation failed), runs the
//    cleanup it was given and exits.
// It is the beginning of gpuslice-shim (docs/region.md).
#pragma once

#include "gpuslice/common/fd.hpp"

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuslice::shim {

struct MonitorSetup {
  UniqueFd listener;       // the region socket, listening
  UniqueFd region;         // the sealed region (create_region)
  UniqueFd activity_table; // burst: open_activity_table(), else empty
  // The process to outlive first: `gpuslice-runtime create` (then runc,
  // same pid), or the program of `gpuslice exec`.
  UniqueFd watched;
  // When set, the container's init pid is read from here once `watched`
  // ended (runc writes it at create): the monitor then lives as long as that
  // process. No file, or no such process: the container is gone.
  std::string pid_file;
  // Or, for a monitor started again while the container runs: `watched` is
  // the container's init already, this pid.
  int init_pid = 0;
  std::string name = "gpuslice-shim"; // process name (comm)
  std::function<void()> cleanup;      // on exit, whatever the reason
  // gpuslice-shim's enforcement (enforcer.hpp): told of each process that
  // takes the region (its pid here, from SO_PEERCRED), of the container's
  // init once known, and called every interval_ms (0: never).
  std::function<void(int pid)> on_connect;
  std::function<void(int pid)> on_init;
  std::function<void()> on_interval;
  int interval_ms = 0;
  // The first interval comes at once rather than interval_ms from now: for
  // a monitor that takes over from one that ran an interval already.
  bool first_interval_at_once = false;
  // At the first interval (interval_ms), run_monitor returns
  // MonitorEnd::handed_over instead of calling on_interval: every
  // descriptor back in this setup, the activity entries freed, no cleanup
  // run. For a process that runs the loop in place of the monitor's
  // program and then execs it (exec_in_place).
  bool hand_over_at_first_interval = false;
};

enum class MonitorEnd { container_ended, handed_over };

// A pidfd for `pid` (pidfd_open); throws Error.
UniqueFd open_pidfd(int pid);

// The pid runc wrote to its --pid-file (digits, a trailing newline or space
// allowed); nullopt when the file is missing or holds anything else.
std::optional<int> read_pid_file(const std::string &path);

// Listens on a new Unix socket at dir_fd/name (mode 0666: any user of the
// container connects; the directory keeps host users out). Throws Error.
UniqueFd listen_region_socket(int dir_fd, const std::string &name, const std::string &shown);

// Starts the monitor as a grandchild in its own session, stdio on /dev/null,
// no descriptor but its own; returns once it is on its way. The descriptors
// in `setup` are closed in the caller. Throws Error when it cannot fork.
void spawn_monitor(MonitorSetup setup);

// The same (its own session, stdio on /dev/null), but a child that execs
// `program` (gpuslice-shim) with the descriptors of `setup` at fixed numbers
// (kShimListenerFd...), their numbers and setup.pid_file as arguments, then
// `args`, and an environment of PATH alone; returns its pid once the exec
// has succeeded, throws Error when it failed. For a caller whose own image
// must not become the monitor (gpuslice-runtime: a static binary, which
// could not load NVML). The caller must never wait for any child (the
// monitor is its child until it exits). setup.cleanup and setup.name are
// not used: `args` say what to clean.
inline constexpr int kShimListenerFd = 3, kShimRegionFd = 4, kShimWatchedFd = 5, kShimActivityFd = 6;
// The nice value the program starts at: its start-up (exec, ld.so)
// gives way to the container's own
// start on a small node. gpuslice-shim returns to 0 before its loop, and
// loads NVML only at its first check.
inline constexpr int kMonitorStartNice = 19;
pid_t exec_monitor(MonitorSetup setup, const std::string &program, const std::vector<std::string> &args);

// The monitor's loop, in the calling process; returns when the container
// ended (setup.cleanup run), or at the hand-over.
MonitorEnd run_monitor(MonitorSetup &setup);

// For a process that becomes the monitor itself (gpuslice-runtime's init
// recorder, create/monitor_start.hpp): detaches it as exec_monitor's child
// is (its own session, stdio on /dev/null, no handler or mask inherited,
// SIGPIPE ignored, nothing open but setup's descriptors), with those at
// kShimListenerFd... from now on, so that exec_in_place has none to move
// and a failed exec leaves the loop whole. Anything else this process had
// open is closed: whatever holds such a descriptor (a log) must be let go
// first. Throws Error.
void detach_in_place(MonitorSetup &setup);

// Execs `program` in this process, detached by detach_in_place, with the
// arguments exec_monitor gives it and an environment of PATH alone, at
// kMonitorStartNice. Returns only when the exec failed: its errno, the
// process as it was.
int exec_in_place(const MonitorSetup &setup, const std::string &program, const std::vector<std::string> &args);

} // namespace gpuslice::shim
