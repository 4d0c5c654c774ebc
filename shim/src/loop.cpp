#include "gpuslice/shim/loop.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/spawn.hpp"
#include "gpuslice/common/strings.hpp"
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
#include <sys/resource.h>
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

namespace gpuslice::shim {

using sharing::ActivityPublisher;

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
    for (const auto &d : sharing::read_region(region).devices) {
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

} // namespace

std::optional<int> read_pid_file(const std::string &path) {
  try {
    return parse_pid_text(fs::read_file(path, 64));
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

MonitorEnd run_monitor(MonitorSetup &setup) {
  std::optional<ActivityPublisher> publisher;
  UniqueFd timer, interval;
  if (setup.activity_table) {
    publisher.emplace(std::move(setup.activity_table), sharing::container_id(setup.region.get()));
    timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    itimerspec period{{0, kPublishPeriodNs}, {0, kPublishPeriodNs}};
    if (timer)
      ::timerfd_settime(timer.get(), 0, &period, nullptr);
  }
  if ((setup.on_interval || setup.hand_over_at_first_interval) && setup.interval_ms > 0) {
    interval.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    const long ms = setup.interval_ms;
    itimerspec period{{ms / 1000, (ms % 1000) * 1'000'000}, {ms / 1000, (ms % 1000) * 1'000'000}};
    if (setup.first_interval_at_once)
      period.it_value = {0, 1};
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
    if (interval && (fds[3].revents & POLLIN)) {
      uint64_t ticks;
      (void)!::read(interval.get(), &ticks, sizeof ticks);
      if (setup.hand_over_at_first_interval) {
        // Freed, not left to the next program: it would claim entries of
        // its own beside these, locked by the same open file.
        if (publisher)
          setup.activity_table = publisher->release();
        return MonitorEnd::handed_over;
      }
      setup.on_interval();
    }
  }
  if (publisher)
    publisher->clear();
  if (setup.cleanup)
    setup.cleanup();
  return MonitorEnd::container_ended;
}

void spawn_monitor(MonitorSetup setup) {
  start_grandchild([&] {
    become_daemon({setup.listener.get(), setup.region.get(), setup.activity_table.get(), setup.watched.get()});
    ::prctl(PR_SET_NAME, setup.name.c_str(), 0, 0, 0);
    run_monitor(setup);
  });
}

namespace {

// What exec_monitor's child and detach_in_place do to the calling process,
// in system calls alone (no allocation: the child shares its parent's
// memory): its own session, in /, umask 022, every handler back to the
// default but SIGPIPE's (ignored; an ignored signal stays ignored across
// exec), stdio on /dev/null, `sources` at kShimListenerFd.. (-1: that one
// closed) without close-on-exec, every descriptor above them closed. The
// signal mask is left alone. 0, or the errno of the step that failed.
int detach_with_fds_at_fixed_numbers(const int (&sources)[4]) {
  ::setsid();
  if (::chdir("/") != 0)
    return errno;
  ::umask(022);
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP)
      ::signal(s, s == SIGPIPE ? SIG_IGN : SIG_DFL);
  // Above every number they go to first, so that no move overwrites another
  // still to be moved; the copies are close-on-exec.
  constexpr int kTargets[4] = {kShimListenerFd, kShimRegionFd, kShimWatchedFd, kShimActivityFd};
  int high[4];
  for (int i = 0; i < 4; i++)
    if ((high[i] = sources[i] < 0 ? -1 : ::fcntl(sources[i], F_DUPFD_CLOEXEC, 64)) < 0 && sources[i] >= 0)
      return errno;
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0)
    return errno;
  for (int i = 0; i < 3; i++) // null_fd itself is one of them when this process had no stdio
    if (i == null_fd ? ::fcntl(i, F_SETFD, 0) < 0 : ::dup2(null_fd, i) < 0)
      return errno;
  for (int i = 0; i < 4; i++) {
    if (high[i] >= 0 && ::dup2(high[i], kTargets[i]) < 0) // dup2 clears close-on-exec on the copy
      return errno;
    if (high[i] < 0)
      ::close(kTargets[i]);
  }
  if (::syscall(SYS_close_range, kShimActivityFd + 1, ~0U, 0) != 0) {
    // kernels before 5.9
    rlimit files{};
    const rlim_t top = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY ? files.rlim_cur : 65536;
    for (rlim_t fd = kShimActivityFd + 1; fd < top; fd++)
      ::close(static_cast<int>(fd));
  }
  return 0;
}

struct MonitorExec {
  const char *path;
  char *const *argv;
  char *const *envp;
  int sources[4]; // moved to kShimListenerFd, kShimRegionFd, kShimWatchedFd, kShimActivityFd; -1: none
  int error;      // errno of the step that failed, read by the parent
};

// The child of spawn_sharing_memory: detached, then the exec.
int monitor_exec_child(void *arg) {
  auto *m = static_cast<MonitorExec *>(arg);
  if ((m->error = detach_with_fds_at_fixed_numbers(m->sources)) != 0)
    ::_exit(127);
  ::setpriority(PRIO_PROCESS, 0, kMonitorStartNice);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(m->path, m->argv, m->envp);
  m->error = errno;
  ::_exit(127);
  return 127;
}

// gpuslice-shim's command line for `setup`'s descriptors at their fixed
// numbers, then `args`.
std::vector<std::string> monitor_argv(const MonitorSetup &setup, const std::string &program,
                                      const std::vector<std::string> &args) {
  std::vector<std::string> argv{program, "--listener", std::to_string(kShimListenerFd), "--region",
                                std::to_string(kShimRegionFd), "--watched", std::to_string(kShimWatchedFd)};
  if (setup.activity_table)
    argv.insert(argv.end(), {"--activity", std::to_string(kShimActivityFd)});
  if (!setup.pid_file.empty())
    argv.insert(argv.end(), {"--pid-file", setup.pid_file});
  if (setup.init_pid > 0)
    argv.insert(argv.end(), {"--init", std::to_string(setup.init_pid)});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The monitor's whole environment: nothing of the caller's (containerd's,
// or a person's shell) reaches a process that runs as root for the
// container's life.
char *const kMonitorEnv[] = {const_cast<char *>("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nullptr};

} // namespace

pid_t exec_monitor(MonitorSetup setup, const std::string &program, const std::vector<std::string> &args) {
  std::vector<std::string> argv = monitor_argv(setup, program, args);
  std::vector<char *> c_argv = c_strings(argv);
  MonitorExec m{program.c_str(), c_argv.data(), kMonitorEnv,
                {setup.listener.get(), setup.region.get(), setup.watched.get(), setup.activity_table.get()}, 0};
  // Not a double fork: it would copy this process twice (gpuslice-runtime
  // is large), and buys nothing here, as a process that exits leaves its
  // children to the nearest subreaper (containerd's shim) or init either
  // way. The monitor is this process's child until it exits; no caller
  // waits for any child.
  sigset_t caller_mask;
  const pid_t monitor = spawn_sharing_memory(monitor_exec_child, &m, caller_mask);
  if (monitor < 0)
    throw system_error("cannot start the container's monitor " + quote(program));
  if (m.error != 0) { // it _exited before or at the exec
    while (::waitpid(monitor, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw system_error("cannot start the container's monitor " + quote(program), m.error);
  }
  return monitor;
}

void detach_in_place(MonitorSetup &setup) {
  UniqueFd *const fds[4] = {&setup.listener, &setup.region, &setup.watched, &setup.activity_table};
  constexpr int kTargets[4] = {kShimListenerFd, kShimRegionFd, kShimWatchedFd, kShimActivityFd};
  const int sources[4] = {fds[0]->get(), fds[1]->get(), fds[2]->get(), fds[3]->get()};
  if (const int error = detach_with_fds_at_fixed_numbers(sources); error != 0)
    throw system_error("cannot detach the container's monitor", error);
  for (int i = 0; i < 4; i++) { // the old numbers are closed (or are the new ones)
    fds[i]->release();
    if (sources[i] >= 0)
      fds[i]->reset(kTargets[i]);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

int exec_in_place(const MonitorSetup &setup, const std::string &program, const std::vector<std::string> &args) {
  std::vector<std::string> argv = monitor_argv(setup, program, args);
  std::vector<char *> c_argv = c_strings(argv);
  const int nice = ::getpriority(PRIO_PROCESS, 0);
  ::setpriority(PRIO_PROCESS, 0, kMonitorStartNice);
  ::execve(program.c_str(), c_argv.data(), kMonitorEnv);
  const int error = errno;
  ::setpriority(PRIO_PROCESS, 0, nice);
  return error;
}

} // namespace gpuslice::shim
