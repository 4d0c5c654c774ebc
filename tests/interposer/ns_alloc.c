/* A library that calls the driver directly (linked against libcuda.so.1),
 * for hostile_test's dlmopen case: loaded into a new link-map namespace, its
 * references bind to that namespace's own copy of the driver unless the
 * interposer comes first there. */
#include "gpuslice/cuda_api.h"

int ns_alloc(unsigned long long size) {
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx)) return -1;
  return (int)cuMemAlloc_v2(&p, size);
}
