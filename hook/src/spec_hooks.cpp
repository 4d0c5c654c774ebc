#include "gpuslice/hook/spec_hooks.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/hook/child.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace gpuslice::hook {

namespace {

void run_one(const HookToRun &hook, const std::string &state_json) {
  int in[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0)
    throw system_error("cannot make a pipe");
  UniqueFd in_read(in[0]), in_write(in[1]);
  if (::pipe2(err, O_CLOEXEC) != 0)
    throw system_error("cannot make a pipe");
  UniqueFd err_read(err[0]), err_write(err[1]);
  std::vector<std::string> args = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
  auto argv = c_strings(args), envp = c_strings(hook.env);
  const pid_t child = ::fork();
  if (child < 0)
    throw system_error("cannot fork");
  if (child == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (::dup2(in_read.get(), 0) < 0 || ::dup2(devnull, 1) < 0 || ::dup2(err_write.get(), 2) < 0)
      ::_exit(126);
    ::execve(hook.path.c_str(), argv.data(), envp.data());
    const std::string why = std::string("cannot execute it: ") + std::strerror(errno);
    [[maybe_unused]] ssize_t n = ::write(2, why.data(), why.size());
    ::_exit(127);
  }
  in_read.reset();
  err_write.reset();
  // The state is small: it fits the pipe, and a hook that never reads it
  // (or is gone already) must neither block nor kill us.
  ::fcntl(in_write.get(), F_SETFL, O_NONBLOCK);
  (void)write_to_child(in_write.get(), state_json);
  in_write.reset();

  const int timeout = hook.timeout > 0 ? hook.timeout : 60;
  const ChildEnd end = wait_for_child(child, err_read.get(), timeout);
  const std::string shown = hook.stage + " hook " + quote(hook.path);
  if (auto why = end.failure(shown, timeout))
    throw Error(*why);
}

} // namespace

void run_spec_hooks(const std::vector<HookToRun> &hooks, const std::string &state_json) {
  for (const auto &h : hooks)
    run_one(h, state_json);
}

} // namespace gpuslice::hook
