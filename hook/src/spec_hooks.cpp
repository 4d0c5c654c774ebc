#include "gpuslice/hook/spec_hooks.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/strings.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace gpuslice::hook {

namespace {

constexpr std::size_t kMaxStderr = 4096;

std::string trimmed(const std::string &s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  return first == std::string::npos ? std::string() : s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::vector<char *> c_strings(std::vector<std::string> &strings) {
  std::vector<char *> out;
  for (auto &s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void run_one(const HookToRun &hook, const std::string &state_json) {
  int in[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0)
    throw system_error("cannot make a pipe");
  UniqueFd in_read(in[0]), in_write(in[1]);
  if (::pipe2(err, O_CLOEXEC) != 0)
    throw system_error("cannot make a pipe");
  UniqueFd err_read(err[0]), err_write(err[1]);
  std::vector<std::string> args = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
  std::vector<std::string> env = hook.env;
  auto argv = c_strings(args), envp = c_strings(env);
  const pid_t child = ::fork();
  if (child < 0)
    throw system_error("cannot fork");
  if (child == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (::dup2(in_read.get(), 0) < 0 || ::dup2(devnull, 1) < 0 || ::dup2(err_write.get(), 2) < 0)
      ::_exit(126);
    ::execve(hook.path.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  in_read.reset();
  err_write.reset();
  // The state is small: it fits the pipe, and a hook that never reads it
  // must not block us.
  ::fcntl(in_write.get(), F_SETFL, O_NONBLOCK);
  [[maybe_unused]] ssize_t written = ::write(in_write.get(), state_json.data(), state_json.size());
  in_write.reset();

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(hook.timeout > 0 ? hook.timeout : 60);
  std::string stderr_text;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{err_read.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      continue; // the deadline is checked above
    char buf[1024];
    const ssize_t n = ::read(err_read.get(), buf, sizeof buf);
    if (n <= 0)
      break; // closed: the hook (and whatever inherited its stderr) is done with it
    stderr_text.append(buf, static_cast<std::size_t>(n));
    if (stderr_text.size() > kMaxStderr)
      stderr_text.erase(0, stderr_text.size() - kMaxStderr);
  }
  if (timed_out)
    ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string shown = hook.stage + " hook " + quote(hook.path);
  const std::string said = trimmed(stderr_text).empty() ? std::string() : ": " + quote(trimmed(stderr_text));
  if (timed_out)
    throw Error(shown + " did not finish within " + std::to_string(hook.timeout > 0 ? hook.timeout : 60) + " s" + said);
  if (WIFSIGNALED(status))
    throw Error(shown + " was killed by signal " + std::to_string(WTERMSIG(status)) + said);
  if (WEXITSTATUS(status) == 127)
    throw Error(shown + " could not be executed" + said);
  if (WEXITSTATUS(status) != 0)
    throw Error(shown + " failed with status " + std::to_string(WEXITSTATUS(status)) + said);
}

} // namespace

void run_spec_hooks(const std::vector<HookToRun> &hooks, const std::string &state_json) {
  for (const auto &h : hooks)
    run_one(h, state_json);
}

} // namespace gpuslice::hook
