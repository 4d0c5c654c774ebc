/* Stream-ordered memory (cuMemAllocAsync, cuMemAllocFromPoolAsync): what a
 * pool holds is charged, not what is allocated from it. A pool keeps the
 * memory of what is freed and reuses it; it gives back what is above its
 * release threshold at the next synchronization, or on cuMemPoolTrimTo, and
 * never with the threshold set high. Charging allocations and crediting
 * their frees let a program hold any amount in pools: allocate, free,
 * allocate from another pool. So each pool's reservation as the driver
 * counts it (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) is charged to its device:
 *  - before an allocation, what the pool must grow by (the size past its
 *    unused part) is charged to the pool's device, or to the current
 *    context's for a pool not seen yet, and refused there without calling
 *    the driver, unless the pool already holds the size (then the driver
 *    may reuse memory whose free is still queued, and decides);
 *  - after it, the pool's charge becomes its reservation, on the device the
 *    driver says the memory is on, and the estimate is given back. A growth
 *    that does not fit (the pool was another GPU's, or grew by more than its
 *    unused part said) is freed, its stream waited for, the pool trimmed
 *    back to what it held, and CUDA_ERROR_OUT_OF_MEMORY returned: else the
 *    pool would keep it, for the next allocations to take uncharged;
 *  - a free credits nothing (the pool keeps the memory). What pools give
 *    back is credited at their next allocation, at cuMemPoolTrimTo, at
 *    cuMemGetInfo, and before any charge of the device is refused;
 *  - cuMemPoolDestroy credits the pool's charge, unless allocations of it
 *    are still out: the driver then frees the pool later, unseen, and its
 *    charge stays (the safe side). Allocations of ours from it are refused
 *    from its start, and one under way then keeps the charge too: else one
 *    made between the look at what is out and the destroy would keep the
 *    pool's memory, credited. Such an allocation is given back as it
 *    settles; its pool's entry stays until then, and the destroyed handle
 *    is never asked about again.
 * Inside a stream capture an allocation takes nothing yet: it becomes an
 * allocation node, refused where any device has a memory limit
 * (graph_memory.c says why).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <pthread.h>

#define MAX_POOLS 256 /* a process that makes more has further pools' allocations refused */

struct pool {
  CUmemoryPool handle;
  int ordinal;
  int exportable;   /* made with handle types for IPC: never tried past the limit */
  uint64_t charged; /* its reservation when last looked at */
  int inflight;     /* allocations of ours from it under way */
  int dying;        /* cuMemPoolDestroy calls under way: no allocation of ours starts from it */
  int gone;         /* destroyed: kept only until its allocations under way are settled */
  uint64_t serial;  /* this entry's, never reused: a handle may come back for another pool */
};
static struct pool pools[MAX_POOLS];
static _Atomic int npools; /* read without the lock only to skip it when 0 */
static uint64_t last_serial;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void gs_pools_reset_after_fork(void) {
  /* the child has no context, so none of these pools */
  pthread_mutex_init(&mu, NULL);
  npools = 0;
}

/* The live pool of handle `h` (a destroyed one is not). mu held, as for
 * every function here that takes or returns an entry. */
static struct pool *find(CUmemoryPool h) {
  for (int i = 0; i < npools; i++)
    if (pools[i].handle == h && !pools[i].gone) return &pools[i];
  return NULL;
}

static struct pool *find_serial(uint64_t serial) {
  for (int i = 0; i < npools; i++)
    if (pools[i].serial == serial) return &pools[i];
  return NULL;
}

static struct pool *add_pool(CUmemoryPool h, int ordinal, int exportable) {
  if (npools == MAX_POOLS) return NULL;
  struct pool *p = &pools[npools++];
  *p = (struct pool){.handle = h, .ordinal = ordinal, .exportable = exportable, .serial = ++last_serial};
  return p;
}

static void remove_pool(struct pool *p) { *p = pools[--npools]; /* entries move: found again after an unlock */ }

static uint64_t pool_attribute(CUmemoryPool h, CUmemPool_attribute attr, uint64_t if_unknown) {
  cuuint64_t v = 0;
  return gs_real.cuMemPoolGetAttribute(h, attr, &v) == CUDA_SUCCESS ? v : if_unknown;
}

/* What pools on `ridx` (all: -1) gave back, credited; 1 if anything. mu held. */
static int release_locked(int ridx) {
  int any = 0;
  for (int i = 0; i < npools; i++) {
    struct pool *p = &pools[i];
    const struct gs_dev *d = gs_ordinal_dev(p->ordinal);
    if (!d || (ridx != -1 && d->ridx != ridx) || p->dying) continue; /* a destroyed handle is not asked */
    uint64_t now = pool_attribute(p->handle, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, p->charged);
    if (now >= p->charged) continue; /* a growth is charged by the allocation that made it */
    gs_credit(d->ridx, p->charged - now);
    p->charged = now;
    any = 1;
  }
  return any;
}

int gs_pools_release(int ridx) {
  if (atomic_load_explicit(&npools, memory_order_relaxed) == 0) return 0; /* cuMemGetInfo's usual case */
  pthread_mutex_lock(&mu);
  int any = release_locked(ridx);
  pthread_mutex_unlock(&mu);
  return any;
}

int gs_charge_dev(const struct gs_dev *d, uint64_t size) {
  if (gs_charge(d->ridx, size, d->mem_limit) == 0) return 0;
  return gs_pools_release(d->ridx) ? gs_charge(d->ridx, size, d->mem_limit) : -1;
}

enum { ASYNC, ASYNC_PTSZ, FROM_POOL, FROM_POOL_PTSZ };

static CUresult driver_alloc(int how, CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s) {
  switch (how) {
  case ASYNC: return gs_real.cuMemAllocAsync(dptr, size, s);
  case ASYNC_PTSZ: return gs_real.cuMemAllocAsync_ptsz(dptr, size, s);
  case FROM_POOL: return gs_real.cuMemAllocFromPoolAsync(dptr, size, pool, s);
  default: return gs_real.cuMemAllocFromPoolAsync_ptsz(dptr, size, pool, s);
  }
}

/* What `pool` must grow by to hand out `size`: the size past its unused part. */
static uint64_t growth_of(CUmemoryPool pool, size_t size) {
  if (!pool) return size;
  uint64_t reserved = pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, 0);
  uint64_t used = pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, UINT64_MAX);
  uint64_t unused = used <= reserved ? reserved - used : 0;
  return size > unused ? size - unused : 0;
}

/* After the driver allocated from `got`: its charge made its reservation,
 * on the device the memory is on; `est` (charged to `est_dev`) given back.
 * -1: the growth does not fit. It is charged all the same (the pool holds
 * it) and the caller gives it back: `*keep` is what the pool held before.
 * -2: the pool is being (or was) destroyed: the caller frees the memory
 * and asks nothing more of the pool. `serial`: the entry counted for the
 * allocation, 0 if none. */
static int settle(CUmemoryPool got, uint64_t serial, CUdeviceptr ptr, const struct gs_dev *est_dev, uint64_t est,
                  size_t size, uint64_t *keep) {
  pthread_mutex_lock(&mu);
  struct pool *p = serial ? find_serial(serial) : NULL;
  if (!p || p->handle != got) p = find(got);
  int ordinal = p ? p->ordinal : -1;
  if (!p && gs_real.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) != CUDA_SUCCESS)
    ordinal = -1;
  const struct gs_dev *d = ordinal >= 0 ? gs_ordinal_dev(ordinal) : NULL;
  int ok = 1;
  *keep = 0;
  int dying = 0;
  if (p && p->dying) { /* another thread is destroying the pool it came from: given back */
    d = NULL;
    ok = 0;
    dying = 1;
  } else if (!p && ordinal >= 0 && !(p = add_pool(got, ordinal, 0))) { /* a device's own pool */
    GS_LOG("more than %d memory pools: allocations from another are refused", MAX_POOLS);
    d = NULL;
    ok = 0;
  }
  if (d) {
    *keep = p->charged;
    uint64_t now = pool_attribute(got, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, p->charged + size);
    /* what the pool grew by, beyond the estimate already charged here */
    uint64_t grew = now > p->charged ? now - p->charged : 0, shrank = now < p->charged ? p->charged - now : 0;
    uint64_t held = est_dev && est_dev->ridx == d->ridx ? est : 0;
    p->charged = now;
    if (grew > held) {
      const uint64_t more = grew - held;
      ok = gs_charge(d->ridx, more, d->mem_limit) == 0 ||
           (release_locked(d->ridx) && gs_charge(d->ridx, more, d->mem_limit) == 0);
      if (!ok) gs_charge(d->ridx, more, GS_NO_LIMIT); /* held until the caller gives it back */
    } else {
      shrank += held - grew;
    }
    if (shrank) gs_credit(d->ridx, shrank);
    if (held) est = 0;
    /* over the limit with what refused growths left charged (a pool that
     * cannot give them back): nothing more, reused or not */
    if (ok && d->mem_limit != GS_NO_LIMIT && gs_usage(d->ridx) > d->mem_limit) ok = 0;
  }
  pthread_mutex_unlock(&mu);
  if (est_dev && est) gs_credit(est_dev->ridx, est);
  return ok ? 0 : dying ? -2 : -1;
}

/* A refused allocation given back, and the pool's growth with it: freed,
 * its stream waited for (the free is stream-ordered), the pool trimmed to
 * what it held before, and that credited. Without `got`: freed only. */
static void give_back(CUdeviceptr ptr, CUstream named, CUmemoryPool got, uint64_t keep) {
  gs_real.cuMemFreeAsync(ptr, named);
  if (!got) return;
  gs_stream_wait(named);
  gs_real.cuMemPoolTrimTo(got, keep);
  gs_pools_release(-1);
}

/* The device of a stream made in another context than the current one: its
 * context made current for the question and put back. `current` for the
 * NULL, legacy and per-thread streams, and where the driver cannot say (the
 * driver then says afterwards where the memory is). */
static int stream_device(CUstream named, int current) {
  if (named == NULL || named == GS_STREAM_LEGACY || named == GS_STREAM_PER_THREAD) return current;
  CUcontext of = NULL, now = NULL;
  if (gs_real.cuStreamGetCtx(named, &of) != CUDA_SUCCESS || gs_real.cuCtxGetCurrent(&now) != CUDA_SUCCESS || !of ||
      of == now)
    return current;
  CUdevice dev = -1;
  if (gs_real.cuCtxPushCurrent_v2(of) != CUDA_SUCCESS) return current;
  if (gs_real.cuCtxGetDevice(&dev) != CUDA_SUCCESS) dev = current;
  CUcontext popped;
  gs_real.cuCtxPopCurrent_v2(&popped);
  return dev;
}

/* Whether `d`'s usage is past its limit, even after what pools gave back:
 * refused growths a pool could not give back leave it so. */
static int over_limit(const struct gs_dev *d) {
  if (d->mem_limit == GS_NO_LIMIT || gs_usage(d->ridx) <= d->mem_limit) return 0;
  return !gs_pools_release(d->ridx) || gs_usage(d->ridx) > d->mem_limit;
}

/* stream_ordered_alloc's charge, allocation and settling, from `want` (the
 * pool looked at, its entry `serial`) and the device its growth is first
 * charged to. */
static CUresult charge_and_alloc(int how, CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s,
                                 CUstream named, CUmemoryPool want, uint64_t serial, int est_ordinal, int exportable) {
  CUresult r;
  CUstreamCaptureStatus capture;
  const struct gs_dev *est_dev = est_ordinal >= 0 ? gs_ordinal_dev(est_ordinal) : NULL;
  if (est_dev && over_limit(est_dev)) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t est = growth_of(want, size);
  if (est_dev && est && gs_charge_dev(est_dev, est) != 0) {
    /* A pool that holds as much may hand it out without growing (memory
     * freed on the same stream is reused before the free has run, which its
     * count of used memory may not show yet): the driver decides, and a
     * growth that does not fit is given back. Else refused here. */
    if (!want || exportable || pool_attribute(want, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, 0) < size)
      return CUDA_ERROR_OUT_OF_MEMORY;
    est = 0;
  }

  CUdeviceptr ptr = 0; /* ours until the end: another thread could rewrite the caller's */
  r = driver_alloc(how, &ptr, size, pool, s);
  if (r != CUDA_SUCCESS) {
    if (est_dev && est) gs_credit(est_dev->ridx, est);
    return r;
  }
  /* A capture begun by another thread since the first look made this an
   * allocation node: spoil that capture (waiting for a capturing stream is
   * illegal, and ends it invalidated), so that no graph has the node. */
  if (gs_real.cuStreamIsCapturing(named, &capture) == CUDA_SUCCESS && capture != CU_STREAM_CAPTURE_STATUS_NONE &&
      gs_any_memory_limit()) {
    gs_stream_wait(named); /* relaxed: no other thread's capture is spoilt with it */
    if (est_dev && est) gs_credit(est_dev->ridx, est);
    GS_LOG("a stream capture began during a stream-ordered allocation: the capture is spoilt");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  /* the pool it came from: a stream of another device's context, or a
   * current pool another thread set meanwhile, may not be the one looked at */
  CUmemoryPool got = want;
  if ((how == ASYNC || how == ASYNC_PTSZ) &&
      gs_real.cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, ptr) != CUDA_SUCCESS)
    got = NULL;
  uint64_t keep = 0;
  const int settled = got ? settle(got, serial, ptr, est_dev, est, size, &keep) : gs_any_memory_limit() ? -1 : 0;
  if (settled == 0) {
    if (!got && est_dev && est) gs_credit(est_dev->ridx, est); /* its pool unknown, and nothing limited */
    *dptr = ptr;
    return CUDA_SUCCESS;
  }
  /* does not fit where it is, or its pool cannot be known or is going: given back */
  if (!got && est_dev && est) gs_credit(est_dev->ridx, est);
  give_back(ptr, named, settled == -2 ? NULL : got, keep);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult stream_ordered_alloc(int how, CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s) {
  if (gs_mode() != GS_ENFORCE || !dptr || !gs_any_accounted()) return driver_alloc(how, dptr, size, pool, s);
  const int ptsz = how == ASYNC_PTSZ || how == FROM_POOL_PTSZ;
  const CUstream named = gs_named_stream(s, ptsz);
  CUstreamCaptureStatus capture;
  CUresult r = gs_real.cuStreamIsCapturing(named, &capture);
  if (r != CUDA_SUCCESS) return r;
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    if (!gs_any_memory_limit()) return driver_alloc(how, dptr, size, pool, s); /* a node: nothing taken now */
    GS_LOG("stream-ordered allocation in a stream capture refused: graph memory is not accounted");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  /* The pool: the one named, or the current one of the stream's device. */
  CUdevice current = -1;
  if (gs_real.cuCtxGetDevice(&current) != CUDA_SUCCESS) current = -1;
  CUmemoryPool want = pool;
  if (!want) {
    const int on = stream_device(named, current);
    if (on < 0 || gs_real.cuDeviceGetMemPool(&want, on) != CUDA_SUCCESS) want = NULL;
    else current = on; /* a pool not seen yet is charged to that device first */
  }
  pthread_mutex_lock(&mu);
  struct pool *known = want ? find(want) : NULL;
  const int dying = known && known->dying;
  const int est_ordinal = known ? known->ordinal : current;
  const int exportable = known && known->exportable;
  const uint64_t serial = known && !dying ? known->serial : 0; /* counted: what cuMemPoolDestroy looks at */
  if (serial) known->inflight++;
  pthread_mutex_unlock(&mu);
  if (dying) {
    GS_LOG("an allocation from a memory pool being destroyed refused");
    return CUDA_ERROR_INVALID_VALUE;
  }
  r = charge_and_alloc(how, dptr, size, pool, s, named, want, serial, est_ordinal, exportable);
  if (serial) {
    pthread_mutex_lock(&mu);
    struct pool *p = find_serial(serial);
    if (p && --p->inflight == 0 && p->gone) remove_pool(p);
    pthread_mutex_unlock(&mu);
  }
  return r;
}

GS_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s) {
  return stream_ordered_alloc(ASYNC, dptr, size, NULL, s);
}
GS_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s) {
  return stream_ordered_alloc(ASYNC_PTSZ, dptr, size, NULL, s);
}
GS_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s) {
  return stream_ordered_alloc(FROM_POOL, dptr, size, pool, s);
}
GS_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s) {
  return stream_ordered_alloc(FROM_POOL_PTSZ, dptr, size, pool, s);
}

/* A pool is known from its making: its device is charged before its first
 * allocation, not the current context's. */
GS_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  const int mode = gs_mode();
  if (!pool || !props) return gs_real.cuMemPoolCreate(pool, props);
  /* the driver gets our copy: what is recorded is what it was asked for,
   * whatever another thread writes into the caller's meanwhile */
  const CUmemPoolProps asked = *props;
  CUmemoryPool made = NULL; /* ours until the end, likewise */
  CUresult r = gs_real.cuMemPoolCreate(&made, &asked);
  if (r != CUDA_SUCCESS) return r;
  if (mode == GS_ENFORCE && asked.location.type == CU_MEM_LOCATION_TYPE_DEVICE && gs_ordinal_dev(asked.location.id)) {
    pthread_mutex_lock(&mu);
    if (!find(made)) add_pool(made, asked.location.id, asked.handleTypes != CU_MEM_HANDLE_TYPE_NONE);
    pthread_mutex_unlock(&mu);
  }
  *pool = made;
  return r;
}

GS_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  const int mode = gs_mode();
  CUresult r = gs_real.cuMemPoolTrimTo(pool, keep);
  if (r == CUDA_SUCCESS && mode == GS_ENFORCE) gs_pools_release(-1);
  return r;
}

GS_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  if (gs_mode() != GS_ENFORCE) return gs_real.cuMemPoolDestroy(pool);
  pthread_mutex_lock(&mu);
  struct pool *p = find(pool);
  const uint64_t serial = p ? p->serial : 0;
  const int busy = p && p->inflight;
  if (p) p->dying++;
  pthread_mutex_unlock(&mu);
  const uint64_t out = pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, UINT64_MAX);
  CUresult r = gs_real.cuMemPoolDestroy(pool);
  pthread_mutex_lock(&mu);
  p = serial ? find_serial(serial) : NULL;
  if (p && r != CUDA_SUCCESS) {
    p->dying--;
  } else if (p) {
    const struct gs_dev *d = gs_ordinal_dev(p->ordinal);
    if (d && out == 0 && !busy) gs_credit(d->ridx, p->charged);
    if (p->inflight) p->gone = 1; /* removed as the last of them settles */
    else remove_pool(p);
  }
  pthread_mutex_unlock(&mu);
  return r;
}
