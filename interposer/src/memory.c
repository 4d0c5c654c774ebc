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
 * (a NULL descriptor, say) needs the driver resolved too. The driver writes
 * the new allocation into `out_`, ours, and the caller's `out` gets it only
 * at the end: another thread of the program could rewrite the caller's
 * between the driver's write and our read, and have another allocation
 * tracked in this one's place (its free would then credit this size). */
#define ALLOC_WRAPPER(d, size, kind, out, passed_through, call_into_out_)                          \
  do {                                                                                             \
    gs_mode();                                                                                     \
    if (!(d) || !(out)) return passed_through;                                                     \
    CHARGE_OR_FAIL(d, size);                                                                       \
    __typeof__(*(out)) out_ = 0;                                                                   \
    CUresult r_ = call_into_out_;                                                                  \
    r_ = settle(d, r_, r_ == CUDA_SUCCESS ? (uint64_t)(uintptr_t)out_ : 0, kind, size);            \
    if (r_ == CUDA_SUCCESS) *(out) = out_;                                                         \
    return r_;                                                                                     \
  } while (0)

GS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
  struct gs_dev *d = charge_dev();
  ALLOC_WRAPPER(d, size, GS_KIND_PTR, dptr, gs_real.cuMemAlloc_v2(dptr, size), gs_real.cuMemAlloc_v2(&out_, size));
}

GS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags) {
  struct gs_dev *d = charge_dev();
  ALLOC_WRAPPER(d, size, GS_KIND_PTR, dptr, gs_real.cuMemAllocManaged(dptr, size, flags),
                gs_real.cuMemAllocManaged(&out_, size, flags));
}

GS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h, unsigned int elem) {
  struct gs_dev *d = charge_dev();
  if (!d || !pitch || !dptr) return gs_real.cuMemAllocPitch_v2(dptr, pitch, w, h, elem);
  /* the pitch is known only afterwards: charge the usual 512-byte alignment, then settle */
  uint64_t guess = w > UINT64_MAX - 511 ? UINT64_MAX : mul_sat(((uint64_t)w + 511) / 512 * 512, h);
  CHARGE_OR_FAIL(d, guess);
  CUdeviceptr got = 0; /* ours, not the caller's: see ALLOC_WRAPPER */
  size_t got_pitch = 0;
  CUresult r = gs_real.cuMemAllocPitch_v2(&got, &got_pitch, w, h, elem);
  if (r != CUDA_SUCCESS) return settle(d, r, 0, GS_KIND_PTR, guess);
  uint64_t real_size = mul_sat(got_pitch, h);
  if (real_size > guess && gs_charge_dev(d, real_size - guess) != 0) {
    gs_real.cuMemFree_v2(got);
    gs_credit(d->ridx, guess);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (real_size < guess) gs_credit(d->ridx, guess - real_size);
  r = settle(d, r, got, GS_KIND_PTR, real_size);
  *dptr = got;
  *pitch = got_pitch;
  return r;
}

GS_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { FREE_WRAPPER(gs_real.cuMemFree_v2(p), p, GS_KIND_PTR); }

CUresult gs_stream_wait(CUstream s) {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  const int relaxed = gs_real.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
  CUresult r = gs_real.cuStreamSynchronize(s);
  if (relaxed) gs_real.cuThreadExchangeStreamCaptureMode(&mode);
  return r;
}

/* Pool memory is not tracked here: its pool's charge stays (pools.c). Memory
 * charged by allocation (cuMemAlloc_v2...) and freed with cuMemFreeAsync is
 * freed when the stream reaches the free, which work queued before it (a
 * kernel that never ends) can put off for ever: credited once the stream
 * has been waited for; a free captured into a graph, never. */
static CUresult free_async(CUdeviceptr p, CUstream s, int ptsz) {
  int ridx;
  uint64_t size;
  const int tracked = untrack(p, GS_KIND_PTR, &ridx, &size);
  CUresult r = ptsz ? gs_real.cuMemFreeAsync_ptsz(p, s) : gs_real.cuMemFreeAsync(p, s);
  if (!tracked || r != CUDA_SUCCESS) return after_free(r, tracked, p, GS_KIND_PTR, ridx, size);
  const CUstream named = gs_named_stream(s, ptsz);
  CUstreamCaptureStatus capture;
  if (gs_real.cuStreamIsCapturing(named, &capture) == CUDA_SUCCESS && capture == CU_STREAM_CAPTURE_STATUS_NONE &&
      gs_stream_wait(named) == CUDA_SUCCESS)
    gs_credit(ridx, size);
  else
    GS_LOG("%llu bytes freed in stream order, not seen done: they stay charged", (unsigned long long)size);
  return r;
}
GS_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return free_async(p, s, 0); }
GS_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return free_async(p, s, 1); }

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

/* A descriptor is charged and handed to the driver as one copy of ours:
 * another thread could grow the caller's between our reading it and the
 * driver's. */
GS_EXPORT CUresult cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *desc) {
  struct gs_dev *d = desc ? charge_dev() : NULL;
  const CUDA_ARRAY_DESCRIPTOR asked = d ? *desc : (CUDA_ARRAY_DESCRIPTOR){0};
  uint64_t size = d ? array_bytes(asked.Width, asked.Height, 0, asked.Format, asked.NumChannels) : 0;
  ALLOC_WRAPPER(d, size, GS_KIND_ARRAY, a, gs_real.cuArrayCreate_v2(a, desc), gs_real.cuArrayCreate_v2(&out_, &asked));
}
GS_EXPORT CUresult cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *desc) {
  struct gs_dev *d = desc ? charge_dev() : NULL;
  const CUDA_ARRAY3D_DESCRIPTOR asked = d ? *desc : (CUDA_ARRAY3D_DESCRIPTOR){0};
  uint64_t size = d ? array_bytes(asked.Width, asked.Height, asked.Depth, asked.Format, asked.NumChannels) : 0;
  ALLOC_WRAPPER(d, size, GS_KIND_ARRAY, a, gs_real.cuArray3DCreate_v2(a, desc),
                gs_real.cuArray3DCreate_v2(&out_, &asked));
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
  const CUDA_ARRAY3D_DESCRIPTOR asked = d ? *desc : (CUDA_ARRAY3D_DESCRIPTOR){0}; /* see cuArrayCreate_v2 */
  uint64_t size = 0;
  const unsigned made = d ? mipmap_levels(&asked, levels) : 0;
  for (unsigned l = 0; l < made; l++) {
    size_t w = asked.Width >> l, h = asked.Height >> l, z = asked.Depth >> l;
    uint64_t level = array_bytes(w ? w : 1, h, z, asked.Format, asked.NumChannels);
    size = level > UINT64_MAX - size ? UINT64_MAX : size + level;
  }
  ALLOC_WRAPPER(d, size, GS_KIND_ARRAY, a, gs_real.cuMipmappedArrayCreate(a, desc, levels),
                gs_real.cuMipmappedArrayCreate(&out_, &asked, levels));
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
