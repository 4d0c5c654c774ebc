// `gpuslice exec`: run one program under GPU memory and compute limits
// without a container. Sets up what a container would get (a read-only limits
// file and a region socket in a state directory, a monitor that holds the
// usage region and hands it out there), preloads the interposer and execs the
// program in place, with no descriptor, signal mask or handler of ours
// leaking into it.
#include "commands.hpp"

#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/sharing/activity.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/sharing/region.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <csignal>
#include <filesystem>
#include <cstdlib>
#include <memory>
#include <string>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace gpuslice::cli {

namespace {

struct ExecOptions {
  std::string memory;
  int compute = -1;
  std::string policy = "fixed";
  std::string state_dir;
  std::string activity;
  std::vector<std::string> argv;
};

void make_dir(const std::string &dir, mode_t mode) {
  std::error_code ec;
  if (auto parent = std::filesystem::path(dir).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent, ec); // a failure shows below
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST)
    throw system_error("cannot create directory " + gpuslice::quote(dir));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(gpuslice::quote(dir) + " is not a directory");
  if (st.st_uid != ::geteuid())
    throw Error("directory " + gpuslice::quote(dir) + " belongs to another user: pass --state-dir");
}

std::string default_state_dir() {
  const char *xdg = std::getenv("XDG_RUNTIME_DIR");
  std::string base = xdg && *xdg == '/' ? std::string(xdg) + "/gpuslice" : "/tmp/gpuslice-" + std::to_string(::geteuid());
  make_dir(base, 0700);
  std::string tmpl = base + "/exec-XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    throw system_error("cannot create a state directory under " + gpuslice::quote(base));
  return tmpl;
}

std::string parent_dir(const std::string &dir) {
  auto pos = dir.find_last_of('/', dir.size() > 1 ? dir.size() - 2 : 0);
  if (pos == std::string::npos)
    return ".";
  return pos == 0 ? "/" : dir.substr(0, pos);
}

// The interposer containers get: runtime.interposer-path of the config
// (the compiled-in default when unset), or $GPUSLICE_INTERPOSER_LIB.
std::string interposer_path() {
  const char *env = std::getenv("GPUSLICE_INTERPOSER_LIB");
  std::string p = env && *env ? env : load_config(config_path()).interposer_path;
  if (::access(p.c_str(), R_OK) != 0)
    throw system_error("interposer library " + gpuslice::quote(p) +
                       " is not readable (runtime.interposer-path in " + gpuslice::quote(config_path()) +
                       ", or $GPUSLICE_INTERPOSER_LIB)");
  return p;
}

// What the program must not inherit from us: descriptors beyond stdio,
// blocked signals, ignored or handled signals.
void scrub_process() {
  for (int fd = 3, max = static_cast<int>(::sysconf(_SC_OPEN_MAX)); fd < max && fd < 65536; fd++)
    ::close(fd);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP)
      std::signal(s, SIG_DFL);
}

int run_exec(const ExecOptions &o) {
  sharing::Limits limits;
  if (!o.memory.empty())
    limits.devices = with_context("--memory-limit", [&] { return sharing::parse_memory_limits(o.memory); });
  sharing::Policy policy = with_context("--policy", [&] { return sharing::parse_policy(o.policy); });
  if (o.compute >= 0)
    sharing::apply_compute(limits, o.compute, policy);
  if (limits.devices.empty())
    limits.devices.push_back({"*", {}, {}, {}}); // account and publish usage, limit nothing

  std::string dir = o.state_dir;
  if (dir.empty())
    dir = default_state_dir();
  else
    make_dir(dir, 0700);
  shim::MonitorSetup monitor;
  if (policy == sharing::Policy::burst && o.compute >= 0) {
    limits.activity = o.activity.empty() ? parent_dir(dir) + "/activity" : o.activity;
    monitor.activity_table = sharing::open_activity_table(limits.activity);
  }
  const std::string socket = dir + "/region.sock", limits_file = dir + "/limits";
  sharing::write_limits_file(limits_file, limits);
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd)
    throw system_error("cannot open " + gpuslice::quote(dir));
  monitor.region = sharing::create_region();
  monitor.listener = shim::listen_region_socket(dir_fd.get(), "region.sock", socket);
  // This process becomes the program: the monitor serves its processes
  // (children included) while it runs.
  monitor.watched = shim::open_pidfd(static_cast<int>(::getpid()));
  monitor.name = "gpuslice-exec";
  monitor.cleanup = [socket] { ::unlink(socket.c_str()); };
  shim::spawn_monitor(std::move(monitor));

  std::string preload = interposer_path();
  if (const char *old = std::getenv("LD_PRELOAD"); old && *old)
    preload += std::string(" ") + old;
  ::setenv("LD_PRELOAD", preload.c_str(), 1);
  ::setenv(GS_ENV_LIMITS, limits_file.c_str(), 1);
  ::setenv(GS_ENV_REGION, socket.c_str(), 1);

  std::vector<char *> argv;
  for (const auto &a : o.argv)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  scrub_process();
  ::execvp(argv[0], argv.data());
  throw system_error("cannot execute " + gpuslice::quote(o.argv[0]));
}

} // namespace

void register_exec(CLI::App &app, Action &action) {
  auto o = std::make_shared<ExecOptions>();
  auto *cmd = app.add_subcommand("exec", "run a program under GPU memory and compute limits, without a container");
  cmd->add_option("--memory-limit", o->memory, "GPU memory per device: 4Gi, or DEV:SIZE,... (DEV: *, ordinal, GPU UUID)");
  // 1-100, the rule of GPUSLICE_COMPUTE_LIMIT in CDI specs: 0 would mean
  // "never run" to some and "no limit" to others.
  cmd->add_option("--compute-limit", o->compute, "share of each GPU in percent, 1 to 100")->check(CLI::Range(1, 100));
  cmd->add_option("--policy", o->policy, "compute policy: native, fixed (hard cap), burst (cap only under contention)")
      ->check(CLI::IsMember({"native", "fixed", "burst"}));
  cmd->add_option("--state-dir", o->state_dir, "directory for the usage region and limits file (default: a new one)");
  cmd->add_option("--activity-file", o->activity, "activity table of the burst policy, shared by the programs that "
                                                  "compete for the GPU (default: next to the state directory)");
  cmd->add_option("command", o->argv, "program and arguments (after --)")->required();
  cmd->callback([&action, o] { action = [o] { return run_exec(*o); }; });
}

} // namespace gpuslice::cli
