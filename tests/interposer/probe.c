/* One allocation through one way of reaching the driver, checked from the
 * program's side. Run under `gpuslice exec` (the interposer preloaded):
 *   probe PATH API SIZE ok|oom LIMIT
 * PATH: link (calls the linked libcuda), dlsym (dlopen + dlsym),
 *       procaddr (cuGetProcAddress, CUDA 11.3 ABI), procaddr_v2 (CUDA 12 ABI)
 * API:  alloc pitch managed async pool vmm array array3d mipmap
 * ok:  the allocation succeeds, memory info shows total = LIMIT and the
 *      allocation charged, the free gives it back.
 * oom: CUDA_ERROR_OUT_OF_MEMORY, and the driver was never asked.
 * Exit 0 when everything holds, 1 with a message otherwise.
 */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PROBE_LINKED
uint64_t fakecuda_device_used(int dev);
#endif

struct api {
  PFN_gs_cuInit init;
  PFN_gs_cuDevicePrimaryCtxRetain retain;
  PFN_gs_cuCtxSetCurrent set_current;
  PFN_gs_cuMemGetInfo_v2 get_info;
  PFN_gs_cuMemAlloc_v2 alloc;
  PFN_gs_cuMemAllocPitch_v2 pitch;
  PFN_gs_cuMemAllocManaged managed;
  PFN_gs_cuMemFree_v2 free_;
  PFN_gs_cuMemAllocAsync alloc_async;
  PFN_gs_cuMemFreeAsync free_async;
  PFN_gs_cuMemAllocFromPoolAsync pool_alloc;
  PFN_gs_cuDeviceGetDefaultMemPool default_pool;
  PFN_gs_cuMemPoolTrimTo trim;
  PFN_gs_cuCtxSynchronize sync;
  PFN_gs_cuMemCreate create;
  PFN_gs_cuMemRelease release;
  PFN_gs_cuArrayCreate_v2 array;
  PFN_gs_cuArray3DCreate_v2 array3d;
  PFN_gs_cuArrayDestroy array_destroy;
  PFN_gs_cuMipmappedArrayCreate mipmap;
  PFN_gs_cuMipmappedArrayDestroy mipmap_destroy;
  uint64_t (*used)(int);
};

#define CHECK_PROGRAM "probe"
#include "check.h"

static void *must(void *p, const char *name) {
  if (!p) {
    fprintf(stderr, "probe: cannot resolve %s\n", name);
    exit(1);
  }
  return p;
}

static void fill_linked(struct api *a) {
#ifdef PROBE_LINKED
  a->init = cuInit;
  a->retain = cuDevicePrimaryCtxRetain;
  a->set_current = cuCtxSetCurrent;
  a->get_info = cuMemGetInfo_v2;
  a->alloc = cuMemAlloc_v2;
  a->pitch = cuMemAllocPitch_v2;
  a->managed = cuMemAllocManaged;
  a->free_ = cuMemFree_v2;
  a->alloc_async = cuMemAllocAsync;
  a->free_async = cuMemFreeAsync;
  a->pool_alloc = cuMemAllocFromPoolAsync;
  a->default_pool = cuDeviceGetDefaultMemPool;
  a->trim = cuMemPoolTrimTo;
  a->sync = cuCtxSynchronize;
  a->create = cuMemCreate;
  a->release = cuMemRelease;
  a->array = cuArrayCreate_v2;
  a->array3d = cuArray3DCreate_v2;
  a->array_destroy = cuArrayDestroy;
  a->mipmap = cuMipmappedArrayCreate;
  a->mipmap_destroy = cuMipmappedArrayDestroy;
  a->used = fakecuda_device_used;
#else
  (void)a;
  fprintf(stderr, "probe: built without the link path\n");
  exit(1);
#endif
}

static void fill_dlsym(struct api *a, void *h) {
#define D(field, name) a->field = (__typeof__(a->field))must(dlsym(h, name), name)
  D(init, "cuInit");
  D(retain, "cuDevicePrimaryCtxRetain");
  D(set_current, "cuCtxSetCurrent");
  D(get_info, "cuMemGetInfo_v2");
  D(alloc, "cuMemAlloc_v2");
  D(pitch, "cuMemAllocPitch_v2");
  D(managed, "cuMemAllocManaged");
  D(free_, "cuMemFree_v2");
  D(alloc_async, "cuMemAllocAsync");
  D(free_async, "cuMemFreeAsync");
  D(pool_alloc, "cuMemAllocFromPoolAsync");
  D(default_pool, "cuDeviceGetDefaultMemPool");
  D(trim, "cuMemPoolTrimTo");
  D(sync, "cuCtxSynchronize");
  D(create, "cuMemCreate");
  D(release, "cuMemRelease");
  D(array, "cuArrayCreate_v2");
  D(array3d, "cuArray3DCreate_v2");
  D(array_destroy, "cuArrayDestroy");
  D(mipmap, "cuMipmappedArrayCreate");
  D(mipmap_destroy, "cuMipmappedArrayDestroy");
#undef D
}

static void fill_procaddr(struct api *a, void *h, int v2) {
  PFN_gs_cuGetProcAddress gpa = NULL;
  PFN_gs_cuGetProcAddress_v2 gpa2 = NULL;
  int version = v2 ? 12080 : 11080;
  /* the loader function itself is looked up through itself, as runtimes do */
  if (v2) {
    PFN_gs_cuGetProcAddress_v2 boot = (PFN_gs_cuGetProcAddress_v2)must(dlsym(h, "cuGetProcAddress_v2"), "cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult st;
    if (boot("cuGetProcAddress", (void **)&gpa2, version, 0, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS) {
      fprintf(stderr, "probe: cuGetProcAddress_v2(cuGetProcAddress) failed\n");
      exit(1);
    }
  } else {
    PFN_gs_cuGetProcAddress boot = (PFN_gs_cuGetProcAddress)must(dlsym(h, "cuGetProcAddress"), "cuGetProcAddress");
    if (boot("cuGetProcAddress", (void **)&gpa, version, 0) != CUDA_SUCCESS) {
      fprintf(stderr, "probe: cuGetProcAddress(cuGetProcAddress) failed\n");
      exit(1);
    }
  }
#define P(field, name)                                                                             \
  do {                                                                                             \
    void *p_ = NULL;                                                                               \
    CUdriverProcAddressQueryResult st_ = CU_GET_PROC_ADDRESS_SUCCESS;                              \
    CUresult r_ = v2 ? gpa2(name, &p_, version, 0, &st_) : gpa(name, &p_, version, 0);             \
    if (r_ != CUDA_SUCCESS || st_ != CU_GET_PROC_ADDRESS_SUCCESS) must(NULL, name);                \
    a->field = (__typeof__(a->field))p_;                                                           \
  } while (0)
  P(init, "cuInit");
  P(retain, "cuDevicePrimaryCtxRetain");
  P(set_current, "cuCtxSetCurrent");
  P(get_info, "cuMemGetInfo");
  P(alloc, "cuMemAlloc");
  P(pitch, "cuMemAllocPitch");
  P(managed, "cuMemAllocManaged");
  P(free_, "cuMemFree");
  P(alloc_async, "cuMemAllocAsync");
  P(free_async, "cuMemFreeAsync");
  P(pool_alloc, "cuMemAllocFromPoolAsync");
  P(default_pool, "cuDeviceGetDefaultMemPool");
  P(trim, "cuMemPoolTrimTo");
  P(sync, "cuCtxSynchronize");
  P(create, "cuMemCreate");
  P(release, "cuMemRelease");
  P(array, "cuArrayCreate");
  P(array3d, "cuArray3DCreate");
  P(array_destroy, "cuArrayDestroy");
  P(mipmap, "cuMipmappedArrayCreate");
  P(mipmap_destroy, "cuMipmappedArrayDestroy");
#undef P
}

/* Allocates size bytes with one API; *release frees it. */
struct held {
  int kind;
  CUdeviceptr ptr;
  CUmemGenericAllocationHandle handle;
  CUarray arr;
  CUmipmappedArray mip;
};

static CUresult allocate(const struct api *a, const char *api, uint64_t size, struct held *h) {
  memset(h, 0, sizeof *h);
  if (!strcmp(api, "alloc")) return a->alloc(&h->ptr, size);
  if (!strcmp(api, "managed")) return a->managed(&h->ptr, size, CU_MEM_ATTACH_GLOBAL);
  if (!strcmp(api, "async")) return a->alloc_async(&h->ptr, size, NULL);
  if (!strcmp(api, "pitch")) {
    size_t pitch;
    return a->pitch(&h->ptr, &pitch, 1 << 20, size >> 20, 4);
  }
  if (!strcmp(api, "pool")) {
    CUmemoryPool pool;
    CUresult r = a->default_pool(&pool, 0);
    return r ? r : a->pool_alloc(&h->ptr, size, pool, NULL);
  }
  if (!strcmp(api, "vmm")) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    h->kind = 1;
    return a->create(&h->handle, size, &prop, 0);
  }
  if (!strcmp(api, "array")) {
    CUDA_ARRAY_DESCRIPTOR d = {1 << 14, size / (1 << 14) / 4, CU_AD_FORMAT_FLOAT, 1};
    h->kind = 2;
    return a->array(&h->arr, &d);
  }
  if (!strcmp(api, "array3d")) {
    CUDA_ARRAY3D_DESCRIPTOR d = {1 << 10, 1 << 10, size / (1 << 20) / 4, CU_AD_FORMAT_FLOAT, 1, 0};
    h->kind = 2;
    return a->array3d(&h->arr, &d);
  }
  if (!strcmp(api, "mipmap")) {
    /* a 2D float array of SIZE bytes and 3 more levels: 4/3 SIZE, about */
    CUDA_ARRAY3D_DESCRIPTOR d = {1 << 12, size / (1 << 12) / 4, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    h->kind = 3;
    return a->mipmap(&h->mip, &d, 4);
  }
  fprintf(stderr, "probe: unknown api %s\n", api);
  exit(1);
}

static CUresult release(const struct api *a, const char *api, struct held *h) {
  if (h->kind == 1) return a->release(h->handle);
  if (h->kind == 2) return a->array_destroy(h->arr);
  if (h->kind == 3) return a->mipmap_destroy(h->mip);
  if (!strcmp(api, "async") || !strcmp(api, "pool")) {
    /* the pool keeps freed memory (and it stays charged) until it gives it
     * back: at a synchronization (async), or trimmed (pool) */
    CUresult r = a->free_async(h->ptr, NULL);
    CUmemoryPool pool;
    if (!r && !strcmp(api, "async")) r = a->sync();
    if (!r && !strcmp(api, "pool") && a->default_pool(&pool, 0) == CUDA_SUCCESS) r = a->trim(pool, 0);
    return r;
  }
  return a->free_(h->ptr);
}

static uint64_t parse_size(const char *s) {
  char *end;
  uint64_t v = strtoull(s, &end, 10);
  if (!strcmp(end, "Mi")) v <<= 20;
  else if (!strcmp(end, "Gi")) v <<= 30;
  return v;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: probe PATH API SIZE ok|oom LIMIT\n");
    return 1;
  }
  const char *path = argv[1], *api = argv[2];
  uint64_t size = parse_size(argv[3]), limit = parse_size(argv[5]);
  int expect_ok = !strcmp(argv[4], "ok");
  struct api a;
  memset(&a, 0, sizeof a);
  void *h = NULL;
  if (strcmp(path, "link") != 0) {
    h = must(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), "libcuda.so.1");
    a.used = (uint64_t(*)(int))must(dlsym(h, "fakecuda_device_used"), "fakecuda_device_used");
  }
  if (!strcmp(path, "link")) fill_linked(&a);
  else if (!strcmp(path, "dlsym")) fill_dlsym(&a, h);
  else if (!strcmp(path, "procaddr")) fill_procaddr(&a, h, 0);
  else if (!strcmp(path, "procaddr_v2")) fill_procaddr(&a, h, 1);
  else return fprintf(stderr, "probe: unknown path %s\n", path), 1;

  CUcontext ctx;
  if (a.init(0) || a.retain(&ctx, 0) || a.set_current(ctx)) return fprintf(stderr, "probe: no context\n"), 1;
  size_t free0, total0;
  CHECK(a.get_info(&free0, &total0) == CUDA_SUCCESS, "cuMemGetInfo");
  CHECK(total0 == limit, "total %zu, limit %llu", total0, (unsigned long long)limit);
  CHECK(free0 == limit, "free %zu before allocating, limit %llu", free0, (unsigned long long)limit);

  uint64_t driver_before = a.used(0);
  struct held held;
  CUresult r = allocate(&a, api, size, &held);
  if (expect_ok) {
    CHECK(r == CUDA_SUCCESS, "%s of %llu bytes returned %d", api, (unsigned long long)size, r);
    size_t free1, total1;
    a.get_info(&free1, &total1);
    uint64_t charged = limit - free1;
    /* the charge must match what the driver handed out (pitch rounds up) */
    CHECK(charged == a.used(0) - driver_before, "charged %llu, driver gave %llu", (unsigned long long)charged,
          (unsigned long long)(a.used(0) - driver_before));
    CHECK(charged >= size, "charged %llu for %llu bytes", (unsigned long long)charged, (unsigned long long)size);
    CHECK(release(&a, api, &held) == CUDA_SUCCESS, "release");
    a.get_info(&free1, &total1);
    CHECK(free1 == limit, "free %zu after release, limit %llu", free1, (unsigned long long)limit);
  } else {
    CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "%s of %llu bytes returned %d, not out of memory", api,
          (unsigned long long)size, r);
    CHECK(a.used(0) == driver_before, "the driver was called");
    size_t free1, total1;
    a.get_info(&free1, &total1);
    CHECK(free1 == limit, "free %zu after a refused allocation, limit %llu", free1, (unsigned long long)limit);
  }
  if (failures) return 1;
  printf("probe %s %s %s: as expected\n", path, api, argv[3]);
  return 0;
}
