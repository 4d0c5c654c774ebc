/* Driver API check on a real GPU, run under
 *   gpuslice exec --memory-limit 8Gi -- driver_test
 * Total memory shows 8 GiB, 9 GiB is refused, 7 GiB works (cuMemAlloc and
 * cuMemCreate), through cuGetProcAddress_v2 as runtimes reach the driver. */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define GIB (1ull << 30)
static int failures;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "driver_test: FAILED %s: ", #c); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); failures++; } } while (0)

int main(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return fprintf(stderr, "driver_test: %s\n", dlerror()), 1;
  PFN_gs_cuGetProcAddress_v2 gpa = (PFN_gs_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
  CUdriverProcAddressQueryResult st;
#define GET(var, name) gpa(name, (void **)&var, 12080, 0, &st)
  PFN_gs_cuInit init; PFN_gs_cuDevicePrimaryCtxRetain retain; PFN_gs_cuCtxSetCurrent setcur;
  PFN_gs_cuMemGetInfo_v2 info; PFN_gs_cuMemAlloc_v2 alloc; PFN_gs_cuMemFree_v2 mfree;
  PFN_gs_cuMemCreate create; PFN_gs_cuMemRelease release;
  GET(init, "cuInit"); GET(retain, "cuDevicePrimaryCtxRetain"); GET(setcur, "cuCtxSetCurrent");
  GET(info, "cuMemGetInfo"); GET(alloc, "cuMemAlloc"); GET(mfree, "cuMemFree");
  GET(create, "cuMemCreate"); GET(release, "cuMemRelease");
  CUcontext ctx;
  if (init(0) || retain(&ctx, 0) || setcur(ctx)) return fprintf(stderr, "driver_test: no context\n"), 1;
  size_t free_b, total;
  CHECK(info(&free_b, &total) == CUDA_SUCCESS && total == 8 * GIB, "total %zu", total);
  printf("cuMemGetInfo: free %.2f GiB, total %.2f GiB\n", (double)free_b / GIB, (double)total / GIB);
  CUdeviceptr p;
  CHECK(alloc(&p, 9 * GIB) == CUDA_ERROR_OUT_OF_MEMORY, "9 GiB cuMemAlloc not refused");
  CUresult r = alloc(&p, 7 * GIB);
  CHECK(r == CUDA_SUCCESS, "7 GiB cuMemAlloc: %d", r);
  if (r == CUDA_SUCCESS) {
    info(&free_b, &total);
    CHECK(free_b <= 1 * GIB, "free %zu after 7 GiB", free_b);
    mfree(p);
  }
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemGenericAllocationHandle hd;
  CHECK(create(&hd, 9 * GIB, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY, "9 GiB cuMemCreate not refused");
  r = create(&hd, 7 * GIB, &prop, 0);
  CHECK(r == CUDA_SUCCESS, "7 GiB cuMemCreate: %d", r);
  if (r == CUDA_SUCCESS) release(hd);
  if (failures) return 1;
  printf("driver_test: ok\n");
  return 0;
}
