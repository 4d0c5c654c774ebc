/* cuda-alloc SIZE_MIB...: what a CUDA program sees of its GPU's memory. It
 * loads libcuda.so.1 the way the CUDA runtime does (dlopen + dlsym), prints
 * cuMemGetInfo, then tries to allocate each size in turn (keeping what it
 * got) and prints the driver's answer. Used by examples/gpu-container.sh to
 * show a memory limit from inside a container; works on a real GPU too. */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define LOAD(h, name)                                                        \
  PFN_gs_##name name = (PFN_gs_##name)dlsym(h, #name);                      \
  if (!name) {                                                               \
    fprintf(stderr, "cuda-alloc: libcuda.so.1 has no %s\n", #name);         \
    return 1;                                                                \
  }

static const char *result_name(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS: return "CUDA_SUCCESS";
  case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  default: return "another error";
  }
}

int main(int argc, char **argv) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) {
    fprintf(stderr, "cuda-alloc: %s\n", dlerror());
    return 1;
  }
  LOAD(h, cuInit)
  LOAD(h, cuDeviceGet)
  LOAD(h, cuDevicePrimaryCtxRetain)
  LOAD(h, cuCtxSetCurrent)
  LOAD(h, cuMemGetInfo_v2)
  LOAD(h, cuMemAlloc_v2)
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
    fprintf(stderr, "cuda-alloc: cannot initialise device 0\n");
    return 1;
  }
  size_t free_b = 0, total_b = 0;
  cuMemGetInfo_v2(&free_b, &total_b);
  printf("cuMemGetInfo: total %zu MiB, free %zu MiB\n", total_b >> 20, free_b >> 20);
  int failures = 0;
  for (int i = 1; i < argc; i++) {
    const size_t mib = strtoull(argv[i], NULL, 10);
    CUdeviceptr p = 0;
    CUresult r = cuMemAlloc_v2(&p, mib << 20);
    printf("cuMemAlloc(%zu MiB): %s\n", mib, result_name(r));
    failures += r != CUDA_SUCCESS;
  }
  return failures ? 2 : 0;
}
