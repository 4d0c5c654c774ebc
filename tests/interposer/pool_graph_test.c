/* Memory that does not come from the current context's GPU, or not now.
 * Run with two GPUs under `gpuslice exec --memory-limit 1:256Mi`: GPU 1 is
 * limited, GPU 0 is not.
 *   pool_graph_test streams   stream-ordered allocations are charged to the
 *                             GPU that holds them: a stream made on GPU 1,
 *                             or GPU 1's pool, used while GPU 0's context is
 *                             current, counts against GPU 1's 256 MiB; GPU 0's
 *                             pool used from GPU 1's context does not; a
 *                             growth given back (freed, waited for, trimmed)
 *                             spoils no other thread's capture; a pool
 *                             being destroyed hands out nothing more, and
 *                             its handle is not used once destroyed
 *   pool_graph_test graphs    graph memory, which every launch takes
 *                             uncounted, is refused on a limited GPU:
 *                             allocation nodes (cuGraphAddMemAllocNode,
 *                             cuGraphAddNode and its _v2, also looked up
 *                             with cuGetProcAddress) and stream-ordered
 *                             allocations inside a stream capture; a node on
 *                             GPU 0 is made. Memory from cuMemAlloc freed with
 *                             cuMemFreeAsync is credited, and another thread's
 *                             capture in global mode survives the wait for it
 *   pool_graph_test unlimited (no GPU limited: the limit names a GPU the
 *                             process does not have) a capture's allocation
 *                             is left to the driver
 */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <pthread.h>
#include <semaphore.h>
#include <string.h>

#define CHECK_PROGRAM "pool_graph_test"
#include "check.h"

#define MIB (1ull << 20)

uint64_t fakecuda_device_used(int dev); /* the fake driver's own count */
uint64_t fakecuda_device_peak(int dev);  /* the most it held since the reset */
void fakecuda_reset_peak(int dev);
void fakecuda_on_pool_destroy(void (*hook)(void)); /* runs as cuMemPoolDestroy begins */
void fakecuda_on_pool_alloc(void (*hook)(void));   /* runs as a stream-ordered allocation returns */
int fakecuda_destroyed_pool_calls(void);           /* calls refused on a destroyed pool's handle */

static CUcontext ctx[2];

static int contexts(int n) {
  if (cuInit(0)) return 0;
  for (int i = 0; i < n; i++)
    if (cuDevicePrimaryCtxRetain(&ctx[i], i)) return 0;
  return !cuCtxSetCurrent(ctx[0]);
}

/* A stream made in GPU `dev`'s context; GPU 0's context is current after. */
static CUstream stream_on(int dev) {
  CUstream s = NULL;
  cuCtxSetCurrent(ctx[dev]);
  CUresult r = cuStreamCreate(&s, 0);
  CHECK(r == CUDA_SUCCESS, "cuStreamCreate on GPU %d: %d", dev, r);
  cuCtxSetCurrent(ctx[0]);
  return s;
}

static uint64_t used_on(int dev) { return fakecuda_device_used(dev); }

/* free memory as the program is told, in `dev`'s context */
static uint64_t told_free(int dev) {
  size_t free_b = 0, total = 0;
  cuCtxSetCurrent(ctx[dev]);
  cuMemGetInfo_v2(&free_b, &total);
  cuCtxSetCurrent(ctx[0]);
  return free_b;
}

static CUmemoryPool new_pool(int dev, uint64_t threshold) {
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = dev;
  CUmemoryPool p = NULL;
  CUresult r = cuMemPoolCreate(&p, &props);
  CHECK(r == CUDA_SUCCESS, "cuMemPoolCreate on GPU %d: %d", dev, r);
  cuuint64_t t = threshold;
  if (p) cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &t);
  return p;
}

/* A capture in global mode, begun and ended by a thread of its own, as a
 * program's other thread would: our waits in between must not spoil it. */
struct capture_thread {
  pthread_t thread;
  sem_t begun, end, ended;
  int dev;
  CUresult begin, result;
};

static void *capture_main(void *arg) {
  struct capture_thread *c = arg;
  CUstream s = NULL;
  CUgraph g = NULL;
  cuCtxSetCurrent(ctx[c->dev]);
  c->begin = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) /* no tie to the legacy stream */;
  if (c->begin == CUDA_SUCCESS) c->begin = cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  sem_post(&c->begun);
  sem_wait(&c->end);
  if (c->begin == CUDA_SUCCESS) c->result = cuStreamEndCapture(s, &g);
  if (g) cuGraphDestroy(g);
  if (s) cuStreamDestroy_v2(s);
  sem_post(&c->ended);
  return NULL;
}

static void capture_begin(struct capture_thread *c, int dev) {
  memset(c, 0, sizeof *c);
  c->dev = dev;
  sem_init(&c->begun, 0, 0);
  sem_init(&c->end, 0, 0);
  sem_init(&c->ended, 0, 0);
  if (pthread_create(&c->thread, NULL, capture_main, c) != 0) {
    c->begin = CUDA_ERROR_UNKNOWN; /* capture_end then waits for nothing */
    CHECK(0, "a thread for the capture");
    return;
  }
  sem_wait(&c->begun);
  CHECK(c->begin == CUDA_SUCCESS, "another thread begins a capture in global mode on GPU %d: %d", dev, c->begin);
}

/* the capture's end, as the driver reported it to its thread */
static CUresult capture_end(struct capture_thread *c) {
  if (c->begin == CUDA_ERROR_UNKNOWN) return c->begin;
  sem_post(&c->end);
  sem_wait(&c->ended);
  pthread_join(c->thread, NULL);
  return c->result;
}

/* A call on a thread of its own, held inside the fake driver (at the
 * moment the hook given to start_held marks) until finish_held. */
static sem_t held, released;
static void hold(void) {
  fakecuda_on_pool_destroy(NULL); /* the one call only */
  fakecuda_on_pool_alloc(NULL);
  sem_post(&held);
  sem_wait(&released);
}
struct held_call {
  pthread_t thread;
  int alloc; /* 100 MiB from `pool` (into `ptr`), else cuMemPoolDestroy of it */
  CUmemoryPool pool;
  CUdeviceptr ptr;
  CUresult result;
};
static void *held_main(void *arg) {
  struct held_call *c = arg;
  cuCtxSetCurrent(ctx[0]);
  c->result = c->alloc ? cuMemAllocFromPoolAsync(&c->ptr, 100 * MIB, c->pool, NULL) : cuMemPoolDestroy(c->pool);
  return NULL;
}
/* 0 where no thread could be started (and the check failed). */
static int start_held(struct held_call *c, void (*set_hook)(void (*)(void))) {
  sem_init(&held, 0, 0);
  sem_init(&released, 0, 0);
  c->result = CUDA_ERROR_UNKNOWN;
  set_hook(hold);
  if (pthread_create(&c->thread, NULL, held_main, c) != 0) {
    set_hook(NULL);
    CHECK(0, "a thread for the held call");
    return 0;
  }
  sem_wait(&held);
  return 1;
}
static void finish_held(struct held_call *c) {
  sem_post(&released);
  pthread_join(c->thread, NULL);
}

/* A pool destroyed while the program allocates from it on another thread:
 * an allocation made after the interposer looked at what the pool has out
 * would keep the pool's memory, credited by the destroy. */
static void destroy_race(void) {
  CUdeviceptr held_mem = 0, late = 0;
  CUmemoryPool doomed = new_pool(1, UINT64_MAX);
  CUresult r = cuMemAllocFromPoolAsync(&held_mem, 200 * MIB, doomed, NULL);
  CHECK(r == CUDA_SUCCESS, "200 MiB from a new pool of GPU 1: %d", r);
  cuMemFreeAsync(held_mem, NULL); /* the pool keeps the 200 MiB */
  struct held_call destroy = {.alloc = 0, .pool = doomed}; /* held after the interposer looked at the pool */
  if (!start_held(&destroy, fakecuda_on_pool_destroy)) return;
  r = cuMemAllocFromPoolAsync(&late, 100 * MIB, doomed, NULL);
  CHECK(r != CUDA_SUCCESS, "100 MiB from the pool while another thread destroys it: %d", r);
  finish_held(&destroy);
  CHECK(destroy.result == CUDA_SUCCESS, "cuMemPoolDestroy: %d", destroy.result);
  cuCtxSetCurrent(ctx[1]);
  CUdeviceptr after = 0;
  r = cuMemAlloc_v2(&after, 200 * MIB);
  CHECK(r == CUDA_SUCCESS, "200 MiB in GPU 1's context once the pool is gone: %d", r);
  CHECK(used_on(1) <= 256 * MIB, "GPU 1 holds %llu MiB under its 256 MiB limit",
        (unsigned long long)(used_on(1) / MIB));
  if (r == CUDA_SUCCESS) cuMemFree_v2(after);
  cuCtxSetCurrent(ctx[0]);
}

/* An allocation of ours under way (the driver has made it, the interposer
 * has not settled it) as another thread destroys its pool: given back as
 * it settles, and the destroyed pool's handle never used again (its entry
 * was dropped, and the allocation's settling made a new one for the dead
 * handle, asked about at every later release). */
static void destroy_while_allocating(void) {
  CUmemoryPool doomed = new_pool(1, 0);
  const int calls = fakecuda_destroyed_pool_calls();
  struct held_call alloc = {.alloc = 1, .pool = doomed}; /* held as the driver's allocation returns */
  if (!start_held(&alloc, fakecuda_on_pool_alloc)) return;
  CUresult r = cuMemPoolDestroy(doomed);
  CHECK(r == CUDA_SUCCESS, "cuMemPoolDestroy while another thread's allocation from it is under way: %d", r);
  finish_held(&alloc);
  CHECK(alloc.result != CUDA_SUCCESS, "the allocation whose pool was destroyed meanwhile is given back: %d",
        alloc.result);
  if (alloc.result == CUDA_SUCCESS) cuMemFreeAsync(alloc.ptr, NULL);
  size_t free_b = 0, total = 0;
  cuMemGetInfo_v2(&free_b, &total); /* a release: every known pool looked at */
  CHECK(fakecuda_destroyed_pool_calls() == calls, "calls on the destroyed pool's handle: %d",
        fakecuda_destroyed_pool_calls() - calls);
}

static void streams(void) {
  CUstream s1 = stream_on(1);
  CUdeviceptr p = 0, held = 0;
  CUresult r;

  /* GPU 0 current, a stream of GPU 1: the memory is GPU 1's, refused
   * before the driver takes it */
  fakecuda_reset_peak(1);
  r = cuMemAllocAsync(&p, 300 * MIB, s1);
  CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "300 MiB on GPU 1's stream, GPU 0 current: %d", r);
  CHECK(fakecuda_device_peak(1) == 0, "GPU 1 held %llu bytes meanwhile", (unsigned long long)fakecuda_device_peak(1));
  CUcontext now = NULL;
  CHECK(!cuCtxGetCurrent(&now) && now == ctx[0], "GPU 0's context still current");
  CHECK(used_on(1) == 0, "the refused 300 MiB given back by GPU 1's pool: it holds %llu bytes",
        (unsigned long long)used_on(1));
  r = cuMemAllocAsync(&held, 200 * MIB, s1);
  CHECK(r == CUDA_SUCCESS, "200 MiB on GPU 1's stream: %d", r);
  r = cuMemAllocAsync(&p, 100 * MIB, s1);
  CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "100 MiB more on GPU 1's stream: %d", r);
  CHECK(used_on(1) == 200 * MIB, "GPU 1 holds %llu bytes", (unsigned long long)used_on(1));
  CHECK(told_free(1) == 56 * MIB, "GPU 1's free memory as told: %llu", (unsigned long long)told_free(1));

  /* GPU 1's pool, GPU 0 current, GPU 0's streams: still GPU 1's budget */
  CUmemoryPool pool0, pool1;
  CHECK(!cuDeviceGetDefaultMemPool(&pool0, 0) && !cuDeviceGetDefaultMemPool(&pool1, 1), "default pools");
  r = cuMemAllocFromPoolAsync(&p, 100 * MIB, pool1, NULL);
  CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "100 MiB from GPU 1's pool with 200 held: %d", r);
  r = cuMemAllocFromPoolAsync_ptsz(&p, 100 * MIB, pool1, NULL);
  CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "the same, per-thread stream: %d", r);
  CHECK(used_on(1) == 200 * MIB, "GPU 1 holds %llu bytes", (unsigned long long)used_on(1));

  /* What a pool keeps is charged: freed memory a pool holds on to (its
   * release threshold set high) cannot be had again from another pool */
  cuuint64_t keep_all = UINT64_MAX;
  cuMemPoolSetAttribute(pool1, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
  r = cuMemFreeAsync(held, s1);
  CHECK(r == CUDA_SUCCESS, "free the 200 MiB: %d", r);
  cuStreamSynchronize(s1);
  CUmemoryPool other = new_pool(1, UINT64_MAX);
  /* a pool made on GPU 1 is known as GPU 1's from its making: refused
   * before the driver grows it, not taken and given back */
  fakecuda_reset_peak(1);
  r = cuMemAllocFromPoolAsync(&p, 300 * MIB, other, NULL);
  CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "300 MiB from a new pool of GPU 1, GPU 0 current: %d", r);
  CHECK(fakecuda_device_peak(1) == 200 * MIB, "GPU 1 never held more than 200 MiB meanwhile: %llu",
        (unsigned long long)fakecuda_device_peak(1));
  r = cuMemAllocFromPoolAsync(&p, 200 * MIB, other, NULL);
  CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "200 MiB from another pool of GPU 1 while the first keeps 200: %d", r);
  CHECK(used_on(1) == 200 * MIB, "GPU 1 holds %llu bytes (the first pool's)", (unsigned long long)used_on(1));
  r = cuMemAllocFromPoolAsync(&held, 200 * MIB, pool1, NULL);
  CHECK(r == CUDA_SUCCESS, "200 MiB again from the pool that keeps them: %d", r);
  CHECK(used_on(1) == 200 * MIB, "reused: GPU 1 holds %llu bytes", (unsigned long long)used_on(1));

  /* a pool that holds as much as asked may be tried (it might reuse); its
   * growth past the limit is given back */
  CUdeviceptr more = 0;
  struct capture_thread capture;
  capture_begin(&capture, 1);
  r = cuMemAllocFromPoolAsync(&more, 100 * MIB, pool1, NULL);
  CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "100 MiB more from the pool that holds 200, all in use: %d", r);
  r = capture_end(&capture);
  CHECK(r == CUDA_SUCCESS, "the other thread's capture, over the growth given back: %d", r);
  CHECK(used_on(1) == 200 * MIB, "its growth given back: GPU 1 holds %llu bytes", (unsigned long long)used_on(1));

  /* what a pool gives back is credited: trimmed, or released at a synchronization */
  cuMemFreeAsync(held, NULL);
  r = cuMemPoolTrimTo(pool1, 0);
  CHECK(r == CUDA_SUCCESS && used_on(1) == 0, "trimmed: %d, GPU 1 holds %llu bytes", r, (unsigned long long)used_on(1));
  r = cuMemAllocFromPoolAsync(&held, 200 * MIB, other, NULL);
  CHECK(r == CUDA_SUCCESS, "200 MiB from the other pool once the first was trimmed: %d", r);
  cuMemFreeAsync(held, NULL);
  cuuint64_t keep_none = 0;
  cuMemPoolSetAttribute(other, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_none);
  cuCtxSynchronize(); /* the pool gives it back now; the interposer sees it when asked */
  cuCtxSetCurrent(ctx[1]);
  r = cuMemAlloc_v2(&held, 250 * MIB);
  CHECK(r == CUDA_SUCCESS, "250 MiB in GPU 1's context after the pool gave its memory back: %d", r);
  cuMemFree_v2(held);
  r = cuMemPoolDestroy(other);
  CHECK(r == CUDA_SUCCESS, "cuMemPoolDestroy: %d", r);

  /* GPU 1 current, GPU 0's pool: not GPU 1's budget (first charged there,
   * so it must fit there too until the driver says where it is) */
  CUdeviceptr big = 0;
  r = cuMemAllocFromPoolAsync(&big, 200 * MIB, pool0, NULL);
  CHECK(r == CUDA_SUCCESS, "200 MiB from GPU 0's pool, GPU 1 current: %d", r);
  r = cuMemAlloc_v2(&held, 250 * MIB);
  CHECK(r == CUDA_SUCCESS, "250 MiB in GPU 1's context, GPU 0's 200 held: %d", r);
  CHECK(used_on(0) == 200 * MIB, "GPU 0 holds %llu bytes", (unsigned long long)used_on(0));
  cuMemFree_v2(held);
  cuMemFreeAsync(big, NULL);
  cuCtxSetCurrent(ctx[0]);
  cuStreamDestroy_v2(s1);
  destroy_race();
  destroy_while_allocating();
}

static CUDA_MEM_ALLOC_NODE_PARAMS node_on(int dev, size_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = dev;
  p.bytesize = bytes;
  return p;
}

static CUgraphNodeParams any_node_on(int dev, size_t bytes) {
  CUgraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  p.alloc = node_on(dev, bytes);
  return p;
}

typedef CUresult (*add_node_v1)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *);
typedef CUresult (*add_node_v2)(CUgraphNode *, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t,
                                CUgraphNodeParams *);

static void graphs(void) {
  CUgraph g;
  CUgraphNode n;
  CUresult r = cuGraphCreate(&g, 0);
  CHECK(r == CUDA_SUCCESS, "cuGraphCreate: %d", r);

  CUDA_MEM_ALLOC_NODE_PARAMS a = node_on(1, 1 * MIB);
  r = cuGraphAddMemAllocNode(&n, g, NULL, 0, &a);
  CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "allocation node on GPU 1: %d", r);
  a = node_on(0, 1 * MIB);
  r = cuGraphAddMemAllocNode(&n, g, NULL, 0, &a);
  CHECK(r == CUDA_SUCCESS && a.dptr != 0, "allocation node on GPU 0: %d", r);

  CUgraphNodeParams p = any_node_on(1, 1 * MIB);
  r = cuGraphAddNode(&n, g, NULL, 0, &p);
  CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "cuGraphAddNode, allocation on GPU 1: %d", r);
  r = cuGraphAddNode_v2(&n, g, NULL, NULL, 0, &p);
  CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "cuGraphAddNode_v2, allocation on GPU 1: %d", r);
  void *fn = NULL;
  CUdriverProcAddressQueryResult found;
  r = cuGetProcAddress_v2("cuGraphAddNode", &fn, 12030, 0, &found);
  CHECK(r == CUDA_SUCCESS && fn, "cuGetProcAddress(cuGraphAddNode, 12030): %d", r);
  if (fn) {
    r = ((add_node_v2)fn)(&n, g, NULL, NULL, 0, &p);
    CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "cuGraphAddNode from cuGetProcAddress 12030: %d", r);
  }
  fn = NULL;
  r = cuGetProcAddress_v2("cuGraphAddNode", &fn, 12020, 0, &found);
  CHECK(r == CUDA_SUCCESS && fn, "cuGetProcAddress(cuGraphAddNode, 12020): %d", r);
  if (fn) {
    r = ((add_node_v1)fn)(&n, g, NULL, 0, &p);
    CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "cuGraphAddNode from cuGetProcAddress 12020: %d", r);
  }
  fn = NULL;
  r = cuGetProcAddress_v2("cuGraphAddMemAllocNode", &fn, 11040, 0, &found);
  if (fn) {
    a = node_on(1, 1 * MIB);
    r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUDA_MEM_ALLOC_NODE_PARAMS *))fn)(
        &n, g, NULL, 0, &a);
    CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "cuGraphAddMemAllocNode from cuGetProcAddress: %d", r);
  } else {
    CHECK(fn, "cuGetProcAddress(cuGraphAddMemAllocNode, 11040): %d", r);
  }
  r = cuGraphAddNode(&n, g, NULL, 0, NULL);
  CHECK(r == CUDA_ERROR_INVALID_VALUE, "cuGraphAddNode without parameters: the driver's error, %d", r);
  cuGraphDestroy(g);

  /* memory charged by allocation and freed in stream order is credited once
   * its stream was waited for, a wait another thread's capture allows */
  CUdeviceptr m = 0;
  cuCtxSetCurrent(ctx[1]);
  CUstream s = NULL;
  CHECK(!cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "a stream on GPU 1");
  r = cuMemAlloc_v2(&m, 200 * MIB);
  CHECK(r == CUDA_SUCCESS, "200 MiB on GPU 1: %d", r);
  struct capture_thread capture;
  capture_begin(&capture, 1);
  r = cuMemFreeAsync(m, s);
  CHECK(r == CUDA_SUCCESS, "cuMemFreeAsync of the 200 MiB during the capture: %d", r);
  r = capture_end(&capture);
  CHECK(r == CUDA_SUCCESS, "the other thread's capture, over the free: %d", r);
  r = cuMemAlloc_v2(&m, 200 * MIB);
  CHECK(r == CUDA_SUCCESS, "200 MiB again once the free was waited for: %d", r);
  cuMemFree_v2(m);
  cuStreamDestroy_v2(s);
  cuCtxSetCurrent(ctx[0]);

  /* stream capture: an allocation becomes a node of the graph */
  CUstream s1 = stream_on(1), s0 = stream_on(0);
  CUmemoryPool pool0;
  cuDeviceGetDefaultMemPool(&pool0, 0);
  CUdeviceptr d;
  r = cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_RELAXED);
  CHECK(r == CUDA_SUCCESS, "capture GPU 1's stream: %d", r);
  r = cuMemAllocAsync(&d, 1 * MIB, s1);
  CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "cuMemAllocAsync in a capture on GPU 1: %d", r);
  r = cuMemAllocFromPoolAsync(&d, 1 * MIB, pool0, s1);
  CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "cuMemAllocFromPoolAsync in a capture: %d", r);
  r = cuStreamEndCapture(s1, &g);
  CHECK(r == CUDA_SUCCESS, "end the capture: %d", r);
  if (r == CUDA_SUCCESS) cuGraphDestroy(g);
  r = cuStreamBeginCapture_v2(s0, CU_STREAM_CAPTURE_MODE_RELAXED);
  r = cuMemAllocAsync(&d, 1 * MIB, s0);
  CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "cuMemAllocAsync in a capture on GPU 0, GPU 1 limited: %d", r);
  r = cuStreamEndCapture(s0, &g);
  if (r == CUDA_SUCCESS) cuGraphDestroy(g);
  cuStreamDestroy_v2(s1);
  cuStreamDestroy_v2(s0);
}

static void unlimited(void) {
  CUstream s;
  CUgraph g;
  CUdeviceptr d = 0;
  CHECK(!cuStreamCreate(&s, 0) && !cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED), "a capture");
  CUresult r = cuMemAllocAsync(&d, 1 * MIB, s);
  CHECK(r == CUDA_SUCCESS && d, "cuMemAllocAsync in a capture, nothing limited: %d", r);
  CHECK(!cuStreamEndCapture(s, &g), "end the capture");
  cuGraphDestroy(g);
  cuMemFreeAsync(d, s);
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: pool_graph_test streams|graphs|unlimited\n"), 2;
  const int two = strcmp(argv[1], "unlimited") != 0;
  if (!contexts(two ? 2 : 1)) return fprintf(stderr, "pool_graph_test: no contexts\n"), 2;
  if (!strcmp(argv[1], "streams")) streams();
  else if (!strcmp(argv[1], "graphs")) graphs();
  else if (!strcmp(argv[1], "unlimited")) unlimited();
  else return fprintf(stderr, "pool_graph_test: unknown mode %s\n", argv[1]), 2;
  if (failures) return 1;
  printf("pool_graph_test %s: ok\n", argv[1]);
  return 0;
}
