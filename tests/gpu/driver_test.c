/* The driver API and NVML under a memory limit, on a real GPU (run.sh) and
 * here on the fake driver (kit_test.sh): every allocation path the
 * interposer charges, reached as CUDA runtimes reach the driver (through
 * cuGetProcAddress_v2), and NVML's view of the same GPU.
 *
 *   driver_test check LIMIT_GIB        run under a LIMIT_GIB limit: one line
 *                                      "PASS|FAIL name: detail" per check
 *   driver_test hold GIB SECONDS FILE  cuMemAlloc GIB, create FILE, hold
 *   driver_test try GIB ok|oom         one cuMemAlloc of GIB, as expected?
 *   driver_test view                   under a limit: process B's next
 *                                      cuMemGetInfo shows process A's 128 MiB
 *                                      taken, then freed (never a stale view)
 *   driver_test storm SECONDS          under a limit: 8 processes allocate
 *                                      and free 64 MiB in a loop while one is
 *                                      SIGKILLed every 200 ms and replaced;
 *                                      none may stall (a lock a dead process
 *                                      kept), and afterwards the whole limit
 *                                      is allocated again
 *
 * Exit status 0 when every check passed, 1 otherwise, 2 on misuse. Sizes
 * over the limit are refused by the interposer before the driver sees them;
 * those under it are real allocations (managed memory too: the card must
 * have LIMIT_GIB free). */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GIB (1ull << 30)
#define MIB ((size_t)1 << 20)

static int failures;

static void report(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(int ok, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s %s: ", ok ? "PASS" : "FAIL", name);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  failures += !ok;
}

static struct {
  PFN_gs_cuInit init;
  PFN_gs_cuDevicePrimaryCtxRetain retain;
  PFN_gs_cuCtxSetCurrent set_current;
  PFN_gs_cuCtxSynchronize sync;
  PFN_gs_cuMemGetInfo_v2 info;
  PFN_gs_cuMemAlloc_v2 alloc;
  PFN_gs_cuMemFree_v2 free_;
  PFN_gs_cuMemCreate create;
  PFN_gs_cuMemRelease release;
  PFN_gs_cuMemAllocAsync alloc_async;
  PFN_gs_cuMemFreeAsync free_async;
  PFN_gs_cuDeviceGetDefaultMemPool default_pool;
  PFN_gs_cuMemAllocFromPoolAsync alloc_from_pool;
  PFN_gs_cuMemAllocManaged alloc_managed;
  PFN_gs_cuMemPoolCreate pool_create;
  PFN_gs_cuMemPoolSetAttribute pool_set;
  PFN_gs_cuMemPoolTrimTo pool_trim;
  PFN_gs_cuMemPoolDestroy pool_destroy;
  PFN_gs_cuStreamCreate stream_create;
  PFN_gs_cuStreamDestroy_v2 stream_destroy;
  PFN_gs_cuStreamBeginCapture_v2 begin_capture;
  PFN_gs_cuStreamEndCapture end_capture;
  PFN_gs_cuGraphDestroy graph_destroy;
} cu;
static CUcontext ctx;

static int load_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return fprintf(stderr, "driver_test: %s\n", dlerror()), -1;
  PFN_gs_cuGetProcAddress_v2 gpa = (PFN_gs_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
  if (!gpa) return fprintf(stderr, "driver_test: no cuGetProcAddress_v2 in libcuda.so.1\n"), -1;
  CUdriverProcAddressQueryResult st;
  int missing = 0;
#define GET(var, name) missing |= gpa(name, (void **)&cu.var, 12080, 0, &st) != CUDA_SUCCESS || !cu.var
  GET(init, "cuInit"); GET(retain, "cuDevicePrimaryCtxRetain"); GET(set_current, "cuCtxSetCurrent");
  GET(sync, "cuCtxSynchronize"); GET(info, "cuMemGetInfo"); GET(alloc, "cuMemAlloc"); GET(free_, "cuMemFree");
  GET(create, "cuMemCreate"); GET(release, "cuMemRelease"); GET(alloc_async, "cuMemAllocAsync");
  GET(free_async, "cuMemFreeAsync"); GET(default_pool, "cuDeviceGetDefaultMemPool");
  GET(alloc_from_pool, "cuMemAllocFromPoolAsync"); GET(alloc_managed, "cuMemAllocManaged");
  GET(pool_create, "cuMemPoolCreate"); GET(pool_set, "cuMemPoolSetAttribute"); GET(pool_trim, "cuMemPoolTrimTo");
  GET(pool_destroy, "cuMemPoolDestroy"); GET(stream_create, "cuStreamCreate");
  GET(stream_destroy, "cuStreamDestroy"); GET(begin_capture, "cuStreamBeginCapture");
  GET(end_capture, "cuStreamEndCapture"); GET(graph_destroy, "cuGraphDestroy");
#undef GET
  if (missing) return fprintf(stderr, "driver_test: the driver lacks a function this test calls\n"), -1;
  return 0;
}

/* A context of this process on device 0: never before a fork (a child
 * must not inherit one), so the modes that fork make theirs in each child. */
static int make_context(void) {
  if (cu.init(0) || cu.retain(&ctx, 0) || cu.set_current(ctx))
    return fprintf(stderr, "driver_test: no context on device 0\n"), -1;
  return 0;
}

/* One allocation path: over the limit refused, under it allocated (and
 * freed), cuMemGetInfo's free falling with it. */
typedef CUresult (*alloc_fn)(size_t size, void **handle);
typedef CUresult (*free_fn)(void *handle);

static void check_path(const char *name, unsigned limit_gib, alloc_fn a, free_fn f) {
  void *handle = NULL;
  CUresult over = a((size_t)(limit_gib + 1) * GIB, &handle);
  report(over == CUDA_ERROR_OUT_OF_MEMORY, name, "%u GiB over a %u GiB limit: %s (want CUDA_ERROR_OUT_OF_MEMORY = 2: %d)",
         limit_gib + 1, limit_gib, over == CUDA_ERROR_OUT_OF_MEMORY ? "refused" : "not refused", (int)over);
  if (over == CUDA_SUCCESS) f(handle);
  size_t under = (size_t)(limit_gib - 1) * GIB;
  CUresult r = a(under, &handle);
  size_t free_b = 0, total = 0;
  cu.info(&free_b, &total);
  report(r == CUDA_SUCCESS && free_b <= GIB, name, "%u GiB under the limit: %d, then %.2f GiB free of %.2f",
         limit_gib - 1, (int)r, (double)free_b / GIB, (double)total / GIB);
  if (r == CUDA_SUCCESS) f(handle);
}

static CUresult plain_alloc(size_t size, void **h) { return cu.alloc((CUdeviceptr *)h, size); }
static CUresult plain_free(void *h) { return cu.free_((CUdeviceptr)(uintptr_t)h); }

static CUresult vmm_alloc(size_t size, void **h) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return cu.create((CUmemGenericAllocationHandle *)h, size, &prop, 0);
}
static CUresult vmm_free(void *h) { return cu.release((CUmemGenericAllocationHandle)(uintptr_t)h); }

static CUresult async_alloc(size_t size, void **h) {
  CUresult r = cu.alloc_async((CUdeviceptr *)h, size, NULL);
  return r ? r : cu.sync();
}
static CUresult async_free(void *h) {
  CUresult r = cu.free_async((CUdeviceptr)(uintptr_t)h, NULL);
  return r ? r : cu.sync();
}

static CUresult pool_alloc(size_t size, void **h) {
  CUmemoryPool pool;
  CUresult r = cu.default_pool(&pool, 0);
  if (r) return r;
  r = cu.alloc_from_pool((CUdeviceptr *)h, size, pool, NULL);
  return r ? r : cu.sync();
}

static CUresult managed_alloc(size_t size, void **h) {
  return cu.alloc_managed((CUdeviceptr *)h, size, CU_MEM_ATTACH_GLOBAL);
}

/* Memory freed into a pool that keeps it (its release threshold at the
 * most) is still held: another pool cannot have it too until the first is
 * trimmed. Charging allocations instead of what pools hold let a program
 * take its limit once per pool. */
static void check_kept_pool(unsigned limit_gib) {
  const char *name = "pool that keeps freed memory";
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool keeper = NULL, other = NULL;
  if (cu.pool_create(&keeper, &props) || cu.pool_create(&other, &props)) {
    report(0, name, "cuMemPoolCreate failed");
    return;
  }
  cuuint64_t most = UINT64_MAX;
  cu.pool_set(keeper, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &most);
  const size_t size = (size_t)limit_gib * GIB / 4 * 3; /* twice is over the limit */
  CUdeviceptr p = 0;
  CUresult first = cu.alloc_from_pool(&p, size, keeper, NULL);
  if (first == CUDA_SUCCESS) {
    cu.free_async(p, NULL);
    cu.sync();
  }
  CUresult again = cu.alloc_from_pool(&p, size, other, NULL);
  report(first == CUDA_SUCCESS && again == CUDA_ERROR_OUT_OF_MEMORY, name,
         "%.2f GiB freed into it (%d), then as much from another pool: %s (want CUDA_ERROR_OUT_OF_MEMORY = 2: %d)",
         (double)size / GIB, (int)first, again == CUDA_ERROR_OUT_OF_MEMORY ? "refused" : "not refused", (int)again);
  if (again == CUDA_SUCCESS) {
    cu.free_async(p, NULL);
    cu.sync();
  }
  cu.pool_trim(keeper, 0);
  CUresult after = cu.alloc_from_pool(&p, size, other, NULL);
  report(after == CUDA_SUCCESS, "pool trimmed", "%.2f GiB from the other pool once the first is trimmed: %d",
         (double)size / GIB, (int)after);
  if (after == CUDA_SUCCESS) {
    cu.free_async(p, NULL);
    cu.sync();
  }
  cu.pool_trim(other, 0);
  cu.pool_destroy(keeper);
  cu.pool_destroy(other);
}

/* A capture in global mode on another thread of the program, as PyTorch
 * makes for CUDA graphs: the interposer's wait for a stream (here, to
 * credit cuMemAlloc'd memory freed with cuMemFreeAsync) must neither be
 * refused as an unsafe call nor spoil that capture. The threads take turns
 * through two pipes. */
struct capture_turns {
  int to_main[2], to_capture[2];
  CUresult begin, end;
};

static void *capture_thread(void *arg) {
  struct capture_turns *t = arg;
  CUstream s = NULL;
  CUgraph g = NULL;
  char c = 0;
  t->begin = cu.set_current(ctx);
  if (!t->begin) t->begin = cu.stream_create(&s, CU_STREAM_NON_BLOCKING);
  if (!t->begin) t->begin = cu.begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  (void)!write(t->to_main[1], &c, 1);
  (void)!read(t->to_capture[0], &c, 1);
  t->end = t->begin ? t->begin : cu.end_capture(s, &g);
  if (g) cu.graph_destroy(g);
  if (s) cu.stream_destroy(s);
  return NULL;
}

static void check_capture_and_wait(unsigned limit_gib) {
  const char *name = "capture beside a free in stream order";
  const size_t size = (size_t)limit_gib * GIB / 4 * 3; /* twice is over the limit */
  struct capture_turns t = {{-1, -1}, {-1, -1}, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN};
  CUstream s = NULL;
  CUdeviceptr p = 0;
  pthread_t thread;
  char c = 0;
  if (pipe(t.to_main) || pipe(t.to_capture) || cu.stream_create(&s, CU_STREAM_NON_BLOCKING) || cu.alloc(&p, size) ||
      pthread_create(&thread, NULL, capture_thread, &t)) {
    report(0, name, "cannot set up: pipes, a stream, %.2f GiB, a thread", (double)size / GIB);
    if (p) cu.free_(p);
    if (s) cu.stream_destroy(s);
    for (int i = 0; i < 2; i++) {
      if (t.to_main[i] >= 0) close(t.to_main[i]);
      if (t.to_capture[i] >= 0) close(t.to_capture[i]);
    }
    return;
  }
  (void)!read(t.to_main[0], &c, 1);
  CUresult freed = cu.free_async(p, s);
  (void)!write(t.to_capture[1], &c, 1);
  pthread_join(thread, NULL);
  CUresult again = cu.alloc(&p, size);
  report(t.begin == CUDA_SUCCESS && freed == CUDA_SUCCESS && t.end == CUDA_SUCCESS && again == CUDA_SUCCESS, name,
         "another thread's capture in global mode: begun %d, ended %d (want 0; 901 = invalidated); cuMemFreeAsync of "
         "%.2f GiB during it %d; as much again after: %d (want 0: the free credited)",
         (int)t.begin, (int)t.end, (double)size / GIB, (int)freed, (int)again);
  if (again == CUDA_SUCCESS) cu.free_(p);
  cu.stream_destroy(s);
  for (int i = 0; i < 2; i++) {
    close(t.to_main[i]);
    close(t.to_capture[i]);
  }
}

/* NVML as nvidia-smi and monitoring agents read it: the GPU's total is the
 * container's limit. */
static void check_nvml(unsigned limit_gib) {
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!h) {
    report(0, "nvml", "cannot load libnvidia-ml.so.1: %s", dlerror());
    return;
  }
  nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))dlsym(h, "nvmlInit_v2");
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) =
      (nvmlReturn_t(*)(unsigned, nvmlDevice_t *))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t *) =
      (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(h, "nvmlDeviceGetMemoryInfo");
  nvmlDevice_t dev;
  nvmlMemory_t m;
  if (!init || !by_index || !mem || init() != NVML_SUCCESS || by_index(0, &dev) != NVML_SUCCESS ||
      mem(dev, &m) != NVML_SUCCESS) {
    report(0, "nvml", "nvmlDeviceGetMemoryInfo of device 0 failed");
    return;
  }
  report(m.total == (unsigned long long)limit_gib * GIB, "nvml", "nvmlDeviceGetMemoryInfo total %.2f GiB, used %.2f GiB",
         (double)m.total / GIB, (double)m.used / GIB);

  /* One view: with 1 GiB held, the driver API and both NVML versions say
   * the same total and free (what a framework's planner compares). */
  nvmlReturn_t (*mem2)(nvmlDevice_t, nvmlMemory_v2_t *) =
      (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(h, "nvmlDeviceGetMemoryInfo_v2");
  CUdeviceptr p;
  size_t free_b = 0, total = 0;
  nvmlMemory_v2_t m2;
  memset(&m2, 0, sizeof m2);
  m2.version = nvmlMemory_v2;
  if (!mem2 || cu.alloc(&p, GIB) != CUDA_SUCCESS) {
    report(0, "one view", "no nvmlDeviceGetMemoryInfo_v2, or 1 GiB not allocated");
    return;
  }
  int ok = cu.info(&free_b, &total) == CUDA_SUCCESS && mem(dev, &m) == NVML_SUCCESS && mem2(dev, &m2) == NVML_SUCCESS &&
           m.total == total && m2.total == total && m.free == free_b && m2.free == free_b &&
           m.used == total - free_b && free_b <= total - GIB;
  report(ok, "one view",
         "1 GiB held: cuMemGetInfo free %zu MiB of %zu; NVML v1 free %llu used %llu of %llu; v2 free %llu of %llu (MiB)",
         free_b / MIB, total / MIB, m.free / MIB, m.used / MIB, m.total / MIB, m2.free / MIB, m2.total / MIB);
  cu.free_(p);
}

static void must_read(int fd, void *buf, size_t n) {
  if (read(fd, buf, n) != (ssize_t)n) {
    fprintf(stderr, "driver_test: a process vanished\n");
    exit(1);
  }
}

static size_t free_now(void) {
  size_t free_b = 0, total = 0;
  if (cu.info(&free_b, &total) != CUDA_SUCCESS) _exit(6);
  return free_b;
}

/* Process A takes 128 MiB and frees it, told step by step; process B reads
 * its free memory before, between and after: each change at once. */
static void check_view(void) {
  int a_up[2], a_go[2], b_up[2], b_go[2];
  if (pipe(a_up) || pipe(a_go) || pipe(b_up) || pipe(b_go)) exit(1);
  pid_t a = fork();
  if (a == 0) {
    if (make_context()) _exit(2);
    CUdeviceptr p;
    char c;
    must_read(a_go[0], &c, 1);
    if (cu.alloc(&p, 128 * MIB) != CUDA_SUCCESS || write(a_up[1], "t", 1) != 1) _exit(2);
    must_read(a_go[0], &c, 1);
    if (cu.free_(p) != CUDA_SUCCESS || write(a_up[1], "f", 1) != 1) _exit(2);
    _exit(0);
  }
  pid_t b = fork();
  if (b == 0) {
    if (make_context()) _exit(2);
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
      if (write(a_go[1], "x", 1) != 1) exit(1);
      must_read(a_up[0], &c, 1);
    }
    if (write(b_go[1], "x", 1) != 1) exit(1);
    must_read(b_up[0], &seen[i], sizeof seen[i]);
  }
  int st_a, st_b;
  waitpid(a, &st_a, 0);
  waitpid(b, &st_b, 0);
  int ok = WIFEXITED(st_a) && !WEXITSTATUS(st_a) && WIFEXITED(st_b) && !WEXITSTATUS(st_b) &&
           seen[0] - seen[1] == 128 * MIB && seen[2] == seen[0];
  report(ok, "second process", "free %zu MiB, after another process took 128 MiB %zu MiB, after it freed them %zu MiB",
         seen[0] / MIB, seen[1] / MIB, seen[2] / MIB);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define STORM_PROCS 8
#define STORM_STALL 5.0  /* seconds without an iteration, once iterating: stalled */
#define STORM_START 30.0 /* seconds to the first iteration (a context's start) */

struct stormer {
  pid_t pid;
  int beat; /* read end: a byte per iteration */
  double started, last;
};

static void storm_child(int beat) {
  if (make_context()) _exit(2);
  for (;;) {
    CUdeviceptr p;
    CUresult r = cu.alloc(&p, 64 * MIB);
    if (r == CUDA_SUCCESS) {
      usleep(200);
      if (cu.free_(p) != CUDA_SUCCESS) _exit(3);
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
  s->started = now();
  s->last = 0;
  return 0;
}

static void storm_kill(struct stormer *s) {
  kill(s->pid, SIGKILL);
  waitpid(s->pid, NULL, 0);
  close(s->beat);
}

static void check_storm(double seconds) {
  struct stormer procs[STORM_PROCS];
  for (int i = 0; i < STORM_PROCS; i++)
    if (storm_start(&procs[i])) exit(1);
  const double end = now() + seconds;
  double next_kill = now() + 0.2;
  unsigned kills = 0, beats = 0, victim = 0;
  char why[160] = "";
  while (!*why && now() < end) {
    struct pollfd pfd[STORM_PROCS];
    for (int i = 0; i < STORM_PROCS; i++) pfd[i] = (struct pollfd){.fd = procs[i].beat, .events = POLLIN};
    poll(pfd, STORM_PROCS, 20);
    const double t = now();
    for (int i = 0; i < STORM_PROCS && !*why; i++) {
      char buf[256];
      ssize_t n;
      while ((n = read(procs[i].beat, buf, sizeof buf)) > 0) beats += (unsigned)n, procs[i].last = t;
      int st;
      if (waitpid(procs[i].pid, &st, WNOHANG) == procs[i].pid)
        snprintf(why, sizeof why, "a process ended on its own (status %d)", st);
      else if (procs[i].last ? t - procs[i].last > STORM_STALL : t - procs[i].started > STORM_START)
        snprintf(why, sizeof why, "process %d made no progress for %.0f s: hung", (int)procs[i].pid,
                 procs[i].last ? STORM_STALL : STORM_START);
    }
    if (!*why && t >= next_kill) {
      struct stormer *s = &procs[victim++ % STORM_PROCS];
      storm_kill(s);
      kills++;
      if (storm_start(s)) exit(1);
      next_kill = t + 0.2;
    }
  }
  for (int i = 0; i < STORM_PROCS; i++) storm_kill(&procs[i]);
  /* one every 200 ms; a loaded host may manage half */
  if (!*why && kills < seconds * 2) snprintf(why, sizeof why, "only %u kills", kills);
  report(!*why, "SIGKILL storm", "%u processes SIGKILLed in %.0f s, %u iterations%s%s", kills, seconds, beats,
         *why ? ": " : ", none stalled", why);
  if (make_context()) exit(1);
  size_t free_b = 0, total = 0;
  cu.info(&free_b, &total);
  CUdeviceptr p;
  CUresult r = cu.alloc(&p, total);
  report(r == CUDA_SUCCESS, "after the storm", "the whole limit, %zu MiB, allocated again (%d)", total / MIB, (int)r);
  if (r == CUDA_SUCCESS) cu.free_(p);
}

static unsigned gib_arg(const char *s) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*end || v == 0 || v > 1024) {
    fprintf(stderr, "driver_test: %s: not a size in GiB (1-1024)\n", s);
    exit(2);
  }
  return (unsigned)v;
}

static int usage(void) {
  fprintf(stderr, "usage: driver_test check LIMIT_GIB | hold GIB SECONDS FILE | try GIB ok|oom | view | "
                  "storm SECONDS\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "view")) {
    if (load_driver() != 0) return 1;
    check_view();
    return failures ? 1 : 0;
  }
  if (argc == 3 && !strcmp(argv[1], "storm")) {
    double seconds = strtod(argv[2], NULL);
    if (seconds < 1 || seconds > 600) return usage();
    if (load_driver() != 0) return 1;
    check_storm(seconds);
    return failures ? 1 : 0;
  }
  if (argc < 3) return usage();
  const char *mode = argv[1];
  if (strcmp(mode, "check") && strcmp(mode, "hold") && strcmp(mode, "try")) return usage();
  unsigned gib = gib_arg(argv[2]);
  if ((!strcmp(mode, "hold") && argc != 5) || (!strcmp(mode, "try") && argc != 4) ||
      (!strcmp(mode, "check") && (argc != 3 || gib < 2)))
    return usage();
  if (load_driver() != 0 || make_context() != 0) return 1;
  if (!strcmp(mode, "check")) {
    size_t free_b = 0, total = 0;
    CUresult r = cu.info(&free_b, &total);
    report(r == CUDA_SUCCESS && total == (size_t)gib * GIB, "cuMemGetInfo", "total %.2f GiB, free %.2f GiB",
           (double)total / GIB, (double)free_b / GIB);
    check_path("cuMemAlloc", gib, plain_alloc, plain_free);
    check_path("cuMemCreate (VMM)", gib, vmm_alloc, vmm_free);
    check_path("cuMemAllocAsync", gib, async_alloc, async_free);
    check_path("cuMemAllocFromPoolAsync", gib, pool_alloc, async_free);
    check_path("cuMemAllocManaged", gib, managed_alloc, plain_free);
    check_kept_pool(gib);
    check_capture_and_wait(gib);
    check_nvml(gib);
  } else if (!strcmp(mode, "hold")) {
    CUdeviceptr p;
    CUresult r = cu.alloc(&p, (size_t)gib * GIB);
    if (r != CUDA_SUCCESS) return fprintf(stderr, "driver_test: hold %u GiB: %d\n", gib, (int)r), 1;
    int fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return perror(argv[4]), 1;
    close(fd);
    sleep((unsigned)atoi(argv[3]));
    cu.free_(p);
  } else {
    int want_ok = !strcmp(argv[3], "ok");
    if (!want_ok && strcmp(argv[3], "oom")) return usage();
    CUdeviceptr p;
    CUresult r = cu.alloc(&p, (size_t)gib * GIB);
    report(want_ok ? r == CUDA_SUCCESS : r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "%u GiB: %d (want %s)", gib,
           (int)r, want_ok ? "success" : "CUDA_ERROR_OUT_OF_MEMORY");
    if (r == CUDA_SUCCESS) cu.free_(p);
  }
  return failures ? 1 : 0;
}
