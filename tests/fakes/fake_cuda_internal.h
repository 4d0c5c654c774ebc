/* What the fake driver's files share, and the helpers it exports for the fake
 * NVML and for tests (names start with fakecuda_, never used by real code). */
#ifndef GPUSLICE_FAKE_CUDA_INTERNAL_H
#define GPUSLICE_FAKE_CUDA_INTERNAL_H

#include "gpuslice/cuda_api.h"

/* Where processes keep their usage for the fake NVML of other processes
 * (the kernel driver's per-process accounting); nothing when it is missing.
 * Tests make it and bind-mount it into containers at the same path. */
#define FAKECUDA_PROCESS_DIR "/run/fake-nvidia-driver/processes"
#define FAKECUDA_MAX_DEVICES 8 /* the file: uint64_t used[FAKECUDA_MAX_DEVICES], busy_ns */

uint64_t fake_now_ns(void);
CUresult fake_check_ctx(void);
/* The device of a stream made by cuStreamCreate; -1 for the NULL, legacy and
 * per-thread streams, which stand for the current context's. */
int fake_stream_device(CUstream s);
/* A synchronization: pools give back what is above their release threshold. */
void fake_pools_release(void);

int fakecuda_device_count(void);
void fakecuda_uuid(int dev, CUuuid *u);
uint64_t fakecuda_device_used(int dev);
uint64_t fakecuda_device_peak(int dev); /* the most held since fakecuda_reset_peak */
void fakecuda_reset_peak(int dev);
uint64_t fakecuda_device_total(int dev);
uint64_t fakecuda_busy_ns(void);
void fakecuda_account_busy(void); /* the accounting file's busy_ns, now */

/* Variants not in gpuslice/cuda_api.h (the interposer does not wrap them). */
CUresult cuStreamSynchronize_ptsz(CUstream s);
CUresult cuEventRecord_ptsz(CUevent e, CUstream s);
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b);
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUdevice dst, CUstream s);
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream s);

#endif
