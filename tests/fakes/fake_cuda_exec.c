/* The fake GPU's execution engine: modules with one "spin" kernel, streams,
 * events and graphs. One worker thread per process plays the context's
 * channel: launches and event records are queued (launch returns at once, as
 * on a real GPU), the worker runs them in order and stamps each event with the
 * time it reaches it. When FAKE_CUDA_GPU_LOCK names a file, the worker holds an
 * flock on it while it has work (up to a 2 ms time slice), so processes share
 * one GPU's time as contexts do; then an event's time says when this process's
 * work actually ran, not when it was queued, and a kernel longer than what is
 * left of its slice is preempted when another process waits, so that its
 * events hold the other process's slice too, as on a real GPU. The first 4 KiB of that file
 * count the processes waiting for it.
 */
#define _GNU_SOURCE
#include "fake_cuda_internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define QDEPTH 64
#define SLICE_NS 2000000ull

struct CUmod_st { int unused; };
struct CUfunc_st { int spin; };
struct CUstream_st {
  int dev;         /* the device of the context it was made in */
  int capturing;   /* a capture is under way: its work goes into capture_ns */
  int invalidated; /* ... and an illegal call spoilt it */
  CUstreamCaptureMode mode;
  uint64_t capture_ns;
};
struct CUevent_st { _Atomic int state; uint64_t t_ns; }; /* 0 never recorded, 1 pending, 2 done, 3 captured */
struct CUgraph_st { uint64_t ns; };
struct CUgraphExec_st { uint64_t ns; };

static struct CUfunc_st spin_fn = {1};
static struct CUmod_st the_module;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started;
  int lock_fd;
  struct { uint64_t ns, t_enq; struct CUevent_st *ev; } q[QDEPTH];
  unsigned head, tail;
  int busy;     /* worker is running an item */
  int reserved; /* GPU taken by an event stamped on arrival, for the work that follows */
  uint64_t reserved_at;
  _Atomic uint64_t busy_ns;
} ch = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, -1, {{0, 0, 0}}, 0, 0, 0, 0, 0, 0};

uint64_t fakecuda_busy_ns(void) { return atomic_load(&ch.busy_ns); }

static void spin_until(uint64_t end) {
  while (fake_now_ns() < end) {
  }
}

/* Shared through the lock file's first page: processes waiting for the GPU
 * (a process hands the GPU over only when someone waits) and when the last
 * holder released it. */
struct gpu_page {
  _Atomic uint32_t waiters;
  _Atomic uint64_t released_ns;
};
static struct gpu_page *page;
static uint64_t last_end; /* end of this channel's last item */

/* Takes the GPU; returns from when it is ours on the simulated timeline. */
static uint64_t gpu_acquire(void) {
  uint64_t available = last_end;
  if (ch.lock_fd < 0) return available;
  if (flock(ch.lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (page) atomic_fetch_add(&page->waiters, 1);
    flock(ch.lock_fd, LOCK_EX);
    if (page) atomic_fetch_sub(&page->waiters, 1);
  }
  uint64_t released = page ? atomic_load(&page->released_ns) : fake_now_ns();
  return released > available ? released : available;
}

/* The channel. A simulated timeline hides the thread's wake-up latency: on an
 * idle GPU an item starts when it was submitted, as on hardware; behind
 * other work it starts when that work is done. */
static void *worker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&ch.mu);
  for (;;) {
    while (ch.head == ch.tail) {
      if (!ch.reserved) {
        pthread_cond_wait(&ch.cv, &ch.mu);
        continue;
      }
      /* a reservation nothing followed is given back after 1 ms */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 1000000;
      if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&ch.cv, &ch.mu, &ts);
      if (ch.head == ch.tail && ch.reserved && fake_now_ns() - ch.reserved_at >= 1000000) {
        ch.reserved = 0;
        if (page) atomic_store(&page->released_ns, ch.reserved_at);
        flock(ch.lock_fd, LOCK_UN);
      }
    }
    ch.reserved = 0; /* the work it was for is here */
    pthread_mutex_unlock(&ch.mu);
    uint64_t available = gpu_acquire(); /* immediate when reserved: same open file */
    uint64_t slice_end = fake_now_ns() + SLICE_NS;
    pthread_mutex_lock(&ch.mu);
    while (ch.head != ch.tail && fake_now_ns() < slice_end) {
      unsigned i = ch.head % QDEPTH;
      uint64_t ns = ch.q[i].ns, start = ch.q[i].t_enq > available ? ch.q[i].t_enq : available;
      struct CUevent_st *ev = ch.q[i].ev;
      ch.busy = 1;
      pthread_mutex_unlock(&ch.mu);
      if (ev) {
        ev->t_ns = start;
        atomic_store(&ev->state, 2);
      } else if (ns) {
        /* A kernel still running at the end of the slice is preempted when
         * another process waits for the GPU (compute preemption, as since
         * Pascal); the rest of it runs in this channel's next slice. */
        uint64_t end = start + ns, stop = end;
        if (end > slice_end) {
          uint64_t slice_over = start > slice_end ? start : slice_end;
          spin_until(slice_over);
          if (page && atomic_load(&page->waiters)) stop = slice_over;
        }
        spin_until(stop);
        atomic_fetch_add(&ch.busy_ns, stop - start);
        available = last_end = stop;
        if (stop < end) {
          pthread_mutex_lock(&ch.mu);
          ch.q[i].ns = end - stop;
          ch.q[i].t_enq = 0;
          ch.busy = 0;
          break; /* the slice is over: hand the GPU over with the rest queued */
        }
      }
      pthread_mutex_lock(&ch.mu);
      ch.busy = 0;
      ch.head++;
      pthread_cond_broadcast(&ch.cv);
    }
    fakecuda_account_busy();
    int more = ch.head != ch.tail, handed = 0;
    if (ch.lock_fd >= 0 && !ch.reserved) {
      /* free from the end of our last item on the timeline, even if this
       * thread was descheduled since */
      if (page) atomic_store(&page->released_ns, available);
      flock(ch.lock_fd, LOCK_UN);
      handed = 1;
    }
    pthread_mutex_unlock(&ch.mu);
    /* flock is not fair: when someone waits, let them in */
    if (handed && more && page && atomic_load(&page->waiters)) usleep(100);
    pthread_mutex_lock(&ch.mu);
  }
  return NULL;
}

/* Opens the GPU lock and starts the worker; called with ch.mu held. */
static int start_channel(void) {
  if (ch.started) return 0;
  const char *lock = getenv("FAKE_CUDA_GPU_LOCK");
  if (lock && *lock) ch.lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (ch.lock_fd >= 0 && ftruncate(ch.lock_fd, 4096) == 0) {
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ch.lock_fd, 0);
    if (m != MAP_FAILED) page = m;
  }
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &a, worker, NULL) != 0) return -1;
  ch.started = 1;
  return 0;
}

/* Queues one item; blocks while the queue is full (a full push buffer). */
static CUresult enqueue(uint64_t ns, struct CUevent_st *ev) {
  pthread_mutex_lock(&ch.mu);
  if (start_channel() != 0) {
    pthread_mutex_unlock(&ch.mu);
    return CUDA_ERROR_UNKNOWN;
  }
  while (ch.tail - ch.head >= QDEPTH) pthread_cond_wait(&ch.cv, &ch.mu);
  ch.q[ch.tail % QDEPTH].ns = ns;
  ch.q[ch.tail % QDEPTH].t_enq = fake_now_ns();
  ch.q[ch.tail % QDEPTH].ev = ev;
  ch.tail++;
  pthread_cond_broadcast(&ch.cv);
  pthread_mutex_unlock(&ch.mu);
  return CUDA_SUCCESS;
}

static CUresult drain(void) {
  CUresult r = fake_check_ctx();
  if (r) return r;
  pthread_mutex_lock(&ch.mu);
  while (ch.head != ch.tail) pthread_cond_wait(&ch.cv, &ch.mu);
  pthread_mutex_unlock(&ch.mu);
  return CUDA_SUCCESS;
}

/* Everything queued done; pools give back what is over their threshold. */
static CUresult wait_idle(void) {
  CUresult r = drain();
  if (r == CUDA_SUCCESS) fake_pools_release();
  return r;
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
  CUresult r = fake_check_ctx();
  if (r) return r;
  if (!s || flags > 1) return CUDA_ERROR_INVALID_VALUE;
  CUdevice dev;
  if ((r = cuCtxGetDevice(&dev)) != CUDA_SUCCESS) return r;
  *s = calloc(1, sizeof(struct CUstream_st));
  if (!*s) return CUDA_ERROR_OUT_OF_MEMORY;
  (*s)->dev = dev;
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(CUstream s) {
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  free(s);
  return CUDA_SUCCESS;
}

/* ---------------- stream capture ----------------
 * Work queued on a capturing stream goes into the graph being captured
 * instead of running. As on a real driver: asking about an event recorded
 * in a capture (CUDA_ERROR_CAPTURED_EVENT), and, while a capture in global
 * mode is under way, an unsafe call (here: querying or waiting for an
 * event, waiting for a stream) from a thread not in relaxed mode
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), are refused and spoil the
 * capture: it ends with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. So are, from
 * any thread in any mode, waiting for the capturing stream or for the whole
 * context. */

#define MAX_CAPTURES 8
static struct CUstream_st *captures[MAX_CAPTURES];
static pthread_mutex_t captures_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* The stream behind a handle; NULL for the legacy and per-thread streams,
 * which are never captured here. */
static struct CUstream_st *stream_of(CUstream s) { return (uintptr_t)s > 2 ? s : NULL; }

int fake_stream_device(CUstream s) {
  struct CUstream_st *st = stream_of(s);
  return st ? st->dev : -1;
}

static int capturing(CUstream s) {
  struct CUstream_st *st = stream_of(s);
  return st && st->capturing;
}

/* Spoils the captures an illegal call reaches: the global-mode ones, or all. */
static void invalidate_captures(int global_only) {
  pthread_mutex_lock(&captures_mu);
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (captures[i] && (!global_only || captures[i]->mode == CU_STREAM_CAPTURE_MODE_GLOBAL))
      captures[i]->invalidated = 1;
  pthread_mutex_unlock(&captures_mu);
}

static int any_capture(void) {
  int any = 0;
  pthread_mutex_lock(&captures_mu);
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (captures[i]) any = 1;
  pthread_mutex_unlock(&captures_mu);
  return any;
}

/* An unsafe call while a global-mode capture is under way, from a thread
 * that did not relax: refused, and the capture is spoilt. */
static int unsafe_during_capture(void) {
  if (thread_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return 0;
  int any = 0;
  pthread_mutex_lock(&captures_mu);
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (captures[i] && captures[i]->mode == CU_STREAM_CAPTURE_MODE_GLOBAL) any = 1;
  pthread_mutex_unlock(&captures_mu);
  if (any) invalidate_captures(1);
  return any;
}

CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  struct CUstream_st *st = stream_of(s);
  if (!st) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot be captured */
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  if (st->capturing) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&captures_mu);
  int i = 0;
  while (i < MAX_CAPTURES && captures[i]) i++;
  if (i < MAX_CAPTURES) captures[i] = st;
  pthread_mutex_unlock(&captures_mu);
  if (i == MAX_CAPTURES) return CUDA_ERROR_OUT_OF_MEMORY;
  st->capturing = 1;
  st->invalidated = 0;
  st->mode = mode;
  st->capture_ns = 0;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *g) {
  struct CUstream_st *st = stream_of(s);
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  if (!st || !st->capturing) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&captures_mu);
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (captures[i] == st) captures[i] = NULL;
  pthread_mutex_unlock(&captures_mu);
  st->capturing = 0;
  *g = NULL;
  if (st->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  CUresult r = cuGraphCreate(g, 0);
  if (r == CUDA_SUCCESS) (*g)->ns = st->capture_ns;
  return r;
}

CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *st = stream_of(s);
  *status = !st || !st->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
            : st->invalidated     ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  if (!mode || *mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode previous = thread_capture_mode;
  thread_capture_mode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}

/* Waits conflict with stream capture: waiting for the whole context,
 * whatever the modes, or for a capturing stream, is refused and spoils the
 * captures it reaches; waiting for another stream is an unsafe call. */
CUresult cuCtxSynchronize(void) {
  if (any_capture()) {
    invalidate_captures(0);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return wait_idle();
}
CUresult cuStreamSynchronize(CUstream s) {
  if (capturing(s)) {
    s->invalidated = 1;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (unsafe_during_capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return wait_idle();
}
CUresult cuStreamSynchronize_ptsz(CUstream s) { return cuStreamSynchronize(s); }

/* Queues kernel time on a stream, or adds it to the stream's capture. */
static CUresult submit(CUstream s, uint64_t ns) {
  struct CUstream_st *st = stream_of(s);
  if (st && st->capturing) {
    if (st->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    st->capture_ns += ns;
    return CUDA_SUCCESS;
  }
  return ns ? enqueue(ns, NULL) : CUDA_SUCCESS; /* an empty kernel has nothing to run */
}

/* ---------------- modules and launches ---------------- */

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  CUresult r = fake_check_ctx();
  if (r) return r;
  if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
  *m = &the_module;
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) { return m == &the_module ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  if (!f || !name) return CUDA_ERROR_INVALID_VALUE;
  if (m != &the_module) return CUDA_ERROR_INVALID_HANDLE;
  if (strcmp(name, "spin") != 0) return CUDA_ERROR_NOT_FOUND;
  *f = &spin_fn;
  return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, CUstream s, void **params) {
  CUresult r = fake_check_ctx();
  if (r) return r;
  if (f != &spin_fn) return CUDA_ERROR_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
  uint64_t ns = params && params[0] ? *(const uint64_t *)params[0] : 0;
  return submit(s, ns);
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, CUstream s, void **params, void **extra) {
  (void)shmem, (void)extra;
  return launch(f, gx, gy, gz, bx, by, bz, s, params);
}
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shmem, CUstream s, void **params, void **extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  (void)extra;
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ, c->hStream,
                params);
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  return cuLaunchKernelEx(c, f, params, extra);
}
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params) {
  (void)shmem;
  return launch(f, gx, gy, gz, bx, by, bz, s, params);
}
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params) {
  return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

/* ---------------- events ---------------- */

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
  CUresult r = fake_check_ctx();
  if (r) return r;
  if (!e || flags > 0xf) return CUDA_ERROR_INVALID_VALUE;
  *e = calloc(1, sizeof(struct CUevent_st));
  return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuEventDestroy_v2(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  wait_idle(); /* the worker may still hold it */
  free(e);
  return CUDA_SUCCESS;
}
/* An idle GPU stamps an event as it arrives (and, here, stays this
 * channel's for the work that follows, as a real channel keeps its time
 * slice); a busy one stamps it when it reaches it. */
CUresult cuEventRecord(CUevent e, CUstream s) {
  CUresult r = fake_check_ctx();
  if (r) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  if (capturing(s)) {
    atomic_store(&e->state, 3); /* a node of the graph: it records nothing now */
    return CUDA_SUCCESS;
  }
  pthread_mutex_lock(&ch.mu);
  int idle = start_channel() == 0 && ch.head == ch.tail && !ch.busy &&
             (ch.lock_fd < 0 || ch.reserved || flock(ch.lock_fd, LOCK_EX | LOCK_NB) == 0);
  if (idle) {
    uint64_t now = fake_now_ns();
    uint64_t released = page ? atomic_load(&page->released_ns) : 0;
    if (ch.lock_fd >= 0) {
      ch.reserved = 1;
      ch.reserved_at = now;
      pthread_cond_broadcast(&ch.cv);
    }
    e->t_ns = now > released ? now : released;
    atomic_store(&e->state, 2);
  }
  pthread_mutex_unlock(&ch.mu);
  if (idle) return CUDA_SUCCESS;
  atomic_store(&e->state, 1);
  return enqueue(0, e);
}
CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return cuEventRecord(e, s); }
/* The answer to a question about an event during a capture, or 0. */
static CUresult capture_refuses(CUevent e) {
  if (atomic_load(&e->state) == 3) {
    invalidate_captures(0);
    return CUDA_ERROR_CAPTURED_EVENT;
  }
  return unsafe_during_capture() ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}
CUresult cuEventQuery(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = capture_refuses(e);
  if (r) return r;
  return atomic_load(&e->state) == 1 ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = capture_refuses(e);
  if (r) return r;
  pthread_mutex_lock(&ch.mu);
  while (atomic_load(&e->state) == 1) pthread_cond_wait(&ch.cv, &ch.mu);
  pthread_mutex_unlock(&ch.mu);
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!a || !b) return CUDA_ERROR_INVALID_HANDLE;
  int sa = atomic_load(&a->state), sb = atomic_load(&b->state);
  if (sa == 3 || sb == 3) {
    invalidate_captures(0);
    return CUDA_ERROR_CAPTURED_EVENT;
  }
  if (sa == 0 || sb == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (sa == 1 || sb == 1) return CUDA_ERROR_NOT_READY;
  *ms = (float)((double)((int64_t)(b->t_ns - a->t_ns)) / 1e6);
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime(ms, a, b); }

/* ---------------- graphs: a graph of spin kernels runs as one item ---------------- */

CUresult cuGraphCreate(CUgraph *g, unsigned int flags) {
  if (!g || flags) return CUDA_ERROR_INVALID_VALUE;
  *g = calloc(1, sizeof(struct CUgraph_st));
  return *g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                 const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
  if (!n || !g || !p || (ndeps && !deps)) return CUDA_ERROR_INVALID_VALUE;
  if (p->func != &spin_fn) return CUDA_ERROR_INVALID_VALUE;
  g->ns += p->kernelParams && p->kernelParams[0] ? *(const uint64_t *)p->kernelParams[0] : 0;
  *n = (CUgraphNode)g;
  return CUDA_SUCCESS;
}
/* Graph memory: an allocation node gets its address when it is made; the
 * memory itself is the graph pool's at launch, which this fake does not
 * model (nothing here launches such a graph). Of cuGraphAddNode's types only
 * the allocation node is made here. */
static _Atomic uint64_t graph_va_next = 0x100000000000ull; /* where nothing is mapped */

CUresult cuGraphAddMemAllocNode(CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                CUDA_MEM_ALLOC_NODE_PARAMS *p) {
  if (!n || !g || !p || (ndeps && !deps) || p->bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (p->poolProps.location.id < 0 || p->poolProps.location.id >= fakecuda_device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  p->dptr = atomic_fetch_add(&graph_va_next, (p->bytesize + 0xfffff) & ~0xfffffull);
  *n = (CUgraphNode)g;
  return CUDA_SUCCESS;
}
CUresult cuGraphAddNode(CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t ndeps, CUgraphNodeParams *p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) return CUDA_ERROR_NOT_SUPPORTED;
  return cuGraphAddMemAllocNode(n, g, deps, ndeps, &p->alloc);
}
CUresult cuGraphAddNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                           size_t ndeps, CUgraphNodeParams *p) {
  (void)edges; /* NULL: default edges */
  return cuGraphAddNode(n, g, deps, ndeps, p);
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags) {
  if (!e || !g || flags > 0xf) return CUDA_ERROR_INVALID_VALUE;
  *e = calloc(1, sizeof(struct CUgraphExec_st));
  if (!*e) return CUDA_ERROR_OUT_OF_MEMORY;
  (*e)->ns = g->ns;
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  CUresult r = fake_check_ctx();
  if (r) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  return submit(s, e->ns);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) { return cuGraphLaunch(e, s); }
CUresult cuGraphExecDestroy(CUgraphExec e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  wait_idle();
  free(e);
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph g) {
  if (!g) return CUDA_ERROR_INVALID_HANDLE;
  free(g);
  return CUDA_SUCCESS;
}
