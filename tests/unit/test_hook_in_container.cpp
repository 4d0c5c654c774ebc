// Mounting into a container's namespace against a hostile image
// (hook/in_container.hpp): a directory on the way to the mount point is
// swapped for a link to a host directory, absolute or climbing with "..",
// by a racing process, hundreds of times while the hook mounts. Whatever the
// interleaving, nothing is made or mounted outside the container's root:
// the mount lands inside the root or fails. The racer is a process, as a
// hostile container's is: a thread would make the hook's fork the fork of a
// threaded process, whose child can inherit a lock the thread held (the
// sanitizer build hung so once in CI).
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/hook/in_container.hpp"

#include "namespace_holder.hpp"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace gpuslice;
using namespace gpuslice::hook;
using gpuslice::testing::NamespaceHolder;
using gpuslice::testing::TempDir;

namespace {

// Exchanges two names again and again until destroyed.
class Swapper {
public:
  Swapper(const std::string &a, const std::string &b) {
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)
        ::_exit(1);
      for (;;)
        ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
    }
  }
  Swapper(const Swapper &) = delete;
  Swapper &operator=(const Swapper &) = delete;
  ~Swapper() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }

private:
  pid_t pid_ = -1;
};

} // namespace

TEST_CASE("hook in container: a racing link never takes a mount out of the root", "[hook][root]") {
  TempDir t;
  const std::string rootfs = t / "rootfs", host = t / "host";
  std::filesystem::create_directories(rootfs + "/usr/lib");
  std::filesystem::create_directories(host);
  const std::string source = t.write("libsource.so", "the driver library\n");
  // The swap: usr/lib and a link, exchanged atomically again and again.
  const std::string absolute_link = host;
  const std::string climbing_link = "../../../../../../../../.." + host;
  NamespaceHolder container;
  Injection inj;
  BindToMake bind;
  bind.source = source;
  bind.destination = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  bind.attributes = MOUNT_ATTR_RDONLY;
  inj.mounts.push_back(bind);

  int landed = 0, refused = 0;
  for (const std::string &target : {absolute_link, climbing_link}) {
    std::filesystem::remove(rootfs + "/usr/lib.swap");
    std::filesystem::create_directory_symlink(target, rootfs + "/usr/lib.swap");
    {
      const Swapper racer(rootfs + "/usr/lib", rootfs + "/usr/lib.swap");
      for (int i = 0; i < 300; ++i) {
        try {
          inject_in_container(container.pid(), rootfs, inj);
          ++landed;
        } catch (const Error &) {
          ++refused; // the walk met the link half-way: fine, nothing was made outside
        }
      }
    }
    if (std::filesystem::is_symlink(rootfs + "/usr/lib")) // left swapped: back, for the next round
      REQUIRE(::renameat2(AT_FDCWD, (rootfs + "/usr/lib").c_str(), AT_FDCWD, (rootfs + "/usr/lib.swap").c_str(),
                          RENAME_EXCHANGE) == 0);
  }
  CAPTURE(landed, refused);
  CHECK(landed > 0);
  CHECK(std::filesystem::is_empty(host));
  // Every mount point (field 5) the container's namespace has under the
  // test's dir is inside the root; the ones that landed are there.
  int inside = 0;
  std::istringstream lines(container.mountinfo());
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    if (point.rfind(t.path() + "/", 0) != 0)
      continue;
    CAPTURE(point);
    CHECK(point.rfind(rootfs + "/", 0) == 0);
    ++inside;
  }
  CHECK(inside == landed);
}

TEST_CASE("hook in container: nodes and read-only binds as asked", "[hook][root]") {
  TempDir t;
  const std::string rootfs = t / "rootfs";
  std::filesystem::create_directories(rootfs + "/dev");
  std::filesystem::create_directories(t / "driver");
  t.write("driver/version", "1.0\n");
  NamespaceHolder container;
  Injection inj;
  inj.nodes.push_back(NodeToMake{"/dev/nvidia0", "", 'c', 195, 0, 0660, 0, 44});
  BindToMake bind;
  bind.source = t / "driver";
  bind.destination = "/usr/local/driver";
  bind.attributes = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
  inj.mounts.push_back(bind);
  inject_in_container(container.pid(), rootfs, inj);
  inject_in_container(container.pid(), rootfs, Injection{{inj.nodes}, {}, {}, {}, {}}); // the node again: fine
  struct stat st {};
  REQUIRE(::lstat((rootfs + "/dev/nvidia0").c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(st.st_rdev == makedev(195, 0));
  CHECK((st.st_mode & 07777) == 0660);
  CHECK(st.st_gid == 44);
  const std::string mounts = container.mountinfo();
  const auto at = mounts.find(" " + rootfs + "/usr/local/driver ");
  REQUIRE(at != std::string::npos);
  const std::string line = mounts.substr(at, mounts.find('\n', at) - at);
  CHECK(line.find(" ro,nosuid") != std::string::npos);
  // not in this (the host's) namespace
  std::ifstream self("/proc/self/mountinfo");
  std::stringstream s;
  s << self.rdbuf();
  CHECK(s.str().find(rootfs + "/usr/local/driver") == std::string::npos);
  // another node already at the path is refused
  Injection other;
  other.nodes.push_back(NodeToMake{"/dev/nvidia0", "", 'c', 195, 1, 0666, 0, 0});
  CHECK_THROWS_WITH(inject_in_container(container.pid(), rootfs, other), Catch::Contains("is not the device"));
}
