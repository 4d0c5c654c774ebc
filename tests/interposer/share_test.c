/* A compute-bound loop on the fake GPU: launches spin kernels (1 ms, or
 * KERNEL_MS) through one launch API as fast as the GPU takes them and prints
 * the share of wall time its kernels ran on the GPU, measured after a warm-up:
 *   share_test API SECONDS [MIB [KERNEL_MS]]
 *   (API: kernel kernel_ptsz ex ex_ptsz coop coop_ptsz graph graph_ptsz capture;
 *   capture: a graph of two kernels captured from a stream in global mode,
 *   while launches of that stream are still in flight, then launched)
 * prints "share 29.7". With MIB (0: none) it holds that much device memory
 * meanwhile, as a real context does: the driver (and NVML) then lists the
 * process.
 */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t fakecuda_busy_ns(void);

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 5) return fprintf(stderr, "usage: share_test API SECONDS [MIB [KERNEL_MS]]\n"), 1;
  const char *api = argv[1];
  uint64_t run_ns = (uint64_t)(atof(argv[2]) * 1e9), warm_ns = run_ns / 4;
  CUcontext ctx;
  CUmodule mod;
  CUfunction f;
  if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, "spin") ||
      cuModuleGetFunction(&f, mod, "spin"))
    return fprintf(stderr, "share_test: no context\n"), 1;
  CUdeviceptr held = 0;
  if (argc >= 4 && atoi(argv[3]) > 0 && cuMemAlloc_v2(&held, (size_t)atoi(argv[3]) << 20))
    return fprintf(stderr, "share_test: cannot allocate %s MiB\n", argv[3]), 1;
  uint64_t kernel_ns = argc == 5 ? (uint64_t)(atof(argv[4]) * 1e6) : 1000000;
  if (!kernel_ns) return fprintf(stderr, "share_test: KERNEL_MS must be positive\n"), 1;
  void *params[] = {&kernel_ns};
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
  CUgraph g;
  CUgraphNode node;
  CUgraphExec exec;
  CUDA_KERNEL_NODE_PARAMS_v2 np;
  memset(&np, 0, sizeof np);
  np.func = f;
  np.gridDimX = np.gridDimY = np.gridDimZ = np.blockDimX = np.blockDimY = np.blockDimZ = 1;
  np.kernelParams = params;
  if (cuGraphCreate(&g, 0) || cuGraphAddKernelNode_v2(&node, g, NULL, 0, &np) || cuGraphInstantiateWithFlags(&exec, g, 0))
    return fprintf(stderr, "share_test: no graph\n"), 1;

  CUstream cs = NULL;
  CUgraphExec captured = NULL;
  if (!strcmp(api, "capture")) {
    CUgraph cg;
    CUresult r = cuStreamCreate(&cs, 0);
    for (int i = 0; i < 3 && !r; i++) r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, cs, params, NULL);
    if (r || (r = cuStreamBeginCapture_v2(cs, CU_STREAM_CAPTURE_MODE_GLOBAL)))
      return fprintf(stderr, "share_test: cannot begin a capture (%d)\n", r), 1;
    for (int i = 0; i < 2; i++)
      if ((r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, cs, params, NULL)))
        return fprintf(stderr, "share_test: a launch into the capture failed (%d)\n", r), 1;
    if ((r = cuStreamEndCapture(cs, &cg)) || (r = cuGraphInstantiateWithFlags(&captured, cg, 0)))
      return fprintf(stderr, "share_test: the capture failed (%d)\n", r), 1;
  }
  uint64_t start = now_ns(), t0 = 0, b0 = 0;
  for (;;) {
    uint64_t t = now_ns();
    if (!t0 && t - start >= warm_ns) {
      t0 = t;
      b0 = fakecuda_busy_ns();
    }
    if (t - start >= run_ns) break;
    CUresult r;
    if (!strcmp(api, "kernel")) r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    else if (!strcmp(api, "kernel_ptsz")) r = cuLaunchKernel_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    else if (!strcmp(api, "ex")) r = cuLaunchKernelEx(&cfg, f, params, NULL);
    else if (!strcmp(api, "ex_ptsz")) r = cuLaunchKernelEx_ptsz(&cfg, f, params, NULL);
    else if (!strcmp(api, "coop")) r = cuLaunchCooperativeKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params);
    else if (!strcmp(api, "coop_ptsz")) r = cuLaunchCooperativeKernel_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, params);
    else if (!strcmp(api, "graph")) r = cuGraphLaunch(exec, NULL);
    else if (!strcmp(api, "graph_ptsz")) r = cuGraphLaunch_ptsz(exec, NULL);
    else if (!strcmp(api, "capture")) r = cuGraphLaunch(captured, cs);
    else return fprintf(stderr, "share_test: unknown api %s\n", api), 1;
    if (r != CUDA_SUCCESS) return fprintf(stderr, "share_test: launch failed (%d)\n", r), 1;
  }
  uint64_t t1 = now_ns(), b1 = fakecuda_busy_ns();
  printf("share %.1f\n", 100.0 * (double)(b1 - b0) / (double)(t1 - t0));
  return 0;
}
