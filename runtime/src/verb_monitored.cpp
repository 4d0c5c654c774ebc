// The verbs of a running container's life (verbs.hpp): a container with
// limits must not go on unmonitored, nor silently.
//
// A monitor can die (the OOM killer, a mistaken kill -9). Any later
// gpuslice-runtime call that names the container (start, state, exec:
// kubelet's exec probes call it every few seconds, ps, pause, resume) finds
// it gone and starts another, with the arguments the record keeps, on the
// same region: taken back from a process of the container that maps it (by
// the recorded identity, through /proc/PID/map_files), so that what the
// running processes have charged stays counted. Only when none maps it is a
// new one made. The socket is bound again in run/, where the container
// finds it at its next connect. Each restart is one line in the log.
#include "gpuslice/runtime/verbs.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/create/monitor_setup.hpp"
#include "gpuslice/runtime/report.hpp"
#include "gpuslice/selinux/system.hpp"
#include "gpuslice/sharing/region.hpp"
#include "gpuslice/shim/cgroup.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace gpuslice::runtime {

namespace {

enum class Unmonitored { refuse, tolerate };

// The labeler of a monitor started again: the container's labels as its
// create recorded them.
selinux::Labeler labeler_of(const state::Record &record, const Config &config) {
  if (!record.selinux)
    return {};
  const auto &[file, socket] = *record.selinux;
  return selinux::Labeler(selinux::kernel(), selinux::parse_mode(config.selinux_label),
                          selinux::container_labels(file, socket.empty() ? std::nullopt : std::optional(socket),
                                                    config.selinux_shared_file_label));
}

// When the container has a monitor that is gone while its init lives,
// starts another; returns what it did, for the log (nullopt: nothing to
// do). Throws Error when it had to and could not, and, with
// Unmonitored::refuse, when the container's create failed or never
// finished (no init recorded) after it returned.
std::optional<std::string> restart_monitor_if_gone(const Config &config, const std::string &id,
                                                   Unmonitored unmonitored) {
  if (!state::is_safe_container_id(id) || !fs::is_absolute(config.state_dir))
    return std::nullopt;
  const auto dir = state::open_container_dir(config.state_dir, id);
  if (!dir)
    return std::nullopt; // no device, or gone
  // Read unlocked first: a container without limits (most exec probes)
  // takes no lock. A record that cannot be read may be one a create's init
  // recorder is deciding about: read again under the lock.
  try {
    if (!state::read_record(dir->fd.get(), dir->path).has_monitor())
      return std::nullopt;
  } catch (const Error &) {
  }
  // One restarter at a time (kubelet may run probes at once); the create's
  // init recorder holds the lock until it has decided.
  state::lock(*dir);
  const state::Record record = state::read_record(dir->fd.get(), dir->path);
  if (record.status == state::Status::failed)
    throw Error(record.failure);
  if (record.monitor && state::process_alive(*record.monitor))
    return std::nullopt;
  if (!record.init && unmonitored == Unmonitored::refuse)
    throw Error("its create did not finish (no init is recorded in " + quote(dir->path) +
                "): it would run without its monitor; delete it and create it again");
  if (!record.init || !state::process_alive(*record.init))
    return std::nullopt; // not started yet, or ended: the delete and the next create clean up
  return with_context("container " + quote(id) + ": its monitor (gpuslice-shim) is gone", [&]() -> std::string {
    create::PendingMonitor pending{{}, create::shim_program(config), record.monitor_args};
    shim::MonitorSetup &monitor = pending.setup;
    create::watch_init(monitor, *record.init);
    const selinux::Labeler labeler = labeler_of(record, config);
    // The region its processes have charged, taken back from one of them.
    std::string region_note = "the same usage region";
    if (const auto region_id = sharing::parse_region_id(record.region)) {
      std::vector<int> pids{record.init->pid};
      if (const auto cgroup = shim::cgroup_of(record.init->pid))
        pids = shim::cgroup_processes(*cgroup);
      // Those that took it from the one that is gone: one walk of their
      // mappings, then the region opened from the first of them.
      const auto mapping = sharing::processes_mapping(pids, *region_id);
      monitor.region = sharing::recover_region(mapping, *region_id);
      if (monitor.region) // they are not bypasses
        pending.args.insert(pending.args.end(),
                            {"--connected", create::still_running(std::set<int>(mapping.begin(), mapping.end()))});
    }
    if (!monitor.region) {
      monitor.region = create::make_region(labeler);
      region_note = "a new usage region (no process of the container held the old one)";
      state::update_record(*dir, [&](state::Record &r) {
        r.region = sharing::to_text(sharing::region_id(monitor.region.get()));
      });
    }
    monitor.listener = create::listen_in_run(*dir, labeler);
    if (::faccessat(dir->fd.get(), (std::string(state::kRunDir) + "/activity").c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0)
      monitor.activity_table = create::open_activity(config, labeler);
    const pid_t pid = create::exec_and_record(std::move(pending), *dir);
    return "gpuslice-shim of container " + id + " was gone" +
           (record.monitor ? " (pid " + std::to_string(record.monitor->pid) + ")" : std::string()) +
           ": started another (pid " + std::to_string(pid) + ") on " + region_note;
  });
}

} // namespace

void check_monitor(const Call &call) {
  const bool starting = call.cl.verb == "start";
  try {
    if (auto restarted = restart_monitor_if_gone(call.config, call.cl.container_id,
                                                 starting ? Unmonitored::refuse : Unmonitored::tolerate))
      log_line(call.config, "warn", *restarted);
  } catch (const Error &e) {
    if (starting)
      throw;
    log_line(call.config, "error", e.message());
  }
}

} // namespace gpuslice::runtime
