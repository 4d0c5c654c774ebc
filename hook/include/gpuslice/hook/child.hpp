// The end of a program gpuslice-hook starts (a CDI spec's hook, the
// sandboxed ldconfig): waited for with a deadline, killed past it, and the
// last of what it wrote to its stderr pipe kept for the error that names it.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace gpuslice::hook {

struct ChildEnd {
  int exit_code = -1; // when it exited
  int signal = 0;     // when a signal ended it
  bool timed_out = false;
  std::string stderr_text; // its last 4 KiB

  // nullopt when it exited 0; else "<shown> failed with status 1: "...""
  // (or was killed by signal N, or did not finish within N s).
  std::optional<std::string> failure(const std::string &shown, int timeout_s) const;
};

// Writes `data` to `fd` (a child's stdin pipe) once, without SIGPIPE: a
// child that exited, or closed its stdin, before reading it (a hook is
// free not to read the state) must not kill this process. Returns what
// write(2) returned (errno set on -1, EPIPE included).
ssize_t write_to_child(int fd, std::string_view data);

// Reads `stderr_fd` (the read end of the child's stderr pipe) until the
// child and whatever inherited it close it, or `timeout_s` pass (the child
// is then SIGKILLed), and reaps `child`.
ChildEnd wait_for_child(pid_t child, int stderr_fd, int timeout_s);

} // namespace gpuslice::hook
