#include "gpuslice/common/spawn.hpp"

#include <sched.h>

#include <cerrno>
#include <cstddef>

namespace gpuslice {

pid_t spawn_sharing_memory(int (*child)(void *), void *arg, sigset_t &caller_mask) {
  constexpr std::size_t kStackSize = 64 * 1024;
  alignas(16) static char stack[kStackSize];
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &caller_mask);
  const pid_t pid = ::clone(child, stack + kStackSize, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
  const int clone_errno = errno;
  ::sigprocmask(SIG_SETMASK, &caller_mask, nullptr);
  errno = clone_errno;
  return pid;
}

} // namespace gpuslice
