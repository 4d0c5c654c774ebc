#include "gpuslice/create/monitor_start.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/sharing/activity.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/sharing/region.hpp"
#include "gpuslice/selinux/system.hpp"
#include "gpuslice/create/container_limits.hpp"
#include "gpuslice/shim/cgroup.hpp"

#include <algorithm>
#include <iterator>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuslice::create {

namespace {


// "namespace/name" of the pod, from the annotations kubelet's runtime sets
// (containerd's CRI, then CRI-O's); for the monitor's log lines only.
std::optional<std::string> pod_of(const cdi::OciSpec &oci) {
  auto annotations = oci.find("annotations");
  if (annotations == oci.end() || !annotations->is_object())
    return std::nullopt;
  for (const auto &[ns_key, name_key] :
       {std::pair{"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name"},
        std::pair{"io.kubernetes.pod.namespace", "io.kubernetes.pod.name"}}) {
    auto ns = annotations->find(ns_key), name = annotations->find(name_key);
    if (ns != annotations->end() && name != annotations->end() && ns->is_string() && name->is_string())
      return ns->get<std::string>() + "/" + name->get<std::string>();
  }
  return std::nullopt;
}

// The name in run/ of a path in the container's /run/gpuslice.
std::string name_in_run(std::string_view container_path) {
  return std::string(container_path.substr(container_path.rfind('/') + 1));
}

UniqueFd open_dir_in(int parent, const char *name, const std::string &shown) {
  UniqueFd fd(::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd)
    throw system_error("cannot open " + quote(shown));
  return fd;
}

// The socket in run/ (any earlier one replaced), labelled.
UniqueFd listen_in_run(int run_fd, const std::string &run_path, const selinux::Labeler &labeler) {
  const std::string socket_path = run_path + "/" + kRegionSocketName;
  UniqueFd listener;
  {
    const auto socket_label = labeler.socket_label();
    listener = shim::listen_region_socket(run_fd, kRegionSocketName, socket_path);
  }
  labeler.label_in_dir(run_fd, kRegionSocketName, selinux::Share::private_file, socket_path);
  return listener;
}

UniqueFd open_activity(const Config &config, const selinux::Labeler &labeler) {
  const std::string activity = fs::clean_path(config.state_dir) + "/activity";
  UniqueFd table = sharing::open_activity_table(activity);
  labeler.label_fd(table.get(), selinux::Share::shared_read_only, activity);
  return table;
}

} // namespace

PendingMonitor prepare_monitor(const state::ContainerDir &dir, const CreateContext &ctx) {
  const selinux::Labeler &labeler = ctx.plan.labeler;
  const Config &c = ctx.config;
  const std::string run_path = dir.path + "/" + kRunDirName;
  if (::mkdirat(dir.fd.get(), kRunDirName, 0755) != 0)
    throw system_error("cannot create " + quote(run_path));
  const UniqueFd run = open_dir_in(dir.fd.get(), kRunDirName, run_path);
  labeler.label_fd(run.get(), selinux::Share::private_file, run_path);
  std::vector<std::string> mount_points{"limits", name_in_run(kInterposerContainerPath)};
  if (ctx.plan.burst)
    mount_points.push_back(name_in_run(kActivityContainerPath));
  for (const auto &name : mount_points)
    write_in(run.get(), name, "", 0444, run_path, labeler);

  PendingMonitor monitor;
  monitor.program = shim_program(c);
  monitor.setup.region = sharing::create_region();
  labeler.label_fd(monitor.setup.region.get(), selinux::Share::private_file, "the usage region");
  write_in(dir.fd.get(), kRegionIdFile, sharing::to_text(sharing::region_id(monitor.setup.region.get())), 0400,
           dir.path, labeler);
  // Bound now: the container finds the socket from its first moment, and
  // a connect waits in the backlog until the monitor answers it.
  monitor.setup.listener = listen_in_run(run.get(), run_path, labeler);
  if (ctx.plan.burst)
    monitor.setup.activity_table = open_activity(c, labeler);
  const auto creator = state::process_id(static_cast<int>(::getpid()));
  if (!creator)
    throw Error("cannot read this process's start time from /proc");
  // It removes the state dir when the container ends, only if it is still
  // the one this process created, and checks the container's GPU memory
  // against the driver's accounting meanwhile.
  const uint64_t tolerance =
      with_context("monitor.memory-tolerance", [&] { return sharing::parse_size(c.monitor_memory_tolerance); });
  // The interval is gpuslice-shim's (--interval-ms) and, until then, the
  // init recorder's that monitors in its place (run_monitor_in_place).
  monitor.setup.interval_ms = c.monitor_interval_ms;
  monitor.args = {"--state-dir", fs::clean_path(c.state_dir), "--id", ctx.container_id, "--creator",
                  state::to_text(*creator),
                  "--limits", dir.path + "/limits", "--interval-ms", std::to_string(c.monitor_interval_ms),
                  "--action", c.monitor_action, "--tolerance", std::to_string(tolerance),
                  "--nvml", c.monitor_nvml_path};
  if (c.log.target == "file")
    monitor.args.insert(monitor.args.end(), {"--log-file", c.log.directory + "/gpuslice-shim.log"});
  if (auto pod = pod_of(ctx.spec.json()))
    monitor.args.insert(monitor.args.end(), {"--pod", *pod});
  std::string saved;
  for (const auto &a : monitor.args)
    saved += a + '\0';
  write_in(dir.fd.get(), kMonitorArgsFile, saved, 0400, dir.path, labeler);
  if (const auto &labels = labeler.labels(); labeler.active() && labels)
    write_in(dir.fd.get(), kLabelsFile, labels->private_file + "\n" + labels->socket + "\n", 0400, dir.path, labeler);
  return monitor;
}

namespace {

// The value after `flag` in `args`, or "".
std::string arg_after(const std::vector<std::string> &args, const std::string &flag) {
  auto at = std::find(args.begin(), args.end(), flag);
  return at == args.end() || std::next(at) == args.end() ? std::string() : *std::next(at);
}

// Watches `init`, checked to be the recorded process still once its pidfd
// is taken (a pid reused meanwhile is not the container's).
void watch_init(shim::MonitorSetup &monitor, const state::ProcessId &init) {
  monitor.watched = shim::open_pidfd(init.pid);
  if (state::process_id(init.pid) != init)
    throw Error("its init (pid " + std::to_string(init.pid) + ") ended meanwhile");
  monitor.init_pid = init.pid;
}

// The monitor removes the dir when the container ends only while it is
// still its creator's (gpuslice-shim --creator): the creator recorded when
// the monitor starts, not when its arguments were saved, since a create
// that execs runc hands the creation over to its init recorder in between.
// Returns the creator `args` now name.
std::optional<state::ProcessId> pass_creator(std::vector<std::string> &args, int dir_fd) {
  auto flag = std::find(args.begin(), args.end(), "--creator");
  const bool named = flag != args.end() && std::next(flag) != args.end();
  const auto creator = state::read_process_record(dir_fd, state::kCreatorRecord);
  if (!creator) // as saved (a dir an older gpuslice wrote without the record)
    return named ? state::parse_process_id(*std::next(flag)) : std::nullopt;
  if (named)
    *std::next(flag) = state::to_text(*creator);
  else
    args.insert(args.end(), {"--creator", state::to_text(*creator)});
  return creator;
}

// Starts it and records it in the container dir `dir_fd` (`path`).
pid_t exec_and_record(PendingMonitor monitor, int dir_fd, const std::string &path) {
  pass_creator(monitor.args, dir_fd);
  const pid_t pid = shim::exec_monitor(std::move(monitor.setup), monitor.program, monitor.args);
  if (const auto self = state::process_id(pid))
    state::write_process_record(dir_fd, state::kMonitorRecord, *self, path);
  return pid;
}

} // namespace

void start_monitor(const state::ContainerDir &dir, const CreateContext &ctx, const std::string &pid_file) {
  PendingMonitor monitor = prepare_monitor(dir, ctx);
  if (ctx.init_pid > 0) { // gpuslice-hook: the init runs already
    monitor.setup.watched = shim::open_pidfd(ctx.init_pid);
    monitor.setup.init_pid = ctx.init_pid;
  } else {
    // `run`: this process runs runc and exits once the container has
    // ended; runc has written the init's pid by then.
    monitor.setup.watched = shim::open_pidfd(static_cast<int>(::getpid()));
    monitor.setup.pid_file = fs::absolute(pid_file);
  }
  exec_and_record(std::move(monitor), dir.fd.get(), dir.path);
}

void launch_monitor(PendingMonitor monitor, const state::ContainerDir &dir) {
  const auto init = state::read_process_record(dir.fd.get(), state::kInitRecord);
  if (!init)
    throw Error("no init is recorded in " + quote(dir.path));
  watch_init(monitor.setup, *init);
  exec_and_record(std::move(monitor), dir.fd.get(), dir.path);
}

MonitorInPlace take_monitor(PendingMonitor monitor, const state::ContainerDir &dir, const std::string &state_dir,
                            const std::string &id) {
  const auto init = state::read_process_record(dir.fd.get(), state::kInitRecord);
  if (!init)
    throw Error("no init is recorded in " + quote(dir.path));
  const auto self = state::process_id(static_cast<int>(::getpid()));
  if (!self)
    throw Error("cannot read this process's start time from /proc");
  watch_init(monitor.setup, *init);
  // The dir it removes at the end is its creator's, as gpuslice-shim's
  // --creator says.
  const auto creator = pass_creator(monitor.args, dir.fd.get());
  if (!creator)
    throw Error("no creator is recorded in " + quote(dir.path));
  // Named before it is recorded: whoever finds the record finds the name.
  ::prctl(PR_SET_NAME, "gpuslice-shim", 0, 0, 0);
  state::write_process_record(dir.fd.get(), state::kMonitorRecord, *self, dir.path);
  return {std::move(monitor), *creator, state_dir, id};
}

namespace {

// gpuslice-shim's --connected: those of `pids` still running. Bounded:
// one argument has at most 128 KiB; a container with more processes than
// fit that took the region before gpuslice-shim started has the rest
// reported as bypasses, once each, rather than a monitor that cannot exec.
std::string still_running(const std::set<int> &pids) {
  constexpr std::size_t kMaxText = 64 * 1024;
  std::string text;
  for (int pid : pids) {
    if (::kill(pid, 0) != 0 && errno == ESRCH)
      continue;
    const std::string item = (text.empty() ? "" : ",") + std::to_string(pid);
    if (text.size() + item.size() > kMaxText)
      break;
    text += item;
  }
  return text;
}

// What gpuslice-shim would say of NVML it could not load, where it would.
void say_in_shim_log(const std::string &log_file, const std::string &line) {
  if (log_file.empty())
    return;
  if (FILE *log = std::fopen(log_file.c_str(), "ae")) {
    std::fprintf(log, "%s\n", line.c_str());
    std::fclose(log);
  }
}

} // namespace

void run_monitor_in_place(MonitorInPlace in_place) {
  PendingMonitor &m = in_place.monitor;
  shim::MonitorSetup &setup = m.setup;
  log::close();
  shim::detach_in_place(setup);
  std::set<int> connected;
  setup.on_connect = [&connected](int pid) { connected.insert(pid); };
  setup.cleanup = [&in_place] {
    try {
      state::remove_container_dir(in_place.state_dir, in_place.id, in_place.creator);
    } catch (const Error &) {
      // the next create, or the delete that follows, removes it
    }
  };
  setup.hand_over_at_first_interval = true;
  while (shim::run_monitor(setup) == shim::MonitorEnd::handed_over) {
    std::vector<std::string> args = m.args;
    args.insert(args.end(), {"--connected", still_running(connected)});
    const int error = shim::exec_in_place(setup, m.program, args);
    say_in_shim_log(arg_after(m.args, "--log-file"),
                    "gpuslice-shim container " + in_place.id + ": cannot execute " + quote(m.program) + ": " +
                        std::strerror(error) + ": GPU memory is enforced by the interposer alone");
    setup.hand_over_at_first_interval = false;
  }
}

std::optional<std::string> restart_monitor_if_gone(const Config &config, const std::string &id,
                                                   Unmonitored unmonitored) {
  if (!state::is_safe_container_id(id) || !fs::is_absolute(config.state_dir))
    return std::nullopt;
  const std::string path = fs::clean_path(config.state_dir) + "/containers/" + id;
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir)
    return std::nullopt; // no device, or gone
  // Written once at create, before the container runs: read unlocked, so
  // that a container without limits (most exec probes) takes no lock.
  const auto saved = state::read_state_file(dir.get(), kMonitorArgsFile);
  if (!saved)
    return std::nullopt; // a container without a monitor (or of an older gpuslice)
  // One restarter at a time (kubelet may run probes at once).
  // The create's init recorder holds it until it has decided.
  if (::flock(dir.get(), LOCK_EX) != 0)
    throw system_error("cannot lock " + quote(path));
  if (const auto failed = state::read_state_file(dir.get(), kCreateFailedFile))
    throw Error(*failed);
  const auto old = state::read_process_record(dir.get(), state::kMonitorRecord);
  if (old && state::process_alive(*old))
    return std::nullopt;
  const auto init = state::read_process_record(dir.get(), state::kInitRecord);
  if (!init && unmonitored == Unmonitored::refuse)
    throw Error("its create did not finish (no init is recorded in " + quote(path) +
                "): it would run without its monitor; delete it and create it again");
  if (!init || !state::process_alive(*init))
    return std::nullopt; // not started yet, or ended: poststop and the next create clean up
  return with_context("container " + quote(id) + ": its monitor (gpuslice-shim) is gone", [&]() -> std::string {
    PendingMonitor pending{{}, shim_program(config), split(*saved, '\0', EmptyParts::skip)};
    shim::MonitorSetup &monitor = pending.setup;
    watch_init(monitor, *init);
    selinux::Labeler labeler;
    if (const auto labels = state::read_state_file(dir.get(), kLabelsFile)) {
      const auto lines = split(*labels, '\n', EmptyParts::keep);
      if (lines.size() < 2)
        throw Error("its " + quote(path + "/" + kLabelsFile) + " is not a mount label and a process label");
      labeler = selinux::Labeler(selinux::kernel(), selinux::parse_mode(config.selinux_label),
                                 selinux::container_labels(lines[0], lines[1].empty() ? std::nullopt
                                                                                      : std::optional(lines[1]),
                                                           config.selinux_shared_file_label));
    }
    // The region its processes have charged, taken back from one of them.
    std::string region_note = "the same usage region";
    const auto id_text = state::read_state_file(dir.get(), kRegionIdFile);
    const auto region_id = id_text ? sharing::parse_region_id(*id_text) : std::nullopt;
    if (region_id) {
      std::vector<int> pids{init->pid};
      if (const auto cgroup = shim::cgroup_of(init->pid))
        pids = shim::cgroup_processes(*cgroup);
      // Those that took it from the one that is gone: one walk of their
      // mappings, then the region opened from the first of them.
      const auto mapping = sharing::processes_mapping(pids, *region_id);
      monitor.region = sharing::recover_region(mapping, *region_id);
      if (monitor.region) // they are not bypasses
        pending.args.insert(pending.args.end(),
                            {"--connected", still_running(std::set<int>(mapping.begin(), mapping.end()))});
    }
    if (!monitor.region) {
      monitor.region = sharing::create_region();
      region_note = "a new usage region (no process of the container held the old one)";
      labeler.label_fd(monitor.region.get(), selinux::Share::private_file, "the usage region");
      fs::write_file_atomic(path + "/" + kRegionIdFile, sharing::to_text(sharing::region_id(monitor.region.get())),
                            0400, fs::Durability::atomic);
    }
    const std::string run_path = path + "/" + kRunDirName;
    const UniqueFd run = open_dir_in(dir.get(), kRunDirName, run_path);
    monitor.listener = listen_in_run(run.get(), run_path, labeler);
    if (::faccessat(run.get(), name_in_run(kActivityContainerPath).c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0)
      monitor.activity_table = open_activity(config, labeler);
    const pid_t pid = exec_and_record(std::move(pending), dir.get(), path);
    return "gpuslice-shim of container " + id + " was gone" +
           (old ? " (pid " + std::to_string(old->pid) + ")" : std::string()) + ": started another (pid " +
           std::to_string(pid) + ") on " + region_note;
  });
}

} // namespace gpuslice::create
