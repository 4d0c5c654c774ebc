/* A fake libcuda.so.1 for machines without a GPU. It exports the driver API
 * the interposer wraps with the real signatures, error codes and versioned
 * names, so that tests exercise the same binary interface a real driver has:
 *  - device memory is host memory (a header in front of each block keeps its
 *    size and device), per-device total set by FAKE_CUDA_MEMORY
 *    ("BYTES" or "DEV:BYTES,DEV:BYTES"), device count by FAKE_CUDA_DEVICES;
 *  - work is asynchronous: one worker thread per process plays the GPU's
 *    channel, runs queued "spin" kernels (kernelParams[0] -> uint64 ns) and
 *    stamps events when it reaches them; when FAKE_CUDA_GPU_LOCK names a file,
 *    processes hold an flock on it while they run work, so that processes
 *    time-share one GPU as contexts do on a real one;
 *  - VMM as the driver documents it: a cuMemCreate handle's memory is freed
 *    once it is released and unmapped (cuMemMap, cuMemRetainAllocationHandle
 *    count as references);
 *  - cuGetProcAddress v1/v2 pick the versioned entry point by cudaVersion and
 *    the per-thread-stream flag as the real driver does;
 *  - the kernel driver's per-process accounting, which NVML reads from any
 *    process of the node: where FAKECUDA_PROCESS_DIR exists, a process
 *    holding device memory keeps a file there with its usage per device and
 *    the time its kernels ran, open for as long as it lives (fake_nvml.c
 *    finds its pid through /proc).
 * Linked with -Bsymbolic: its own table must not resolve to the interposer.
 */
#define _GNU_SOURCE
#include "fake_cuda_internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define FAKE_MAX_DEVICES FAKECUDA_MAX_DEVICES
#define BLOCK_MAGIC 0xfa4eb10cfa4eb10cULL
#define HDR 256

enum block_kind { BK_DEVICE = 1, BK_HOST, BK_HANDLE, BK_ARRAY, BK_POOL };

struct block {
  uint64_t magic;
  uint64_t size;
  int dev;
  int kind;
  int refs; /* BK_HANDLE: the handle and its retains, plus its mappings (vmm_mu) */
  struct CUmemPoolHandle_st *pool; /* BK_POOL: the pool it came from */
};

struct CUctx_st { int dev; };
/* A pool holds `reserved` bytes of its device's memory, `used` of them by
 * allocations (pool_mu). */
struct CUmemPoolHandle_st {
  int dev;
  uint64_t reserved, used, threshold;
  int destroyed;
};

static struct {
  pthread_once_t once;
  int ndev;
  uint64_t total[FAKE_MAX_DEVICES];
  _Atomic uint64_t used[FAKE_MAX_DEVICES];
  _Atomic int initialized;
  struct CUctx_st ctx[FAKE_MAX_DEVICES];
  struct CUmemPoolHandle_st pool[FAKE_MAX_DEVICES];
} g = {.once = PTHREAD_ONCE_INIT};

static __thread CUcontext tls_ctx;

/* The per-process accounting file: -1 not opened yet, -2 none (no dir). */
static int acct_fd = -1;
static pthread_mutex_t acct_mu = PTHREAD_MUTEX_INITIALIZER;

static void note_peak(int dev, uint64_t held);

static void acct_forget_after_fork(void) { acct_fd = -1; } /* the child gets a file of its own */

static void account(void) {
  pthread_mutex_lock(&acct_mu);
  if (acct_fd == -1) {
    static int atfork_done;
    if (!atfork_done) {
      pthread_atfork(NULL, NULL, acct_forget_after_fork);
      atfork_done = 1;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/%d-%llx", FAKECUDA_PROCESS_DIR, (int)getpid(), (unsigned long long)fake_now_ns());
    acct_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (acct_fd < 0) acct_fd = -2;
  }
  if (acct_fd >= 0) {
    uint64_t snap[FAKE_MAX_DEVICES + 1];
    for (int i = 0; i < FAKE_MAX_DEVICES; i++) snap[i] = atomic_load(&g.used[i]);
    snap[FAKE_MAX_DEVICES] = fakecuda_busy_ns();
    ssize_t w = pwrite(acct_fd, snap, sizeof snap, 0);
    (void)w;
  }
  pthread_mutex_unlock(&acct_mu);
}

void fakecuda_account_busy(void) {
  pthread_mutex_lock(&acct_mu);
  if (acct_fd >= 0) {
    uint64_t busy = fakecuda_busy_ns();
    ssize_t w = pwrite(acct_fd, &busy, sizeof busy, FAKE_MAX_DEVICES * sizeof(uint64_t));
    (void)w;
  }
  pthread_mutex_unlock(&acct_mu);
}

uint64_t fake_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void load_config(void) {
  const char *n = getenv("FAKE_CUDA_DEVICES");
  g.ndev = n ? atoi(n) : 1;
  if (g.ndev < 1 || g.ndev > FAKE_MAX_DEVICES) g.ndev = 1;
  for (int i = 0; i < FAKE_MAX_DEVICES; i++) {
    g.total[i] = 16ull << 30;
    g.ctx[i].dev = i;
    g.pool[i].dev = i;
  }
  const char *m = getenv("FAKE_CUDA_MEMORY");
  while (m && *m) {
    char *end;
    unsigned long long a = strtoull(m, &end, 10);
    if (*end == ':') {
      unsigned long long b = strtoull(end + 1, &end, 10);
      if (a < FAKE_MAX_DEVICES) g.total[a] = b;
    } else {
      for (int i = 0; i < FAKE_MAX_DEVICES; i++) g.total[i] = a;
    }
    m = *end == ',' ? end + 1 : NULL;
  }
}

static void ensure_config(void) { pthread_once(&g.once, load_config); }

#define NEED_INIT()                                                                                \
  do {                                                                                             \
    if (!atomic_load_explicit(&g.initialized, memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)
CUresult fake_check_ctx(void) {
  NEED_INIT();
  return tls_ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

#define NEED_CTX()                                                                                 \
  do {                                                                                             \
    NEED_INIT();                                                                                   \
    if (!tls_ctx) return CUDA_ERROR_INVALID_CONTEXT;                                               \
  } while (0)

/* ---------------- init, devices, contexts ---------------- */

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  ensure_config();
  atomic_store_explicit(&g.initialized, 1, memory_order_release);
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  NEED_INIT();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = g.ndev;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  NEED_INIT();
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= g.ndev) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

#define CHECK_DEV(dev)                                                                             \
  do {                                                                                             \
    if ((dev) < 0 || (dev) >= g.ndev) return CUDA_ERROR_INVALID_DEVICE;                            \
  } while (0)

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  NEED_INIT();
  CHECK_DEV(dev);
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "gpuslice fake GPU %d", dev);
  return CUDA_SUCCESS;
}

void fakecuda_uuid(int dev, CUuuid *u) {
  for (int i = 0; i < 16; i++) u->bytes[i] = (char)(0xa0 + i);
  u->bytes[0] = (char)0xfa;
  u->bytes[1] = (char)0xce;
  u->bytes[15] = (char)dev;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  NEED_INIT();
  CHECK_DEV(dev);
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  fakecuda_uuid(dev, uuid);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  NEED_INIT();
  CHECK_DEV(dev);
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = g.total[dev];
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  NEED_INIT();
  CHECK_DEV(dev);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = &g.ctx[dev];
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  NEED_INIT();
  CHECK_DEV(dev);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  NEED_INIT();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = tls_ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  NEED_INIT();
  tls_ctx = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  NEED_CTX();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = tls_ctx->dev;
  return CUDA_SUCCESS;
}

/* The thread's context stack: pushing makes a context current, popping
 * takes it off and makes the one below current again. */
#define FAKE_CTX_STACK 16
static __thread CUcontext ctx_below[FAKE_CTX_STACK];
static __thread int ctx_depth;

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  NEED_INIT();
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (ctx_depth == FAKE_CTX_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
  ctx_below[ctx_depth++] = tls_ctx;
  tls_ctx = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  NEED_CTX();
  if (pctx) *pctx = tls_ctx;
  tls_ctx = ctx_depth ? ctx_below[--ctx_depth] : NULL;
  return CUDA_SUCCESS;
}

/* The context a stream was made in; the current one for the NULL, legacy
 * and per-thread streams. */
CUresult cuStreamGetCtx(CUstream s, CUcontext *pctx) {
  NEED_CTX();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  int dev = fake_stream_device(s);
  *pctx = dev < 0 ? tls_ctx : &g.ctx[dev];
  return CUDA_SUCCESS;
}

/* ---------------- memory ---------------- */

static CUresult alloc_block(void **out, size_t size, int dev, int kind) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > (1ull << 48)) return CUDA_ERROR_OUT_OF_MEMORY;
  if (kind != BK_HOST) {
    uint64_t prev = atomic_fetch_add(&g.used[dev], size);
    if (prev + size > g.total[dev]) {
      atomic_fetch_sub(&g.used[dev], size);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    note_peak(dev, prev + size);
  }
  struct block *b = aligned_alloc(HDR, HDR + ((size + HDR - 1) / HDR) * HDR);
  if (!b) {
    if (kind != BK_HOST) atomic_fetch_sub(&g.used[dev], size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  b->magic = BLOCK_MAGIC;
  b->size = size;
  b->dev = dev;
  b->kind = kind;
  *out = (char *)b + HDR;
  if (kind != BK_HOST) account();
  return CUDA_SUCCESS;
}

static CUresult free_block(void *p, int kind) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  struct block *b = (struct block *)((char *)p - HDR);
  if (b->magic != BLOCK_MAGIC || b->kind != kind) return CUDA_ERROR_INVALID_VALUE;
  b->magic = 0;
  if (kind != BK_HOST) {
    atomic_fetch_sub(&g.used[b->dev], b->size);
    account();
  }
  free(b);
  return CUDA_SUCCESS;
}

uint64_t fakecuda_device_used(int dev) { return dev >= 0 && dev < FAKE_MAX_DEVICES ? g.used[dev] : 0; }

/* The most a device has held since the last reset: for tests that show a
 * limit held at every moment, not only after the memory was given back. */
static _Atomic uint64_t peak[FAKE_MAX_DEVICES];
static void note_peak(int dev, uint64_t held) {
  uint64_t seen = atomic_load(&peak[dev]);
  while (held > seen && !atomic_compare_exchange_weak(&peak[dev], &seen, held)) {
  }
}
uint64_t fakecuda_device_peak(int dev) { return dev >= 0 && dev < FAKE_MAX_DEVICES ? atomic_load(&peak[dev]) : 0; }
void fakecuda_reset_peak(int dev) {
  if (dev >= 0 && dev < FAKE_MAX_DEVICES) atomic_store(&peak[dev], atomic_load(&g.used[dev]));
}
uint64_t fakecuda_device_total(int dev) {
  ensure_config();
  return dev >= 0 && dev < FAKE_MAX_DEVICES ? g.total[dev] : 0;
}
int fakecuda_device_count(void) {
  ensure_config();
  return g.ndev;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  NEED_CTX();
  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
  int d = tls_ctx->dev;
  *total = g.total[d];
  *free_bytes = g.total[d] - g.used[d];
  return CUDA_SUCCESS;
}

static CUresult dev_alloc(CUdeviceptr *dptr, size_t size, int kind) {
  NEED_CTX();
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  void *p;
  CUresult r = alloc_block(&p, size, tls_ctx->dev, kind);
  if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)p;
  return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) { return dev_alloc(dptr, size, BK_DEVICE); }
static CUresult free_device_memory(CUdeviceptr dptr);
CUresult cuMemFree_v2(CUdeviceptr dptr) {
  NEED_CTX();
  return free_device_memory(dptr);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h, unsigned int elem) {
  if (!pitch || (elem != 4 && elem != 8 && elem != 16) || w == 0 || h == 0) return CUDA_ERROR_INVALID_VALUE;
  size_t p = (w + 511) / 512 * 512;
  CUresult r = dev_alloc(dptr, p * h, BK_DEVICE);
  if (r == CUDA_SUCCESS) *pitch = p;
  return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != 0x2) return CUDA_ERROR_INVALID_VALUE;
  return dev_alloc(dptr, size, BK_DEVICE);
}

CUresult cuMemAllocHost_v2(void **pp, size_t size) {
  NEED_CTX();
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  return alloc_block(pp, size, tls_ctx->dev, BK_HOST);
}
CUresult cuMemFreeHost(void *p) {
  NEED_CTX();
  return free_block(p, BK_HOST);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  NEED_CTX();
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  NEED_CTX();
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}

/* ---------------- memory pools (stream-ordered allocation) ----------------
 * As the driver documents them: an allocation takes the pool's unused
 * memory first and grows the pool (in 2 MiB steps) only by what is missing;
 * a free gives the memory back to the pool, not to the device; the pool
 * gives back what is above its release threshold (default 0) at a
 * synchronization (fake_pools_release, called by cuCtxSynchronize and
 * cuStreamSynchronize), down to `keep` at cuMemPoolTrimTo, and all at
 * cuMemPoolDestroy once nothing of it is allocated. Work is never pending
 * here, so a free is done when it returns. */
#define POOL_STEP (2ull << 20)
#define FAKE_MAX_POOLS 64
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUmemPoolHandle_st *made_pools[FAKE_MAX_POOLS]; /* cuMemPoolCreate's, NULL once destroyed */

/* Gives back what `p` holds above max(keep, used). pool_mu held. */
static void pool_shrink(struct CUmemPoolHandle_st *p, uint64_t keep) {
  uint64_t target = keep > p->used ? keep : p->used;
  if (p->reserved <= target) return;
  atomic_fetch_sub(&g.used[p->dev], p->reserved - target);
  p->reserved = target;
}

void fake_pools_release(void) {
  pthread_mutex_lock(&pool_mu);
  for (int i = 0; i < FAKE_MAX_DEVICES; i++) pool_shrink(&g.pool[i], g.pool[i].threshold);
  for (int i = 0; i < FAKE_MAX_POOLS; i++)
    if (made_pools[i]) pool_shrink(made_pools[i], made_pools[i]->threshold);
  pthread_mutex_unlock(&pool_mu);
  account();
}

static void (*pool_alloc_hook)(void); /* fakecuda_on_pool_alloc */

static CUresult pool_alloc(CUdeviceptr *dptr, size_t size, struct CUmemPoolHandle_st *pool) {
  if (!dptr || !pool) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > (1ull << 48)) return CUDA_ERROR_OUT_OF_MEMORY;
  struct block *b = aligned_alloc(HDR, HDR + ((size + HDR - 1) / HDR) * HDR);
  if (!b) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&pool_mu);
  uint64_t unused = pool->reserved - pool->used;
  if (size > unused) {
    uint64_t grow = (size - unused + POOL_STEP - 1) / POOL_STEP * POOL_STEP;
    uint64_t prev = atomic_fetch_add(&g.used[pool->dev], grow);
    if (prev + grow > g.total[pool->dev]) {
      atomic_fetch_sub(&g.used[pool->dev], grow);
      pthread_mutex_unlock(&pool_mu);
      free(b);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    note_peak(pool->dev, prev + grow);
    pool->reserved += grow;
  }
  pool->used += size;
  pthread_mutex_unlock(&pool_mu);
  *b = (struct block){.magic = BLOCK_MAGIC, .size = size, .dev = pool->dev, .kind = BK_POOL, .pool = pool};
  *dptr = (CUdeviceptr)(uintptr_t)((char *)b + HDR);
  account();
  if (pool_alloc_hook) pool_alloc_hook();
  return CUDA_SUCCESS;
}

/* Device memory of either kind freed: a pool's goes back to its pool. */
static CUresult free_device_memory(CUdeviceptr dptr) {
  struct block *b = (struct block *)((char *)(uintptr_t)dptr - HDR);
  if (!dptr || b->magic != BLOCK_MAGIC || b->kind != BK_POOL) return free_block((void *)(uintptr_t)dptr, BK_DEVICE);
  b->magic = 0;
  pthread_mutex_lock(&pool_mu);
  b->pool->used -= b->size;
  pthread_mutex_unlock(&pool_mu);
  free(b);
  return CUDA_SUCCESS;
}

/* From the current pool of the stream's device: a stream made in another
 * device's context allocates there. */
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s) {
  NEED_CTX();
  int dev = fake_stream_device(s);
  return pool_alloc(dptr, size, &g.pool[dev < 0 ? tls_ctx->dev : dev]);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s) { return cuMemAllocAsync(dptr, size, s); }
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  (void)s;
  NEED_CTX();
  return free_device_memory(dptr);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) { return cuMemFreeAsync(dptr, s); }

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
  NEED_INIT();
  CHECK_DEV(dev);
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  *pool = &g.pool[dev];
  return CUDA_SUCCESS;
}
/* The current pool is always the default one here (no cuDeviceSetMemPool). */
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) { return cuDeviceGetDefaultMemPool(pool, dev); }

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  NEED_INIT();
  if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  CHECK_DEV(props->location.id);
  struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  p->dev = props->location.id;
  pthread_mutex_lock(&pool_mu);
  int i = 0;
  while (i < FAKE_MAX_POOLS && made_pools[i]) i++;
  if (i < FAKE_MAX_POOLS) made_pools[i] = p;
  pthread_mutex_unlock(&pool_mu);
  if (i == FAKE_MAX_POOLS) {
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *pool = p;
  return CUDA_SUCCESS;
}

static void (*pool_destroy_hook)(void);
/* Tests: `hook` runs as each cuMemPoolDestroy begins, or as each
 * stream-ordered allocation that succeeded is about to return, to let
 * another thread in at that moment. */
void fakecuda_on_pool_destroy(void (*hook)(void)) { pool_destroy_hook = hook; }
void fakecuda_on_pool_alloc(void (*hook)(void)) { pool_alloc_hook = hook; }

/* A destroyed pool's handle is no longer valid: asked about, trimmed or
 * set, the driver's answer is undefined. Here such calls are refused and
 * counted, for tests to see that none was made. */
static _Atomic int destroyed_pool_calls;
int fakecuda_destroyed_pool_calls(void) { return atomic_load(&destroyed_pool_calls); }
static int destroyed(const struct CUmemPoolHandle_st *pool) {
  if (!pool->destroyed) return 0;
  atomic_fetch_add(&destroyed_pool_calls, 1);
  return 1;
}

/* Its memory is given back now if nothing of it is allocated, else as
 * allocations are freed and at synchronizations (it stays listed, with a
 * threshold of 0, and is never reused: a test may still free into it). */
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  NEED_INIT();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < FAKE_MAX_DEVICES; i++)
    if (pool == &g.pool[i]) return CUDA_ERROR_INVALID_VALUE; /* a default pool cannot be destroyed */
  if (pool_destroy_hook) pool_destroy_hook();
  if (destroyed(pool)) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&pool_mu);
  pool->destroyed = 1;
  pool->threshold = 0;
  pool_shrink(pool, 0);
  pthread_mutex_unlock(&pool_mu);
  account();
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  NEED_INIT();
  if (!pool || !value || destroyed(pool)) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&pool_mu);
  cuuint64_t v = attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD      ? pool->threshold
                 : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? pool->reserved
                 : attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT     ? pool->used
                                                                 : UINT64_MAX;
  pthread_mutex_unlock(&pool_mu);
  if (v == UINT64_MAX) return CUDA_ERROR_INVALID_VALUE; /* an attribute the fake does not keep */
  *(cuuint64_t *)value = v;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  NEED_INIT();
  if (!pool || !value || attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD || destroyed(pool)) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&pool_mu);
  pool->threshold = *(const cuuint64_t *)value;
  pthread_mutex_unlock(&pool_mu);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  NEED_INIT();
  if (!pool || destroyed(pool)) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&pool_mu);
  pool_shrink(pool, keep);
  pthread_mutex_unlock(&pool_mu);
  account();
  return CUDA_SUCCESS;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s) {
  (void)s;
  NEED_CTX();
  if (pool && destroyed(pool)) return CUDA_ERROR_INVALID_VALUE;
  return pool_alloc(dptr, size, pool);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s) {
  return cuMemAllocFromPoolAsync(dptr, size, pool, s);
}

/* Only the attributes the interposer asks about: the ordinal of device
 * memory, and the pool of a pool's (NULL for other memory). */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  NEED_INIT();
  if (!data || !ptr) return CUDA_ERROR_INVALID_VALUE;
  if (attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL && attribute != CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
    return CUDA_ERROR_NOT_SUPPORTED;
  const struct block *b = (const struct block *)((const char *)(uintptr_t)ptr - HDR);
  unsigned char resident;
  if (ptr % HDR != 0 || ptr < HDR || mincore((void *)((uintptr_t)b & ~(uintptr_t)4095), 4096, &resident) != 0)
    return CUDA_ERROR_INVALID_VALUE; /* not a block's: its header is not even mapped */
  if (b->magic != BLOCK_MAGIC || (b->kind != BK_DEVICE && b->kind != BK_POOL)) return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *(int *)data = b->dev;
  else *(CUmemoryPool *)data = b->kind == BK_POOL ? b->pool : NULL;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
  NEED_INIT();
  if (!h || !prop || flags != 0 || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || size % (2u << 20) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  CHECK_DEV(prop->location.id);
  void *p;
  CUresult r = alloc_block(&p, size, prop->location.id, BK_HANDLE);
  if (r == CUDA_SUCCESS) {
    ((struct block *)((char *)p - HDR))->refs = 1;
    *h = (CUmemGenericAllocationHandle)(uintptr_t)p;
  }
  return r;
}
/* VMM as the driver documents it: a handle's memory is freed once the
 * handle and every retained reference are released and every mapping of it
 * is unmapped, in any order. Addresses are reserved from a range no real
 * pointer uses; a mapping must lie in a reservation and overlap no other. */
#define FAKE_VA_BASE 0x7e0000000000ull
#define FAKE_MAX_RESERVATIONS 256
#define FAKE_MAX_MAPPINGS 4096
static pthread_mutex_t vmm_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t va_next = FAKE_VA_BASE;
static struct { uint64_t va, size; } reservations[FAKE_MAX_RESERVATIONS];
static struct { uint64_t va, size; struct block *b; } mappings[FAKE_MAX_MAPPINGS];

static struct block *handle_block(CUmemGenericAllocationHandle h) {
  struct block *b = h ? (struct block *)((char *)(uintptr_t)h - HDR) : NULL;
  return b && b->magic == BLOCK_MAGIC && b->kind == BK_HANDLE ? b : NULL;
}

/* One reference or mapping gone; the memory freed at the last (vmm_mu held). */
static void handle_unref(struct block *b) {
  if (--b->refs == 0) free_block((char *)b + HDR, BK_HANDLE);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  NEED_INIT();
  pthread_mutex_lock(&vmm_mu);
  struct block *b = handle_block(h);
  if (b) handle_unref(b);
  pthread_mutex_unlock(&vmm_mu);
  return b ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  (void)alignment;
  (void)addr; /* a hint */
  NEED_INIT();
  if (!ptr || !size || size % (2u << 20) || flags) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&vmm_mu);
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  for (int i = 0; i < FAKE_MAX_RESERVATIONS; i++) {
    if (reservations[i].size) continue;
    reservations[i].va = va_next;
    reservations[i].size = size;
    *ptr = (CUdeviceptr)va_next;
    va_next += size + (2u << 20); /* a gap: ranges never touch */
    r = CUDA_SUCCESS;
    break;
  }
  pthread_mutex_unlock(&vmm_mu);
  return r;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  NEED_INIT();
  pthread_mutex_lock(&vmm_mu);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < FAKE_MAX_RESERVATIONS; i++)
    if (reservations[i].size && reservations[i].va == ptr && reservations[i].size == size) {
      reservations[i].size = 0;
      r = CUDA_SUCCESS;
    }
  pthread_mutex_unlock(&vmm_mu);
  return r;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                  unsigned long long flags) {
  NEED_INIT();
  pthread_mutex_lock(&vmm_mu);
  struct block *b = handle_block(h);
  int reserved = 0, free_slot = -1;
  for (int i = 0; i < FAKE_MAX_RESERVATIONS; i++)
    reserved |= reservations[i].size && ptr >= reservations[i].va &&
                ptr + size <= reservations[i].va + reservations[i].size;
  for (int i = 0; i < FAKE_MAX_MAPPINGS; i++) {
    if (!mappings[i].size) {
      if (free_slot < 0) free_slot = i;
    } else if (ptr < mappings[i].va + mappings[i].size && mappings[i].va < ptr + size) {
      reserved = 0; /* overlaps a mapping */
    }
  }
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (b && reserved && size && !flags && offset <= b->size && size <= b->size - offset && free_slot >= 0) {
    mappings[free_slot].va = ptr;
    mappings[free_slot].size = size;
    mappings[free_slot].b = b;
    b->refs++;
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&vmm_mu);
  return r;
}

/* Whole mappings laid end to end, or an error before anything is unmapped. */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  NEED_INIT();
  pthread_mutex_lock(&vmm_mu);
  int found[FAKE_MAX_MAPPINGS];
  int n = 0;
  uint64_t at = ptr;
  while (at < ptr + size) {
    int k = -1;
    for (int i = 0; i < FAKE_MAX_MAPPINGS && k < 0; i++)
      if (mappings[i].size && mappings[i].va == at) k = i;
    if (k < 0 || at + mappings[k].size > ptr + size) break;
    found[n++] = k;
    at += mappings[k].size;
  }
  const int whole = size && at == ptr + size;
  for (int i = 0; whole && i < n; i++) {
    struct block *b = mappings[found[i]].b;
    mappings[found[i]].size = 0;
    handle_unref(b);
  }
  pthread_mutex_unlock(&vmm_mu);
  return whole ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr) {
  NEED_INIT();
  pthread_mutex_lock(&vmm_mu);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  const uint64_t a = (uint64_t)(uintptr_t)addr;
  for (int i = 0; h && i < FAKE_MAX_MAPPINGS; i++)
    if (mappings[i].size && a >= mappings[i].va && a < mappings[i].va + mappings[i].size) {
      mappings[i].b->refs++;
      *h = (CUmemGenericAllocationHandle)(uintptr_t)((char *)mappings[i].b + HDR);
      r = CUDA_SUCCESS;
      break;
    }
  pthread_mutex_unlock(&vmm_mu);
  return r;
}

static size_t format_size(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
  }
  return 0;
}

static CUresult array_create(CUarray *h, size_t w, size_t hgt, size_t d, CUarray_format f, unsigned ch) {
  NEED_CTX();
  size_t es = format_size(f);
  if (!h || !es || (ch != 1 && ch != 2 && ch != 4) || w == 0) return CUDA_ERROR_INVALID_VALUE;
  void *p;
  CUresult r = alloc_block(&p, w * (hgt ? hgt : 1) * (d ? d : 1) * es * ch, tls_ctx->dev, BK_ARRAY);
  if (r == CUDA_SUCCESS) *h = (CUarray)p;
  return r;
}
CUresult cuArrayCreate_v2(CUarray *h, const CUDA_ARRAY_DESCRIPTOR *a) {
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  return array_create(h, a->Width, a->Height, 0, a->Format, a->NumChannels);
}
CUresult cuArray3DCreate_v2(CUarray *h, const CUDA_ARRAY3D_DESCRIPTOR *a) {
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  return array_create(h, a->Width, a->Height, a->Depth, a->Format, a->NumChannels);
}
CUresult cuArrayDestroy(CUarray h) {
  NEED_CTX();
  return free_block(h, BK_ARRAY);
}

/* Every level halves each dimension, down to 1. As the driver documents,
 * `levels` is clamped to [1, 1 + floor(log2(max(width, height, depth)))]:
 * 0 or 1000 is not an error. */
CUresult cuMipmappedArrayCreate(CUmipmappedArray *h, const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned int levels) {
  NEED_CTX();
  size_t es = a ? format_size(a->Format) : 0;
  if (!h || !es || a->Width == 0) return CUDA_ERROR_INVALID_VALUE;
  size_t largest = a->Width > a->Height ? a->Width : a->Height;
  if (a->Depth > largest) largest = a->Depth;
  unsigned most = 1;
  while (largest >>= 1) most++;
  levels = levels < 1 ? 1 : levels > most ? most : levels;
  size_t total = 0;
  for (unsigned l = 0; l < levels; l++) {
    size_t w = a->Width >> l, hh = a->Height >> l, d = a->Depth >> l;
    total += (w ? w : 1) * (hh ? hh : 1) * (d ? d : 1) * es * a->NumChannels;
  }
  void *p;
  CUresult r = alloc_block(&p, total, tls_ctx->dev, BK_ARRAY);
  if (r == CUDA_SUCCESS) *h = (CUmipmappedArray)p;
  return r;
}
CUresult cuMipmappedArrayDestroy(CUmipmappedArray h) {
  NEED_CTX();
  return free_block(h, BK_ARRAY);
}

/* Two ABIs of one call: a CUDA 11 runtime must get the first. */
CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dst, CUstream s) {
  (void)s;
  NEED_CTX();
  if (!p || !n || dst < -1 || dst >= g.ndev) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUdevice dst, CUstream s) {
  return cuMemPrefetchAsync(p, n, dst, s);
}
CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream s) {
  (void)s;
  NEED_CTX();
  if (!p || !n || flags != 0 || loc.type != CU_MEM_LOCATION_TYPE_DEVICE || loc.id >= g.ndev)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream s) {
  return cuMemPrefetchAsync_v2(p, n, loc, flags, s);
}
