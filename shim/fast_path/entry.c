/* gpuslice-runtime's ELF entry point (x86-64): the fast path of fast_path.h,
 * before the C library starts. It reads only the kernel's initial stack and
 * makes raw system calls; on every doubt it closes what it opened, leaves
 * the stack as it found it and jumps to glibc's _start, so the full program
 * runs exactly as if this did not exist.
 *
 * Built freestanding: no stack protector (its canary lives in TLS, which
 * glibc has not set up), no call the compiler might invent (memcpy, strlen:
 * glibc's are IFUNCs, unresolved this early), no sanitizer. A test checks the
 * object file references nothing but _start and fast_path.c. */
#include "fast_path.h"

#include <asm/unistd.h>
#include <linux/auxvec.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/stat.h>

#ifndef __x86_64__
#error "the fast path entry is x86-64 only (shim/CMakeLists.txt)"
#endif

#ifndef GPUSLICE_DEFAULT_CONFIG
#error "GPUSLICE_DEFAULT_CONFIG must name the installed config file"
#endif

/* The kernel enters with %rsp at argc (16-byte aligned) and %rdx for _start;
 * both are handed to _start unchanged. */
__asm__(".text\n"
        ".globl gpuslice_runtime_entry\n"
        ".type gpuslice_runtime_entry,@function\n"
        "gpuslice_runtime_entry:\n"
        "  endbr64\n"
        "  mov %rsp, %rbx\n"
        "  mov %rdx, %r12\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call gpuslice_fast_path\n"
        "  mov %r12, %rdx\n"
        "  mov %rbx, %rsp\n"
        "  xor %ebx, %ebx\n"
        "  xor %r12d, %r12d\n"
        "  jmp _start\n"
        ".size gpuslice_runtime_entry, .-gpuslice_runtime_entry\n");

static long sys_call(long n, long a, long b, long c, long d, long e) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
  return ret;
}

static int sys_openat(int dir, const char *path, int flags) {
  return (int)sys_call(__NR_openat, dir, (long)path, flags, 0, 0);
}
static void sys_close(int fd) { sys_call(__NR_close, fd, 0, 0, 0, 0); }
static long sys_statx(int dir, const char *path, int flags, struct statx *st) {
  return sys_call(__NR_statx, dir, (long)path, flags, STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO | STATX_SIZE,
                  (long)st);
}

/* Reads all of `fd` into buf (at most max bytes); -1 when larger or on error. */
static long read_all(int fd, char *buf, size_t max) {
  size_t got = 0;
  for (;;) {
    const long n = sys_call(__NR_read, fd, (long)(buf + got), (long)(max + 1 - got), 0, 0);
    if (n == -EINTR)
      continue;
    if (n < 0)
      return -1;
    if (n == 0)
      return (long)got;
    got += (size_t)n;
    if (got > max)
      return -1;
  }
}

/* Root's and writable by root alone: what gpuslice-runtime made. */
static int root_only(const struct statx *st) { return st->stx_uid == 0 && (st->stx_mode & 022) == 0; }

static const char *env_value(char **envp, const char *name) {
  const size_t n = gpuslice_fp_strlen(name);
  for (; *envp; ++envp) {
    const char *e = *envp;
    size_t i = 0;
    while (i < n && e[i] == name[i])
      ++i;
    if (i == n && e[n] == '=')
      return e + n + 1;
  }
  return 0;
}

/* Static: the stack stays as small as glibc expects it, and only the pages
 * touched are faulted in. */
static char record_buf[GPUSLICE_FAST_PATH_MAX_CONFIG + 8192];
static char config_buf[GPUSLICE_FAST_PATH_MAX_CONFIG + 1];
static char state_path[4096];

/* Reads this config path's record; 0 and *r filled when there is a sound one. */
static int read_record(const char *config_path, struct gpuslice_fp_record *r) {
  char name[17];
  gpuslice_fp_record_name(config_path, name);
  struct statx st;
  const int dir = sys_openat(AT_FDCWD, GPUSLICE_FAST_PATH_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0)
    return -1;
  int ok = sys_statx(dir, "", AT_EMPTY_PATH, &st) == 0 && root_only(&st);
  const int fd = ok ? sys_openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
  sys_close(dir);
  if (fd < 0)
    return -1;
  ok = sys_statx(fd, "", AT_EMPTY_PATH, &st) == 0 && S_ISREG(st.stx_mode) && root_only(&st);
  const long len = ok ? read_all(fd, record_buf, sizeof record_buf - 1) : -1;
  sys_close(fd);
  if (len < 0)
    return -1;
  return gpuslice_fp_parse_record(record_buf, (size_t)len, r);
}

/* The config file's bytes: 1 and *len when read, 0 when there is none, -1
 * when it cannot be compared (unreadable, not a file, too large). */
static int read_config(const char *path, long *len) {
  const int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd == -ENOENT)
    return 0;
  if (fd < 0)
    return -1;
  struct statx st;
  const int regular = sys_statx(fd, "", AT_EMPTY_PATH, &st) == 0 && S_ISREG(st.stx_mode);
  *len = regular ? read_all(fd, config_buf, GPUSLICE_FAST_PATH_MAX_CONFIG) : -1;
  sys_close(fd);
  return *len < 0 ? -1 : 1;
}

static char *append(char *p, const char *s) {
  while (*s)
    *p++ = *s++;
  *p = '\0';
  return p;
}

/* Whether any argument after the verb could name a container for which the
 * full program would do more than exec the runtime (anything its parser
 * might take for the id is looked at): one with a state dir for delete and
 * exec, one with a monitor for the others. An error counts as a yes. */
static int needs_full_program(int argc, char **argv, int verb, enum gpuslice_fp_verb_kind kind,
                              const char *state_dir) {
  static const char containers[] = "/containers/", monitor[] = "/" GPUSLICE_FP_MONITOR_ARGS;
  if (gpuslice_fp_strlen(state_dir) + sizeof containers + 256 + sizeof monitor > sizeof state_path)
    return 1;
  char *const ids = append(append(state_path, state_dir), containers);
  for (int i = verb + 1; i < argc; ++i) {
    if (!gpuslice_fp_safe_container_id(argv[i]))
      continue; /* never a state dir's name (state::container_dir_exists) */
    char *const end = append(ids, argv[i]);
    struct statx st;
    long rc = sys_statx(AT_FDCWD, state_path, AT_SYMLINK_NOFOLLOW, &st);
    if (rc == -ENOENT)
      continue;
    if (rc != 0 || kind == GPUSLICE_FP_STATEFUL)
      return 1;
    append(end, monitor);
    if (sys_statx(AT_FDCWD, state_path, AT_SYMLINK_NOFOLLOW, &st) != -ENOENT)
      return 1;
  }
  return 0;
}

__attribute__((visibility("hidden"), used)) void gpuslice_fast_path(long *sp);

void gpuslice_fast_path(long *sp) {
  const int argc = (int)sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  char **e = envp;
  while (*e)
    ++e;
  /* Only for root, and never in a set-id program (whose environment is not
   * to be trusted: secure_getenv). */
  for (const unsigned long *aux = (const unsigned long *)(e + 1); aux[0] != AT_NULL; aux += 2)
    if ((aux[0] == AT_SECURE || aux[0] == AT_EUID) && aux[1] != 0)
      return;
  if (argc < 1 || argc > GPUSLICE_FAST_PATH_MAX_ARGS)
    return;
  const int verb = gpuslice_fp_find_verb(argc, argv);
  const enum gpuslice_fp_verb_kind kind = verb < argc ? gpuslice_fp_verb_kind(argv[verb]) : GPUSLICE_FP_PLAIN;
  if (kind == GPUSLICE_FP_BUNDLE)
    return;

  const char *config_path = env_value(envp, "GPUSLICE_CONFIG");
  if (!config_path || !*config_path)
    config_path = GPUSLICE_DEFAULT_CONFIG;
  struct gpuslice_fp_record r;
  if (read_record(config_path, &r) != 0)
    return;
  long config_len = 0;
  const int config = read_config(config_path, &config_len);
  if (config < 0 ||
      !gpuslice_fp_record_matches(&r, config_path, config ? config_buf : 0, (size_t)config_len, env_value(envp, "PATH")))
    return;
  if (kind != GPUSLICE_FP_PLAIN && needs_full_program(argc, argv, verb, kind, r.state_dir))
    return;

  /* The runtime the record names, still the very file it resolved to. */
  struct statx st;
  if (sys_statx(AT_FDCWD, r.runtime, 0, &st) != 0 || !S_ISREG(st.stx_mode) || st.stx_ino != r.runtime_ino ||
      st.stx_dev_major != r.runtime_dev_major || st.stx_dev_minor != r.runtime_dev_minor)
    return;
  char *const program = argv[0];
  argv[0] = (char *)r.runtime;
  sys_call(__NR_execve, (long)r.runtime, (long)argv, (long)envp, 0, 0);
  argv[0] = program; /* not executable after all: the full program says why */
}
