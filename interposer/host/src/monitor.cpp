#include "gpuslice/sharing/monitor.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/sharing/activity.hpp"
#include "gpuslice/sharing/region.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <ctime>
#include <optional>
#include <vector>

namespace gpuslice::sharing {

namespace {

// How often a burst container's "busy until" reaches the table; readers
// hold a container busy for 100 ms after its last launch (throttle.c).
constexpr long kPublishPeriodNs = 20'000'000;

uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// One descriptor per connection, each a new open file description of the
// region (reopened through /proc): the processes' slot locks must not be
// one shared lock.
void hand_region(int listener, int region, const std::function<void(int)> &on_connect) {
  UniqueFd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!conn)
    return;
  if (on_connect) {
    ucred peer{};
    socklen_t len = sizeof peer;
    if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 && peer.pid > 0)
      on_connect(peer.pid);
  }
  UniqueFd own(::open(("/proc/self/fd/" + std::to_string(region)).c_str(), O_RDWR | O_CLOEXEC));
  if (!own)
    return; // the process sees no region and refuses its allocations
  char byte = 'R';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  const int fd = own.get();
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  (void)!::sendmsg(conn.get(), &msg, MSG_NOSIGNAL);
}

void publish_activity(ActivityPublisher &publisher, int region) {
  try {
    const uint64_t now = monotonic_ns(), hold = 100'000'000;
    for (const auto &d : read_region(region).devices) {
      // What the tenant wrote: never further ahead than a real launch would say.
      const uint64_t until = d.busy_until > now + hold ? now + hold : d.busy_until;
      if (until > now)
        publisher.publish(d.uuid_lo, d.uuid_hi, until);
    }
  } catch (const Error &) {
    // an overwritten header: nothing to publish, the container's own
    // processes refuse their allocations
  }
}

// Descriptors of this process, other than `keep`.
void close_other_fds(const std::vector<int> &keep) {
  std::vector<int> open_fds;
  if (DIR *d = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(d);
    while (const dirent *e = ::readdir(d)) {
      int fd = -1;
      auto [p, ec] = std::from_chars(e->d_name, e->d_name + std::strlen(e->d_name), fd);
      if (ec == std::errc() && fd != own)
        open_fds.push_back(fd);
    }
    ::closedir(d);
  }
  for (int fd : open_fds)
    if (std::find(keep.begin(), keep.end(), fd) == keep.end())
      ::close(fd);
}

// Its own session, no signal handler or mask inherited, stdio on /dev/null,
// only the descriptors in `keep` left open.
void become_daemon(const std::vector<int> &keep) {
  ::setsid();
  (void)!::chdir("/");
  ::umask(022);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP)
      ::signal(s, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; i < 3; i++)
    if (null_fd >= 0)
      ::dup2(null_fd, i);
  std::vector<int> all{0, 1, 2};
  all.insert(all.end(), keep.begin(), keep.end());
  close_other_fds(all);
}

// Runs `in_grandchild` in a grandchild of this process (nobody's child once
// the middle one exits: a program that waits for any child must not reap
// the monitor), and returns its pid once it is on its way.
template <typename Fn> pid_t start_grandchild(Fn in_grandchild) {
  int pid_pipe[2];
  if (::pipe2(pid_pipe, O_CLOEXEC) != 0)
    throw system_error("cannot start the container's monitor (pipe)");
  UniqueFd pid_read(pid_pipe[0]), pid_write(pid_pipe[1]);
  const pid_t child = ::fork();
  if (child < 0)
    throw system_error("cannot start the container's monitor (fork)");
  if (child == 0) {
    pid_read.reset();
    const pid_t monitor = ::fork();
    if (monitor == 0) {
      pid_write.reset();
      in_grandchild();
      ::_exit(0);
    }
    if (monitor > 0)
      (void)!::write(pid_write.get(), &monitor, sizeof monitor);
    ::_exit(monitor < 0 ? 1 : 0);
  }
  pid_write.reset();
  pid_t monitor = -1;
  while (::read(pid_read.get(), &monitor, sizeof monitor) < 0 && errno == EINTR) {
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || monitor <= 0)
    throw Error("cannot start the container's monitor (second fork failed)");
  return monitor;
}

// Moves `from` (or nothing: -1) to exactly `to`, inheritable.
void place_fd(int from, int to) {
  if (from < 0)
    return;
  if (from == to)
    ::fcntl(to, F_SETFD, 0);
  else
    ::dup2(from, to); // dup2 clears FD_CLOEXEC on the copy
}

} // namespace

std::optional<int> read_pid_file(const std::string &path) {
  try {
    std::string text = fs::read_file(path, 64);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
      text.pop_back();
    int pid = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
    if (ec != std::errc() || p != text.data() + text.size() || pid <= 0)
      return std::nullopt;
    return pid;
  } catch (const Error &) {
    return std::nullopt;
  }
}

UniqueFd open_pidfd(int pid) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!fd)
    throw system_error("cannot watch process " + std::to_string(pid) + " (pidfd_open)");
  ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
  return fd;
}

UniqueFd listen_region_socket(int dir_fd, const std::string &name, const std::string &shown) {
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock)
    throw system_error("cannot create the region socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Through the directory's descriptor: short whatever the state dir's path.
  const std::string path = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
  if (path.size() >= sizeof addr.sun_path)
    throw Error("region socket name " + quote(name) + " is too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlinkat(dir_fd, name.c_str(), 0); // a socket left by a dead monitor of this very container
  if (::bind(sock.get(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
    throw system_error("cannot bind the region socket " + quote(shown));
  if (::fchmodat(dir_fd, name.c_str(), 0666, 0) != 0)
    throw system_error("cannot open the region socket " + quote(shown) + " to the container's users");
  if (::listen(sock.get(), SOMAXCONN) != 0)
    throw system_error("cannot listen on the region socket " + quote(shown));
  return sock;
}

void run_monitor(MonitorSetup &setup) {
  std::optional<ActivityPublisher> publisher;
  UniqueFd timer, interval;
  if (setup.activity_table) {
    publisher.emplace(std::move(setup.activity_table), container_id(setup.region.get()));
    timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    itimerspec period{{0, kPublishPeriodNs}, {0, kPublishPeriodNs}};
    if (timer)
      ::timerfd_settime(timer.get(), 0, &period, nullptr);
  }
  if (setup.on_interval && setup.interval_ms > 0) {
    interval.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    const long ms = setup.interval_ms;
    itimerspec period{{ms / 1000, (ms % 1000) * 1'000'000}, {ms / 1000, (ms % 1000) * 1'000'000}};
    if (interval)
      ::timerfd_settime(interval.get(), 0, &period, nullptr);
  }
  bool watching_init = setup.init_pid > 0;
  if (watching_init && setup.on_init)
    setup.on_init(setup.init_pid);
  for (;;) {
    // An fd of -1 is ignored by poll: no timer, no entry.
    pollfd fds[4] = {{setup.listener.get(), POLLIN, 0},
                     {setup.watched.get(), POLLIN, 0},
                     {timer.get(), POLLIN, 0},
                     {interval.get(), POLLIN, 0}};
    if (::poll(fds, 4, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (fds[0].revents & POLLIN)
      hand_region(setup.listener.get(), setup.region.get(), setup.on_connect);
    if (timer && (fds[2].revents & POLLIN)) {
      uint64_t ticks;
      (void)!::read(timer.get(), &ticks, sizeof ticks);
      publish_activity(*publisher, setup.region.get());
    }
    if (interval && (fds[3].revents & POLLIN)) {
      uint64_t ticks;
      (void)!::read(interval.get(), &ticks, sizeof ticks);
      setup.on_interval();
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (watching_init || setup.pid_file.empty())
        break; // the container (or the program) ended
      // `create` is over: the container's init, or nothing to watch.
      auto pid = read_pid_file(setup.pid_file);
      if (!pid)
        break;
      try {
        setup.watched = open_pidfd(*pid);
      } catch (const Error &) {
        break; // already gone
      }
      watching_init = true;
      if (setup.on_init)
        setup.on_init(*pid);
    }
  }
  if (publisher)
    publisher->clear();
  if (setup.cleanup)
    setup.cleanup();
}

void spawn_monitor(MonitorSetup setup) {
  start_grandchild([&] {
    become_daemon({setup.listener.get(), setup.region.get(), setup.activity_table.get(), setup.watched.get()});
    ::prctl(PR_SET_NAME, setup.name.c_str(), 0, 0, 0);
    run_monitor(setup);
  });
}

pid_t exec_monitor(MonitorSetup setup, const std::string &program, const std::vector<std::string> &args) {
  std::vector<std::string> argv{program, "--listener", std::to_string(kShimListenerFd), "--region",
                                std::to_string(kShimRegionFd), "--watched", std::to_string(kShimWatchedFd)};
  if (setup.activity_table)
    argv.insert(argv.end(), {"--activity", std::to_string(kShimActivityFd)});
  if (!setup.pid_file.empty())
    argv.insert(argv.end(), {"--pid-file", setup.pid_file});
  if (setup.init_pid > 0)
    argv.insert(argv.end(), {"--init", std::to_string(setup.init_pid)});
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char *> c_argv;
  for (auto &a : argv)
    c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  std::string path_env = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char *envp[] = {path_env.data(), nullptr};
  // Closed by a successful exec; carries errno when the exec fails, so that
  // the create fails instead of a container running with no monitor.
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0)
    throw system_error("cannot start the container's monitor (pipe)");
  UniqueFd status_read(status_pipe[0]), status_write(status_pipe[1]);
  const pid_t monitor = start_grandchild([&] {
    // Above every number they go to first, so that no move overwrites
    // another still to be moved.
    const int sources[] = {setup.listener.get(), setup.region.get(), setup.watched.get(), setup.activity_table.get()};
    int high[4];
    for (int i = 0; i < 4; i++)
      high[i] = sources[i] < 0 ? -1 : ::fcntl(sources[i], F_DUPFD_CLOEXEC, 64);
    const int report = ::fcntl(status_write.get(), F_DUPFD_CLOEXEC, 64);
    become_daemon({high[0], high[1], high[2], high[3], report});
    const int targets[] = {kShimListenerFd, kShimRegionFd, kShimWatchedFd, kShimActivityFd};
    for (int i = 0; i < 4; i++)
      place_fd(high[i], targets[i]);
    close_other_fds({0, 1, 2, kShimListenerFd, kShimRegionFd, kShimWatchedFd,
                     setup.activity_table ? kShimActivityFd : 0, report});
    ::execve(program.c_str(), c_argv.data(), envp);
    const int err = errno;
    (void)!::write(report, &err, sizeof err);
    ::_exit(127);
  });
  status_write.reset();
  int err = 0;
  ssize_t n;
  while ((n = ::read(status_read.get(), &err, sizeof err)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof err))
    throw system_error("cannot start the container's monitor " + quote(program), err);
  return monitor;
}

} // namespace gpuslice::sharing
