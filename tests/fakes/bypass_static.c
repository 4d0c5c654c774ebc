/* A GPU program the interposer never meets: the fake driver linked in
 * statically, so no dynamic loader runs and /etc/ld.so.preload is never
 * read, as with any static binary (or one that reaches the driver by other
 * means). What stops it is the monitor, through the driver's own per-process
 * accounting (NVML). Allocates SIZE MiB on device 0, then holds it:
 *   bypass_static MIB SECONDS
 * Exit 0 after SECONDS; 1 when the allocation fails. */
#include "fake_cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bypass_static MIB SECONDS\n");
    return 2;
  }
  unsigned long long mib = strtoull(argv[1], NULL, 10);
  int seconds = atoi(argv[2]);
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    return 1;
  CUresult r = cuMemAlloc_v2(&p, (size_t)(mib << 20));
  printf("bypass_static: %llu MiB: %d\n", mib, (int)r);
  fflush(stdout);
  if (r != CUDA_SUCCESS) return 1;
  for (int i = 0; i < seconds; i++) sleep(1);
  printf("bypass_static: held %d s\n", seconds);
  return 0;
}
