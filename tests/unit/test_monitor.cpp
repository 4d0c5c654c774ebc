// The container's monitor and the node's activity table (host side).
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/sharing/activity.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/sharing/region.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

using namespace gpuslice;
using namespace gpuslice::sharing;
using namespace gpuslice::shim;
using gpuslice::testing::TempDir;

namespace {

bool lock_byte(int fd, off_t at) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = at;
  fl.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

// What the interposer does: connect, receive one descriptor.
UniqueFd receive(const std::string &path) {
  UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::connect(s.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) != 0)
    return UniqueFd();
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (::recvmsg(s.get(), &msg, MSG_CMSG_CLOEXEC) <= 0)
    return UniqueFd();
  cmsghdr *c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS)
    return UniqueFd();
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return UniqueFd(fd);
}

// Waits (bounded, generous) until cond holds; timing never decides a pass.
bool eventually(const std::function<bool()> &cond) {
  for (int i = 0; i < 1000; i++) {
    if (cond())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

pid_t sleeper() {
  pid_t p = ::fork();
  REQUIRE(p >= 0);
  if (p == 0) {
    for (;;)
      ::pause();
  }
  return p;
}

} // namespace

TEST_CASE("monitor: hands each process a region of its own, cleans up when the container ends", "[sharing][monitor]") {
  TempDir t;
  UniqueFd dir(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const std::string sock = t / "region.sock";
  const pid_t init = sleeper();
  MonitorSetup m;
  m.region = create_region();
  const uint64_t id = container_id(m.region.get());
  m.listener = listen_region_socket(dir.get(), "region.sock", sock);
  m.watched = open_pidfd(init);
  const std::string done = t / "cleaned";
  m.cleanup = [done] { fs::write_file_atomic(done, "yes"); };
  spawn_monitor(std::move(m));

  struct stat st {};
  REQUIRE(::stat(sock.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0666);
  UniqueFd a = receive(sock), b = receive(sock);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(container_id(a.get()) == id); // the same region...
  CHECK(lock_byte(a.get(), GS_SLOT_LOCK_BASE));
  CHECK_FALSE(lock_byte(b.get(), GS_SLOT_LOCK_BASE)); // ...through descriptors of their own
  CHECK(::ftruncate(a.get(), 0) != 0);                // sealed

  ::kill(init, SIGKILL);
  ::waitpid(init, nullptr, 0);
  CHECK(eventually([&] { return ::access(done.c_str(), F_OK) == 0; }));
  CHECK(eventually([&] { return !receive(sock); })); // nobody answers any more
}

TEST_CASE("monitor: after create, the init named by the pid file is watched; no pid file ends it", "[sharing][monitor]") {
  TempDir t;
  UniqueFd dir(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const pid_t creator = sleeper(), init = sleeper();
  MonitorSetup m;
  m.region = create_region();
  m.listener = listen_region_socket(dir.get(), "s1", t / "s1");
  m.watched = open_pidfd(creator);
  m.pid_file = t / "init.pid";
  m.cleanup = [f = t / "cleaned1"] { fs::write_file_atomic(f, "yes"); };
  spawn_monitor(std::move(m));
  fs::write_file_atomic(t / "init.pid", std::to_string(init));
  ::kill(creator, SIGKILL); // `create` is over
  ::waitpid(creator, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(receive(t / "s1")); // still serving: the container runs
  CHECK(::access((t / "cleaned1").c_str(), F_OK) != 0);
  ::kill(init, SIGKILL);
  ::waitpid(init, nullptr, 0);
  CHECK(eventually([&] { return ::access((t / "cleaned1").c_str(), F_OK) == 0; }));

  // A create that failed: runc exits without writing the pid file.
  const pid_t failed = sleeper();
  MonitorSetup m2;
  m2.region = create_region();
  m2.listener = listen_region_socket(dir.get(), "s2", t / "s2");
  m2.watched = open_pidfd(failed);
  m2.pid_file = t / "never.pid";
  m2.cleanup = [f = t / "cleaned2"] { fs::write_file_atomic(f, "yes"); };
  spawn_monitor(std::move(m2));
  ::kill(failed, SIGKILL);
  ::waitpid(failed, nullptr, 0);
  CHECK(eventually([&] { return ::access((t / "cleaned2").c_str(), F_OK) == 0; }));
}

TEST_CASE("monitor: hands over at its first interval, then a successor checks at once", "[sharing][monitor]") {
  TempDir t;
  UniqueFd dir(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const pid_t init = sleeper();
  MonitorSetup m;
  m.region = create_region();
  m.listener = listen_region_socket(dir.get(), "s", t / "s");
  m.watched = open_pidfd(init);
  m.init_pid = init;
  m.activity_table = open_activity_table(t / "activity");
  bool cleaned = false;
  m.cleanup = [&] { cleaned = true; };
  m.interval_ms = 20;
  m.hand_over_at_first_interval = true;
  REQUIRE(run_monitor(m) == MonitorEnd::handed_over);
  CHECK_FALSE(cleaned); // the container runs on
  CHECK(m.listener);
  CHECK(m.region);
  CHECK(m.watched);
  CHECK(m.activity_table); // back from the loop's publisher

  // The successor: its first interval at once, not an hour from now. A
  // watchdog ends the container should it not come.
  m.hand_over_at_first_interval = false;
  m.first_interval_at_once = true;
  m.interval_ms = 3600 * 1000;
  int checks = 0;
  m.on_interval = [&] {
    checks++;
    ::kill(init, SIGKILL);
  };
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 3000 && !done; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::kill(init, SIGKILL);
  });
  const MonitorEnd end = run_monitor(m);
  done = true;
  watchdog.join();
  ::waitpid(init, nullptr, 0);
  CHECK(end == MonitorEnd::container_ended);
  CHECK(checks == 1);
  CHECK(cleaned);
}

TEST_CASE("activity table: created once at its size, written by the host only", "[sharing][monitor]") {
  TempDir t;
  const std::string path = t / "activity";
  UniqueFd a = open_activity_table(path);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == GS_ACTIVITY_SIZE);
  CHECK((st.st_mode & 0777) == 0644);
  ActivityPublisher one(std::move(a), 11);
  ActivityPublisher two(open_activity_table(path), 22); // an existing table is kept
  REQUIRE(one.publish(1, 2, 1000));
  REQUIRE(two.publish(1, 2, 2000));
  REQUIRE(one.publish(1, 2, 3000)); // same GPU: same entry
  gs_activity_entry table[GS_ACTIVITY_ENTRIES];
  UniqueFd r(::open(path.c_str(), O_RDONLY));
  REQUIRE(::pread(r.get(), table, sizeof table, 0) == static_cast<ssize_t>(sizeof table));
  CHECK(table[0].owner == 11);
  CHECK(table[0].busy_until == 3000);
  CHECK(table[1].owner == 22);
  CHECK(table[1].busy_until == 2000);
  one.clear();
  REQUIRE(::pread(r.get(), table, sizeof table, 0) == static_cast<ssize_t>(sizeof table));
  CHECK(table[0].owner == 0);
  // released: two's entry freed too, its descriptor for whoever publishes next
  UniqueFd handed = two.release();
  REQUIRE(handed);
  CHECK_FALSE(two.publish(1, 2, 4000));
  REQUIRE(::pread(r.get(), table, sizeof table, 0) == static_cast<ssize_t>(sizeof table));
  CHECK(table[1].owner == 0);
  ActivityPublisher next(std::move(handed), 33);
  REQUIRE(next.publish(1, 2, 5000));
  REQUIRE(::pread(r.get(), table, sizeof table, 0) == static_cast<ssize_t>(sizeof table));
  CHECK(table[0].owner == 33); // one free entry claimed, the first

  t.write("wrong", "short");
  CHECK_THROWS_WITH(open_activity_table(t / "wrong"), Catch::Contains("not " + std::to_string(GS_ACTIVITY_SIZE)));
  REQUIRE(::symlink(path.c_str(), (t / "link").c_str()) == 0);
  CHECK_THROWS_AS(open_activity_table(t / "link"), Error);
}
