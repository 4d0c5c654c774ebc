/* gpuslice-runtime's ELF entry point (front.h): before the C library, raw
 * system calls only. It reads the config, its record and, for a create,
 * config.json, and where front.c finds nothing for the full program to do
 * it execs the runtime with the arguments untouched. Otherwise it closes
 * what it opened, leaves the stack as the kernel made it and jumps to
 * glibc's _start.
 *
 * Built freestanding: no stack protector (its canary lives in TLS, which
 * glibc has not set up), no call the compiler might invent (memcpy: glibc's
 * are IFUNCs, unresolved this early), no sanitizer, no table of pointers
 * (nothing has relocated them yet). A test checks that the object
 * references nothing but _start and front.c's functions. */
#include "command_line.h"
#include "front.h"
#include "gpuslice/common/build_id.h"
#include "gpuslice/common/raw_syscall.h"
#include "gpuslice/state/names.h"

#include <asm/unistd.h>
#include <linux/auxvec.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/stat.h>

#ifndef GPUSLICE_DEFAULT_CONFIG
#error "GPUSLICE_DEFAULT_CONFIG must name the installed config file"
#endif

/* The kernel enters with the stack pointer at argc; both the stack and the
 * register glibc's _start reads (rtld_fini: %rdx, x0) go to it unchanged. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl gpuslice_runtime_entry\n"
        ".type gpuslice_runtime_entry,@function\n"
        "gpuslice_runtime_entry:\n"
        "  endbr64\n"
        "  mov %rsp, %rbx\n"
        "  mov %rdx, %r12\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call gs_front\n"
        "  mov %r12, %rdx\n"
        "  mov %rbx, %rsp\n"
        "  xor %ebx, %ebx\n"
        "  xor %r12d, %r12d\n"
        "  jmp _start\n"
        ".size gpuslice_runtime_entry, .-gpuslice_runtime_entry\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl gpuslice_runtime_entry\n"
        ".type gpuslice_runtime_entry,%function\n"
        "gpuslice_runtime_entry:\n"
        "  mov x19, sp\n"
        "  mov x20, x0\n"
        "  mov x0, sp\n"
        "  bl gs_front\n"
        "  mov x0, x20\n"
        "  mov sp, x19\n"
        "  mov x19, xzr\n"
        "  mov x20, xzr\n"
        "  b _start\n"
        ".size gpuslice_runtime_entry, .-gpuslice_runtime_entry\n");
#else
#error "the front is written for x86-64 and aarch64 (runtime/CMakeLists.txt)"
#endif

static int sys_openat(int dir, const char *path, int flags) {
  return (int)gs_raw_syscall(__NR_openat, dir, (long)path, flags, 0, 0);
}
static void sys_close(int fd) { gs_raw_syscall(__NR_close, fd, 0, 0, 0, 0); }
static long sys_statx(int dir, const char *path, int flags, struct statx *st) {
  return gs_raw_syscall(__NR_statx, dir, (long)path, flags, STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO, (long)st);
}

/* What a call reads, one after the other. Static: the stack stays as small
 * as glibc expects it, and only the pages touched are faulted in. */
static struct {
  size_t used;
  char bytes[GS_FRONT_MAX_CONFIG + 1 + GS_FRONT_MAX_RECORD + 1 + GS_FRONT_MAX_SPEC + 1];
} arena;

/* The bytes of file `name` of directory `dir` (AT_FDCWD: a path), read
 * whole into the arena: 1 and *len, 0 when there is none, -1 when it cannot
 * be (unreadable, no regular file, larger than `max`; with `root_only`,
 * writable by anyone but root: a record is trusted only as root made it). */
static int read_file(int dir, const char *name, size_t max, int root_only, char **bytes, long *len) {
  const int fd = sys_openat(dir, name, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | (root_only ? O_NOFOLLOW : 0));
  if (fd < 0)
    return fd == -ENOENT ? 0 : -1;
  struct statx st;
  char *const buf = *bytes = arena.bytes + arena.used;
  size_t got = 0;
  long n = -1;
  if (sys_statx(fd, "", AT_EMPTY_PATH, &st) == 0 && S_ISREG(st.stx_mode) &&
      (!root_only || (st.stx_uid == 0 && (st.stx_mode & 022) == 0)))
    do
      n = gs_raw_syscall(__NR_read, fd, (long)(buf + got), (long)(max + 1 - got), 0, 0);
    while (n == -EINTR || (n > 0 && (got += (size_t)n) <= max));
  sys_close(fd);
  arena.used += got + 1;
  *len = (long)got;
  return n == 0 ? 1 : -1;
}

/* The record of `config_path`, parsed, from a dir of root's alone: 0, or -1. */
static int read_record(const char *config_path, struct gs_front_record *r) {
  char name[17], *bytes;
  long len;
  struct statx st;
  gs_front_digest(config_path, gs_strlen(config_path), name);
  const int dir = sys_openat(AT_FDCWD, GS_FRONT_RECORD_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0)
    return -1;
  const int found = sys_statx(dir, "", AT_EMPTY_PATH, &st) == 0 && st.stx_uid == 0 && (st.stx_mode & 022) == 0
                        ? read_file(dir, name, GS_FRONT_MAX_RECORD, 1, &bytes, &len)
                        : -1;
  sys_close(dir);
  return found == 1 ? gs_front_parse_record(bytes, (size_t)len, r) : -1;
}

/* An executable regular file other than `self`'s, this very program's. */
static int usable(const char *path, void *self) {
  const struct statx *me = self;
  struct statx st;
  return sys_statx(AT_FDCWD, path, 0, &st) == 0 && S_ISREG(st.stx_mode) &&
         gs_raw_syscall(__NR_faccessat, AT_FDCWD, (long)path, 1 /* X_OK */, 0, 0) == 0 &&
         !(st.stx_ino == me->stx_ino && st.stx_dev_major == me->stx_dev_major && st.stx_dev_minor == me->stx_dev_minor);
}

static const char *env_value(char **envp, const char *name) {
  const size_t n = gs_strlen(name);
  for (; *envp; ++envp) /* a shorter entry differs at its NUL: no read past it */
    if (gs_bytes_equal(*envp, name, n) && (*envp)[n] == '=')
      return *envp + n + 1;
  return 0;
}

static unsigned long aux_value(const unsigned long *auxv, unsigned long type) {
  for (; auxv[0] != AT_NULL; auxv += 2)
    if (auxv[0] == type)
      return auxv[1];
  return 0;
}

/* Whether the call needs nothing of the full program: a plain verb; a verb
 * of a container without a state dir; one that only starts a monitor again
 * of a container without one (no run/ in its dir: no limits); a create or
 * run whose config.json asks for nothing. (An id that is no safe name has
 * no state dir: whatever lies at the path it makes, the full program then
 * execs the runtime.) */
static int nothing_to_do(const struct gs_call *call, const struct gs_front_record *r) {
  char path[4096], *spec;
  long spec_len;
  struct statx st;
  if (call->kind == GS_VERB_CONTAINER || call->kind == GS_VERB_MONITORED) {
    if (gs_join_path(path, sizeof path, r->state_dir, gs_strlen(r->state_dir), GS_STATE_CONTAINERS) != 0 ||
        gs_join_path(path, sizeof path, path, gs_strlen(path), call->id) != 0 ||
        (call->kind == GS_VERB_MONITORED && gs_join_path(path, sizeof path, path, gs_strlen(path), GS_STATE_RUN_DIR)))
      return 0;
    const long rc = sys_statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &st);
    return rc == -ENOENT || (rc == 0 && !S_ISDIR(st.stx_mode));
  }
  const char *const bundle = call->bundle && *call->bundle ? call->bundle : ".";
  if (call->kind == GS_VERB_BUNDLE)
    return gs_join_path(path, sizeof path, bundle, gs_strlen(bundle), "config.json") == 0 &&
           read_file(AT_FDCWD, path, GS_FRONT_MAX_SPEC, 0, &spec, &spec_len) == 1 &&
           !gs_front_spec_may_request(spec, (size_t)spec_len, r);
  return 1;
}

/* Called by the entry with the stack as the kernel made it. */
__attribute__((used)) void gs_front(long *sp) {
  const int argc = (int)sp[0];
  char **const argv = (char **)(sp + 1), **const envp = argv + argc + 1, **e = envp;
  while (*e)
    ++e;
  const unsigned long *const auxv = (const unsigned long *)(e + 1);
  /* Only for root, and never in a set-id program (whose environment is not
   * to be trusted: secure_getenv). */
  if (argc < 1 || aux_value(auxv, AT_SECURE) != 0 || aux_value(auxv, AT_EUID) != 0)
    return;
  struct gs_call call;
  gs_read_call(argc, argv, &call);
  if (call.doubt)
    return;
  const char *config_path = env_value(envp, "GPUSLICE_CONFIG");
  if (!config_path || !*config_path)
    config_path = GPUSLICE_DEFAULT_CONFIG;
  if (config_path[0] != '/')
    return;
  char *config = 0;
  long config_len = 0;
  const int found = read_file(AT_FDCWD, config_path, GS_FRONT_MAX_CONFIG, 0, &config, &config_len);
  char build_id[2 * GS_MAX_BUILD_ID + 1];
  gs_build_id((const Elf64_Phdr *)aux_value(auxv, AT_PHDR), aux_value(auxv, AT_PHNUM), build_id);
  static struct gs_front_record record;
  if (found < 0 || read_record(config_path, &record) != 0 ||
      !gs_front_record_matches(&record, build_id, config_path, found ? config : 0, (size_t)config_len) ||
      !nothing_to_do(&call, &record))
    return;
  struct statx self;
  if (sys_statx(AT_FDCWD, "/proc/self/exe", 0, &self) != 0)
    return;
  char runtime[4096];
  if (gs_find_runtime(record.runtime, record.runtimes, env_value(envp, "PATH"), runtime, sizeof runtime, usable,
                      &self) != 0)
    return; /* the full program says what it looked for */
  char *const own_name = argv[0];
  argv[0] = runtime;
  gs_raw_syscall(__NR_execve, (long)runtime, (long)argv, (long)envp, 0, 0);
  argv[0] = own_name; /* the full program says why */
}
