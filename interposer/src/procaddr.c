/* Which wrapper a name or a driver entry point stands for. dlsym() of an
 * exact versioned name gets the wrapper of that name. cuGetProcAddress and
 * cuGetProcAddress_v2 ask the driver first, so the driver applies its own
 * rules (cudaVersion picks _v2/_v3, the per-thread flag picks _ptsz/_ptds;
 * unknown symbols and cuGetExportTable pass through untouched); the entry
 * point it returns is then swapped for the wrapper of the same versioned
 * function: by address when the driver hands out its exported symbols, by the
 * same version rules otherwise. Asking for cuGetProcAddress gets the wrapper,
 * so later lookups cannot escape. A wrapped function in a variant newer than
 * the wrappers (a driver newer than the interposer) is refused, never passed
 * through uncounted.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stddef.h>
#include <string.h>


/* The newest CUDA whose versioned entry points the table below lists. */
#define GS_NEWEST_KNOWN_CUDA 13000

struct export {
  const char *name;
  const char *base;  /* the name cuGetProcAddress is asked for; NULL: not through it */
  int min_version;   /* cudaVersion from which the driver returns this one */
  int per_thread;
  void *wrapper;
  ptrdiff_t real_off; /* offset in gs_real, -1 for none */
};

#define R(fn) offsetof(struct gs_real, fn)
#define X(name, base, ver, pt) {#name, base, ver, pt, (void *)&name, R(name)}
static const struct export exports[] = {
    X(cuMemAlloc_v2, "cuMemAlloc", 3020, 0),
    X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0),
    X(cuMemFree_v2, "cuMemFree", 3020, 0),
    X(cuMemAllocManaged, "cuMemAllocManaged", 6000, 0),
    X(cuMemAllocAsync, "cuMemAllocAsync", 11020, 0),
    X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 1),
    X(cuMemFreeAsync, "cuMemFreeAsync", 11020, 0),
    X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 1),
    X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0),
    X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 1),
    X(cuMemPoolCreate, "cuMemPoolCreate", 11020, 0),
    X(cuMemPoolTrimTo, "cuMemPoolTrimTo", 11020, 0),
    X(cuMemPoolDestroy, "cuMemPoolDestroy", 11020, 0),
    X(cuMemCreate, "cuMemCreate", 10020, 0),
    X(cuMemRelease, "cuMemRelease", 10020, 0),
    X(cuMemMap, "cuMemMap", 10020, 0),
    X(cuMemUnmap, "cuMemUnmap", 10020, 0),
    X(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle", 11000, 0),
    X(cuArrayCreate_v2, "cuArrayCreate", 3020, 0),
    X(cuArray3DCreate_v2, "cuArray3DCreate", 3020, 0),
    X(cuArrayDestroy, "cuArrayDestroy", 2000, 0),
    X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", 5000, 0),
    X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", 5000, 0),
    X(cuMemGetInfo_v2, "cuMemGetInfo", 3020, 0),
    X(cuDeviceTotalMem_v2, "cuDeviceTotalMem", 3020, 0),
    X(cuLaunchKernel, "cuLaunchKernel", 4000, 0),
    X(cuLaunchKernel_ptsz, "cuLaunchKernel", 7000, 1),
    X(cuLaunchKernelEx, "cuLaunchKernelEx", 11060, 0),
    X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, 1),
    X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000, 0),
    X(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 9000, 1),
    X(cuGraphAddMemAllocNode, "cuGraphAddMemAllocNode", 11040, 0),
    X(cuGraphAddNode, "cuGraphAddNode", 12020, 0),
    X(cuGraphAddNode_v2, "cuGraphAddNode", 12030, 0),
    X(cuGraphLaunch, "cuGraphLaunch", 10000, 0),
    X(cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, 1),
    X(cuGetProcAddress, "cuGetProcAddress", 11030, 0),
    X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0),
    {"nvmlDeviceGetMemoryInfo", NULL, 0, 0, (void *)&nvmlDeviceGetMemoryInfo, -1},
    {"nvmlDeviceGetMemoryInfo_v2", NULL, 0, 0, (void *)&nvmlDeviceGetMemoryInfo_v2, -1},
};
#undef X
#undef R
#define NEXPORTS (sizeof exports / sizeof exports[0])

void *gs_export_lookup(const char *name) {
  for (size_t i = 0; i < NEXPORTS; i++)
    if (strcmp(exports[i].name, name) == 0) return exports[i].wrapper;
  return NULL;
}

/* The driver's entry point for `symbol` at `version`, or NULL. */
static void *driver_entry(const char *symbol, int version, cuuint64_t flags) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult status;
  CUresult r = gs_real.cuGetProcAddress_v2 ? gs_real.cuGetProcAddress_v2(symbol, &fn, version, flags, &status)
                                           : gs_real.cuGetProcAddress(symbol, &fn, version, flags);
  return r == CUDA_SUCCESS ? fn : NULL;
}

/* The wrapper for the driver's answer `fn`; `fn` itself for a function not
 * wrapped; NULL for a wrapped function in a variant the interposer does not
 * know (a driver newer than it): served, its allocations would go
 * uncounted, and served as a known variant, its arguments could differ. */
static void *wrap(const char *symbol, void *fn, int version, cuuint64_t flags) {
  for (size_t i = 0; i < NEXPORTS; i++) {
    if (exports[i].real_off < 0) continue;
    void *real = *(void **)((char *)&gs_real + exports[i].real_off);
    if (real == fn) return exports[i].wrapper;
  }
  /* the driver handed out an internal entry point: same rules, by name */
  int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const struct export *best = NULL;
  for (size_t i = 0; i < NEXPORTS; i++) {
    const struct export *e = &exports[i];
    if (!e->base || strcmp(e->base, symbol) != 0 || e->min_version > version || (e->per_thread && !want_pt))
      continue;
    if (!best || e->min_version > best->min_version ||
        (e->min_version == best->min_version && e->per_thread && !best->per_thread))
      best = e;
  }
  if (!best) return fn;
  /* a caller newer than the table: what the driver gives it must be what it
   * gives the newest CUDA the table knows, else it is a newer variant */
  if (version > GS_NEWEST_KNOWN_CUDA && driver_entry(symbol, GS_NEWEST_KNOWN_CUDA, flags) != fn) {
    gs_log("refusing %s for CUDA %d: the driver's entry point is newer than the ones this interposer wraps, "
           "and what it allocates could not be counted against the limit",
           symbol, version);
    return NULL;
  }
  return best->wrapper;
}

static CUresult refused(void **pfn, CUdriverProcAddressQueryResult *status) {
  *pfn = NULL;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_SUPPORTED;
}

GS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status) {
  int mode = gs_mode();
  CUresult r = gs_real.cuGetProcAddress_v2(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && mode == GS_ENFORCE && symbol && pfn && *pfn && !(*pfn = wrap(symbol, *pfn, version, flags)))
    return refused(pfn, status);
  return r;
}

GS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
  int mode = gs_mode();
  CUresult r = gs_real.cuGetProcAddress(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && mode == GS_ENFORCE && symbol && pfn && *pfn && !(*pfn = wrap(symbol, *pfn, version, flags)))
    return refused(pfn, NULL);
  return r;
}
