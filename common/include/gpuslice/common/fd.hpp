// A file descriptor owned by one scope: closed when the scope ends, never
// copied. Used wherever host code opens a file with the raw system calls.
#pragma once

#include <unistd.h>

namespace gpuslice {

struct UniqueFd {
  int fd = -1;
  explicit UniqueFd(int f) : fd(f) {}
  ~UniqueFd() {
    if (fd >= 0)
      ::close(fd);
  }
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
};

} // namespace gpuslice
