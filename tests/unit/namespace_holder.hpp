// A process in a mount namespace of its own (private propagation), alive
// until destroyed: a stand-in for a container's init that the hook's code
// enters (setns through a pidfd) without a real engine.
#pragma once

#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpuslice::testing {

class NamespaceHolder {
public:
  NamespaceHolder() {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(hold_) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(hold_[1]);
      if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        ::_exit(2);
      if (::write(ready[1], "r", 1) != 1)
        ::_exit(3);
      char c;
      while (::read(hold_[0], &c, 1) > 0) {
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(hold_[0]);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
  }
  ~NamespaceHolder() {
    ::close(hold_[1]);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  pid_t pid() const { return pid_; }
  std::string mountinfo() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/mountinfo");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

private:
  pid_t pid_ = -1;
  int hold_[2] = {-1, -1};
};


} // namespace gpuslice::testing
