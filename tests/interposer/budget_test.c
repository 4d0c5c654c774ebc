/* One memory budget for every process of a "container" (everything run by
 * one `gpuslice exec`), and what happens when its processes die.
 *   budget_test four LIMIT_MiB   4 processes grab 64 MiB chunks until refused:
 *                                together they get the limit, never more; after
 *                                they exit, their usage is reclaimed.
 *   budget_test kill LIMIT_MiB   a child takes 1 GiB and is SIGKILLed; the
 *                                parent then gets that 1 GiB again (its slot
 *                                claim or its allocation reclaims the child's).
 * The parent only touches CUDA after its children are gone (as with a real
 * driver, a forked child must not inherit a CUDA context).
 */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <signal.h>
#include <stdio.h>
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

int main(int argc, char **argv) {
  if (argc != 3) return fprintf(stderr, "usage: budget_test four|kill LIMIT_MiB\n"), 1;
  unsigned long long limit = strtoull(argv[2], NULL, 10) << 20;
  return !strcmp(argv[1], "four") ? four(limit) : kill_test(limit);
}
