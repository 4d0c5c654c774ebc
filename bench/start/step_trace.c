/* step_trace: runs a program under ptrace, single-stepping it from its exec
 * until it execs another program or exits, and writes each distinct
 * instruction address it ran, in the order first run, to DIR/steps.PID (one
 * hex address a line). Then it lets the program go on and exits as it does.
 *
 * Why: bench_start.py --hot-text lays gpuslice-runtime's text out by what a
 * create runs (shim/hot-text.order). valgrind saw that only in part: its
 * CPU is not the host's (other string variants), it gives no vDSO, and it
 * knows no pidfd_open, so a create with limits, whose init recorder needs
 * it, could not be profiled at all, and a create without limits took
 * another path under it. A single-stepped run is the real one. It costs
 * ~30 us a step: a create's ~300,000 instructions take ~10 s.
 *
 * Only the first thread is traced: the init recorder a create with limits
 * clones runs on beside runc, and what it runs is not on the create's path.
 *
 * Usage: step_trace DIR PROGRAM [ARG...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

/* The distinct addresses: an open-addressing set (0 marks an empty slot:
 * no instruction runs at address 0), and the same in the order first seen,
 * which never holds more than half the set's capacity. */
struct addresses {
  uint64_t *slots;
  size_t capacity; /* a power of two */
  uint64_t *order;
  size_t count;
};

static size_t slot_of(uint64_t address, size_t capacity) {
  return (size_t)((address * 0x9E3779B97F4A7C15ull) >> 20) & (capacity - 1);
}

static void place(struct addresses *set, uint64_t address) {
  size_t i = slot_of(address, set->capacity);
  while (set->slots[i] != 0)
    i = (i + 1) & (set->capacity - 1);
  set->slots[i] = address;
}

static int allocate(struct addresses *set, size_t capacity) {
  uint64_t *slots = calloc(capacity, sizeof(uint64_t));
  uint64_t *order = realloc(set->order, capacity / 2 * sizeof(uint64_t));
  if (!slots || !order) {
    free(slots);
    if (order)
      set->order = order;
    return -1;
  }
  free(set->slots);
  set->slots = slots;
  set->capacity = capacity;
  set->order = order;
  for (size_t i = 0; i < set->count; i++)
    place(set, set->order[i]);
  return 0;
}

/* 0, or -1 when out of memory. */
static int insert(struct addresses *set, uint64_t address) {
  for (size_t i = slot_of(address, set->capacity); set->slots[i] != 0; i = (i + 1) & (set->capacity - 1))
    if (set->slots[i] == address)
      return 0;
  if (set->count + 1 > set->capacity / 2 && allocate(set, set->capacity * 2) < 0)
    return -1;
  place(set, address);
  set->order[set->count++] = address;
  return 0;
}

static int is_exec_stop(int status) { return status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)); }

static int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: step_trace DIR PROGRAM [ARG...]\n");
    return 2;
  }
  struct addresses set = {0};
  if (allocate(&set, 1 << 20) < 0) {
    fprintf(stderr, "step_trace: out of memory\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("step_trace: fork");
    return 2;
  }
  if (pid == 0) {
    /* Stopped before the exec, so that the options below are set first. */
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0 || raise(SIGSTOP) != 0)
      _exit(127);
    execv(argv[2], argv + 2);
    fprintf(stderr, "step_trace: cannot execute %s: %s\n", argv[2], strerror(errno));
    _exit(127);
  }
  int status;
  if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status) ||
      ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXEC) < 0 || ptrace(PTRACE_CONT, pid, 0, 0) < 0 ||
      waitpid(pid, &status, 0) < 0) {
    perror("step_trace: ptrace");
    kill(pid, SIGKILL);
    return 2;
  }
  if (!is_exec_stop(status)) /* the exec failed: the child said why */
    return WIFSTOPPED(status) ? (kill(pid, SIGKILL), 127) : exit_code(status);

  int ended = 0;
  for (;;) {
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, pid, 0, &regs) < 0 || insert(&set, regs.rip) < 0) {
      perror("step_trace: stepping");
      kill(pid, SIGKILL);
      return 2;
    }
    int deliver = 0;
    for (;;) { /* until a step is done: a signal stop passes its signal on */
      if (ptrace(PTRACE_SINGLESTEP, pid, 0, deliver) < 0 || waitpid(pid, &status, 0) < 0) {
        perror("step_trace: stepping");
        kill(pid, SIGKILL);
        return 2;
      }
      if (!WIFSTOPPED(status) || is_exec_stop(status) || WSTOPSIG(status) == SIGTRAP)
        break;
      deliver = WSTOPSIG(status);
    }
    if (!WIFSTOPPED(status)) {
      ended = 1;
      break;
    }
    if (is_exec_stop(status))
      break;
  }

  char path[4096];
  snprintf(path, sizeof path, "%s/steps.%d", argv[1], (int)pid);
  FILE *out = fopen(path, "w");
  if (out) {
    for (size_t i = 0; i < set.count; i++)
      fprintf(out, "%llx\n", (unsigned long long)set.order[i]);
  }
  if (!out || fclose(out) != 0) {
    fprintf(stderr, "step_trace: cannot write %s: %s\n", path, strerror(errno));
    if (!ended)
      kill(pid, SIGKILL);
    return 2;
  }
  if (ended)
    return exit_code(status);
  /* Exec'd another program: it runs on, untraced, and this exits as it does. */
  if (ptrace(PTRACE_DETACH, pid, 0, 0) < 0 || waitpid(pid, &status, 0) < 0) {
    perror("step_trace: detach");
    return 2;
  }
  return exit_code(status);
}
