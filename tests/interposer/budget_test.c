/* One memory budget for every process of a "container" (everything run by
 * one `gpuslice exec`), and what happens when its processes die.
 *   budget_test four LIMIT_MiB   4 processes grab 64 MiB chunks until refused:
 *                                together they get the limit, never more; after
 *                                they exit, their usage is reclaimed.
 *   budget_test kill LIMIT_MiB   a child takes 1 GiB and is SIGKILLed; the
 *                                parent then gets that 1 GiB again (its slot
 *                                claim or its allocation reclaims the child's).
 *   budget_test view LIMIT_MiB   process B reads cuMemGetInfo, process A takes
 *                                128 MiB, B's next cuMemGetInfo has 128 MiB less
 *                                free (never a stale free == total); after A
 *                                frees it, B sees it free again.
 *   budget_test storm LIMIT_MiB SECONDS
 *                                8 processes allocate and free 64 MiB in a
 *                                loop; every 200 ms one is SIGKILLed (mid-call,
 *                                perhaps holding whatever the region locks)
 *                                and another started. None may stall: each
 *                                reports every iteration, and one silent for
 *                                5 s fails the test. Then all are killed and
 *                                the whole limit is allocated again.
 * The parent only touches CUDA after its children are gone (as with a real
 * driver, a forked child must not inherit a CUDA context).
 */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK (64ull << 20)

static void context(void) {
  CUcontext ctx;
  if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx)) {
    fprintf(stderr, "budget_test: no context\n");
    exit(1);
  }
}

static void must_read(int fd, void *buf, size_t n) {
  if (read(fd, buf, n) != (ssize_t)n) {
    fprintf(stderr, "budget_test: child vanished\n");
    exit(1);
  }
}

static int four(unsigned long long limit) {
  int up[2], go[2];
  if (pipe(up) || pipe(go)) return 1;
  pid_t kids[4];
  for (int i = 0; i < 4; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      context();
      unsigned long long got = 0;
      CUdeviceptr p;
      int refusals = 0;
      /* a refusal can be a neighbour's charge in flight: retry a few times */
      while (refusals < 20) {
        CUresult r = cuMemAlloc_v2(&p, CHUNK);
        if (r == CUDA_SUCCESS) got += CHUNK;
        else if (r == CUDA_ERROR_OUT_OF_MEMORY) refusals++, usleep(1000);
        else _exit(3);
      }
      if (write(up[1], &got, sizeof got) != sizeof got) _exit(4);
      char c;
      must_read(go[0], &c, 1);
      _exit(0); /* exits holding everything */
    }
  }
  unsigned long long sum = 0;
  for (int i = 0; i < 4; i++) {
    unsigned long long got;
    must_read(up[0], &got, sizeof got);
    printf("process %d got %llu MiB\n", i, got >> 20);
    sum += got;
  }
  for (int i = 0; i < 4; i++)
    if (write(go[1], "x", 1) != 1) return 1;
  for (int i = 0; i < 4; i++) {
    int st;
    waitpid(kids[i], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) return fprintf(stderr, "budget_test: child failed\n"), 1;
  }
  printf("together %llu MiB of %llu MiB\n", sum >> 20, limit >> 20);
  if (sum > limit || sum < limit - CHUNK) return fprintf(stderr, "budget_test: budget not shared exactly\n"), 1;
  /* the children exited holding it all: the next allocation reclaims their slots */
  context();
  CUdeviceptr p;
  CUresult r = cuMemAlloc_v2(&p, limit);
  if (r != CUDA_SUCCESS) return fprintf(stderr, "budget_test: usage of exited processes not reclaimed (%d)\n", r), 1;
  printf("after the processes exited, %llu MiB allocated again\n", limit >> 20);
  return 0;
}

static int kill_test(unsigned long long limit) {
  int up[2];
  if (pipe(up)) return 1;
  pid_t kid = fork();
  if (kid == 0) {
    context();
    CUdeviceptr p;
    char ok = cuMemAlloc_v2(&p, 1ull << 30) == CUDA_SUCCESS ? 'y' : 'n';
    if (write(up[1], &ok, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char ok;
  must_read(up[0], &ok, 1);
  if (ok != 'y') return fprintf(stderr, "budget_test: child could not take 1 GiB\n"), 1;
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  context();
  size_t free_b, total;
  cuMemGetInfo_v2(&free_b, &total);
  /* our slot claim may already have taken over (and cleared) the dead child's */
  printf("after SIGKILL: free %zu MiB of %zu MiB\n", free_b >> 20, total >> 20);
  if (total != limit || (free_b != limit && free_b != limit - (1ull << 30)))
    return fprintf(stderr, "budget_test: unexpected memory info\n"), 1;
  CUdeviceptr p;
  if (cuMemAlloc_v2(&p, 1ull << 30) != CUDA_SUCCESS) return fprintf(stderr, "budget_test: 1 GiB not reclaimed\n"), 1;
  cuMemGetInfo_v2(&free_b, &total);
  printf("after reclaim and a new 1 GiB: free %zu MiB\n", free_b >> 20);
  return free_b == limit - (1ull << 30) ? 0 : 1;
}

static size_t free_now(void) {
  size_t free_b = 0, total = 0;
  if (cuMemGetInfo_v2(&free_b, &total) != CUDA_SUCCESS) _exit(6);
  return free_b;
}

static int view(unsigned long long limit) {
  int a_up[2], a_go[2], b_up[2], b_go[2];
  if (pipe(a_up) || pipe(a_go) || pipe(b_up) || pipe(b_go)) return 1;
  pid_t a = fork();
  if (a == 0) { /* takes 128 MiB when told, frees it when told again */
    context();
    CUdeviceptr p;
    char c;
    must_read(a_go[0], &c, 1);
    if (cuMemAlloc_v2(&p, 2 * CHUNK) != CUDA_SUCCESS || write(a_up[1], "t", 1) != 1) _exit(2);
    must_read(a_go[0], &c, 1);
    if (cuMemFree_v2(p) != CUDA_SUCCESS || write(a_up[1], "f", 1) != 1) _exit(2);
    _exit(0);
  }
  pid_t b = fork();
  if (b == 0) { /* reads its free memory each time it is told */
    context();
    char c;
    for (int i = 0; i < 3; i++) {
      must_read(b_go[0], &c, 1);
      size_t f = free_now();
      if (write(b_up[1], &f, sizeof f) != sizeof f) _exit(2);
    }
    _exit(0);
  }
  size_t seen[3];
  char c;
  for (int i = 0; i < 3; i++) {
    if (i > 0) { /* A takes (i == 1) or frees (i == 2), and says it is done */
      if (write(a_go[1], "x", 1) != 1) return 1;
      must_read(a_up[0], &c, 1);
    }
    if (write(b_go[1], "x", 1) != 1) return 1;
    must_read(b_up[0], &seen[i], sizeof seen[i]);
  }
  int st_a, st_b;
  waitpid(a, &st_a, 0);
  waitpid(b, &st_b, 0);
  printf("B's free: %zu MiB, after A took 128 MiB %zu MiB, after A freed it %zu MiB\n", seen[0] >> 20,
         seen[1] >> 20, seen[2] >> 20);
  if (!WIFEXITED(st_a) || WEXITSTATUS(st_a) || !WIFEXITED(st_b) || WEXITSTATUS(st_b))
    return fprintf(stderr, "budget_test: a process failed\n"), 1;
  return seen[0] == limit && seen[1] == limit - 2 * CHUNK && seen[2] == limit ? 0 : 1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define STORM_PROCS 8
#define STORM_STALL 5.0 /* seconds without an iteration: stalled */

struct stormer {
  pid_t pid;
  int beat; /* read end: a byte per iteration */
  double last;
};

static void storm_child(int beat) {
  context();
  for (;;) {
    CUdeviceptr p;
    CUresult r = cuMemAlloc_v2(&p, CHUNK);
    if (r == CUDA_SUCCESS) {
      usleep(200);
      if (cuMemFree_v2(p) != CUDA_SUCCESS) _exit(3);
    } else if (r != CUDA_ERROR_OUT_OF_MEMORY) {
      _exit(4);
    }
    if (write(beat, "b", 1) != 1) _exit(5);
    usleep(500);
  }
}

static int storm_start(struct stormer *s) {
  int fds[2];
  if (pipe(fds)) return -1;
  s->pid = fork();
  if (s->pid < 0) return -1;
  if (s->pid == 0) {
    close(fds[0]);
    storm_child(fds[1]);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  s->beat = fds[0];
  s->last = now();
  return 0;
}

static void storm_kill(struct stormer *s) {
  kill(s->pid, SIGKILL);
  waitpid(s->pid, NULL, 0);
  close(s->beat);
}

static int storm(unsigned long long limit, double seconds) {
  struct stormer procs[STORM_PROCS];
  for (int i = 0; i < STORM_PROCS; i++)
    if (storm_start(&procs[i])) return fprintf(stderr, "budget_test: cannot start a process\n"), 1;
  const double end = now() + seconds;
  double next_kill = now() + 0.2;
  unsigned kills = 0, beats = 0, victim = 0;
  int failed = 0;
  while (!failed && now() < end) {
    struct pollfd pfd[STORM_PROCS];
    for (int i = 0; i < STORM_PROCS; i++) pfd[i] = (struct pollfd){.fd = procs[i].beat, .events = POLLIN};
    poll(pfd, STORM_PROCS, 20);
    const double t = now();
    for (int i = 0; i < STORM_PROCS; i++) {
      char buf[256];
      ssize_t n;
      while ((n = read(procs[i].beat, buf, sizeof buf)) > 0) beats += (unsigned)n, procs[i].last = t;
      int st;
      if (waitpid(procs[i].pid, &st, WNOHANG) == procs[i].pid) {
        fprintf(stderr, "budget_test: a process ended on its own (status %d)\n", st);
        failed = 1;
      } else if (t - procs[i].last > STORM_STALL) {
        fprintf(stderr, "budget_test: process %d made no progress for %.0f s (hung)\n", (int)procs[i].pid, STORM_STALL);
        failed = 1;
      }
    }
    if (!failed && t >= next_kill) {
      struct stormer *s = &procs[victim++ % STORM_PROCS];
      storm_kill(s);
      kills++;
      if (storm_start(s)) return fprintf(stderr, "budget_test: cannot start a process\n"), 1;
      next_kill = t + 0.2;
    }
  }
  for (int i = 0; i < STORM_PROCS; i++) storm_kill(&procs[i]);
  printf("%u processes SIGKILLed in %.0f s, %u iterations, none stalled: %s\n", kills, seconds, beats,
         failed ? "no" : "yes");
  if (failed || kills < seconds * 2) return 1; /* one every 200 ms; a loaded host may manage half */
  /* every one is dead: the whole limit is there again */
  context();
  CUdeviceptr p;
  CUresult r = cuMemAlloc_v2(&p, limit);
  if (r != CUDA_SUCCESS) return fprintf(stderr, "budget_test: usage of killed processes not reclaimed (%d)\n", r), 1;
  printf("after the storm, %llu MiB allocated again\n", limit >> 20);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: budget_test four|kill|view LIMIT_MiB | storm LIMIT_MiB SECONDS\n"), 1;
  unsigned long long limit = strtoull(argv[2], NULL, 10) << 20;
  if (!strcmp(argv[1], "storm")) return storm(limit, argc > 3 ? strtod(argv[3], NULL) : 20);
  if (!strcmp(argv[1], "view")) return view(limit);
  return !strcmp(argv[1], "four") ? four(limit) : kill_test(limit);
}
