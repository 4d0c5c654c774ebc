/* How lookups resolve under the interposer (run under `gpuslice exec
 * --memory-limit LIMIT`, argument LIMIT in MiB):
 *  - cuGetProcAddress / _v2 honour cudaVersion and the per-thread flag: the
 *    wrapped functions come back as the interposer's wrapper of exactly the
 *    versioned function the driver chose, the others as the driver's own;
 *  - asking for cuGetProcAddress returns the wrapper;
 *  - unknown symbols and too-old versions fail as the driver says; a wrapped
 *    function in a variant newer than the interposer's wrappers is refused;
 *  - cuGetExportTable passes through untouched;
 *  - cuDeviceTotalMem and NVML memory info report the limit.
 */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_PROGRAM "lookup_test"
#include "check.h"

static PFN_gs_cuGetProcAddress_v2 gpa2;
static PFN_gs_cuGetProcAddress gpa1;

/* Which library and symbol a function pointer is. */
static void where(void *p, char *lib, size_t liblen, char *sym, size_t symlen) {
  Dl_info info;
  memset(&info, 0, sizeof info);
  snprintf(lib, liblen, "?");
  snprintf(sym, symlen, "?");
  if (p && dladdr(p, &info)) {
    const char *base = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
    snprintf(lib, liblen, "%s", base ? base + 1 : (info.dli_fname ? info.dli_fname : "?"));
    snprintf(sym, symlen, "%s", info.dli_sname ? info.dli_sname : "?");
  }
}

static void expect(const char *name, int version, cuuint64_t flags, const char *want_lib, const char *want_sym) {
  for (int v = 1; v <= 2; v++) {
    void *p = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = v == 2 ? gpa2(name, &p, version, flags, &st) : gpa1(name, &p, version, flags);
    char lib[256], sym[256];
    where(p, lib, sizeof lib, sym, sizeof sym);
    CHECK(r == CUDA_SUCCESS && (v == 1 || st == CU_GET_PROC_ADDRESS_SUCCESS), "v%d %s@%d: result %d status %d", v,
          name, version, r, st);
    CHECK(strncmp(lib, want_lib, strlen(want_lib)) == 0 && strcmp(sym, want_sym) == 0,
          "v%d %s@%d flags %llu: got %s in %s, want %s in %s", v, name, version, (unsigned long long)flags, sym, lib,
          want_sym, want_lib);
  }
}

int main(int argc, char **argv) {
  unsigned long long limit = (argc > 1 ? strtoull(argv[1], NULL, 10) : 64) << 20;
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return fprintf(stderr, "lookup_test: %s\n", dlerror()), 1;
  gpa2 = (PFN_gs_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
  gpa1 = (PFN_gs_cuGetProcAddress)dlsym(h, "cuGetProcAddress");
  if (!gpa1 || !gpa2) return fprintf(stderr, "lookup_test: no cuGetProcAddress\n"), 1;
  const char *I = "libgpuslice-cuda", *F = "libcuda.so";
  const int PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

  /* dlsym on the driver's handle hands out wrappers for wrapped names only */
  char lib[256], sym[256];
  where((void *)gpa2, lib, sizeof lib, sym, sizeof sym);
  CHECK(!strncmp(lib, I, strlen(I)), "dlsym(cuGetProcAddress_v2) is in %s", lib);
  where(dlsym(h, "cuCtxSynchronize"), lib, sizeof lib, sym, sizeof sym);
  CHECK(!strncmp(lib, F, strlen(F)), "dlsym(cuCtxSynchronize) is in %s", lib);

  expect("cuGetProcAddress", 11030, 0, I, "cuGetProcAddress");
  expect("cuGetProcAddress", 12000, 0, I, "cuGetProcAddress_v2");
  expect("cuMemAlloc", 11080, 0, I, "cuMemAlloc_v2");
  expect("cuMemGetInfo", 12000, 0, I, "cuMemGetInfo_v2");
  expect("cuLaunchKernel", 12000, 0, I, "cuLaunchKernel");
  expect("cuLaunchKernel", 12000, PT, I, "cuLaunchKernel_ptsz");
  expect("cuLaunchKernelEx", 12000, PT, I, "cuLaunchKernelEx_ptsz");
  expect("cuLaunchCooperativeKernel", 12000, PT, I, "cuLaunchCooperativeKernel_ptsz");
  expect("cuGraphLaunch", 12000, PT, I, "cuGraphLaunch_ptsz");
  expect("cuMemAllocAsync", 11020, PT, I, "cuMemAllocAsync_ptsz");
  expect("cuMemFreeAsync", 11020, 0, I, "cuMemFreeAsync");
  /* not wrapped: the driver's own choice, old ABI for an old runtime */
  expect("cuMemPrefetchAsync", 11080, 0, F, "cuMemPrefetchAsync");
  expect("cuMemPrefetchAsync", 12020, 0, F, "cuMemPrefetchAsync_v2");
  expect("cuMemPrefetchAsync", 12020, PT, F, "cuMemPrefetchAsync_v2_ptsz");
  expect("cuStreamSynchronize", 12000, PT, F, "cuStreamSynchronize_ptsz");
  expect("cuGetExportTable", 12000, 0, F, "cuGetExportTable");

  void *p = (void *)1;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  CHECK(gpa2("cuNoSuchFunction", &p, 12000, 0, &st) == CUDA_ERROR_NOT_FOUND && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && !p,
        "unknown symbol: status %d", st);
  CHECK(gpa2("cuMemAllocAsync", &p, 11000, 0, &st) == CUDA_ERROR_NOT_FOUND && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
        "too old: status %d", st);
  /* a driver newer than the interposer: its unknown cuMemAlloc variant is
   * refused, never handed out unwrapped (the fake driver has one for 99000) */
  p = (void *)1;
  CHECK(gpa2("cuMemAlloc", &p, 99000, 0, &st) == CUDA_ERROR_NOT_SUPPORTED && !p, "newer variant: result and %p", p);
  p = (void *)1;
  CHECK(gpa1("cuMemAlloc", &p, 99000, 0) == CUDA_ERROR_NOT_SUPPORTED && !p, "newer variant (v1): %p", p);

  /* the old prefetch ABI works when called as such */
  PFN_gs_cuInit init;
  PFN_gs_cuDevicePrimaryCtxRetain retain;
  PFN_gs_cuCtxSetCurrent setcur;
  PFN_gs_cuMemAlloc_v2 alloc;
  PFN_gs_cuDeviceTotalMem_v2 totalmem;
  CUresult (*prefetch_v1)(CUdeviceptr, size_t, CUdevice, CUstream);
  gpa2("cuInit", (void **)&init, 12000, 0, &st);
  gpa2("cuDevicePrimaryCtxRetain", (void **)&retain, 12000, 0, &st);
  gpa2("cuCtxSetCurrent", (void **)&setcur, 12000, 0, &st);
  gpa2("cuMemAlloc", (void **)&alloc, 12000, 0, &st);
  gpa2("cuDeviceTotalMem", (void **)&totalmem, 12000, 0, &st);
  gpa2("cuMemPrefetchAsync", (void **)&prefetch_v1, 11080, 0, &st);
  CUcontext ctx;
  CUdeviceptr d;
  if (init(0) || retain(&ctx, 0) || setcur(ctx) || alloc(&d, 1 << 20)) return fprintf(stderr, "lookup_test: no context\n"), 1;
  CHECK(prefetch_v1(d, 1 << 20, 0, NULL) == CUDA_SUCCESS, "old-ABI prefetch");
  size_t total = 0;
  CHECK(totalmem(&total, 0) == CUDA_SUCCESS && total == limit, "cuDeviceTotalMem %zu, limit %llu", total, limit);

  /* the export table is the driver's */
  static const unsigned char id[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                       0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};
  CUuuid uid;
  memcpy(uid.bytes, id, 16);
  PFN_gs_cuGetExportTable get_table = (PFN_gs_cuGetExportTable)dlsym(h, "cuGetExportTable");
  const void *t1 = NULL, *t2 = NULL;
  gpa2("cuGetExportTable", (void **)&get_table, 12000, 0, &st);
  CHECK(get_table(&t1, &uid) == CUDA_SUCCESS && t1, "export table");
  PFN_gs_cuGetExportTable direct = (PFN_gs_cuGetExportTable)dlsym(h, "cuGetExportTable");
  CHECK(direct(&t2, &uid) == CUDA_SUCCESS && t1 == t2, "export table differs");

  /* NVML, loaded by the program */
  void *n = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  CHECK(n != NULL, "libnvidia-ml.so.1: %s", dlerror());
  if (n) {
    nvmlReturn_t (*ninit)(void) = (nvmlReturn_t(*)(void))dlsym(n, "nvmlInit_v2");
    nvmlReturn_t (*byindex)(unsigned, nvmlDevice_t *) =
        (nvmlReturn_t(*)(unsigned, nvmlDevice_t *))dlsym(n, "nvmlDeviceGetHandleByIndex_v2");
    nvmlReturn_t (*meminfo)(nvmlDevice_t, nvmlMemory_t *) =
        (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(n, "nvmlDeviceGetMemoryInfo");
    nvmlReturn_t (*meminfo2)(nvmlDevice_t, nvmlMemory_v2_t *) =
        (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(n, "nvmlDeviceGetMemoryInfo_v2");
    nvmlDevice_t dev;
    nvmlMemory_t m;
    nvmlMemory_v2_t m2;
    memset(&m2, 0, sizeof m2);
    m2.version = nvmlMemory_v2;
    CHECK(ninit() == NVML_SUCCESS && byindex(0, &dev) == NVML_SUCCESS, "nvml init");
    CHECK(meminfo(dev, &m) == NVML_SUCCESS && m.total == limit && m.free == limit - (1 << 20) && m.used == (1 << 20),
          "nvml memory: total %llu free %llu used %llu", m.total, m.free, m.used);
    CHECK(meminfo2(dev, &m2) == NVML_SUCCESS && m2.total == limit && m2.free == limit - (1 << 20),
          "nvml memory v2: total %llu free %llu", m2.total, m2.free);
  }
  if (failures) return 1;
  printf("lookup_test: all lookups as expected\n");
  return 0;
}
