/* A driver that does nothing, for bench_interposer: every call returns at
 * once, and cuMemAlloc_v2 hands out ever-increasing addresses, never one
 * twice, as a real driver may for a program whose allocations move through
 * its address space. The fake driver (tests/fakes) keeps real memory behind
 * its pointers and gets addresses back from malloc: a bench against it alone
 * never shows what a fresh address costs the interposer (a table slot not
 * yet in cache). Only what the bench and the interposer's plain path call. */
#include "gpuslice/cuda_api.h"

#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static uint64_t next_address = 1ull << 40;

EXPORT CUresult cuInit(unsigned int flags) { return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; }
EXPORT CUresult cuDriverGetVersion(int *v) { return v ? (*v = 12080, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE; }
EXPORT CUresult cuDeviceGetCount(int *n) { return n ? (*n = 1, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE; }
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  return d && ordinal == 0 ? (*d = 0, CUDA_SUCCESS) : CUDA_ERROR_INVALID_DEVICE;
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
  if (!u || d != 0) return CUDA_ERROR_INVALID_VALUE;
  memset(u, 0x5a, sizeof *u);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) { return cuDeviceGetUuid_v2(u, d); }
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  return c && d == 0 ? (*c = (CUcontext)(uintptr_t)0x1000, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetDevice(CUdevice *d) { return d ? (*d = 0, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE; }
EXPORT CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  return m && image ? (*m = (CUmodule)(uintptr_t)0x2000, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  return f && m && name ? (*f = (CUfunction)(uintptr_t)0x3000, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
  if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
  *p = (CUdeviceptr)next_address;
  next_address += (size + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
  *free_bytes = *total = 80ull << 30;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)s, (void)params, (void)extra;
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **p, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status) {
  (void)version, (void)flags;
  if (!symbol || !p) return CUDA_ERROR_INVALID_VALUE;
  *p = strcmp(symbol, "cuMemAlloc") == 0 ? (void *)&cuMemAlloc_v2 : NULL;
  if (status) *status = *p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
