/* Launch wrappers: every path that puts work on the GPU passes the compute
 * gate (throttle.c). Between two slow paths a launch costs one thread-local
 * decrement and a predictable branch.
 */
#define _GNU_SOURCE
#include "internal.h"

/* A kernel's shape, as the key of its measured time. */
#define SHAPE(f, gx, gy, gz, bx, by, bz)                                                           \
  gs_kernel_key((f), (uint64_t)(gx) * (gy) * (gz), (uint64_t)(bx) * (by) * (bz))
#define SHAPE_EX(c, f)                                                                             \
  ((c) ? SHAPE(f, (c)->gridDimX, (c)->gridDimY, (c)->gridDimZ, (c)->blockDimX, (c)->blockDimY,     \
               (c)->blockDimZ)                                                                     \
       : gs_kernel_key((f), 0, 0))

#define GATED(stream, ptsz, kernel, call)                                                          \
  do {                                                                                             \
    if (GS_LIKELY(--gs_launch_countdown >= 0)) return call;                                        \
    struct gs_gate g_;                                                                             \
    gs_gate_begin(&g_, (stream), (ptsz), (kernel));                                                \
    CUresult r_ = call;                                                                            \
    gs_gate_end(&g_, r_);                                                                          \
    return r_;                                                                                     \
  } while (0)

GS_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shmem, CUstream s, void **params, void **extra) {
  GATED(s, 0, SHAPE(f, gx, gy, gz, bx, by, bz), gs_real.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra));
}

GS_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                       void **extra) {
  GATED(s, 1, SHAPE(f, gx, gy, gz, bx, by, bz), gs_real.cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra));
}

GS_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  GATED(c ? c->hStream : NULL, 0, SHAPE_EX(c, f), gs_real.cuLaunchKernelEx(c, f, params, extra));
}

GS_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  GATED(c ? c->hStream : NULL, 1, SHAPE_EX(c, f), gs_real.cuLaunchKernelEx_ptsz(c, f, params, extra));
}

GS_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                             unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params) {
  GATED(s, 0, SHAPE(f, gx, gy, gz, bx, by, bz), gs_real.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params));
}

GS_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                  unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                                  CUstream s, void **params) {
  GATED(s, 1, SHAPE(f, gx, gy, gz, bx, by, bz), gs_real.cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params));
}

GS_EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) { GATED(s, 0, gs_kernel_key(e, 0, 0), gs_real.cuGraphLaunch(e, s)); }

GS_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) { GATED(s, 1, gs_kernel_key(e, 0, 0), gs_real.cuGraphLaunch_ptsz(e, s)); }
