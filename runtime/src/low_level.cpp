#include "gpuslice/runtime/low_level.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/spawn.hpp"
#include "gpuslice/common/strings.hpp"

#include "../front/front.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <ctime>

namespace gpuslice::runtime {

namespace {

// A runtime gs_find_runtime may take: an executable regular file that is
// not this very program (gpuslice-runtime installed as "runc" in PATH).
int usable(const char *path, void *self_arg) {
  const auto &self = *static_cast<const struct stat *>(self_arg);
  struct stat st {};
  return ::stat(path, &st) == 0 && S_ISREG(st.st_mode) && ::access(path, X_OK) == 0 &&
         !(st.st_dev == self.st_dev && st.st_ino == self.st_ino);
}

std::string rfc3339_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  ::gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
  char out[96];
  std::snprintf(out, sizeof out, "%s.%09ldZ", buf, static_cast<long>(ts.tv_nsec));
  return out;
}

} // namespace

std::string find_runtime(const Config &config) {
  struct stat self {};
  if (::stat("/proc/self/exe", &self) != 0)
    self = {};
  std::vector<const char *> names;
  for (const auto &name : config.runtimes)
    names.push_back(name.c_str());
  const char *path = std::getenv("PATH");
  char found[4096];
  if (gs_find_runtime(names.data(), static_cast<int>(names.size()), path, found, sizeof found, usable, &self) == 0)
    return found;
  std::string tried;
  for (const auto &name : config.runtimes)
    tried += (tried.empty() ? "" : ", ") + quote(name);
  throw Error("no low-level runtime found (tried " + tried + " in PATH " + quote(path && *path ? path : GS_DEFAULT_PATH) +
              "); install runc or crun, or set [runtime] runtimes in the config");
}

std::vector<char *> argv_of(const std::string &runtime, const std::vector<std::string> &args) {
  std::vector<char *> argv = c_strings(args);
  argv.insert(argv.begin(), const_cast<char *>(runtime.c_str()));
  return argv;
}

void exec_runtime(const std::string &runtime, const std::vector<std::string> &args) {
  auto argv = argv_of(runtime, args);
  ::execv(runtime.c_str(), argv.data());
  throw system_error("cannot execute " + quote(runtime));
}

namespace {

struct SpawnArgs {
  const char *path;
  char *const *argv;
  pid_t parent;
  bool die_with_parent;
  const sigset_t *mask; // the caller's, restored just before the exec
};

// The child of spawn_sharing_memory: system calls only.
int exec_child(void *arg) {
  const auto *a = static_cast<const SpawnArgs *>(arg);
  if (a->die_with_parent && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != a->parent))
    ::_exit(127); // the parent died before the prctl
  ::sigprocmask(SIG_SETMASK, a->mask, nullptr);
  ::execv(a->path, a->argv);
  ::_exit(127);
}

} // namespace

int run_runtime(const std::string &runtime, const std::vector<std::string> &args, ChildEnds ends) {
  auto argv = argv_of(runtime, args);
  // Not fork(): copying this process's page tables, then a copy-on-write
  // fault on each page it writes while runc runs, is paid by every create.
  sigset_t caller_mask;
  SpawnArgs spawn{runtime.c_str(), argv.data(), ::getpid(), ends == ChildEnds::with_parent, &caller_mask};
  const pid_t child = spawn_sharing_memory(exec_child, &spawn, caller_mask);
  if (child < 0)
    throw system_error("cannot start " + quote(runtime));
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      throw system_error("cannot wait for " + quote(runtime));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void write_runtime_log(const std::string &log_path, const std::string &log_format, const std::string &message_arg) {
  if (log_path.empty())
    return;
  // One line containerd shows a person: whatever went into it, bounded.
  constexpr std::size_t kMaxMessage = 4096;
  const std::string message =
      message_arg.size() > kMaxMessage ? message_arg.substr(0, kMaxMessage) + "... (cut)" : message_arg;
  std::string line;
  if (log_format == "json") {
    line = nlohmann::json{{"level", "error"}, {"msg", message}, {"time", rfc3339_now()}}.dump(-1, ' ', false,
                                                                                            nlohmann::json::error_handler_t::replace);
  } else {
    line = "time=\"" + rfc3339_now() + "\" level=error msg=" + nlohmann::json(message).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  line += '\n';
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  // One write: concurrent writers to the same log file do not interleave.
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

} // namespace gpuslice::runtime
