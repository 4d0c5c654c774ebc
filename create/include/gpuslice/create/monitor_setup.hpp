// The container's monitor (gpuslice-shim, shim/) as a create sets it up: its
// arguments, written into the record so that a monitor started again
// later gets the same; the usage region; run/ (the container's
// /run/gpuslice, bind-mounted read-only: the region socket and mount points
// for the files bound inside it); the monitor started on the init, and
// recorded.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/selinux/labeler.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpuslice::create {

// A container's monitor made ready (region, listener, activity table: the
// loop's descriptors), not started yet: `create` starts it once runc has
// made the init, so that its start-up does not compete with runc's create
// for the CPU and it watches the init from its first moment.
struct PendingMonitor {
  shim::MonitorSetup setup;
  std::string program; // gpuslice-shim
  std::vector<std::string> args;
};

// runtime.shim-path, or gpuslice-shim beside this very program.
std::string shim_program(const Config &config);

// gpuslice-shim's arguments for container `id` whose dir is `state_path`;
// `pod` ("namespace/name") names it in the monitor's log. Throws Error for
// a setting it cannot take (monitor.memory-tolerance).
std::vector<std::string> monitor_args(const Config &config, const std::string &id, const std::string &state_path,
                                      const std::optional<std::string> &pod);

// run/ in `dir`, with empty mount points for the limits file, the
// interpose and (burst) the activity table. Throws Error.
void make_run_dir(const state::ContainerDir &dir, bool burst, const selinux::Labeler &labeler);

// The region socket in run/ of `dir` (an earlier one replaced), listening,
// labelled. Throws Error.
UniqueFd listen_in_run(const state::ContainerDir &dir, const selinux::Labeler &labeler);

// The node's activity table (burst), labelled for every container to read.
UniqueFd open_activity(const Config &config, const selinux::Labeler &labeler);

// The usage region, labelled as the container's. Throws Error.
UniqueFd make_region(const selinux::Labeler &labeler);

// Watches `init`, checked to be the recorded process still once its pidfd
// is taken (a pid reused meanwhile is not the container's). Throws Error.
void watch_init(shim::MonitorSetup &monitor, const state::ProcessId &init);

// `args` with --creator `creator` (none: without): the monitor removes the
// dir when the container ends only while it is still that creator's.
void pass_creator(std::vector<std::string> &args, const std::optional<state::ProcessId> &creator);

// Starts `monitor` (exec'ing gpuslice-shim) and records it in `dir`'s
// record, with the creator the record names now as its --creator: the
// monitor removes the dir when the container ends only while it is still
// that creator's. Returns its pid. Throws Error.
pid_t exec_and_record(PendingMonitor monitor, const state::ContainerDir &dir);

// Starts `monitor` on the init recorded in `dir` (which the caller holds
// locked) and records it. Throws Error when the init is gone or the
// monitor cannot be started.
void launch_monitor(PendingMonitor monitor, const state::ContainerDir &dir);

// gpuslice-shim's --connected: those of `pids` still running, bounded (one
// argument has at most 128 KiB; a container with more processes than fit
// has the rest reported as bypasses, once each, rather than a monitor that
// cannot exec).
std::string still_running(const std::set<int> &pids);

} // namespace gpuslice::create
