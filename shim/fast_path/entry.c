/* gpuslice-runtime's ELF entry point (x86-64): the fast path of fast_path.h,
 * before the C library starts. It reads only the kernel's initial stack and
 * makes raw system calls; on every doubt it closes what it opened, leaves
 * the stack as it found it and jumps to glibc's _start, so the full program
 * runs exactly as if this did not exist. It also takes a create or run
 * whose config.json cannot hold a request (spec_without_request), leaving
 * any temporary config.json a killed create left to the next create the
 * full program runs. A create with devices that a plan the full program
 * left covers (create_plan.h) it does itself, config.json and state dir
 * included, and execs the runtime (create_with_plan). One call it finishes
 * itself: the delete of a live
 * container with devices and no limits (delete_stateful), whose runtime it
 * runs as a child before removing the state dir. The delete of an ended
 * container with limits whose monitor runs is an exec: the monitor removes
 * the dir.
 *
 * Built freestanding: no stack protector (its canary lives in TLS, which
 * glibc has not set up), no call the compiler might invent (memcpy, strlen:
 * glibc's are IFUNCs, unresolved this early), no sanitizer. A test checks the
 * object file references nothing but _start and fast_path.c. */
#include "build_id.h"
#include "cdi_merge.h"
#include "create_plan.h"
#include "fast_path.h"
#include "json_tree.h"
#include "startup_pages.h"

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
  return sys_call(__NR_statx, dir, (long)path, flags,
                  STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO | STATX_SIZE | STATX_MTIME, (long)st);
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
 * touched are faulted in. What a call reads (its record, the config, a
 * create's config.json) goes into one arena, each after the one before:
 * the ~4 KB a create reads lie in one or two pages, where a buffer each
 * took a page each (a fresh page is a fault and a zeroed page, in a
 * process that has just started). */
#define RECORD_MAX (GPUSLICE_FAST_PATH_MAX_RECORD + 1)
#define SPEC_MAX ((1 << 20) - 1)
/* The paths it builds go into the arena's free part too (nothing is read
 * into it while one is in use). */
#define PATH_CAPACITY 4096
/* A create with devices from a plan (below): config.json's tree, the plan's
 * bytes and their parse, the merge's work area, the edited config.json. */
#define SPEC_NODES 8192
#define MERGE_WORK (2 * SPEC_NODES + 6 * 256 + 16)
#define DEVICES_MAX 4095
#define EDITED_MAX (SPEC_MAX + 1 + 65536)
#define CREATE_SCRATCH                                                                                                \
  (SPEC_NODES * sizeof(struct gpuslice_fp_json_node) + GPUSLICE_FP_PLAN_MAX + sizeof(struct gpuslice_fp_plan) +      \
   DEVICES_MAX + 1 + MERGE_WORK * sizeof(int) + EDITED_MAX + 6 * 16)
static struct {
  /* These here, not apart: a call that only execs touches one page of bss. */
  size_t used;
  struct gpuslice_fp_handover handover;
  /* The call's record, parsed: here, not in try_fast_path's frame, which
   * it made ~2.5 KB (a stack fault in 70 % of the calls; 27 % now). */
  struct gpuslice_fp_record record;
  /* a create's from a plan (below) */
  struct gpuslice_fp_json_node *nodes;
  struct gpuslice_fp_plan *plan;
  char *edited;
  /* the record, its copy for the hand-over, the config, a create's
   * config.json's path and bytes; each read may take a byte more than it keeps */
  char bytes[2 * RECORD_MAX + GPUSLICE_FAST_PATH_MAX_CONFIG + 1 + PATH_CAPACITY + SPEC_MAX + 1 + CREATE_SCRATCH];
} read_arena __attribute__((aligned(4096)));
static char *free_arena(void) { return read_arena.bytes + read_arena.used; }
/* What every call maps in at once: the parsed record and, after it, the
 * record's and the config's bytes, a few KB on a node. */
#define ARENA_POPULATED 8192

const struct gpuslice_fp_handover *gpuslice_fp_handed_over(void) { return &read_arena.handover; }

/* Reads file `name` of dir `dir_path`, both root's alone, into the arena
 * (at most `max` bytes, and a byte after them for the parse to write):
 * its length and *bytes, or -1. The fast path's record and a create's plan. */
static long read_root_file(const char *dir_path, const char *name, size_t max, char **bytes) {
  struct statx st;
  const int dir = sys_openat(AT_FDCWD, dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0)
    return -1;
  int ok = sys_statx(dir, "", AT_EMPTY_PATH, &st) == 0 && root_only(&st);
  const int fd = ok ? sys_openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
  sys_close(dir);
  if (fd < 0)
    return -1;
  ok = sys_statx(fd, "", AT_EMPTY_PATH, &st) == 0 && S_ISREG(st.stx_mode) && root_only(&st);
  *bytes = free_arena();
  const long len = ok ? read_all(fd, *bytes, max) : -1;
  sys_close(fd);
  if (len >= 0)
    read_arena.used += (size_t)len + 1;
  return len;
}

/* Reads this config path's record; 0 and *r filled when there is a sound one.
 * With `kept`, its bytes are copied, unparsed, for the hand-over, and
 * *kept and *kept_size say where. */
static int read_record(const char *config_path, struct gpuslice_fp_record *r, const char **kept,
                       size_t *kept_size) {
  char name[17];
  gpuslice_fp_record_name(config_path, name);
  char *buf;
  const long len = read_root_file(GPUSLICE_FAST_PATH_DIR, name, RECORD_MAX - 1, &buf);
  if (len < 0)
    return -1;
  if (kept) { /* parsing cuts its lines in place */
    char *const copy = free_arena();
    for (long i = 0; i < len; ++i)
      copy[i] = buf[i];
    read_arena.used += (size_t)len;
    *kept = copy;
    *kept_size = (size_t)len;
  }
  return gpuslice_fp_parse_record(buf, (size_t)len, r);
}

/* The config file's bytes: 1 and *len when read (into *bytes), 0 when there
 * is none, -1 when it cannot be compared (unreadable, not a file, too large). */
static int read_config(const char *path, const char **bytes, long *len) {
  const int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd == -ENOENT)
    return 0;
  if (fd < 0)
    return -1;
  struct statx st;
  const int regular = sys_statx(fd, "", AT_EMPTY_PATH, &st) == 0 && S_ISREG(st.stx_mode);
  char *const buf = free_arena();
  *len = regular ? read_all(fd, buf, GPUSLICE_FAST_PATH_MAX_CONFIG) : -1;
  sys_close(fd);
  if (*len < 0)
    return -1;
  read_arena.used += (size_t)*len;
  *bytes = buf;
  return 1;
}

/* Path parts as string literals, not static arrays: the link merges them
 * with the other strings, in the window of .rodata that every call faults
 * in (an array each would be an object of its own, windows away). */
#define CONTAINERS "containers"
#define CONTAINERS_DIR "/" CONTAINERS
#define CONFIG_JSON "/config.json"
#define MONITOR_ARGS_FILE "/" GPUSLICE_FP_MONITOR_ARGS

static char *append(char *p, const char *s) {
  while (*s)
    *p++ = *s++;
  *p = '\0';
  return p;
}

static char small_buf[4096];

/* Reads file `name` of `dir` into small_buf (at most `max` bytes): its
 * length, -ENOENT when there is none, -1 on any other error. */
static long read_small(int dir, const char *name, size_t max) {
  const int fd = sys_openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fd == -ENOENT ? -ENOENT : -1;
  const long len = read_all(fd, small_buf, max);
  sys_close(fd);
  return len;
}

/* 1 and *start: process `pid` runs, started at *start; 0: it has ended; -1:
 * unknown. */
static int process_start(unsigned long long pid, unsigned long long *start) {
  char path[32], digits[24]; /* no initializer: the compiler may make one a memset call */
  int nd = 0;
  do
    digits[nd++] = (char)('0' + pid % 10);
  while ((pid /= 10) != 0);
  char *p = append(path, "/proc/");
  while (nd)
    *p++ = digits[--nd];
  append(p, "/stat");
  const int stat = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (stat == -ENOENT || stat == -ESRCH)
    return 0;
  if (stat < 0)
    return -1;
  const long len = read_all(stat, small_buf, sizeof small_buf - 1);
  sys_close(stat);
  if (len < 0)
    return -1;
  return gpuslice_fp_proc_stat_start(small_buf, (size_t)len, start);
}

/* Record `name` of `dir`: 0, *pid and *start; -ENOENT when there is none;
 * -1 when it cannot be read. */
static int read_process_record(int dir, const char *name, unsigned long long *pid, unsigned long long *start) {
  const long len = read_small(dir, name, 64);
  if (len == -ENOENT)
    return -ENOENT;
  if (len < 0 || gpuslice_fp_parse_process_record(small_buf, (size_t)len, pid, start) != 0)
    return -1;
  return 0;
}

/* 1: the process that record `name` of `dir` names runs; 0: it has ended;
 * -ENOENT: there is no such record; -1: unknown. */
static int recorded_process_runs(int dir, const char *name) {
  unsigned long long pid, start, now;
  const int recorded = read_process_record(dir, name, &pid, &start);
  if (recorded != 0)
    return recorded;
  const int runs = process_start(pid, &now);
  return runs <= 0 ? runs : now == start; /* not: another process under a reused pid */
}

/* 1: the init of the container of state dir `dir` runs; 0: it has ended (or
 * never started); -1: unknown. As state::is_live judges it: the `init`
 * record's process, else the creator while it runs, else the process the
 * pid file of the `init-pid-file` record names when it started no earlier
 * than the creator (a container without limits). */
static int init_runs(int dir) {
  int rc = recorded_process_runs(dir, GPUSLICE_FP_INIT_RECORD);
  if (rc != -ENOENT)
    return rc < 0 ? -1 : rc;
  unsigned long long pid, start, now;
  if (read_process_record(dir, GPUSLICE_FP_CREATOR_RECORD, &pid, &start) != 0)
    return -1;
  rc = process_start(pid, &now);
  if (rc < 0)
    return -1;
  if (rc == 1 && now == start)
    return 1; /* the create still runs */
  const unsigned long long creator_start = start;
  long len = read_small(dir, GPUSLICE_FP_INIT_PID_FILE_RECORD, sizeof small_buf - 1);
  if (len == -ENOENT)
    return 0;
  if (len < 0 || gpuslice_fp_parse_pid_file_record(small_buf, (size_t)len) != 0)
    return -1;
  len = read_small(AT_FDCWD, small_buf, 64); /* the path, in small_buf until the open */
  if (len == -ENOENT)
    return 0; /* the runtime never wrote it: the create failed */
  if (len < 0)
    return -1;
  if (gpuslice_fp_parse_pid(small_buf, (size_t)len, &pid) != 0)
    return 0;
  rc = process_start(pid, &now);
  if (rc <= 0)
    return rc;
  return now >= creator_start ? 1 : 0; /* an older process under that pid is not this create's init */
}

/* 1 when container `id` has a state dir (or may have: an error counts as
 * one), 0 when it has none; with `monitor`, whether it has a monitor that
 * the full program would have to start again: none runs where the state
 * dir's record says (shim::restart_monitor_if_gone; a monitor that runs
 * leaves it nothing to do). */
static int has_state(const char *state_dir, const char *id, int monitor) {
  if (!gpuslice_fp_safe_container_id(id))
    return 0; /* never a state dir's name (state::container_dir_exists) */
  if (gpuslice_fp_strlen(state_dir) + sizeof CONTAINERS_DIR "/" + 256 + sizeof MONITOR_ARGS_FILE > PATH_CAPACITY)
    return 1;
  char *const state_path = free_arena();
  char *const end = append(append(append(state_path, state_dir), CONTAINERS_DIR "/"), id);
  struct statx st;
  long rc = sys_statx(AT_FDCWD, state_path, AT_SYMLINK_NOFOLLOW, &st);
  if (rc == -ENOENT)
    return 0;
  if (rc != 0 || !monitor)
    return 1;
  append(end, MONITOR_ARGS_FILE);
  rc = sys_statx(AT_FDCWD, state_path, AT_SYMLINK_NOFOLLOW, &st);
  if (rc == -ENOENT)
    return 0;
  if (rc != 0)
    return 1;
  *end = '\0';
  const int dir = sys_openat(AT_FDCWD, state_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0)
    return 1;
  int runs = -1;
  if (sys_statx(dir, "", AT_EMPTY_PATH, &st) == 0 && root_only(&st)) {
    runs = recorded_process_runs(dir, GPUSLICE_FP_MONITOR_RECORD);
    /* Not recorded (yet): the create's init recorder may be starting it,
     * holding the dir's lock until it has (shim::exec_recording_init): a
     * start that comes at once waits for that, and looks again. */
    if (runs != 1 && sys_call(__NR_flock, dir, LOCK_SH, 0, 0, 0) == 0)
      runs = recorded_process_runs(dir, GPUSLICE_FP_MONITOR_RECORD);
  }
  sys_close(dir);
  return runs != 1;
}

/* Whether any argument after the verb could name a container for which the
 * full program would do more than exec the runtime (anything its parser
 * might take for the id is looked at): one with a state dir for delete and
 * exec, one whose monitor may have to be started again for the others. Arguments from `skip` on are
 * not looked at. */
static int needs_full_program(int verb, int skip, char **argv, enum gpuslice_fp_verb_kind kind,
                              const char *state_dir) {
  for (int i = verb + 1; i < skip; ++i)
    if (has_state(state_dir, argv[i], kind != GPUSLICE_FP_STATEFUL))
      return 1;
  return 0;
}

/* ---- create and run of a container that asks for nothing ---------------
 * Most containers on a GPU node ask for no GPU: the full program would read
 * their config.json, find no request and exec the runtime. The entry reads
 * the same bytes and execs the runtime when they cannot hold a request
 * (gpuslice_fp_spec_may_request, with the triggers the full program put in
 * the record); the full program runs on any doubt. */

/* 1 when the create's config.json was read and holds no request. Not
 * inlined, as create_with_plan and delete_stateful are not: their locals
 * would join try_fast_path's frame, which every call takes (the kernel's
 * argument block leaves a random part of a page below it, and each KB of
 * frame more is a fault in another quarter of the calls). */
static __attribute__((noinline)) int spec_without_request(int argc, char **argv, int verb,
                                                          const struct gpuslice_fp_record *r) {
  const char *bundle;
  if (r->create_triggers < 0 || gpuslice_fp_create_bundle(argc, argv, verb, &bundle) != 0)
    return 0;
  if (!bundle)
    bundle = ".";
  char *const path = free_arena(); /* the path, then the bytes after it */
  if (gpuslice_fp_strlen(bundle) + sizeof CONFIG_JSON > PATH_CAPACITY)
    return 0;
  char *const buf = append(append(path, bundle), CONFIG_JSON) + 1;
  const int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct statx st;
  const long len =
      sys_statx(fd, "", AT_EMPTY_PATH, &st) == 0 && S_ISREG(st.stx_mode) ? read_all(fd, buf, SPEC_MAX) : -1;
  sys_close(fd);
  if (len < 0)
    return 0;
  if (!gpuslice_fp_spec_may_request(buf, (size_t)len, r))
    return 1;
  read_arena.used += (size_t)(buf - path) + (size_t)len;
  read_arena.handover.spec_path = path;
  read_arena.handover.spec = buf;
  read_arena.handover.spec_size = (size_t)len;
  return 0;
}

/* ---- delete of a container with state ----------------------------------
 * What shim::delete_with_state does, for a state dir that holds only the
 * files of gpuslice_fp_plain_state_file (devices, no limits): a container
 * whose init has ended loses its dir first and the runtime is exec'd; a
 * live one's runtime runs as a child, and the dir goes once the runtime said
 * yes and the init is gone (the same id may be a live container's under
 * another --root). For a container with limits whose init has ended and
 * whose monitor runs, the runtime is exec'd and the dir left to the
 * monitor, which removes it itself when the init ends. */

struct linux_dirent64 {
  unsigned long long d_ino;
  long long d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

static char dents_buf[4096];

/* Whether every entry of directory `dir` is a plain state file. */
static int holds_only_plain_files(int dir) {
  for (;;) {
    const long n = sys_call(__NR_getdents64, dir, (long)dents_buf, sizeof dents_buf, 0, 0);
    if (n == 0)
      return 1;
    if (n < 0)
      return 0;
    for (long at = 0; at < n;) {
      const struct linux_dirent64 *d = (const struct linux_dirent64 *)(dents_buf + at);
      const char *name = d->d_name;
      if (!gpuslice_fp_streq(name, ".") && !gpuslice_fp_streq(name, "..") &&
          !(d->d_type == 8 /* DT_REG */ && gpuslice_fp_plain_state_file(name)))
        return 0;
      at += d->d_reclen;
    }
  }
}

/* Removes the plain files of `dir` and then `id` from `containers`; a file
 * that appeared meanwhile keeps the dir (collected with the stale ones). */
static void remove_plain_dir(int containers, int dir, const char *id) {
  for (const char *f = gpuslice_fp_plain_state_files(); *f; f += gpuslice_fp_strlen(f) + 1)
    sys_call(__NR_unlinkat, dir, (long)f, 0, 0, 0);
  sys_call(__NR_unlinkat, containers, (long)id, AT_REMOVEDIR, 0, 0);
}

static __attribute__((noreturn)) void sys_exit(int code) {
  for (;;)
    sys_call(__NR_exit_group, code, 0, 0, 0, 0);
}

/* The delete of `id`, which has a state dir: returns (everything closed)
 * only when the full program is to run instead. */
static __attribute__((noinline)) void delete_stateful(char **argv, char **envp, const char *runtime,
                                                      const char *state_dir, const char *id) {
  if (gpuslice_fp_strlen(state_dir) + sizeof CONTAINERS_DIR > PATH_CAPACITY)
    return;
  char *const state_path = free_arena();
  append(append(state_path, state_dir), CONTAINERS_DIR);
  struct statx st;
  const int containers = sys_openat(AT_FDCWD, state_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (containers < 0)
    return;
  const int dir = sys_openat(containers, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int runs = -1;
  if (dir >= 0 && sys_statx(dir, "", AT_EMPTY_PATH, &st) == 0 && root_only(&st)) {
    if (holds_only_plain_files(dir)) {
      runs = init_runs(dir);
    } else if (recorded_process_runs(dir, GPUSLICE_FP_INIT_RECORD) == 0 &&
               recorded_process_runs(dir, GPUSLICE_FP_MONITOR_RECORD) == 1) {
      /* A container with limits whose init has ended: its monitor, which
       * runs, removes the dir as it sees the init go (gpuslice-shim's
       * cleanup); a dir it leaves is stale, and collected. */
      sys_close(dir);
      sys_close(containers);
      sys_call(__NR_execve, (long)runtime, (long)argv, (long)envp, 0, 0);
      return;
    }
  }
  if (runs < 0) {
    if (dir >= 0)
      sys_close(dir);
    sys_close(containers);
    return;
  }
  if (runs == 0) { /* a stale dir goes first, whatever the runtime says */
    remove_plain_dir(containers, dir, id);
    sys_close(dir);
    sys_close(containers);
    sys_call(__NR_execve, (long)runtime, (long)argv, (long)envp, 0, 0);
    return; /* not executable after all: the full program says why */
  }
  /* fork (SIGCHLD is 17): this process has touched next to nothing yet */
  const long child = sys_call(__NR_clone, 17, 0, 0, 0, 0);
  if (child == 0) {
    sys_call(__NR_execve, (long)runtime, (long)argv, (long)envp, 0, 0);
    sys_exit(127);
  }
  if (child < 0) {
    sys_close(dir);
    sys_close(containers);
    return;
  }
  int status = 0;
  long rc;
  while ((rc = sys_call(__NR_wait4, child, (long)&status, 0, 0, 0)) == -EINTR)
    ;
  const int code = rc != child ? 1 : (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f);
  if (rc == child && code == 0 && init_runs(dir) == 0)
    remove_plain_dir(containers, dir, id);
  sys_exit(code);
}

/* ---- create of a container with devices, from a plan --------------------
 * What the full program would do for this create, done here when a plan it
 * left (create_plan.h) still holds: config.json edited, the state dir made
 * with its records, the info line logged, the runtime exec'd. Every check
 * comes before the first change; a step that fails after it undoes what was
 * done and the full program runs (it decides again, from config.json as it
 * now lies: applying the same edits again changes nothing). */

/* What it works in: the arena's free part, each after the one before (the
 * pages a create touches, together): config.json's tree, the device list,
 * the plan's bytes and their parse, the merge's work area, the edited
 * config.json. */

static void *arena_take(size_t size) {
  read_arena.used = (read_arena.used + 15) & ~(size_t)15;
  void *const p = read_arena.bytes + read_arena.used;
  read_arena.used += size;
  return p;
}

static int sys_getpid(void) { return (int)sys_call(__NR_getpid, 0, 0, 0, 0, 0); }

static char *append_number(char *p, unsigned long long v) {
  char digits[24];
  int n = 0;
  do
    digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n)
    *p++ = digits[--n];
  *p = '\0';
  return p;
}

/* Reads the plan file `name` (root's alone, in a dir of root's alone) into
 * the arena and parses it into read_arena.plan: 0, or -1. */
static int read_plan(const char *name) {
  char *bytes;
  const long len = read_root_file(GPUSLICE_FP_PLAN_DIR, name, GPUSLICE_FP_PLAN_MAX - 1, &bytes);
  if (len < 0)
    return -1;
  read_arena.plan = arena_take(sizeof *read_arena.plan);
  return gpuslice_fp_parse_plan(bytes, (size_t)len, read_arena.plan);
}

/* Whether the spec dirs and files, and the host nodes, are as the plan
 * found them. */
static int plan_still_holds(void) {
  struct statx st;
  for (int i = 0; i < read_arena.plan->spec_dirs; ++i) {
    const struct gpuslice_fp_plan_dir *d = &read_arena.plan->spec_dir[i];
    const long rc = sys_statx(AT_FDCWD, d->path, 0, &st);
    if (d->absent ? rc != -ENOENT
                  : rc != 0 || st.stx_dev_major != d->dev_major || st.stx_dev_minor != d->dev_minor ||
                        st.stx_ino != d->ino || (unsigned long long)st.stx_mtime.tv_sec != d->mtime_sec ||
                        st.stx_mtime.tv_nsec != d->mtime_nsec)
      return 0;
  }
  for (int i = 0; i < read_arena.plan->spec_files; ++i) {
    const struct gpuslice_fp_plan_file *f = &read_arena.plan->spec_file[i];
    if (sys_call(__NR_statx, AT_FDCWD, (long)f->path, 0, STATX_BASIC_STATS, (long)&st) != 0 ||
        st.stx_dev_major != f->dev_major || st.stx_dev_minor != f->dev_minor || st.stx_ino != f->ino ||
        st.stx_size != f->size || (unsigned long long)st.stx_mtime.tv_sec != f->mtime_sec ||
        st.stx_mtime.tv_nsec != f->mtime_nsec || (unsigned long long)st.stx_ctime.tv_sec != f->ctime_sec ||
        st.stx_ctime.tv_nsec != f->ctime_nsec)
      return 0;
  }
  for (int i = 0; i < read_arena.plan->host_nodes; ++i) {
    const struct gpuslice_fp_plan_node *h = &read_arena.plan->host_node[i];
    const long rc =
        sys_call(__NR_statx, AT_FDCWD, (long)h->path, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_MODE, (long)&st);
    char type = 0; /* lstat_host_node's: b, c, p, or an error */
    if (rc == 0)
      type = S_ISBLK(st.stx_mode) ? 'b' : S_ISCHR(st.stx_mode) ? 'c' : S_ISFIFO(st.stx_mode) ? 'p' : 0;
    if (type != h->type)
      return 0;
    if (type && (st.stx_rdev_major != h->major || st.stx_rdev_minor != h->minor || (st.stx_mode & 07777) != h->mode))
      return 0;
  }
  return 1;
}

/* A directory of root's alone (secure() would leave it as it is). */
static int open_secure_dir(int at, const char *path, int resolve_beneath_symlinks) {
  int fd;
  if (resolve_beneath_symlinks) {
    struct {
      unsigned long long flags, mode, resolve;
    } how = {O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0x04 /* RESOLVE_NO_SYMLINKS */};
    fd = (int)sys_call(__NR_openat2, at, (long)path, (long)&how, sizeof how, 0);
  } else {
    fd = sys_openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  struct statx st;
  if (fd >= 0 && (sys_statx(fd, "", AT_EMPTY_PATH, &st) != 0 || st.stx_uid != 0 || (st.stx_mode & 077) != 0)) {
    sys_close(fd);
    return -1;
  }
  return fd;
}

/* Whether stale state dirs were collected recently enough that this create
 * need not (state::collect_stale_now_and_then). */
static int stale_collected_recently(int state) {
  struct statx st;
  struct {
    long long sec;
    long nsec;
  } now;
  if (sys_statx(state, GPUSLICE_FP_STALE_COLLECTED, AT_SYMLINK_NOFOLLOW, &st) != 0 || !S_ISREG(st.stx_mode) ||
      sys_call(__NR_clock_gettime, 0 /* CLOCK_REALTIME */, (long)&now, 0, 0, 0) != 0)
    return 0;
  const long long age = now.sec - st.stx_mtime.tv_sec;
  return age >= -2 && age < GPUSLICE_FP_STALE_INTERVAL;
}

static int write_new_file(int dir, const char *name, const char *text, size_t len, int mode) {
  const int fd = (int)sys_call(__NR_openat, dir, (long)name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                               mode, 0);
  if (fd < 0)
    return -1;
  long written = 0;
  while ((size_t)written < len) {
    const long n = sys_call(__NR_write, fd, (long)(text + written), (long)(len - (size_t)written), 0, 0);
    if (n == -EINTR)
      continue;
    if (n <= 0)
      break;
    written += n;
  }
  const int ok = (size_t)written == len && sys_call(__NR_fchmod, fd, mode, 0, 0, 0) == 0; /* the umask aside */
  return sys_call(__NR_close, fd, 0, 0, 0, 0) == 0 && ok ? 0 : -1;
}

/* The files the entry writes into a new state dir, removed again. */
static void remove_state_dir(int containers, const char *name) {
  const int dir = sys_openat(containers, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir >= 0) {
    for (const char *f = gpuslice_fp_plain_state_files(); *f; f += gpuslice_fp_strlen(f) + 1)
      sys_call(__NR_unlinkat, dir, (long)f, 0, 0, 0);
    sys_close(dir);
  }
  sys_call(__NR_unlinkat, containers, (long)name, AT_REMOVEDIR, 0, 0);
}

/* The state dir of `id` removed, when it is still the one this process
 * made: its creator record is `record` (state::remove_container_dir's
 * check; a delete and a create of the same id may have come between). */
static void remove_own_state_dir(int containers, const char *id, const char *record) {
  const int dir = sys_openat(containers, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0)
    return;
  const long len = read_small(dir, GPUSLICE_FP_CREATOR_RECORD, 64);
  sys_close(dir);
  if (len == (long)gpuslice_fp_strlen(record)) {
    small_buf[len] = '\0';
    if (gpuslice_fp_streq(small_buf, record))
      remove_state_dir(containers, id);
  }
}

/* The state dir of `id`, made as state::create_container_dir and
 * shim::commit_host make it by process `pid`, its creator record `record`
 * ("PID START\n"): 0, or -1 with nothing left. */
static int make_state_dir(int containers, const char *id, const char *pid_file, int pid, const char *record) {
  char temp[300];
  append(append(append_number(append(temp, GPUSLICE_FP_STATE_TEMP_PREFIX), (unsigned long long)pid), "-"), id);
  if (sys_call(__NR_mkdirat, containers, (long)temp, 0700, 0, 0) != 0)
    return -1;
  const int dir = open_secure_dir(containers, temp, 0);
  int ok = dir >= 0;
  char *const pid_line = append(append(small_buf, pid_file), "\n");
  ok = ok && write_new_file(dir, GPUSLICE_FP_STATE_FORMAT_FILE, GPUSLICE_FP_STATE_FORMAT_TEXT,
                            sizeof GPUSLICE_FP_STATE_FORMAT_TEXT - 1, 0600) == 0;
  ok = ok && write_new_file(dir, GPUSLICE_FP_CREATOR_RECORD, record, gpuslice_fp_strlen(record), 0600) == 0;
  /* cdi-env's text with its newline: the plan's line, whose newline
   * parsing made the NUL after it */
  char *const env = (char *)read_arena.plan->cdi_env;
  const size_t env_len = gpuslice_fp_strlen(env);
  env[env_len] = '\n';
  ok = ok && write_new_file(dir, GPUSLICE_FP_CDI_ENV_FILE, env, env_len + 1, 0444) == 0;
  env[env_len] = '\0';
  const size_t pid_len = (size_t)(pid_line - small_buf);
  ok = ok && write_new_file(dir, GPUSLICE_FP_INIT_PID_FILE_RECORD, small_buf, pid_len, 0444) == 0;
  if (dir >= 0)
    sys_close(dir);
  if (ok && sys_call(__NR_renameat2, containers, (long)temp, containers, (long)id, 1 /* RENAME_NOREPLACE */) == 0)
    return 0;
  remove_state_dir(containers, temp);
  return -1;
}

/* The info line the full program logs (log::write_info_line's), best effort. */
static void log_injected(const char *id, int pid) {
  if (!*read_arena.plan->log_file)
    return;
  /* its directory, as log::setup makes it */
  char *const dir = append(small_buf, read_arena.plan->log_file);
  char *slash = dir;
  while (slash > small_buf && *slash != '/')
    --slash;
  if (slash > small_buf) {
    *slash = '\0';
    sys_call(__NR_mkdir, (long)small_buf, 0755, 0, 0, 0);
  }
  const int fd = (int)sys_call(__NR_openat, AT_FDCWD, (long)read_arena.plan->log_file,
                               O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666, 0);
  if (fd < 0)
    return;
  struct {
    long long sec;
    long nsec;
  } now = {0, 0};
  sys_call(__NR_clock_gettime, 0 /* CLOCK_REALTIME */, (long)&now, 0, 0, 0);
  char *const line = read_arena.edited; /* config.json is written by now */
  gpuslice_fp_utc_timestamp(now.sec, now.nsec, line);
  char *p = append(line + gpuslice_fp_strlen(line), " gpuslice-runtime[");
  p = append(append(append_number(p, (unsigned long long)pid), "] info: container "), id);
  p = append(append(append(p, ": injected "), read_arena.plan->devices), "\n");
  sys_call(__NR_write, fd, (long)line, p - line, 0, 0); /* one write: O_APPEND keeps lines whole */
  sys_close(fd);
}

/* Writes the edited config.json over `path` (mode kept) through a temporary
 * renamed into place, as fs::write_file_atomic: 0, or -1 with it untouched. */
static int save_spec(const char *path, const char *text, size_t len, int pid) {
  struct statx st;
  if (sys_statx(AT_FDCWD, path, 0, &st) != 0)
    return -1;
  const int mode = st.stx_mode & 07777;
  unsigned long long nonce = 0;
  sys_call(__NR_getrandom, (long)&nonce, 4, 1 /* GRND_NONBLOCK */, 0, 0);
  char *const temp = small_buf;
  if (gpuslice_fp_strlen(path) + sizeof GPUSLICE_FP_TEMP_MARKER + 48 > sizeof small_buf)
    return -1;
  char *p = append(append(small_buf, path), GPUSLICE_FP_TEMP_MARKER);
  append_number(append(append_number(p, (unsigned long long)pid), "."), nonce);
  if (write_new_file(AT_FDCWD, temp, text, len, mode) == 0 &&
      sys_call(__NR_rename, (long)temp, (long)path, 0, 0, 0) == 0)
    return 0;
  sys_call(__NR_unlinkat, AT_FDCWD, (long)temp, 0, 0, 0);
  return -1;
}

/* A create of a container that asks for devices, from the plan the full
 * program left for them. Returns (having changed nothing, or undone what it
 * changed) only when the full program is to run instead. */
static __attribute__((noinline)) void create_with_plan(int argc, char **argv, char **envp, int verb,
                                                       const struct gpuslice_fp_record *r, const char *build_id,
                                                       int config_there, const char *config, long config_len) {
  const char *id, *pid_file;
  if (!gpuslice_fp_streq(argv[verb], "create") || gpuslice_fp_create_args(argc, argv, verb, &id, &pid_file) != 0 ||
      !pid_file || !gpuslice_fp_clean_absolute_path(pid_file) || !gpuslice_fp_safe_container_id(id) ||
      gpuslice_fp_strlen(pid_file) + 2 > sizeof small_buf || r->create_triggers < 0)
    return;
  const char *const text = read_arena.handover.spec;
  const size_t len = read_arena.handover.spec_size;
  read_arena.nodes = arena_take(0);
  const int count = gpuslice_fp_json_parse(text, len, read_arena.nodes, SPEC_NODES, 32);
  if (count < 0)
    return;
  arena_take((size_t)count * sizeof *read_arena.nodes);
  /* The devices asked for by annotation, every trigger taken for a prefix
   * (the plan says which are; another found in the text hands over below). */
  char name[sizeof GPUSLICE_FP_PLAN_PREFIX + 16];
  char *const devices = arena_take(DEVICES_MAX + 1);
  const long n = gpuslice_fp_requested_devices(text, read_arena.nodes, r->create_trigger, r->create_triggers, devices,
                                               DEVICES_MAX);
  if (n <= 0 || gpuslice_fp_strlen(r->config_path) + 2 + (size_t)n > sizeof small_buf)
    return;
  devices[n] = '\0';
  const char *const key_end = append(append(append(small_buf, r->config_path), "\n"), devices);
  append(name, GPUSLICE_FP_PLAN_PREFIX);
  gpuslice_fp_digest(small_buf, (size_t)(key_end - small_buf), name + sizeof GPUSLICE_FP_PLAN_PREFIX - 1);
  char digest[17];
  if (config_there)
    gpuslice_fp_digest(config, (size_t)config_len, digest);
  else
    append(digest, "none");
  if (read_plan(name) != 0 || !gpuslice_fp_streq(read_arena.plan->writer, build_id) ||
      !gpuslice_fp_streq(read_arena.plan->config_path, r->config_path) ||
      !gpuslice_fp_streq(read_arena.plan->config_digest, digest) ||
      !gpuslice_fp_streq(read_arena.plan->devices, devices) ||
      gpuslice_fp_strlen(read_arena.plan->log_file) + 1 > sizeof small_buf) /* log_injected's */
    return;
  /* The record's triggers that are no annotation prefix: env names the full
   * program would look at. */
  const char *others[GPUSLICE_FP_MAX_CREATE_TRIGGERS];
  int n_others = 0;
  for (int i = 0; i < r->create_triggers; ++i) {
    int prefix = 0;
    for (int j = 0; j < read_arena.plan->prefixes && !prefix; ++j)
      prefix = gpuslice_fp_streq(read_arena.plan->prefix[j], r->create_trigger[i]);
    if (!prefix)
      others[n_others++] = r->create_trigger[i];
  }
  if (gpuslice_fp_create_doubts(text, len, read_arena.nodes, others, n_others) || !plan_still_holds())
    return;
  /* the merge's lists: each at most an array's elements and its edits */
  const struct gpuslice_fp_edits *const e = &read_arena.plan->edits;
  const size_t work_size = 2 * (size_t)count + (size_t)e->env_count + 3 * (size_t)e->device_count +
                           2 * (size_t)e->mount_count + 16;
  if (work_size > MERGE_WORK)
    return;
  int *const work = arena_take(work_size * sizeof(int));
  read_arena.edited = arena_take(EDITED_MAX);
  const long edited_len =
      gpuslice_fp_apply_edits(text, read_arena.nodes, count, e, read_arena.edited, EDITED_MAX, work, work_size);
  if (edited_len < 0)
    return;

  /* The state dir's place: root's alone, no state dir of this id, no
   * collection of stale ones due. */
  if (gpuslice_fp_strlen(r->state_dir) + sizeof CONTAINERS_DIR > PATH_CAPACITY)
    return;
  const int state = open_secure_dir(AT_FDCWD, r->state_dir, 1);
  if (state < 0)
    return;
  const int containers = open_secure_dir(state, CONTAINERS, 0);
  struct statx st;
  const int free_id = containers >= 0 && sys_statx(containers, id, AT_SYMLINK_NOFOLLOW, &st) == -ENOENT;
  const int fresh = stale_collected_recently(state);
  sys_close(state);
  const int pid = sys_getpid();
  unsigned long long start;
  if (!free_id || !fresh || process_start((unsigned long long)pid, &start) != 1) {
    if (containers >= 0)
      sys_close(containers);
    return;
  }
  char record[48]; /* this process, as the creator record names it */
  append(append_number(append(append_number(record, (unsigned long long)pid), " "), start), "\n");

  /* The changes: the state dir, the pid file an earlier container left,
   * config.json, the log line, the runtime. */
  const char *const path = read_arena.handover.spec_path;
  int done = make_state_dir(containers, id, pid_file, pid, record) == 0;
  if (done) {
    const long rc = sys_call(__NR_unlinkat, AT_FDCWD, (long)pid_file, 0, 0, 0);
    done = (rc == 0 || rc == -ENOENT) && save_spec(path, read_arena.edited, (size_t)edited_len, pid) == 0;
    if (!done)
      remove_own_state_dir(containers, id, record);
  }
  if (done) {
    log_injected(id, pid);
    char *const program = argv[0];
    argv[0] = (char *)r->runtime;
    sys_call(__NR_execve, (long)r->runtime, (long)argv, (long)envp, 0, 0);
    argv[0] = program;
    /* Not executable after all: config.json as it was, and the full
     * program says why (what the entry read still holds, but for a
     * config.json that could not be put back). */
    remove_own_state_dir(containers, id, record);
    if (save_spec(path, text, len, pid) != 0)
      read_arena.handover.spec_path = 0;
  }
  sys_close(containers);
}

/* ---- the hand-over -------------------------------------------------------
 * The markers shim/hot-text.order lists last, after the functions and after
 * the bss objects that start-up and a create touch: where the ordered link
 * put them ends what to map in (startup_pages.h). In sections of their own,
 * so that the link moves them alone.
 *
 * And the one it lists first: aligned to the kernel's fault-around window
 * (64 KB), so that the fast path's functions, which follow it, come in with
 * the entry's first fault, wherever the read-only data before the text
 * happens to end (bench/start/hot_text.py checks it). Nothing calls it: the
 * link keeps it by name (shim/CMakeLists.txt). */
#ifdef GPUSLICE_RUNTIME_TEXT_ORDERED
__attribute__((used, noinline, aligned(65536), section(".text.gpuslice_hot_text_start"))) void
gpuslice_hot_text_start(void) {
  __asm__ volatile("");
}
#endif
__attribute__((used, noinline, section(".text.gpuslice_hot_text_end"))) void gpuslice_hot_text_end(void) {
  __asm__ volatile("");
}
__attribute__((used, section(".data.rel.ro.gpuslice_hot_relro_end"))) char gpuslice_hot_relro_end = 1;
__attribute__((used, section(".bss.gpuslice_hot_bss_end"))) char gpuslice_hot_bss_end;

static unsigned long aux_value(const unsigned long *aux, unsigned long type) {
  for (; aux[0] != AT_NULL; aux += 2)
    if (aux[0] == type)
      return aux[1];
  return 0;
}

/* Maps in the pages the full program's start-up and a create touch
 * (startup_pages.h). Best effort: a kernel before 5.14 has no
 * MADV_POPULATE_*, and then the pages fault in as they would have. */
static void map_in_startup_pages(long *sp, const unsigned long *aux) {
  const Elf64_Phdr *phdr = (const Elf64_Phdr *)aux_value(aux, AT_PHDR);
  const unsigned long phnum = aux_value(aux, AT_PHNUM);
  if (!phdr || phnum == 0 || phnum > 64)
    return;
  struct gpuslice_fp_hot_ends hot = {0, 0, 0};
#ifdef GPUSLICE_RUNTIME_TEXT_ORDERED
  hot.text = (unsigned long)&gpuslice_hot_text_end;
  hot.relro = (unsigned long)&gpuslice_hot_relro_end + 1;
  hot.bss = (unsigned long)&gpuslice_hot_bss_end + 1;
#endif
  struct gpuslice_fp_page_range ranges[3 * 8 + 1];
  const int n = gpuslice_fp_startup_pages(phdr, phnum, gpuslice_fp_load_bias(phdr, phnum), aux_value(aux, AT_PAGESZ),
                                          (unsigned long)sp, hot, ranges, (int)(sizeof ranges / sizeof ranges[0]));
  for (int i = 0; i < n; ++i)
    if (sys_call(__NR_madvise, (long)ranges[i].start, (long)(ranges[i].end - ranges[i].start),
                 ranges[i].write ? 23 /* MADV_POPULATE_WRITE */ : 22 /* MADV_POPULATE_READ */, 0, 0) == -EINVAL)
      return;
  /* The vDSO's first page, whose ELF headers glibc's start-up reads (its
   * vvar pages, which the kernel fills itself, cannot be populated). */
  const unsigned long vdso = aux_value(aux, AT_SYSINFO_EHDR);
  if (vdso)
    sys_call(__NR_madvise, (long)vdso, (long)aux_value(aux, AT_PAGESZ), 22 /* MADV_POPULATE_READ */, 0, 0);
}

/* Returns only when the full program is to run. */
static void try_fast_path(int argc, char **argv, char **envp, const unsigned long *auxv) {
  /* Only for root, and never in a set-id program (whose environment is not
   * to be trusted: secure_getenv). */
  if (aux_value(auxv, AT_SECURE) != 0 || aux_value(auxv, AT_EUID) != 0)
    return;
  if (argc < 1 || argc > GPUSLICE_FAST_PATH_MAX_ARGS)
    return;
  const int verb = gpuslice_fp_find_verb(argc, argv);
  const enum gpuslice_fp_verb_kind kind = verb < argc ? gpuslice_fp_verb_kind(argv[verb]) : GPUSLICE_FP_PLAIN;

  /* The arena's first pages (ARENA_POPULATED): mapped in by one call, not
   * by a read fault (the zero page) and then a write fault (its copy) each.
   * Best effort, as map_in_startup_pages. */
  sys_call(__NR_madvise, (long)&read_arena, ARENA_POPULATED, 23 /* MADV_POPULATE_WRITE */, 0, 0);
  const char *config_path = env_value(envp, "GPUSLICE_CONFIG");
  if (!config_path || !*config_path)
    config_path = GPUSLICE_DEFAULT_CONFIG;
  struct gpuslice_fp_record *const r = &read_arena.record;
  const char *record_bytes = 0;
  size_t record_size = 0;
  if (read_record(config_path, r, kind == GPUSLICE_FP_BUNDLE ? &record_bytes : 0, &record_size) != 0)
    return;
  long config_len = 0;
  const char *config_bytes = 0;
  const int config = read_config(config_path, &config_bytes, &config_len);
  const Elf64_Phdr *phdr = (const Elf64_Phdr *)aux_value(auxv, AT_PHDR);
  const unsigned long phnum = aux_value(auxv, AT_PHNUM);
  char build_id[2 * GPUSLICE_FP_MAX_BUILD_ID + 1];
  gpuslice_fp_build_id(phdr, phnum, gpuslice_fp_load_bias(phdr, phnum), build_id);
  if (config < 0 || !gpuslice_fp_record_matches(r, build_id, config_path, config_bytes, (size_t)config_len,
                                                env_value(envp, "PATH")))
    return;
  read_arena.handover.record = record_bytes;
  read_arena.handover.record_size = record_size;
  read_arena.handover.config_parsed = r->config_parsed;
  read_arena.handover.config_parsed_size = r->config_parsed_size;
  read_arena.handover.config_path = config_path;
  read_arena.handover.config = config_bytes;
  read_arena.handover.config_size = (size_t)config_len;
  /* A delete whose container (the last argument, runc's and crun's place
   * for it) is the only one with a state dir may still be the entry's. */
  const int stateful_delete = kind == GPUSLICE_FP_STATEFUL && gpuslice_fp_streq(argv[verb], "delete") &&
                           argc > verb + 1 && has_state(r->state_dir, argv[argc - 1], 0);
  /* A create whose config.json may ask for devices: perhaps one a plan covers. */
  int from_plan = 0;
  if (kind == GPUSLICE_FP_BUNDLE) {
    if (!spec_without_request(argc, argv, verb, r)) {
      if (!read_arena.handover.spec_path)
        return;
      from_plan = 1;
    }
  } else if (kind != GPUSLICE_FP_PLAIN &&
             needs_full_program(verb, stateful_delete ? argc - 1 : argc, argv, kind, r->state_dir)) {
    return;
  }

  /* The runtime the record names, still the very file it resolved to. */
  struct statx st;
  if (sys_statx(AT_FDCWD, r->runtime, 0, &st) != 0 || !S_ISREG(st.stx_mode) || st.stx_ino != r->runtime_ino ||
      st.stx_dev_major != r->runtime_dev_major || st.stx_dev_minor != r->runtime_dev_minor)
    return;
  /* and still the one the search would find: nothing came or went in a
   * directory it looked in first */
  for (int i = 0; i < r->searched_dirs; ++i) {
    const int there = sys_statx(AT_FDCWD, r->searched_dir[i], 0, &st) == 0;
    if (there == r->searched_dir_absent[i] ||
        (there && ((unsigned long long)st.stx_mtime.tv_sec != r->searched_dir_sec[i] ||
                   st.stx_mtime.tv_nsec != r->searched_dir_nsec[i])))
      return;
  }
  if (from_plan) {
    create_with_plan(argc, argv, envp, verb, r, build_id, config, config_bytes, config_len);
    return;
  }
  char *const program = argv[0];
  argv[0] = (char *)r->runtime;
  if (stateful_delete)
    delete_stateful(argv, envp, r->runtime, r->state_dir, argv[argc - 1]);
  else
    sys_call(__NR_execve, (long)r->runtime, (long)argv, (long)envp, 0, 0);
  argv[0] = program; /* not executable after all (or a state dir to leave to
                        the full program): the full program runs */
}

__attribute__((visibility("hidden"), used)) void gpuslice_fast_path(long *sp);

void gpuslice_fast_path(long *sp) {
  const int argc = (int)sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  char **e = envp;
  while (*e)
    ++e;
  const unsigned long *auxv = (const unsigned long *)(e + 1);
  try_fast_path(argc, argv, envp, auxv);
  map_in_startup_pages(sp, auxv);
}
