// A file descriptor owned by one scope: closed when the scope ends, never
// copied, moved where ownership changes hands. Used wherever host code opens
// a file with the raw system calls.
#pragma once

#include <unistd.h>

#include <utility>

namespace gpuslice {

class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int f) : fd(f) {}
  ~UniqueFd() { reset(); }
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  UniqueFd(UniqueFd &&other) noexcept : fd(std::exchange(other.fd, -1)) {}
  UniqueFd &operator=(UniqueFd &&other) noexcept {
    if (this != &other)
      reset(std::exchange(other.fd, -1));
    return *this;
  }

  int get() const { return fd; }
  explicit operator bool() const { return fd >= 0; }
  // Gives the descriptor up without closing it.
  int release() { return std::exchange(fd, -1); }
  void reset(int f = -1) {
    if (fd >= 0)
      ::close(fd);
    fd = f;
  }

  int fd = -1; // public for the raw system calls that take it
};

} // namespace gpuslice
