/* The part of the CUDA driver API and NVML that gpuslice uses, declared from
 * the public API reference so that the interposer, the fakes, the tests and
 * the benchmark build on machines without a CUDA toolkit (Debian main ships
 * none). Names, values and layouts follow cuda.h / nvml.h exactly;
 * tests/interposer/check_cuda_header.cpp static_asserts that where a real
 * cuda.h is installed.
 *
 * GS_CUDA_API_NO_EXTERN_C: declare the functions without C linkage, so that
 * the header check can include this header inside a namespace next to cuda.h.
 */
#ifndef GPUSLICE_CUDA_API_H
#define GPUSLICE_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus) && !defined(GS_CUDA_API_NO_EXTERN_C)
extern "C" {
#endif

/* ---- driver API types ---- */
typedef uint64_t cuuint64_t;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUlaunchAttribute_st CUlaunchAttribute;

typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_CAPTURED_EVENT = 907,
  CUDA_ERROR_UNKNOWN = 999
} CUresult;

/* Stream capture (CUDA graphs recorded from a stream's work). */
typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;
typedef enum CUstreamCaptureMode_enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;
typedef enum CUstream_flags_enum { CU_STREAM_DEFAULT = 0x0, CU_STREAM_NON_BLOCKING = 0x1 } CUstream_flags;
/* cuda.h's CU_STREAM_LEGACY and CU_STREAM_PER_THREAD (a _ptsz call's NULL
 * stream, named to a call without the suffix) */
#define GS_STREAM_LEGACY ((CUstream)0x1)
#define GS_STREAM_PER_THREAD ((CUstream)0x2)

typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;

typedef enum CUdriverProcAddress_flags_enum {
  CU_GET_PROC_ADDRESS_DEFAULT = 0,
  CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

typedef enum CUarray_format_enum {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
  CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
  CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
  CU_AD_FORMAT_SIGNED_INT8 = 0x08,
  CU_AD_FORMAT_SIGNED_INT16 = 0x09,
  CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
  CU_AD_FORMAT_HALF = 0x10,
  CU_AD_FORMAT_FLOAT = 0x20
} CUarray_format;

typedef struct CUDA_ARRAY_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  CUarray_format Format;
  unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  size_t Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

typedef enum CUmemAllocationType_enum {
  CU_MEM_ALLOCATION_TYPE_INVALID = 0,
  CU_MEM_ALLOCATION_TYPE_PINNED = 1
} CUmemAllocationType;

typedef enum CUmemAllocationHandleType_enum {
  CU_MEM_HANDLE_TYPE_NONE = 0,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
} CUmemAllocationHandleType;

typedef enum CUmemLocationType_enum {
  CU_MEM_LOCATION_TYPE_INVALID = 0,
  CU_MEM_LOCATION_TYPE_DEVICE = 1
} CUmemLocationType;

typedef struct CUmemLocation_st {
  CUmemLocationType type;
  int id;
} CUmemLocation;

typedef struct CUmemAllocationProp_st {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;

typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS_v2;

typedef struct CUmemAccessDesc_st CUmemAccessDesc;
typedef struct CUgraphEdgeData_st CUgraphEdgeData;

typedef struct CUmemPoolProps_st {
  CUmemAllocationType allocType;
  CUmemAllocationHandleType handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;

/* A graph's memory allocation node: memory every launch of the graph takes. */
typedef struct CUDA_MEM_ALLOC_NODE_PARAMS_v1_st {
  CUmemPoolProps poolProps;
  const CUmemAccessDesc *accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;
} CUDA_MEM_ALLOC_NODE_PARAMS;

typedef enum CUgraphNodeType_enum {
  CU_GRAPH_NODE_TYPE_KERNEL = 0,
  CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10,
  CU_GRAPH_NODE_TYPE_MEM_FREE = 11
} CUgraphNodeType;

/* cuGraphAddNode's tagged union (CUDA 12.2); only the allocation node's
 * parameters are read here (cuda.h's `alloc` member is the _v2 struct, the
 * same fields). */
typedef struct CUgraphNodeParams_st {
  CUgraphNodeType type;
  int reserved0[3];
  union {
    long long reserved1[29];
    CUDA_MEM_ALLOC_NODE_PARAMS alloc;
  };
  long long reserved2;
} CUgraphNodeParams;

typedef enum CUpointer_attribute_enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17
} CUpointer_attribute;

typedef enum CUmemPool_attribute_enum {
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7
} CUmemPool_attribute;

typedef enum CUmemAttach_flags_enum {
  CU_MEM_ATTACH_GLOBAL = 0x1,
  CU_MEM_ATTACH_HOST = 0x2,
  CU_MEM_ATTACH_SINGLE = 0x4
} CUmemAttach_flags;

/* ---- driver API functions (exported, versioned names) ---- */
#define GS_CUDA_FUNCTIONS(X)                                                                   \
  X(cuInit, (unsigned int flags))                                                              \
  X(cuDriverGetVersion, (int *driverVersion))                                                  \
  X(cuDeviceGet, (CUdevice * device, int ordinal))                                             \
  X(cuDeviceGetCount, (int *count))                                                            \
  X(cuDeviceGetName, (char *name, int len, CUdevice dev))                                      \
  X(cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev))                                            \
  X(cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice dev))                                         \
  X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev))                                       \
  X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev))                                \
  X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                                              \
  X(cuCtxGetCurrent, (CUcontext * pctx))                                                       \
  X(cuCtxSetCurrent, (CUcontext ctx))                                                          \
  X(cuCtxGetDevice, (CUdevice * device))                                                       \
  X(cuCtxPushCurrent_v2, (CUcontext ctx))                                                      \
  X(cuCtxPopCurrent_v2, (CUcontext * pctx))                                                    \
  X(cuStreamGetCtx, (CUstream hStream, CUcontext * pctx))                                      \
  X(cuCtxSynchronize, (void))                                                                  \
  X(cuMemGetInfo_v2, (size_t * free, size_t *total))                                           \
  X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize))                                      \
  X(cuMemAllocPitch_v2, (CUdeviceptr * dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, \
                         unsigned int ElementSizeBytes))                                       \
  X(cuMemFree_v2, (CUdeviceptr dptr))                                                          \
  X(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags))              \
  X(cuMemAllocHost_v2, (void **pp, size_t bytesize))                                           \
  X(cuMemFreeHost, (void *p))                                                                  \
  X(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))           \
  X(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))                 \
  X(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream))                  \
  X(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream))             \
  X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream))                                      \
  X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream))                                 \
  X(cuMemAllocFromPoolAsync, (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)) \
  X(cuMemAllocFromPoolAsync_ptsz,                                                              \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream))                \
  X(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev))                        \
  X(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr))        \
  X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep))                               \
  X(cuMemPoolCreate, (CUmemoryPool * pool, const CUmemPoolProps *poolProps))                    \
  X(cuMemPoolDestroy, (CUmemoryPool pool))                                                     \
  X(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value))          \
  X(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value))          \
  X(cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice dev))                                   \
  X(cuMemCreate, (CUmemGenericAllocationHandle * handle, size_t size,                          \
                  const CUmemAllocationProp *prop, unsigned long long flags))                  \
  X(cuMemRelease, (CUmemGenericAllocationHandle handle))                                       \
  X(cuMemAddressReserve, (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr,  \
                          unsigned long long flags))                                           \
  X(cuMemAddressFree, (CUdeviceptr ptr, size_t size))                                          \
  X(cuMemMap, (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, \
               unsigned long long flags))                                                      \
  X(cuMemUnmap, (CUdeviceptr ptr, size_t size))                                                \
  X(cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle * handle, void *addr))          \
  X(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray))        \
  X(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray))    \
  X(cuArrayDestroy, (CUarray hArray))                                                          \
  X(cuMipmappedArrayCreate, (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc, \
                             unsigned int numMipmapLevels))                                    \
  X(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray))                               \
  X(cuMemPrefetchAsync_v2, (CUdeviceptr devPtr, size_t count, CUmemLocation location,          \
                            unsigned int flags, CUstream hStream))                             \
  X(cuModuleLoadData, (CUmodule * module, const void *image))                                  \
  X(cuModuleUnload, (CUmodule hmod))                                                           \
  X(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name))                \
  X(cuLaunchKernel, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,               \
                     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,    \
                     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,    \
                     void **kernelParams, void **extra))                                       \
  X(cuLaunchKernel_ptsz, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,          \
                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
                          void **kernelParams, void **extra))                                  \
  X(cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)) \
  X(cuLaunchKernelEx_ptsz,                                                                     \
    (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra))           \
  X(cuLaunchCooperativeKernel,                                                                 \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,        \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                   \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams))                      \
  X(cuLaunchCooperativeKernel_ptsz,                                                            \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,        \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                   \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams))                      \
  X(cuStreamCreate, (CUstream * phStream, unsigned int Flags))                                 \
  X(cuStreamDestroy_v2, (CUstream hStream))                                                    \
  X(cuStreamSynchronize, (CUstream hStream))                                                   \
  X(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode))                    \
  X(cuStreamEndCapture, (CUstream hStream, CUgraph * phGraph))                                 \
  X(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus * captureStatus))            \
  X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode))                           \
  X(cuEventCreate, (CUevent * phEvent, unsigned int Flags))                                    \
  X(cuEventRecord, (CUevent hEvent, CUstream hStream))                                         \
  X(cuEventQuery, (CUevent hEvent))                                                            \
  X(cuEventSynchronize, (CUevent hEvent))                                                      \
  X(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd))                 \
  X(cuEventDestroy_v2, (CUevent hEvent))                                                       \
  X(cuGraphCreate, (CUgraph * phGraph, unsigned int flags))                                    \
  X(cuGraphAddKernelNode_v2, (CUgraphNode * phGraphNode, CUgraph hGraph,                       \
                              const CUgraphNode *dependencies, size_t numDependencies,         \
                              const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams))                   \
  X(cuGraphAddMemAllocNode, (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, \
                             size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams))      \
  X(cuGraphAddNode, (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,     \
                     size_t numDependencies, CUgraphNodeParams *nodeParams))                   \
  X(cuGraphAddNode_v2, (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,  \
                        const CUgraphEdgeData *dependencyData, size_t numDependencies,         \
                        CUgraphNodeParams *nodeParams))                                        \
  X(cuGraphInstantiateWithFlags, (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags)) \
  X(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream))                                 \
  X(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream))                            \
  X(cuGraphExecDestroy, (CUgraphExec hGraphExec))                                              \
  X(cuGraphDestroy, (CUgraph hGraph))                                                          \
  X(cuGetExportTable, (const void **ppExportTable, const CUuuid *pExportTableId))             \
  X(cuGetProcAddress_v2, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,   \
                          CUdriverProcAddressQueryResult *symbolStatus))

#define GS_DECLARE_FN(name, params) CUresult name params;
#define GS_DECLARE_PFN(name, params) typedef CUresult(*PFN_gs_##name) params;
GS_CUDA_FUNCTIONS(GS_DECLARE_FN)
GS_CUDA_FUNCTIONS(GS_DECLARE_PFN)

/* Not in the check list: cuda.h hides these older ABIs, yet real drivers still
 * export them for old runtimes. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
typedef CUresult (*PFN_gs_cuGetProcAddress)(const char *, void **, int, cuuint64_t);
CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);

/* ---- NVML ---- */
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2 << 24U)))

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;
  unsigned long long timeStamp; /* CPU time, microseconds */
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp);

#if defined(__cplusplus) && !defined(GS_CUDA_API_NO_EXTERN_C)
}
#endif

#endif
