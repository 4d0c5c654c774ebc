#include "gpuslice/hook/sandbox.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/shim/loop.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace gpuslice::hook {

namespace {

// What ldconfig and programs like it call: files, directories, links,
// memory, signals, time, their own exit. Everything else fails with EPERM.
constexpr const char *kAllowed[] = {
    "read", "write", "pread64", "pwrite64", "readv", "writev", "open", "openat", "close", "lseek", "fstat",
    "newfstatat", "stat", "lstat", "statx", "access", "faccessat", "faccessat2", "getdents64", "readlink",
    "readlinkat", "symlink", "symlinkat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir",
    "mkdirat", "rmdir", "chmod", "fchmod", "fchmodat", "fsync", "fdatasync", "ftruncate", "fcntl", "dup", "dup2",
    "dup3", "getcwd", "chdir", "fchdir", "umask", "mmap", "munmap", "mremap", "mprotect", "madvise", "brk",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "exit", "exit_group", "getpid", "gettid",
    "getuid", "geteuid", "getgid", "getegid", "uname", "arch_prctl", "set_tid_address", "set_robust_list", "rseq",
    "prlimit64", "getrlimit", "setrlimit", "getrandom", "futex", "clock_gettime", "clock_nanosleep", "nanosleep", "time",
    "gettimeofday", "capget", "sched_getaffinity", "sched_yield",
};

// What could reach outside the sandbox: the process is killed on the spot.
constexpr const char *kKilled[] = {
    "mount", "umount2", "pivot_root", "chroot", "setns", "unshare", "ptrace", "process_vm_readv",
    "process_vm_writev", "bpf", "perf_event_open", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at", "fsopen",
    "fsmount", "fsconfig", "move_mount", "open_tree", "mount_setattr", "userfaultfd", "reboot", "swapon",
    "swapoff", "syslog", "iopl", "ioperm", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
    "setgroups", "capset", "acct", "quotactl", "lookup_dcookie", "vhangup", "personality",
};

[[noreturn]] void die(int err_fd, const std::string &what, int err = errno) {
  const std::string line = what + ": " + std::strerror(err) + "\n";
  [[maybe_unused]] ssize_t n = ::write(err_fd, line.data(), line.size());
  ::_exit(125);
}

void load_filter(int program, int err_fd) {
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (!ctx)
    die(err_fd, "cannot make a seccomp filter", ENOMEM);
  auto rule = [&](uint32_t action, const char *name) {
    const int nr = ::seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
      return; // not on this architecture
    if (::seccomp_rule_add(ctx, action, nr, 0) != 0)
      die(err_fd, std::string("cannot add ") + name + " to the seccomp filter", EINVAL);
  };
  for (const char *name : kAllowed)
    rule(SCMP_ACT_ALLOW, name);
  for (const char *name : kKilled)
    rule(SCMP_ACT_KILL_PROCESS, name);
  // The one exec: of this very descriptor.
  const scmp_arg_cmp same_fd{0, SCMP_CMP_EQ, static_cast<scmp_datum_t>(program), 0};
  if (::seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(execveat), 1, &same_fd) != 0)
    die(err_fd, "cannot add execveat to the seccomp filter", EINVAL);
  rule(SCMP_ACT_KILL_PROCESS, "execve");
  const int rc = ::seccomp_load(ctx);
  ::seccomp_release(ctx);
  if (rc != 0)
    die(err_fd, "cannot load the seccomp filter", -rc);
}

void drop_capabilities(const std::vector<int> &keep, int err_fd) {
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap)
    if (std::find(keep.begin(), keep.end(), cap) == keep.end() && ::cap_drop_bound(static_cast<cap_value_t>(cap)) != 0 &&
        errno != EINVAL)
      die(err_fd, "cannot drop capability " + std::to_string(cap) + " from the bounding set");
  cap_t caps = ::cap_init(); // all clear
  if (!caps)
    die(err_fd, "cannot make a capability set");
  std::vector<cap_value_t> values(keep.begin(), keep.end());
  if (!values.empty() &&
      (::cap_set_flag(caps, CAP_PERMITTED, static_cast<int>(values.size()), values.data(), CAP_SET) != 0 ||
       ::cap_set_flag(caps, CAP_EFFECTIVE, static_cast<int>(values.size()), values.data(), CAP_SET) != 0))
    die(err_fd, "cannot fill a capability set");
  if (::cap_set_proc(caps) != 0)
    die(err_fd, "cannot drop capabilities");
  ::cap_free(caps);
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    die(err_fd, "cannot clear ambient capabilities");
}

void limit(int resource, rlim_t value, int err_fd) {
  const rlimit r{value, value};
  if (::setrlimit(resource, &r) != 0)
    die(err_fd, "cannot set resource limit " + std::to_string(resource));
}

// The program, pid 1 of its own namespaces. Never returns.
[[noreturn]] void exec_confined(const SandboxedRun &how, int program, const std::vector<std::string> &argv,
                                int err_fd) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
    die(err_fd, "cannot tie the sandbox to its parent");
  const int root = ::open(how.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    die(err_fd, "cannot open the root " + quote(how.root));
  if (::fchdir(root) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0)
    die(err_fd, "cannot change root to " + quote(how.root));
  ::close(root);
  limit(RLIMIT_CPU, 30, err_fd);
  limit(RLIMIT_FSIZE, rlim_t(256) << 20, err_fd);
  limit(RLIMIT_NOFILE, 256, err_fd);
  limit(RLIMIT_CORE, 0, err_fd);
  drop_capabilities(how.keep_caps, err_fd);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    die(err_fd, "cannot set no_new_privs");
  std::vector<char *> args;
  std::vector<std::string> copy = argv;
  for (auto &a : copy)
    args.push_back(a.data());
  args.push_back(nullptr);
  char *no_env[] = {nullptr};
  load_filter(program, err_fd);
  // The address space last: nothing of this process allocates after it (a
  // sanitizer's allocator would not fit).
  limit(RLIMIT_AS, rlim_t(2) << 30, err_fd);
  ::syscall(SYS_execveat, program, "", args.data(), no_env, AT_EMPTY_PATH);
  die(err_fd, "cannot execute the program");
}

// The forked child: namespaces, then the program as its child (pid 1 of
// the new PID namespace), whose end it reports as its own.
[[noreturn]] void sandbox_child(const SandboxedRun &how, int mount_ns, int program,
                                const std::vector<std::string> &argv, int err_fd) {
  if (mount_ns >= 0 && ::setns(mount_ns, CLONE_NEWNS) != 0)
    die(err_fd, "cannot enter the container's mount namespace");
  if (::unshare(CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET) != 0)
    die(err_fd, "cannot make the sandbox's namespaces");
  const pid_t inner = ::fork();
  if (inner < 0)
    die(err_fd, "cannot fork the sandboxed program");
  if (inner == 0)
    exec_confined(how, program, argv, err_fd);
  int status = 0;
  while (::waitpid(inner, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) { // report it the same way: die by it, core off
    const rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
}

} // namespace

UniqueFd open_static_executable(const std::string &path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    throw system_error("cannot open " + quote(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
    throw Error(quote(path) + " is not an executable file");
  Elf64_Ehdr header{};
  if (::pread(fd.get(), &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      (header.e_type != ET_EXEC && header.e_type != ET_DYN) || header.e_phentsize != sizeof(Elf64_Phdr) ||
      header.e_phnum > 256)
    throw Error(quote(path) + " is not a 64-bit ELF executable");
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (::pread(fd.get(), &ph, sizeof ph, static_cast<off_t>(header.e_phoff + i * sizeof ph)) != sizeof ph)
      throw Error("cannot read the program headers of " + quote(path));
    if (ph.p_type == PT_INTERP)
      throw Error(quote(path) + " is dynamically linked: only a static program runs inside a container's root");
  }
  return fd;
}

SandboxResult run_sandboxed(const SandboxedRun &how, int program, const std::vector<std::string> &argv) {
  UniqueFd mount_ns;
  if (how.mount_ns_of > 0) {
    mount_ns = with_context("the container's init", [&] { return shim::open_pidfd(how.mount_ns_of); });
  }
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0)
    throw system_error("cannot make a pipe");
  UniqueFd err_read(err[0]), err_write(err[1]);
  const pid_t child = ::fork();
  if (child < 0)
    throw system_error("cannot fork");
  if (child == 0) {
    err_read.reset();
    const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(devnull, 1) < 0 || ::dup2(err_write.get(), 2) < 0)
      ::_exit(125);
    sandbox_child(how, mount_ns.get(), program, argv, 2);
  }
  err_write.reset();
  // Killing the child on timeout kills the program too (PDEATHSIG).
  return wait_for_child(child, err_read.get(), how.timeout_s);
}

} // namespace gpuslice::hook
