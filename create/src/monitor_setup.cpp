#include "gpuslice/create/monitor_setup.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/create/container_limits.hpp"
#include "gpuslice/sharing/activity.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/sharing/region.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

namespace gpuslice::create {

namespace {

// The name in run/ of a path in the container's /run/gpuslice.
std::string name_in_run(std::string_view container_path) {
  return std::string(container_path.substr(container_path.rfind('/') + 1));
}

UniqueFd open_run(const state::ContainerDir &dir) {
  UniqueFd fd(::openat(dir.fd.get(), state::kRunDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd)
    throw system_error("cannot open " + quote(dir.path + "/" + state::kRunDir));
  return fd;
}

} // namespace

void pass_creator(std::vector<std::string> &args, const std::optional<state::ProcessId> &creator) {
  auto flag = std::find(args.begin(), args.end(), "--creator");
  if (flag != args.end())
    args.erase(flag, std::next(flag) == args.end() ? args.end() : std::next(flag, 2));
  if (creator)
    args.insert(args.end(), {"--creator", state::to_text(*creator)});
}

std::string shim_program(const Config &config) {
  if (!config.shim_path.empty())
    return config.shim_path;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    throw system_error("cannot find gpuslice-shim beside this program (/proc/self/exe)");
  return fs::dirname(std::string_view(self, static_cast<std::size_t>(n))) + "/gpuslice-shim";
}

std::vector<std::string> monitor_args(const Config &c, const std::string &id, const std::string &state_path,
                                      const std::optional<std::string> &pod) {
  const uint64_t tolerance =
      with_context("monitor.memory-tolerance", [&] { return sharing::parse_size(c.monitor_memory_tolerance); });
  // It removes the state dir when the container ends, and checks the
  // container's GPU memory against the driver's accounting meanwhile. The
  // interval is gpuslice-shim's (--interval-ms) and, until then, that of
  // the init recorder that monitors in its place.
  std::vector<std::string> args = {"--state-dir", fs::clean_path(c.state_dir), "--id", id,
                                   "--limits", state_path + "/" + state::kLimitsFile,
                                   "--interval-ms", std::to_string(c.monitor_interval_ms),
                                   "--action", c.monitor_action, "--tolerance", std::to_string(tolerance),
                                   "--nvml", c.monitor_nvml_path};
  if (c.log.target == "file")
    args.insert(args.end(), {"--log-file", c.log.directory + "/gpuslice-shim.log"});
  if (pod)
    args.insert(args.end(), {"--pod", *pod});
  return args;
}

void make_run_dir(const state::ContainerDir &dir, bool burst, const selinux::Labeler &labeler) {
  const std::string run_path = dir.path + "/" + state::kRunDir;
  if (::mkdirat(dir.fd.get(), state::kRunDir, 0755) != 0)
    throw system_error("cannot create " + quote(run_path));
  const UniqueFd run = open_run(dir);
  labeler.label_fd(run.get(), selinux::Share::private_file, run_path);
  std::vector<std::string> mount_points{state::kLimitsFile, name_in_run(kInterposerContainerPath)};
  if (burst)
    mount_points.push_back(name_in_run(kActivityContainerPath));
  for (const auto &name : mount_points) {
    const UniqueFd f = fs::create_file_at(run.get(), name, "", 0444, run_path);
    labeler.label_fd(f.get(), selinux::Share::private_read_only, run_path + "/" + name);
  }
}

UniqueFd listen_in_run(const state::ContainerDir &dir, const selinux::Labeler &labeler) {
  const UniqueFd run = open_run(dir);
  const std::string socket_path = dir.path + "/" + state::kRunDir + "/" + state::kRegionSocket;
  UniqueFd listener;
  {
    const auto socket_label = labeler.socket_label();
    listener = shim::listen_region_socket(run.get(), state::kRegionSocket, socket_path);
  }
  labeler.label_in_dir(run.get(), state::kRegionSocket, selinux::Share::private_file, socket_path);
  return listener;
}

UniqueFd open_activity(const Config &config, const selinux::Labeler &labeler) {
  const std::string activity = fs::clean_path(config.state_dir) + "/" + state::kActivityTable;
  UniqueFd table = sharing::open_activity_table(activity);
  labeler.label_fd(table.get(), selinux::Share::shared_read_only, activity);
  return table;
}

UniqueFd make_region(const selinux::Labeler &labeler) {
  UniqueFd region = sharing::create_region();
  labeler.label_fd(region.get(), selinux::Share::private_file, "the usage region");
  return region;
}

void watch_init(shim::MonitorSetup &monitor, const state::ProcessId &init) {
  monitor.watched = shim::open_pidfd(init.pid);
  if (state::process_id(init.pid) != init)
    throw Error("its init (pid " + std::to_string(init.pid) + ") ended meanwhile");
  monitor.init_pid = init.pid;
}

pid_t exec_and_record(PendingMonitor monitor, const state::ContainerDir &dir) {
  pass_creator(monitor.args, state::read_record(dir.fd.get(), dir.path).creator);
  const pid_t pid = shim::exec_monitor(std::move(monitor.setup), monitor.program, monitor.args);
  if (const auto self = state::process_id(pid))
    state::update_record(dir, [&](state::Record &r) { r.monitor = *self; });
  return pid;
}

void launch_monitor(PendingMonitor monitor, const state::ContainerDir &dir) {
  const auto init = state::read_record(dir.fd.get(), dir.path).init;
  if (!init)
    throw Error("no init is recorded in " + quote(dir.path));
  watch_init(monitor.setup, *init);
  exec_and_record(std::move(monitor), dir);
}

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

} // namespace gpuslice::create
