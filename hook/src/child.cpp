#include "gpuslice/hook/child.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/strings.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace gpuslice::hook {

ssize_t write_to_child(int fd, std::string_view data) {
  sigset_t pipe_only, old;
  ::sigemptyset(&pipe_only);
  ::sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  ssize_t n;
  while ((n = ::write(fd, data.data(), data.size())) < 0 && errno == EINTR) {
  }
  const int write_errno = errno;
  // The SIGPIPE of a broken pipe is now pending on this thread: taken
  // before the mask goes back (unless one was pending already).
  if (n < 0 && write_errno == EPIPE && !::sigismember(&old, SIGPIPE)) {
    const timespec now{};
    while (::sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = write_errno;
  return n;
}

namespace {

constexpr std::size_t kMaxStderr = 4096;

} // namespace

std::optional<std::string> ChildEnd::failure(const std::string &shown, int timeout_s) const {
  const std::string text = trim_space(stderr_text);
  const std::string said = text.empty() ? std::string() : ": " + quote(text);
  if (timed_out)
    return shown + " did not finish within " + std::to_string(timeout_s) + " s" + said;
  if (signal)
    return shown + " was killed by signal " + std::to_string(signal) + said;
  if (exit_code != 0)
    return shown + " failed with status " + std::to_string(exit_code) + said;
  return std::nullopt;
}

ChildEnd wait_for_child(pid_t child, int stderr_fd, int timeout_s) {
  ChildEnd end;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      end.timed_out = true;
      ::kill(child, SIGKILL);
      break;
    }
    pollfd p{stderr_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      continue; // EINTR, or the deadline: checked above
    char buf[1024];
    const ssize_t n = ::read(stderr_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    end.stderr_text.append(buf, static_cast<std::size_t>(n));
    if (end.stderr_text.size() > kMaxStderr)
      end.stderr_text.erase(0, end.stderr_text.size() - kMaxStderr);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    end.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    end.signal = WTERMSIG(status);
  return end;
}

} // namespace gpuslice::hook
