/* cuGetProcAddress of the fake driver: the base name ("cuMemAlloc") plus the
 * caller's cudaVersion choose the ABI version ("cuMemAlloc_v2" since 3.2), and
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the _ptsz/_ptds variant, as the
 * real driver does. The table is data the tests rely on: a CUDA 11 caller
 * asking for cuMemPrefetchAsync gets the old four-argument call.
 */
#define _GNU_SOURCE
#include "fake_cuda_internal.h"

#include <string.h>

struct entry {
  const char *base;
  int min_version;
  int per_thread;
  void *fn;
};

/* A driver newer than the interposer: cudaVersion 99000 gets a cuMemAlloc
 * variant that no interposer wraps (an internal entry point, same arguments
 * here), as a future CUDA's _v3 would be. Nothing older asks for it. */
static CUresult future_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) { return cuMemAlloc_v2(dptr, bytesize); }

#define E(base, ver, pt, fn) {base, ver, pt, (void *)&fn}
static const struct entry table[] = {
    E("cuInit", 2000, 0, cuInit),
    E("cuDriverGetVersion", 2020, 0, cuDriverGetVersion),
    E("cuDeviceGet", 2000, 0, cuDeviceGet),
    E("cuDeviceGetCount", 2000, 0, cuDeviceGetCount),
    E("cuDeviceGetName", 2000, 0, cuDeviceGetName),
    E("cuDeviceGetUuid", 9020, 0, cuDeviceGetUuid),
    E("cuDeviceGetUuid", 11040, 0, cuDeviceGetUuid_v2),
    E("cuDeviceTotalMem", 3020, 0, cuDeviceTotalMem_v2),
    E("cuDevicePrimaryCtxRetain", 7000, 0, cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", 11000, 0, cuDevicePrimaryCtxRelease_v2),
    E("cuCtxGetCurrent", 4000, 0, cuCtxGetCurrent),
    E("cuCtxSetCurrent", 4000, 0, cuCtxSetCurrent),
    E("cuCtxGetDevice", 2000, 0, cuCtxGetDevice),
    E("cuCtxPushCurrent", 4000, 0, cuCtxPushCurrent_v2),
    E("cuCtxPopCurrent", 4000, 0, cuCtxPopCurrent_v2),
    E("cuStreamGetCtx", 9020, 0, cuStreamGetCtx),
    E("cuCtxSynchronize", 2000, 0, cuCtxSynchronize),
    E("cuMemGetInfo", 3020, 0, cuMemGetInfo_v2),
    E("cuMemAlloc", 3020, 0, cuMemAlloc_v2),
    E("cuMemAlloc", 99000, 0, future_cuMemAlloc),
    E("cuMemAllocPitch", 3020, 0, cuMemAllocPitch_v2),
    E("cuMemFree", 3020, 0, cuMemFree_v2),
    E("cuMemAllocManaged", 6000, 0, cuMemAllocManaged),
    E("cuMemAllocHost", 3020, 0, cuMemAllocHost_v2),
    E("cuMemFreeHost", 2000, 0, cuMemFreeHost),
    E("cuMemcpyHtoD", 3020, 0, cuMemcpyHtoD_v2),
    E("cuMemcpyDtoH", 3020, 0, cuMemcpyDtoH_v2),
    E("cuMemAllocAsync", 11020, 0, cuMemAllocAsync),
    E("cuMemAllocAsync", 11020, 1, cuMemAllocAsync_ptsz),
    E("cuMemFreeAsync", 11020, 0, cuMemFreeAsync),
    E("cuMemFreeAsync", 11020, 1, cuMemFreeAsync_ptsz),
    E("cuMemAllocFromPoolAsync", 11020, 0, cuMemAllocFromPoolAsync),
    E("cuMemAllocFromPoolAsync", 11020, 1, cuMemAllocFromPoolAsync_ptsz),
    E("cuDeviceGetDefaultMemPool", 11020, 0, cuDeviceGetDefaultMemPool),
    E("cuMemPoolTrimTo", 11020, 0, cuMemPoolTrimTo),
    E("cuPointerGetAttribute", 4000, 0, cuPointerGetAttribute),
    E("cuMemPoolCreate", 11020, 0, cuMemPoolCreate),
    E("cuMemPoolDestroy", 11020, 0, cuMemPoolDestroy),
    E("cuMemPoolGetAttribute", 11020, 0, cuMemPoolGetAttribute),
    E("cuMemPoolSetAttribute", 11020, 0, cuMemPoolSetAttribute),
    E("cuDeviceGetMemPool", 11020, 0, cuDeviceGetMemPool),
    E("cuMemCreate", 10020, 0, cuMemCreate),
    E("cuMemRelease", 10020, 0, cuMemRelease),
    E("cuMemAddressReserve", 10020, 0, cuMemAddressReserve),
    E("cuMemAddressFree", 10020, 0, cuMemAddressFree),
    E("cuMemMap", 10020, 0, cuMemMap),
    E("cuMemUnmap", 10020, 0, cuMemUnmap),
    E("cuMemRetainAllocationHandle", 11000, 0, cuMemRetainAllocationHandle),
    E("cuArrayCreate", 3020, 0, cuArrayCreate_v2),
    E("cuArray3DCreate", 3020, 0, cuArray3DCreate_v2),
    E("cuArrayDestroy", 2000, 0, cuArrayDestroy),
    E("cuMipmappedArrayCreate", 5000, 0, cuMipmappedArrayCreate),
    E("cuMipmappedArrayDestroy", 5000, 0, cuMipmappedArrayDestroy),
    E("cuMemPrefetchAsync", 8000, 0, cuMemPrefetchAsync),
    E("cuMemPrefetchAsync", 8000, 1, cuMemPrefetchAsync_ptsz),
    E("cuMemPrefetchAsync", 12020, 0, cuMemPrefetchAsync_v2),
    E("cuMemPrefetchAsync", 12020, 1, cuMemPrefetchAsync_v2_ptsz),
    E("cuModuleLoadData", 2000, 0, cuModuleLoadData),
    E("cuModuleUnload", 2000, 0, cuModuleUnload),
    E("cuModuleGetFunction", 2000, 0, cuModuleGetFunction),
    E("cuLaunchKernel", 4000, 0, cuLaunchKernel),
    E("cuLaunchKernel", 7000, 1, cuLaunchKernel_ptsz),
    E("cuLaunchKernelEx", 11060, 0, cuLaunchKernelEx),
    E("cuLaunchKernelEx", 11060, 1, cuLaunchKernelEx_ptsz),
    E("cuLaunchCooperativeKernel", 9000, 0, cuLaunchCooperativeKernel),
    E("cuLaunchCooperativeKernel", 9000, 1, cuLaunchCooperativeKernel_ptsz),
    E("cuStreamCreate", 2000, 0, cuStreamCreate),
    E("cuStreamDestroy", 4000, 0, cuStreamDestroy_v2),
    E("cuStreamSynchronize", 2000, 0, cuStreamSynchronize),
    E("cuStreamSynchronize", 7000, 1, cuStreamSynchronize_ptsz),
    E("cuStreamBeginCapture", 10010, 0, cuStreamBeginCapture_v2),
    E("cuStreamEndCapture", 10000, 0, cuStreamEndCapture),
    E("cuStreamIsCapturing", 10000, 0, cuStreamIsCapturing),
    E("cuThreadExchangeStreamCaptureMode", 10010, 0, cuThreadExchangeStreamCaptureMode),
    E("cuEventCreate", 2000, 0, cuEventCreate),
    E("cuEventRecord", 2000, 0, cuEventRecord),
    E("cuEventRecord", 7000, 1, cuEventRecord_ptsz),
    E("cuEventQuery", 2000, 0, cuEventQuery),
    E("cuEventSynchronize", 2000, 0, cuEventSynchronize),
    E("cuEventElapsedTime", 2000, 0, cuEventElapsedTime),
    E("cuEventElapsedTime", 12080, 0, cuEventElapsedTime_v2),
    E("cuEventDestroy", 4000, 0, cuEventDestroy_v2),
    E("cuGraphCreate", 10000, 0, cuGraphCreate),
    E("cuGraphAddKernelNode", 12000, 0, cuGraphAddKernelNode_v2),
    E("cuGraphAddMemAllocNode", 11040, 0, cuGraphAddMemAllocNode),
    E("cuGraphAddNode", 12020, 0, cuGraphAddNode),
    E("cuGraphAddNode", 12030, 0, cuGraphAddNode_v2),
    E("cuGraphInstantiateWithFlags", 11040, 0, cuGraphInstantiateWithFlags),
    E("cuGraphLaunch", 10000, 0, cuGraphLaunch),
    E("cuGraphLaunch", 10000, 1, cuGraphLaunch_ptsz),
    E("cuGraphExecDestroy", 10000, 0, cuGraphExecDestroy),
    E("cuGraphDestroy", 10000, 0, cuGraphDestroy),
    E("cuGetExportTable", 3000, 0, cuGetExportTable),
    E("cuGetProcAddress", 11030, 0, cuGetProcAddress),
    E("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2),
};
#undef E

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!symbol || !pfn || flags > 3) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const struct entry *best = NULL;
  int known = 0;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const struct entry *e = &table[i];
    if (strcmp(e->base, symbol) != 0) continue;
    known = 1;
    if (e->min_version > cudaVersion) continue;
    /* the per-thread variant when asked for and it exists, else the plain one */
    if (e->per_thread && !want_pt) continue;
    if (!best || e->min_version > best->min_version ||
        (e->min_version == best->min_version && e->per_thread && !best->per_thread))
      best = e;
  }
  if (!best) {
    if (status && known) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = best->fn;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* One private table, as runtimes fetch from the real driver. */
static const void *export_table[4] = {(void *)sizeof(export_table), 0, 0, 0};
static const unsigned char export_table_id[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                                  0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};

CUresult cuGetExportTable(const void **pp, const CUuuid *id) {
  if (!pp || !id) return CUDA_ERROR_INVALID_VALUE;
  if (memcmp(id->bytes, export_table_id, 16) != 0) {
    *pp = NULL;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pp = export_table;
  return CUDA_SUCCESS;
}
