// Keeps gpuslice/cuda_api.h honest: compiled only where a real cuda.h exists
// (CI has no CUDA toolkit; this is a header consistency check, not a test
// that could be skipped at run time). Our declarations live in namespace
// `mine`; every function type, after mapping our types to cuda.h's, must be
// exactly the real one, and every enumerator and struct layout must match.
// NVML is not checked: no nvml.h ships with the toolkit here.
#include <stddef.h> // included before the namespace: the header's own includes
#include <stdint.h> // must stay global
#include <stdlib.h>

namespace mine {
#define GS_CUDA_API_NO_EXTERN_C
#include "gpuslice/cuda_api.h"
} // namespace mine
// cuda.h turns this name into a macro for cuEventElapsedTime_v2 (same type)
using mine_cuEventElapsedTime = decltype(mine::cuEventElapsedTime);

#include <cuda.h>

#include <cstddef>
#include <type_traits>

template <class T> struct real_of {
  using type = T;
};
template <class T> struct real_of<T *> {
  using type = typename real_of<T>::type *;
};
template <class T> struct real_of<const T> {
  using type = const typename real_of<T>::type;
};
template <class R, class... A> struct real_of<R(A...)> {
  using type = typename real_of<R>::type(typename real_of<A>::type...);
};
#define MAP(T)                                                                                     \
  template <> struct real_of<mine::T> {                                                            \
    using type = ::T;                                                                              \
  };
MAP(CUresult)
MAP(CUuuid)
MAP(CUdriverProcAddressQueryResult)
MAP(CUarray_format)
MAP(CUDA_ARRAY_DESCRIPTOR)
MAP(CUDA_ARRAY3D_DESCRIPTOR)
MAP(CUmemAllocationProp)
MAP(CUmemLocation)
MAP(CUlaunchConfig)
MAP(CUDA_KERNEL_NODE_PARAMS_v2)
MAP(CUctx_st)
MAP(CUmod_st)
MAP(CUfunc_st)
MAP(CUkern_st)
MAP(CUstream_st)
MAP(CUevent_st)
MAP(CUarray_st)
MAP(CUmipmappedArray_st)
MAP(CUmemPoolHandle_st)
MAP(CUgraph_st)
MAP(CUgraphNode_st)
MAP(CUgraphExec_st)
MAP(CUlaunchAttribute_st)
MAP(CUstreamCaptureStatus)
MAP(CUstreamCaptureMode)
MAP(CUstream_flags)
MAP(CUmemPoolProps)
MAP(CUDA_MEM_ALLOC_NODE_PARAMS)
MAP(CUgraphNodeParams)
MAP(CUgraphNodeType)
MAP(CUpointer_attribute)
#undef MAP

// _ptsz variants are declared by cuda.h only in per-thread builds; their type
// is the base function's.
#define CHECK_FN(mine_name, real_name)                                                             \
  static_assert(std::is_same_v<real_of<decltype(mine::mine_name)>::type, decltype(::real_name)>,   \
                #mine_name " does not match cuda.h")

int main() {
  CHECK_FN(cuInit, cuInit);
  CHECK_FN(cuDriverGetVersion, cuDriverGetVersion);
  CHECK_FN(cuDeviceGet, cuDeviceGet);
  CHECK_FN(cuDeviceGetCount, cuDeviceGetCount);
  CHECK_FN(cuDeviceGetName, cuDeviceGetName);
  CHECK_FN(cuDeviceGetUuid, cuDeviceGetUuid);
  CHECK_FN(cuDeviceGetUuid_v2, cuDeviceGetUuid_v2);
  CHECK_FN(cuDeviceTotalMem_v2, cuDeviceTotalMem_v2);
  CHECK_FN(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
  CHECK_FN(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease_v2);
  CHECK_FN(cuCtxGetCurrent, cuCtxGetCurrent);
  CHECK_FN(cuCtxSetCurrent, cuCtxSetCurrent);
  CHECK_FN(cuCtxGetDevice, cuCtxGetDevice);
  CHECK_FN(cuCtxPushCurrent_v2, cuCtxPushCurrent_v2);
  CHECK_FN(cuCtxPopCurrent_v2, cuCtxPopCurrent_v2);
  CHECK_FN(cuStreamGetCtx, cuStreamGetCtx);
  CHECK_FN(cuCtxSynchronize, cuCtxSynchronize);
  CHECK_FN(cuMemGetInfo_v2, cuMemGetInfo_v2);
  CHECK_FN(cuMemAlloc_v2, cuMemAlloc_v2);
  CHECK_FN(cuMemAllocPitch_v2, cuMemAllocPitch_v2);
  CHECK_FN(cuMemFree_v2, cuMemFree_v2);
  CHECK_FN(cuMemAllocManaged, cuMemAllocManaged);
  CHECK_FN(cuMemAllocHost_v2, cuMemAllocHost_v2);
  CHECK_FN(cuMemFreeHost, cuMemFreeHost);
  CHECK_FN(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2);
  CHECK_FN(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2);
  CHECK_FN(cuMemAllocAsync, cuMemAllocAsync);
  CHECK_FN(cuMemAllocAsync_ptsz, cuMemAllocAsync);
  CHECK_FN(cuMemFreeAsync, cuMemFreeAsync);
  CHECK_FN(cuMemFreeAsync_ptsz, cuMemFreeAsync);
  CHECK_FN(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync);
  CHECK_FN(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync);
  CHECK_FN(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool);
  CHECK_FN(cuMemPoolTrimTo, cuMemPoolTrimTo);
  CHECK_FN(cuMemCreate, cuMemCreate);
  CHECK_FN(cuMemRelease, cuMemRelease);
  CHECK_FN(cuMemAddressReserve, cuMemAddressReserve);
  CHECK_FN(cuMemAddressFree, cuMemAddressFree);
  CHECK_FN(cuMemMap, cuMemMap);
  CHECK_FN(cuMemUnmap, cuMemUnmap);
  CHECK_FN(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle);
  CHECK_FN(cuPointerGetAttribute, cuPointerGetAttribute);
  CHECK_FN(cuArrayCreate_v2, cuArrayCreate_v2);
  CHECK_FN(cuArray3DCreate_v2, cuArray3DCreate_v2);
  CHECK_FN(cuArrayDestroy, cuArrayDestroy);
  CHECK_FN(cuMipmappedArrayCreate, cuMipmappedArrayCreate);
  CHECK_FN(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy);
  CHECK_FN(cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2);
  CHECK_FN(cuModuleLoadData, cuModuleLoadData);
  CHECK_FN(cuModuleUnload, cuModuleUnload);
  CHECK_FN(cuModuleGetFunction, cuModuleGetFunction);
  CHECK_FN(cuLaunchKernel, cuLaunchKernel);
  CHECK_FN(cuLaunchKernel_ptsz, cuLaunchKernel);
  CHECK_FN(cuLaunchKernelEx, cuLaunchKernelEx);
  CHECK_FN(cuLaunchKernelEx_ptsz, cuLaunchKernelEx);
  CHECK_FN(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel);
  CHECK_FN(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel);
  CHECK_FN(cuStreamCreate, cuStreamCreate);
  CHECK_FN(cuStreamDestroy_v2, cuStreamDestroy_v2);
  CHECK_FN(cuStreamSynchronize, cuStreamSynchronize);
  CHECK_FN(cuStreamBeginCapture_v2, cuStreamBeginCapture_v2);
  CHECK_FN(cuStreamEndCapture, cuStreamEndCapture);
  CHECK_FN(cuStreamIsCapturing, cuStreamIsCapturing);
  CHECK_FN(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode);
  CHECK_FN(cuEventCreate, cuEventCreate);
  CHECK_FN(cuEventRecord, cuEventRecord);
  CHECK_FN(cuEventQuery, cuEventQuery);
  CHECK_FN(cuEventSynchronize, cuEventSynchronize);
  static_assert(std::is_same_v<real_of<mine_cuEventElapsedTime>::type, decltype(::cuEventElapsedTime_v2)>,
                "cuEventElapsedTime does not match cuda.h");
  CHECK_FN(cuEventDestroy_v2, cuEventDestroy_v2);
  CHECK_FN(cuGraphCreate, cuGraphCreate);
  CHECK_FN(cuGraphAddKernelNode_v2, cuGraphAddKernelNode_v2);
  // cuGraphAddNode and _v2 are not checked by name: cuda.h turns the base
  // name into a macro for _v2 from 12.3 on. Their parameters are, below.
  CHECK_FN(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode);
  CHECK_FN(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags);
  CHECK_FN(cuGraphLaunch, cuGraphLaunch);
  CHECK_FN(cuGraphLaunch_ptsz, cuGraphLaunch);
  CHECK_FN(cuGraphExecDestroy, cuGraphExecDestroy);
  CHECK_FN(cuGraphDestroy, cuGraphDestroy);
  CHECK_FN(cuGetExportTable, cuGetExportTable);
  CHECK_FN(cuGetProcAddress_v2, cuGetProcAddress_v2);
  return 0;
}

static_assert(sizeof(mine::CUuuid) == sizeof(::CUuuid), "CUuuid");
static_assert(offsetof(mine::CUuuid, bytes) == offsetof(::CUuuid, bytes), "CUuuid.bytes");
static_assert(sizeof(mine::CUDA_ARRAY_DESCRIPTOR) == sizeof(::CUDA_ARRAY_DESCRIPTOR), "CUDA_ARRAY_DESCRIPTOR");
static_assert(offsetof(mine::CUDA_ARRAY_DESCRIPTOR, Width) == offsetof(::CUDA_ARRAY_DESCRIPTOR, Width), "CUDA_ARRAY_DESCRIPTOR.Width");
static_assert(offsetof(mine::CUDA_ARRAY_DESCRIPTOR, Height) == offsetof(::CUDA_ARRAY_DESCRIPTOR, Height), "CUDA_ARRAY_DESCRIPTOR.Height");
static_assert(offsetof(mine::CUDA_ARRAY_DESCRIPTOR, Format) == offsetof(::CUDA_ARRAY_DESCRIPTOR, Format), "CUDA_ARRAY_DESCRIPTOR.Format");
static_assert(offsetof(mine::CUDA_ARRAY_DESCRIPTOR, NumChannels) == offsetof(::CUDA_ARRAY_DESCRIPTOR, NumChannels), "CUDA_ARRAY_DESCRIPTOR.NumChannels");
static_assert(sizeof(mine::CUDA_ARRAY3D_DESCRIPTOR) == sizeof(::CUDA_ARRAY3D_DESCRIPTOR), "CUDA_ARRAY3D_DESCRIPTOR");
static_assert(offsetof(mine::CUDA_ARRAY3D_DESCRIPTOR, Width) == offsetof(::CUDA_ARRAY3D_DESCRIPTOR, Width), "CUDA_ARRAY3D_DESCRIPTOR.Width");
static_assert(offsetof(mine::CUDA_ARRAY3D_DESCRIPTOR, Height) == offsetof(::CUDA_ARRAY3D_DESCRIPTOR, Height), "CUDA_ARRAY3D_DESCRIPTOR.Height");
static_assert(offsetof(mine::CUDA_ARRAY3D_DESCRIPTOR, Depth) == offsetof(::CUDA_ARRAY3D_DESCRIPTOR, Depth), "CUDA_ARRAY3D_DESCRIPTOR.Depth");
static_assert(offsetof(mine::CUDA_ARRAY3D_DESCRIPTOR, Format) == offsetof(::CUDA_ARRAY3D_DESCRIPTOR, Format), "CUDA_ARRAY3D_DESCRIPTOR.Format");
static_assert(offsetof(mine::CUDA_ARRAY3D_DESCRIPTOR, NumChannels) == offsetof(::CUDA_ARRAY3D_DESCRIPTOR, NumChannels), "CUDA_ARRAY3D_DESCRIPTOR.NumChannels");
static_assert(offsetof(mine::CUDA_ARRAY3D_DESCRIPTOR, Flags) == offsetof(::CUDA_ARRAY3D_DESCRIPTOR, Flags), "CUDA_ARRAY3D_DESCRIPTOR.Flags");
static_assert(sizeof(mine::CUmemLocation) == sizeof(::CUmemLocation), "CUmemLocation");
static_assert(offsetof(mine::CUmemLocation, type) == offsetof(::CUmemLocation, type), "CUmemLocation.type");
static_assert(offsetof(mine::CUmemLocation, id) == offsetof(::CUmemLocation, id), "CUmemLocation.id");
static_assert(sizeof(mine::CUmemAllocationProp) == sizeof(::CUmemAllocationProp), "CUmemAllocationProp");
static_assert(offsetof(mine::CUmemAllocationProp, type) == offsetof(::CUmemAllocationProp, type), "CUmemAllocationProp.type");
static_assert(offsetof(mine::CUmemAllocationProp, requestedHandleTypes) == offsetof(::CUmemAllocationProp, requestedHandleTypes), "CUmemAllocationProp.requestedHandleTypes");
static_assert(offsetof(mine::CUmemAllocationProp, location) == offsetof(::CUmemAllocationProp, location), "CUmemAllocationProp.location");
static_assert(offsetof(mine::CUmemAllocationProp, win32HandleMetaData) == offsetof(::CUmemAllocationProp, win32HandleMetaData), "CUmemAllocationProp.win32HandleMetaData");
static_assert(offsetof(mine::CUmemAllocationProp, allocFlags) == offsetof(::CUmemAllocationProp, allocFlags), "CUmemAllocationProp.allocFlags");
static_assert(sizeof(mine::CUlaunchConfig) == sizeof(::CUlaunchConfig), "CUlaunchConfig");
static_assert(offsetof(mine::CUlaunchConfig, gridDimX) == offsetof(::CUlaunchConfig, gridDimX), "CUlaunchConfig.gridDimX");
static_assert(offsetof(mine::CUlaunchConfig, gridDimY) == offsetof(::CUlaunchConfig, gridDimY), "CUlaunchConfig.gridDimY");
static_assert(offsetof(mine::CUlaunchConfig, gridDimZ) == offsetof(::CUlaunchConfig, gridDimZ), "CUlaunchConfig.gridDimZ");
static_assert(offsetof(mine::CUlaunchConfig, blockDimX) == offsetof(::CUlaunchConfig, blockDimX), "CUlaunchConfig.blockDimX");
static_assert(offsetof(mine::CUlaunchConfig, blockDimY) == offsetof(::CUlaunchConfig, blockDimY), "CUlaunchConfig.blockDimY");
static_assert(offsetof(mine::CUlaunchConfig, blockDimZ) == offsetof(::CUlaunchConfig, blockDimZ), "CUlaunchConfig.blockDimZ");
static_assert(offsetof(mine::CUlaunchConfig, sharedMemBytes) == offsetof(::CUlaunchConfig, sharedMemBytes), "CUlaunchConfig.sharedMemBytes");
static_assert(offsetof(mine::CUlaunchConfig, hStream) == offsetof(::CUlaunchConfig, hStream), "CUlaunchConfig.hStream");
static_assert(offsetof(mine::CUlaunchConfig, attrs) == offsetof(::CUlaunchConfig, attrs), "CUlaunchConfig.attrs");
static_assert(offsetof(mine::CUlaunchConfig, numAttrs) == offsetof(::CUlaunchConfig, numAttrs), "CUlaunchConfig.numAttrs");
static_assert(sizeof(mine::CUDA_KERNEL_NODE_PARAMS_v2) == sizeof(::CUDA_KERNEL_NODE_PARAMS_v2), "CUDA_KERNEL_NODE_PARAMS_v2");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, func) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, func), "CUDA_KERNEL_NODE_PARAMS_v2.func");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, gridDimX) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, gridDimX), "CUDA_KERNEL_NODE_PARAMS_v2.gridDimX");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, gridDimY) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, gridDimY), "CUDA_KERNEL_NODE_PARAMS_v2.gridDimY");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, gridDimZ) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, gridDimZ), "CUDA_KERNEL_NODE_PARAMS_v2.gridDimZ");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, blockDimX) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, blockDimX), "CUDA_KERNEL_NODE_PARAMS_v2.blockDimX");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, blockDimY) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, blockDimY), "CUDA_KERNEL_NODE_PARAMS_v2.blockDimY");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, blockDimZ) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, blockDimZ), "CUDA_KERNEL_NODE_PARAMS_v2.blockDimZ");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, sharedMemBytes) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, sharedMemBytes), "CUDA_KERNEL_NODE_PARAMS_v2.sharedMemBytes");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, kernelParams) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, kernelParams), "CUDA_KERNEL_NODE_PARAMS_v2.kernelParams");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, extra) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, extra), "CUDA_KERNEL_NODE_PARAMS_v2.extra");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, kern) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, kern), "CUDA_KERNEL_NODE_PARAMS_v2.kern");
static_assert(offsetof(mine::CUDA_KERNEL_NODE_PARAMS_v2, ctx) == offsetof(::CUDA_KERNEL_NODE_PARAMS_v2, ctx), "CUDA_KERNEL_NODE_PARAMS_v2.ctx");

static_assert(static_cast<long>(mine::CUDA_SUCCESS) == static_cast<long>(::CUDA_SUCCESS), "CUDA_SUCCESS");
static_assert(static_cast<long>(mine::CUDA_ERROR_INVALID_VALUE) == static_cast<long>(::CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
static_assert(static_cast<long>(mine::CUDA_ERROR_OUT_OF_MEMORY) == static_cast<long>(::CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY");
static_assert(static_cast<long>(mine::CUDA_ERROR_NOT_INITIALIZED) == static_cast<long>(::CUDA_ERROR_NOT_INITIALIZED), "CUDA_ERROR_NOT_INITIALIZED");
static_assert(static_cast<long>(mine::CUDA_ERROR_INVALID_DEVICE) == static_cast<long>(::CUDA_ERROR_INVALID_DEVICE), "CUDA_ERROR_INVALID_DEVICE");
static_assert(static_cast<long>(mine::CUDA_ERROR_INVALID_CONTEXT) == static_cast<long>(::CUDA_ERROR_INVALID_CONTEXT), "CUDA_ERROR_INVALID_CONTEXT");
static_assert(static_cast<long>(mine::CUDA_ERROR_INVALID_HANDLE) == static_cast<long>(::CUDA_ERROR_INVALID_HANDLE), "CUDA_ERROR_INVALID_HANDLE");
static_assert(static_cast<long>(mine::CUDA_ERROR_NOT_FOUND) == static_cast<long>(::CUDA_ERROR_NOT_FOUND), "CUDA_ERROR_NOT_FOUND");
static_assert(static_cast<long>(mine::CUDA_ERROR_NOT_READY) == static_cast<long>(::CUDA_ERROR_NOT_READY), "CUDA_ERROR_NOT_READY");
static_assert(static_cast<long>(mine::CUDA_ERROR_NOT_SUPPORTED) == static_cast<long>(::CUDA_ERROR_NOT_SUPPORTED), "CUDA_ERROR_NOT_SUPPORTED");
static_assert(static_cast<long>(mine::CUDA_ERROR_UNKNOWN) == static_cast<long>(::CUDA_ERROR_UNKNOWN), "CUDA_ERROR_UNKNOWN");
static_assert(static_cast<long>(mine::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) == static_cast<long>(::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
static_assert(static_cast<long>(mine::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) == static_cast<long>(::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
static_assert(static_cast<long>(mine::CUDA_ERROR_CAPTURED_EVENT) == static_cast<long>(::CUDA_ERROR_CAPTURED_EVENT), "CUDA_ERROR_CAPTURED_EVENT");
static_assert(static_cast<long>(mine::CU_STREAM_CAPTURE_STATUS_NONE) == static_cast<long>(::CU_STREAM_CAPTURE_STATUS_NONE), "CU_STREAM_CAPTURE_STATUS_NONE");
static_assert(static_cast<long>(mine::CU_STREAM_CAPTURE_STATUS_ACTIVE) == static_cast<long>(::CU_STREAM_CAPTURE_STATUS_ACTIVE), "CU_STREAM_CAPTURE_STATUS_ACTIVE");
static_assert(static_cast<long>(mine::CU_STREAM_CAPTURE_STATUS_INVALIDATED) == static_cast<long>(::CU_STREAM_CAPTURE_STATUS_INVALIDATED), "CU_STREAM_CAPTURE_STATUS_INVALIDATED");
static_assert(static_cast<long>(mine::CU_STREAM_CAPTURE_MODE_GLOBAL) == static_cast<long>(::CU_STREAM_CAPTURE_MODE_GLOBAL), "CU_STREAM_CAPTURE_MODE_GLOBAL");
static_assert(static_cast<long>(mine::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == static_cast<long>(::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "CU_STREAM_CAPTURE_MODE_THREAD_LOCAL");
static_assert(static_cast<long>(mine::CU_STREAM_CAPTURE_MODE_RELAXED) == static_cast<long>(::CU_STREAM_CAPTURE_MODE_RELAXED), "CU_STREAM_CAPTURE_MODE_RELAXED");
static_assert(static_cast<long>(mine::CU_STREAM_DEFAULT) == static_cast<long>(::CU_STREAM_DEFAULT), "CU_STREAM_DEFAULT");
static_assert(static_cast<long>(mine::CU_STREAM_NON_BLOCKING) == static_cast<long>(::CU_STREAM_NON_BLOCKING), "CU_STREAM_NON_BLOCKING");
static_assert(static_cast<long>(mine::CU_GET_PROC_ADDRESS_DEFAULT) == static_cast<long>(::CU_GET_PROC_ADDRESS_DEFAULT), "CU_GET_PROC_ADDRESS_DEFAULT");
static_assert(static_cast<long>(mine::CU_GET_PROC_ADDRESS_LEGACY_STREAM) == static_cast<long>(::CU_GET_PROC_ADDRESS_LEGACY_STREAM), "CU_GET_PROC_ADDRESS_LEGACY_STREAM");
static_assert(static_cast<long>(mine::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) == static_cast<long>(::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), "CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM");
static_assert(static_cast<long>(mine::CU_GET_PROC_ADDRESS_SUCCESS) == static_cast<long>(::CU_GET_PROC_ADDRESS_SUCCESS), "CU_GET_PROC_ADDRESS_SUCCESS");
static_assert(static_cast<long>(mine::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) == static_cast<long>(::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND), "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND");
static_assert(static_cast<long>(mine::CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) == static_cast<long>(::CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT), "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT");
static_assert(static_cast<long>(mine::CU_AD_FORMAT_UNSIGNED_INT8) == static_cast<long>(::CU_AD_FORMAT_UNSIGNED_INT8), "CU_AD_FORMAT_UNSIGNED_INT8");
static_assert(static_cast<long>(mine::CU_AD_FORMAT_UNSIGNED_INT16) == static_cast<long>(::CU_AD_FORMAT_UNSIGNED_INT16), "CU_AD_FORMAT_UNSIGNED_INT16");
static_assert(static_cast<long>(mine::CU_AD_FORMAT_UNSIGNED_INT32) == static_cast<long>(::CU_AD_FORMAT_UNSIGNED_INT32), "CU_AD_FORMAT_UNSIGNED_INT32");
static_assert(static_cast<long>(mine::CU_AD_FORMAT_SIGNED_INT8) == static_cast<long>(::CU_AD_FORMAT_SIGNED_INT8), "CU_AD_FORMAT_SIGNED_INT8");
static_assert(static_cast<long>(mine::CU_AD_FORMAT_SIGNED_INT16) == static_cast<long>(::CU_AD_FORMAT_SIGNED_INT16), "CU_AD_FORMAT_SIGNED_INT16");
static_assert(static_cast<long>(mine::CU_AD_FORMAT_SIGNED_INT32) == static_cast<long>(::CU_AD_FORMAT_SIGNED_INT32), "CU_AD_FORMAT_SIGNED_INT32");
static_assert(static_cast<long>(mine::CU_AD_FORMAT_HALF) == static_cast<long>(::CU_AD_FORMAT_HALF), "CU_AD_FORMAT_HALF");
static_assert(static_cast<long>(mine::CU_AD_FORMAT_FLOAT) == static_cast<long>(::CU_AD_FORMAT_FLOAT), "CU_AD_FORMAT_FLOAT");
static_assert(static_cast<long>(mine::CU_MEM_ALLOCATION_TYPE_INVALID) == static_cast<long>(::CU_MEM_ALLOCATION_TYPE_INVALID), "CU_MEM_ALLOCATION_TYPE_INVALID");
static_assert(static_cast<long>(mine::CU_MEM_ALLOCATION_TYPE_PINNED) == static_cast<long>(::CU_MEM_ALLOCATION_TYPE_PINNED), "CU_MEM_ALLOCATION_TYPE_PINNED");
static_assert(static_cast<long>(mine::CU_MEM_HANDLE_TYPE_NONE) == static_cast<long>(::CU_MEM_HANDLE_TYPE_NONE), "CU_MEM_HANDLE_TYPE_NONE");
static_assert(static_cast<long>(mine::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == static_cast<long>(::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR");
static_assert(static_cast<long>(mine::CU_MEM_LOCATION_TYPE_INVALID) == static_cast<long>(::CU_MEM_LOCATION_TYPE_INVALID), "CU_MEM_LOCATION_TYPE_INVALID");
static_assert(static_cast<long>(mine::CU_MEM_LOCATION_TYPE_DEVICE) == static_cast<long>(::CU_MEM_LOCATION_TYPE_DEVICE), "CU_MEM_LOCATION_TYPE_DEVICE");

static_assert(sizeof(mine::CUmemPoolProps) == sizeof(::CUmemPoolProps), "CUmemPoolProps");
static_assert(offsetof(mine::CUmemPoolProps, location) == offsetof(::CUmemPoolProps, location), "CUmemPoolProps.location");
static_assert(sizeof(mine::CUDA_MEM_ALLOC_NODE_PARAMS) == sizeof(::CUDA_MEM_ALLOC_NODE_PARAMS), "CUDA_MEM_ALLOC_NODE_PARAMS");
static_assert(offsetof(mine::CUDA_MEM_ALLOC_NODE_PARAMS, poolProps) == offsetof(::CUDA_MEM_ALLOC_NODE_PARAMS, poolProps), "CUDA_MEM_ALLOC_NODE_PARAMS.poolProps");
static_assert(offsetof(mine::CUDA_MEM_ALLOC_NODE_PARAMS, bytesize) == offsetof(::CUDA_MEM_ALLOC_NODE_PARAMS, bytesize), "CUDA_MEM_ALLOC_NODE_PARAMS.bytesize");
static_assert(offsetof(mine::CUDA_MEM_ALLOC_NODE_PARAMS, dptr) == offsetof(::CUDA_MEM_ALLOC_NODE_PARAMS, dptr), "CUDA_MEM_ALLOC_NODE_PARAMS.dptr");
static_assert(sizeof(mine::CUgraphNodeParams) == sizeof(::CUgraphNodeParams), "CUgraphNodeParams");
static_assert(offsetof(mine::CUgraphNodeParams, type) == offsetof(::CUgraphNodeParams, type), "CUgraphNodeParams.type");
static_assert(offsetof(mine::CUgraphNodeParams, alloc) == offsetof(::CUgraphNodeParams, alloc), "CUgraphNodeParams.alloc");
static_assert(sizeof(mine::CUgraphNodeParams::alloc) == sizeof(::CUgraphNodeParams::alloc), "CUgraphNodeParams.alloc size");
static_assert(static_cast<long>(mine::CU_GRAPH_NODE_TYPE_KERNEL) == static_cast<long>(::CU_GRAPH_NODE_TYPE_KERNEL), "CU_GRAPH_NODE_TYPE_KERNEL");
static_assert(static_cast<long>(mine::CU_GRAPH_NODE_TYPE_MEM_ALLOC) == static_cast<long>(::CU_GRAPH_NODE_TYPE_MEM_ALLOC), "CU_GRAPH_NODE_TYPE_MEM_ALLOC");
static_assert(static_cast<long>(mine::CU_GRAPH_NODE_TYPE_MEM_FREE) == static_cast<long>(::CU_GRAPH_NODE_TYPE_MEM_FREE), "CU_GRAPH_NODE_TYPE_MEM_FREE");
static_assert(static_cast<long>(mine::CU_POINTER_ATTRIBUTE_CONTEXT) == static_cast<long>(::CU_POINTER_ATTRIBUTE_CONTEXT), "CU_POINTER_ATTRIBUTE_CONTEXT");
static_assert(static_cast<long>(mine::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) == static_cast<long>(::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL), "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL");
