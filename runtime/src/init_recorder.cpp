// The create of a container with limits, without running runc as a child
// (init_recorder.hpp's exec_recording_init). One without limits needs no
// process of ours once runc is exec'd (exec_create).
//
// Why: runc as a child puts one more sleep and wake-up, and this process's
// exit, between runc's exit and the caller's (dear where waking an idle
// vCPU is slow, as on a small VM). Here the process that
// records the init is a second one, the recorder, made with CLONE_VM: it
// costs no copy of this large static process's page tables, and once this process
// has exec'd runc the old memory is the recorder's alone. It wakes when runc
// exits, at the same time as the caller, and records the init on the other
// CPU while the caller goes on. It then becomes the container's monitor
// (MonitorInPlace, below).
//
// Until runc has exited the recorder shares this process's memory, its
// thread pointer and errno included, with a process that is still running:
// it makes raw system calls only, on its own stack. After that it is a
// normal single-threaded process of its own, in the memory this one left
// at the exec (no lock held). When this process died before the exec
// instead (a kill -9 from a caller that gave up, or an exec that failed),
// its memory may be half-written: the recorder only exits, and the state
// dir, whose creator it was, is stale and collected like any other.
#include "gpuslice/runtime/init_recorder.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/common/raw_syscall.h"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/create/monitor_setup.hpp"
#include "gpuslice/runtime/low_level.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpuslice::runtime {

namespace {

// What runs before the recorder's wait ends is not instrumented: ASan's
// checks may call into its runtime, whose state this process shares then.
#define GPUSLICE_RAW_ONLY __attribute__((no_sanitize_address))

// A system call that leaves errno alone (the recorder's errno is this
// process's until runc exits): the result, or -errno.
GPUSLICE_RAW_ONLY long raw_syscall(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
#ifdef GS_HAVE_RAW_SYSCALL
  return gs_raw_syscall(n, a, b, c, d, e);
#else
  // Elsewhere libc's wrapper: errno may be written under this process.
  const long ret = ::syscall(n, a, b, c, d, e);
  return ret < 0 ? -errno : ret;
#endif
}

// What the recorder needs, copied before it starts: the caller's strings
// may be gone by the time it reads them (an exec that failed unwinds).
struct Recorder {
  std::string runtime;
  std::vector<std::string> delete_args; // runc delete --force ID, same globals
  std::vector<std::string> state_args;  // runc state ID
  std::string state_dir;
  std::string id;
  std::string pid_file;
  std::string bundle; // as given ("" for the cwd, which the recorder shares)
  std::string log_path, log_format;
  std::optional<create::PendingMonitor> monitor; // started once the init is recorded (set once the recorder runs)
  state::ProcessId creator; // this process, then runc under the same pid
  int creator_pidfd = -1;
  std::string dir_path;
  int dir_fd = -1; // the state dir, open and locked (flock): this process's copy, the recorder's after the clone
  sigset_t caller_mask;
  std::atomic<bool> exec_started{false}; // this process is in its execve of runc
};

// No fd the caller gave this process stays open in the recorder: a pipe's
// reader (containerd reading runc's output) waits for every writer. The
// caller's are those without close-on-exec, runc's to inherit; this
// process's own (log, pidfd) all have it.
GPUSLICE_RAW_ONLY void drop_callers_files() {
  const long null = raw_syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/dev/null"), O_RDWR | O_CLOEXEC);
  for (long fd = 0; fd < 3; ++fd) {
    if (null == fd)
      raw_syscall(SYS_fcntl, fd, F_SETFD, 0);
    else if (null >= 0)
      raw_syscall(SYS_dup3, null, fd, 0);
    else
      raw_syscall(SYS_close, fd);
  }
  if (null > 2)
    raw_syscall(SYS_close, null);
  const long dir = raw_syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/fd"),
                               O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return;
  alignas(8) char buf[2048];
  long n;
  while ((n = raw_syscall(SYS_getdents64, dir, reinterpret_cast<long>(buf), sizeof buf)) > 0) {
    for (long at = 0; at < n;) {
      // struct linux_dirent64: d_ino 8, d_off 8, d_reclen 2, d_type 1, d_name
      unsigned short reclen;
      std::memcpy(&reclen, buf + at + 16, sizeof reclen);
      const char *name = buf + at + 19;
      at += reclen;
      long fd = 0;
      if (*name < '0' || *name > '9')
        continue;
      for (; *name >= '0' && *name <= '9'; ++name)
        fd = fd * 10 + (*name - '0');
      if (fd > 2 && fd != dir && (raw_syscall(SYS_fcntl, fd, F_GETFD) & FD_CLOEXEC) == 0)
        raw_syscall(SYS_close, fd);
    }
  }
  raw_syscall(SYS_close, dir);
}

// `me`: the recorder, the state dir's creator.
void fail_closed(const Recorder &r, const state::ContainerDir &dir, const std::optional<state::ProcessId> &me,
                 const std::string &message) {
  // The pid file named a process this create's runc started: the container is ours.
  (void)run_runtime(r.runtime, r.delete_args, ChildEnds::on_its_own);
  const std::string shown =
      "cannot record the init of container " + quote(r.id) + " or start its monitor (deleted again): " + message;
  write_runtime_log(r.log_path, r.log_format, "gpuslice: " + shown);
  log::line("error", shown);
  // The dir stays, with the reason, for `start` to refuse with
  // (verb_monitored.cpp); it is stale as soon as this process, its
  // creator, exits, and goes with the delete that follows.
  try {
    try {
      state::update_record(dir, [&](state::Record &record) {
        record.status = state::Status::failed;
        record.failure = shown;
      });
    } catch (const Error &) {
      // A record this create cannot read in the dir it made, and holds
      // locked: replaced by one that says why.
      state::Record record;
      record.creator = me;
      record.status = state::Status::failed;
      record.failure = shown;
      state::write_record(dir.fd.get(), record, dir.path);
    }
  } catch (const Error &) {
    state::remove_container_dir(r.state_dir, r.id); // then without the reason: start finds no container
  }
}

// The same directory, by its resolved path ("" when it has none).
std::string resolved(const std::string &path) {
  char buf[PATH_MAX];
  return ::realpath(path.empty() ? "." : path.c_str(), buf) ? std::string(buf) : std::string();
}

// The init's pid as `runtime state ID` shows it, when that container is
// this create's (its bundle is ours: an id of another bundle's container
// made runc fail): for a create whose pid file is missing (runc failed, or
// someone removed it). Start times alone cannot tell: they count 10 ms
// ticks, and crun creates a container in less.
std::optional<int> init_pid_from_runtime_state(const Recorder &r) {
  UniqueFd out(::memfd_create("runtime-state", MFD_CLOEXEC));
  if (!out || ::dup2(out.get(), STDOUT_FILENO) < 0 || run_runtime(r.runtime, r.state_args) != 0)
    return std::nullopt;
  std::vector<char> buf(64 * 1024);
  const ssize_t n = ::pread(out.get(), buf.data(), buf.size(), 0);
  if (n <= 0)
    return std::nullopt;
  nlohmann::json state;
  try {
    state = parse_json(std::string_view(buf.data(), static_cast<size_t>(n)));
  } catch (const Error &) {
    return std::nullopt;
  }
  if (!state.is_object() || !state.contains("pid") || !state["pid"].is_number_integer() || state["pid"].get<long>() <= 0 ||
      state["pid"].get<long>() > INT32_MAX || !state.contains("bundle") || !state["bundle"].is_string())
    return std::nullopt;
  const std::string ours = resolved(r.bundle);
  if (ours.empty() || resolved(state["bundle"].get<std::string>()) != ours)
    return std::nullopt;
  return static_cast<int>(state["pid"].get<long>());
}

// The monitor a create's init recorder becomes, rather than exec
// gpuslice-shim at once: it runs the monitor's loop itself, in the memory
// the create left it, until the first interval, and only then execs
// gpuslice-shim in its place (same pid: the record stays true) to check the
// driver's accounting, telling it which processes took the region
// meanwhile. Why: a container starts just after its create returns, and an
// exec of gpuslice-shim then (page tables, ld.so, libc and libstdc++
// set-up) is paid by the container's start and by the next container's
// create; an interval later it competes with nothing, and a container that
// ends within the interval never pays it. Until the exec, `ps` shows
// gpuslice-runtime's command line under the name gpuslice-shim.
struct MonitorInPlace {
  create::PendingMonitor monitor;
  state::ProcessId creator; // of the state dir, which it removes at the end
  std::string state_dir, id;
};

// Under the lock of `dir`, where the init is recorded: watches the init,
// takes the name gpuslice-shim (comm) and records this process as the
// container's monitor. Throws Error.
MonitorInPlace take_monitor(create::PendingMonitor monitor, const state::ContainerDir &dir, const std::string &state_dir,
                            const std::string &id) {
  const state::Record record = state::read_record(dir.fd.get(), dir.path);
  if (!record.init)
    throw Error("no init is recorded in " + quote(dir.path));
  if (!record.creator)
    throw Error("no creator is recorded in " + quote(dir.path));
  const auto self = state::process_id(static_cast<int>(::getpid()));
  if (!self)
    throw Error("cannot read this process's start time from /proc");
  create::watch_init(monitor.setup, *record.init);
  // The dir it removes at the end is its creator's, as gpuslice-shim's
  // --creator says.
  create::pass_creator(monitor.args, record.creator);
  // Named before it is recorded: whoever finds the record finds the name.
  ::prctl(PR_SET_NAME, "gpuslice-shim", 0, 0, 0);
  state::update_record(dir, [&](state::Record &r) { r.monitor = *self; });
  return {std::move(monitor), *record.creator, state_dir, id};
}

// What gpuslice-shim would say of NVML it could not load, where it would.
void say_in_shim_log(const std::string &log_file, const std::string &line) {
  if (log_file.empty())
    return;
  if (FILE *log = std::fopen(log_file.c_str(), "ae")) {
    std::fprintf(log, "%s\n", line.c_str());
    std::fclose(log);
  }
}

// The value after `flag` in `args`, or "".
std::string arg_after(const std::vector<std::string> &args, const std::string &flag) {
  auto at = std::find(args.begin(), args.end(), flag);
  return at == args.end() || std::next(at) == args.end() ? std::string() : *std::next(at);
}

// Once the lock is released: detaches this process (its log let go) and
// runs the loop until the container ends, exec'ing gpuslice-shim at the
// first interval. Returns when the container has ended and its state dir
// is removed; a failed exec is one line in gpuslice-shim's log file (when
// there is one), and the loop goes on without the driver's accounting, as
// gpuslice-shim's does without NVML.
void run_monitor_in_place(MonitorInPlace in_place) {
  create::PendingMonitor &m = in_place.monitor;
  shim::MonitorSetup &setup = m.setup;
  log::close();
  shim::detach_in_place(setup);
  std::set<int> connected;
  setup.on_connect = [&connected](int pid) { connected.insert(pid); };
  setup.cleanup = [&in_place] {
    try {
      state::remove_container_dir(in_place.state_dir, in_place.id, in_place.creator);
    } catch (const Error &) {
      // the next create, or the delete that follows, removes it
    }
  };
  setup.hand_over_at_first_interval = true;
  while (shim::run_monitor(setup) == shim::MonitorEnd::handed_over) {
    std::vector<std::string> args = m.args;
    args.insert(args.end(), {"--connected", create::still_running(connected)});
    const int error = shim::exec_in_place(setup, m.program, args);
    say_in_shim_log(arg_after(m.args, "--log-file"),
                    "gpuslice-shim container " + in_place.id + ": cannot execute " + quote(m.program) + ": " +
                        std::strerror(error) + ": GPU memory is enforced by the interposer alone");
    setup.hand_over_at_first_interval = false;
  }
}

// The monitor this process is to become, once the lock is let go: taken
// here, under it (a restart that saw the init but no monitor would start a
// second one). `dir`: the state dir as the create left it, locked.
std::optional<MonitorInPlace> record_or_clean_up(Recorder &r, const state::ContainerDir &dir) {
  const auto me = state::process_id(static_cast<int>(::getpid()));
  // The init is a process started after runc (this process's pid): a pid
  // file, or a container of this id, naming an older one is another
  // container's, and this create failed (runc writes the pid file last, once
  // the container exists, and removes the container when it cannot). Its
  // error went to the caller.
  auto pid = shim::read_pid_file(r.pid_file);
  if (!pid)
    pid = init_pid_from_runtime_state(r);
  const auto init = pid ? state::process_id(*pid) : std::nullopt;
  if (!init || init->start_time < r.creator.start_time) {
    state::remove_container_dir(r.state_dir, r.id, me);
    return std::nullopt;
  }
  try {
    state::record_init(dir, r.id, *pid);
    return take_monitor(std::move(*r.monitor), dir, r.state_dir, r.id);
  } catch (const Error &e) {
    fail_closed(r, dir, me, e.message());
  }
  return std::nullopt;
}

GPUSLICE_RAW_ONLY int record_after_runtime(void *arg) {
  auto &r = *static_cast<Recorder *>(arg);
  drop_callers_files();
  struct pollfd exited {r.creator_pidfd, POLLIN, 0};
  for (;;) {
    const long rc = raw_syscall(SYS_ppoll, reinterpret_cast<long>(&exited), 1, 0, 0, 8);
    if (rc == 1 && (exited.revents & (POLLIN | POLLHUP)))
      break;
    if (rc == 1 || (rc < 0 && rc != -EINTR))
      raw_syscall(SYS_exit_group, 0); // cannot wait: the dir, its creator gone, is collected as stale
  }
  // The caller's process is gone: from here on this memory is ours.
  if (r.exec_started.load(std::memory_order_acquire)) {
    ::sigprocmask(SIG_SETMASK, &r.caller_mask, nullptr);
    std::optional<MonitorInPlace> monitor;
    {
      // This process's copy of the create's descriptor, which holds the
      // lock: closed as this scope ends, once decided (a start waiting on
      // it goes on then).
      const state::ContainerDir dir{r.dir_path, UniqueFd(r.dir_fd)};
      try {
        monitor = record_or_clean_up(r, dir);
      } catch (const std::exception &e) {
        log::line("error", "container " + r.id + ": " + e.what());
      }
    }
    // The create's tidying, left to this process (the bundle is as given:
    // this process has a copy of the caller's cwd, taken at the clone).
    tidy_bundle(r.bundle);
    log::flush();
    if (monitor) {
      try {
        run_monitor_in_place(std::move(*monitor));
      } catch (const std::exception &) {
        // Detaching failed (its log let go already: said nowhere). The
        // record names a process that goes now, and the next call that
        // finds it gone (`start`, first) starts gpuslice-shim, or fails.
      }
    }
  }
  raw_syscall(SYS_exit_group, 0);
  return 0;
}

} // namespace

void exec_recording_init(const std::string &runtime, const CommandLine &cl, const Config &config,
                         state::ContainerDir state_dir, const std::string &pid_file,
                         create::PendingMonitor &monitor) {
  static Recorder r; // outlives this frame in the recorder's eyes
  const auto me = state::process_id(static_cast<int>(::getpid()));
  // Said by the create itself while it still can: the monitor is started
  // only after it has returned.
  if (::access(monitor.program.c_str(), X_OK) != 0) {
    const Error e = system_error("cannot start the container's monitor " + quote(monitor.program));
    state::remove_container_dir(config.state_dir, cl.container_id, me);
    throw e;
  }
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  if (pidfd && pidfd.get() <= STDERR_FILENO) // the recorder points 0-2 at /dev/null
    pidfd.reset(::fcntl(pidfd.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
  if (!me || !pidfd)
    return; // kernel before 5.3: runc as a child
  r.runtime = runtime;
  r.delete_args = cl.with_global_flags({"delete", "--force", cl.container_id});
  r.state_args = cl.with_global_flags({"state", cl.container_id});
  r.state_dir = config.state_dir;
  r.id = cl.container_id;
  r.pid_file = pid_file;
  r.bundle = cl.bundle;
  r.log_path = cl.log_path;
  r.log_format = cl.log_format;
  r.creator = *me;

  // Its own stack, with a guard page below it.
  constexpr std::size_t kStackSize = 256 * 1024, kGuard = 4096;
  void *stack = ::mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED)
    return;
  if (::mprotect(stack, kGuard, PROT_NONE) != 0) {
    ::munmap(stack, kStackSize);
    return;
  }
  // Held by the recorder (its copy of this fd) until the create is decided:
  // a create of the same id waits for it (state::create_container_dir).
  // Released here as this returns or throws, and in runc as it is exec'd.
  state::lock(state_dir);
  r.creator_pidfd = pidfd.get();
  r.dir_path = state_dir.path;
  r.dir_fd = state_dir.fd.get();
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &r.caller_mask); // no handler runs in the recorder
  // Exit signal 0: runc, its parent until it exits, hears nothing of it.
  const pid_t recorder = ::clone(record_after_runtime, static_cast<char *>(stack) + kStackSize, CLONE_VM, &r);
  const int clone_errno = errno;
  ::sigprocmask(SIG_SETMASK, &r.caller_mask, nullptr);
  if (recorder < 0) {
    ::munmap(stack, kStackSize);
    errno = clone_errno;
    return;
  }
  r.monitor = std::move(monitor); // the recorder's to start
  std::optional<state::ProcessId> recorder_id = state::process_id(recorder);
  if (!recorder_id)
    throw Error("cannot read the start time of the init recorder (pid " + std::to_string(recorder) + ")");
  // The dir lives while the recorder does, and then while the init does.
  state::hand_over_creation(state_dir, *me, *recorder_id);
  // Nothing allocates between the flag and the exec: the recorder may take
  // this memory over as it is then.
  auto argv = argv_of(runtime, cl.args);
  r.exec_started.store(true, std::memory_order_release);
  ::execv(runtime.c_str(), argv.data());
  r.exec_started.store(false, std::memory_order_release);
  throw system_error("cannot execute " + quote(runtime));
}

void exec_create(const std::string &runtime, const CommandLine &cl, const Config &config,
                 state::ContainerDir state_dir) {
  const auto me = state::process_id(static_cast<int>(::getpid()));
  state_dir = {}; // closed: nothing holds it open while the container lives
  try {
    exec_runtime(runtime, cl.args);
  } catch (const Error &) {
    state::remove_container_dir(config.state_dir, cl.container_id, me);
    throw;
  }
}

int create_recording_init(const std::string &runtime, const CommandLine &cl, const Config &config,
                          const std::string &pid_file, create::PendingMonitor monitor) {
  const auto me = state::process_id(static_cast<int>(::getpid()));
  const int status = run_runtime(runtime, cl.args, ChildEnds::with_parent);
  if (status != 0) {
    // the dir this process made, not one a later create of the id made since
    state::remove_container_dir(config.state_dir, cl.container_id, me);
    return status;
  }
  try {
    const auto init_pid = shim::read_pid_file(pid_file);
    if (!init_pid)
      throw Error("the runtime's pid file " + quote(pid_file) + " is missing or holds no pid");
    const auto dir = state::open_container_dir(config.state_dir, cl.container_id);
    if (!dir)
      throw Error("its state dir is gone");
    // Under the dir's lock from before the record: a restart that saw the
    // init but no monitor yet would start a second one.
    state::lock(*dir);
    state::record_init(*dir, cl.container_id, *init_pid);
    create::launch_monitor(std::move(monitor), *dir);
  } catch (const Error &e) {
    (void)run_runtime(runtime, cl.with_global_flags({"delete", "--force", cl.container_id}), ChildEnds::with_parent);
    state::remove_container_dir(config.state_dir, cl.container_id, me);
    throw Error("cannot record the init of container " + quote(cl.container_id) +
                " or start its monitor (deleted again): " + e.message());
  }
  return 0;
}

} // namespace gpuslice::runtime
