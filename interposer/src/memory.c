/* Memory wrappers: every way a program takes device memory is charged to the
 * container's budget on that device before the driver is called, and a
 * charge that would pass the limit returns CUDA_ERROR_OUT_OF_MEMORY without
 * calling the driver. Frees credit exactly what was charged (track.c).
 * Stream-ordered memory is charged by pool (pools.c), VMM memory by handle
 * and mapping (vmm.c). Host
 * allocations, imported IPC and shareable handles are not charged: they are
 * charged where the memory was allocated. Memory info reports total = limit
 * and free = limit - usage, clamped at 0 and at what the GPU really has free.
 */
#define _GNU_SOURCE
#include "internal.h"

/* The device to charge the calling thread's allocation to; NULL: pass through. */
static inline struct gs_dev *charge_dev(void) {
  if (gs_mode() != GS_ENFORCE) return NULL;
  struct gs_dev *d = gs_current_dev();
  return d && d->ridx != -1 ? d : NULL;
}

/* a * b, or UINT64_MAX where it overflows (a size no limit lets through) */
static inline uint64_t mul_sat(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* After the driver call: keep the charge and remember it, or take it back. */
static CUresult settle(struct gs_dev *d, CUresult r, uint64_t key, int kind, uint64_t size) {
  if (r != CUDA_SUCCESS) {
    gs_credit(d->ridx, size);
  } else if (gs_track_insert(key, kind, d->ridx, size) != 0) {
    /* stays charged: over-counting is the safe side */
    GS_LOG("allocation table full: %llu bytes stay charged after their free", (unsigned long long)size);
  }
  return r;
}

#define CHARGE_OR_FAIL(d, size)                                                                    \
  do {                                                                                             \
    if (gs_charge_dev((d), (size)) != 0) return CUDA_ERROR_OUT_OF_MEMORY;                          \
  } while (0)

/* Before a free: forget the allocation (so that a concurrent allocation that
 * gets the same address back is not confused with it). */
static inline int untrack(uint64_t key, int kind, int *ridx, uint64_t *size) {
  return gs_mode() == GS_ENFORCE && gs_track_remove(key, kind, ridx, size);
}

static inline CUresult after_free(CUresult r, int tracked, uint64_t key, int kind, int ridx, uint64_t size) {
  if (tracked) {
    if (r == CUDA_SUCCESS) gs_credit(ridx, size);
    else gs_track_insert(key, kind, ridx, size);
  }
  return r;
}

#define FREE_WRAPPER(call, key, kind)                                                              \
  do {                                                                                             \
    int ridx_;                                                                                     \
    uint64_t size_;                                                                                \
    int t_ = untrack((uint64_t)(key), (kind), &ridx_, &size_);                                     \
    return after_free(call, t_, (uint64_t)(key), (kind), ridx_, size_);                            \
  } while (0)

/* gs_mode() first: a call passed through before the process's first charge
 * (a NULL descriptor, say) needs the driver resolved too. */
#define ALLOC_WRAPPER(d, size, call, keyexpr, kind)                                                \
  do {                                                                                             \
    gs_mode();                                                                                     \
    if (!(d)) return call;                                                                         \
    CHARGE_OR_FAIL(d, size);                                                                       \
    CUresult r_ = call;                                                                            \
    return settle(d, r_, r_ == CUDA_SUCCESS ? (uint64_t)(keyexpr) : 0, kind, size);                \
  } while (0)

GS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
  struct gs_dev *d = charge_dev();
  ALLOC_WRAPPER(d, size, gs_real.cuMemAlloc_v2(dptr, size), *dptr, GS_KIND_PTR);
}

GS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags) {
  struct gs_dev *d = charge_dev();
  ALLOC_WRAPPER(d, size, gs_real.cuMemAllocManaged(dptr, size, flags), *dptr, GS_KIND_PTR);
}

GS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h, unsigned int elem) {
  struct gs_dev *d = charge_dev();
  if (!d || !pitch) return gs_real.cuMemAllocPitch_v2(dptr, pitch, w, h, elem);
  /* the pitch is known only afterwards: charge the usual 512-byte alignment, then settle */
  uint64_t guess = w > UINT64_MAX - 511 ? UINT64_MAX : mul_sat(((uint64_t)w + 511) / 512 * 512, h);
  CHARGE_OR_FAIL(d, guess);
  CUresult r = gs_real.cuMemAllocPitch_v2(dptr, pitch, w, h, elem);
  if (r != CUDA_SUCCESS) return settle(d, r, 0, GS_KIND_PTR, guess);
  uint64_t real_size = (uint64_t)*pitch * h;
  if (real_size > guess && gs_charge_dev(d, real_size - guess) != 0) {
    gs_real.cuMemFree_v2(*dptr);
    gs_credit(d->ridx, guess);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (real_size < guess) gs_credit(d->ridx, guess - real_size);
  return settle(d, r, *dptr, GS_KIND_PTR, real_size);
}

GS_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { FREE_WRAPPER(gs_real.cuMemFree_v2(p), p, GS_KIND_PTR); }
GS_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  FREE_WRAPPER(gs_real.cuMemFreeAsync(p, s), p, GS_KIND_PTR);
}
GS_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) {
  FREE_WRAPPER(gs_real.cuMemFreeAsync_ptsz(p, s), p, GS_KIND_PTR);
}

static uint64_t array_bytes(size_t w, size_t h, size_t depth, CUarray_format f, unsigned channels) {
  /* what a caller asks for, which may overflow: saturated, and so refused */
  uint64_t es = 0;
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: es = 1; break;
  case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: es = 2; break;
  default: es = 4; break; /* 32-bit formats; wider ones are rarer and count as 4 */
  }
  return mul_sat(mul_sat(mul_sat(mul_sat(w, h ? h : 1), depth ? depth : 1), es), channels);
}

GS_EXPORT CUresult cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *desc) {
  struct gs_dev *d = desc ? charge_dev() : NULL;
  uint64_t size = d ? array_bytes(desc->Width, desc->Height, 0, desc->Format, desc->NumChannels) : 0;
  ALLOC_WRAPPER(d, size, gs_real.cuArrayCreate_v2(a, desc), *a, GS_KIND_ARRAY);
}
GS_EXPORT CUresult cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *desc) {
  struct gs_dev *d = desc ? charge_dev() : NULL;
  uint64_t size = d ? array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels) : 0;
  ALLOC_WRAPPER(d, size, gs_real.cuArray3DCreate_v2(a, desc), *a, GS_KIND_ARRAY);
}
GS_EXPORT CUresult cuArrayDestroy(CUarray a) { FREE_WRAPPER(gs_real.cuArrayDestroy(a), (uintptr_t)a, GS_KIND_ARRAY); }

/* The levels the driver makes: `levels` clamped to [1, 1 + floor(log2 of
 * the largest dimension)] (cuMipmappedArrayCreate's documentation). */
static unsigned mipmap_levels(const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels) {
  size_t largest = desc->Width > desc->Height ? desc->Width : desc->Height;
  if (desc->Depth > largest) largest = desc->Depth;
  unsigned most = 1;
  while (largest >>= 1) most++;
  return levels < 1 ? 1 : levels > most ? most : levels;
}

/* All levels, each dimension halved per level down to 1. */
GS_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                          unsigned int levels) {
  struct gs_dev *d = desc ? charge_dev() : NULL;
  uint64_t size = 0;
  const unsigned made = d ? mipmap_levels(desc, levels) : 0;
  for (unsigned l = 0; l < made; l++) {
    size_t w = desc->Width >> l, h = desc->Height >> l, z = desc->Depth >> l;
    uint64_t level = array_bytes(w ? w : 1, h, z, desc->Format, desc->NumChannels);
    size = level > UINT64_MAX - size ? UINT64_MAX : size + level;
  }
  ALLOC_WRAPPER(d, size, gs_real.cuMipmappedArrayCreate(a, desc, levels), *a, GS_KIND_ARRAY);
}
GS_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray a) {
  FREE_WRAPPER(gs_real.cuMipmappedArrayDestroy(a), (uintptr_t)a, GS_KIND_ARRAY);
}

/* ---- what the program is told ---- */

GS_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  int mode = gs_mode();
  CUresult r = gs_real.cuMemGetInfo_v2(free_bytes, total);
  if (r != CUDA_SUCCESS || mode != GS_ENFORCE) return r;
  struct gs_dev *d = gs_current_dev();
  if (!d || d->ridx == -1 || d->mem_limit == GS_NO_LIMIT) return r;
  gs_pools_release(d->ridx); /* what pools gave back since their last call */
  uint64_t limit = d->mem_limit < *total ? d->mem_limit : *total;
  uint64_t used = gs_usage(d->ridx);
  uint64_t left = used < limit ? limit - used : 0;
  *total = limit;
  if (left < *free_bytes) *free_bytes = left;
  return r;
}

GS_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  gs_mode();
  CUresult r = gs_real.cuDeviceTotalMem_v2(bytes, dev);
  if (r != CUDA_SUCCESS) return r;
  struct gs_dev *d = gs_ordinal_dev(dev);
  if (d && d->mem_limit < *bytes) *bytes = d->mem_limit;
  return r;
}
