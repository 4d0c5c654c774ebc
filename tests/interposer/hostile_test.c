/* A tenant that attacks its own limit without a bypass tool (issue 7, hole 3).
 * Run under `gpuslice exec --memory-limit 256Mi`; each mode must end with
 * the limit still held:
 *   hostile_test zero-magic  zeroes the region's magic, then 4 new processes
 *                            ask for 200 MiB each: all refused (fail closed)
 *   hostile_test header      a process holds 200 MiB; the whole header is
 *                            zeroed; a process already running and a new one
 *                            ask for 200 MiB: both refused
 *   hostile_test devices     the 16 device entries are filled with made-up
 *                            UUIDs: a new process's 200 MiB is refused
 *   hostile_test dlvsym      the real dlsym fetched with dlvsym(...,"GLIBC_2.34")
 *                            then 512 MiB from it: refused
 *   hostile_test dlmopen     a library in a new namespace (ns_alloc) asks for
 *                            512 MiB straight from its own driver: refused
 *   hostile_test huge        holding 200 MiB, asks for (size_t)-1 and for
 *                            2^64 - 100 MiB bytes, arrays whose sizes overflow
 *                            and a pitch that does: all refused, and 200 MiB
 *                            more still is (no wrapped charge, no usage lost)
 *   hostile_test first       a process whose first call after cuInit is one
 *                            the interposer passes through (a NULL descriptor
 *                            or property): the driver's error, not a crash
 *   hostile_test no-table    RLIMIT_AS set to what the process maps before
 *                            its first allocation (the interposer's table
 *                            cannot be mapped, nor much else): 1 MiB is
 *                            refused
 *   hostile_test vmm         cuMemCreate handles released while still mapped
 *                            (NVIDIA's vectorAddMMAP does it): their memory
 *                            stays charged until unmapped, and a retained
 *                            reference holds it too
 *   hostile_test mipmap      mipmapped arrays with 0 levels (the driver makes
 *                            1) and with 1000 (it makes all of them): each is
 *                            charged what the driver allocates
 * and one the interposer alone cannot stop (its counters are the tenant's to
 * write), which only the monitor catches, through the driver's accounting:
 *   hostile_test zero-counters SECONDS
 *                            holds 200 MiB, zeroes every usage counter, then
 *                            a new process gets 200 MiB more (past a 256 MiB
 *                            limit); both hold it SECONDS. Prints how the
 *                            new process ended ("child: exit N" or
 *                            "child: signal N").
 * The region comes from the monitor's socket, as any tenant process can get it.
 */
#define _GNU_SOURCE
#include "gpuslice/cuda_api.h"
#include "gpuslice/region.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK_PROGRAM "hostile_test"
#include "check.h"

#define MIB (1ull << 20)

static struct gs_region *tenant_map_region(void) {
  const char *path = getenv(GS_ENV_REGION);
  if (!path) path = GS_DEFAULT_REGION_SOCKET;
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  strncpy(a.sun_path, path, sizeof a.sun_path - 1);
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) return NULL;
  char byte, control[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {&byte, 1};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(s, &msg, 0) <= 0 || !CMSG_FIRSTHDR(&msg)) return NULL;
  int fd;
  memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof fd);
  close(s);
  void *m = mmap(NULL, GS_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return m == MAP_FAILED ? NULL : m;
}

/* Device 0's primary context made current: 1, or 0 when it cannot be. */
static int context(void) {
  CUcontext ctx;
  return !cuInit(0) && !cuDevicePrimaryCtxRetain(&ctx, 0) && !cuCtxSetCurrent(ctx);
}

static CUresult alloc_in_context(unsigned long long size) {
  CUdeviceptr p;
  if (!context()) return CUDA_ERROR_NOT_INITIALIZED;
  return cuMemAlloc_v2(&p, size);
}

/* A new process (fork + exec of this program) asking for `mib`; its result. */
static int child_alloc(const char *self, unsigned mib) {
  pid_t pid = fork();
  if (pid == 0) {
    char arg[32];
    snprintf(arg, sizeof arg, "%u", mib);
    execl(self, self, "alloc", arg, (char *)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: hostile_test MODE\n"), 2;
  const char *mode = argv[1];
  if (!strcmp(mode, "alloc") || !strcmp(mode, "hold")) { /* child: 0 granted, 1 refused, 2 other */
    CUresult r = alloc_in_context(strtoull(argv[2], NULL, 10) * MIB);
    if (r == CUDA_SUCCESS && !strcmp(mode, "hold")) sleep((unsigned)atoi(argv[3]));
    return r == CUDA_SUCCESS ? 0 : r == CUDA_ERROR_OUT_OF_MEMORY ? 1 : 2;
  }
  if (!strcmp(mode, "zero-counters")) {
    const char *seconds = argc > 2 ? argv[2] : "10";
    if (alloc_in_context(200 * MIB) != CUDA_SUCCESS) return fprintf(stderr, "hostile_test: the first 200 MiB\n"), 2;
    struct gs_region *r = tenant_map_region();
    if (!r) return fprintf(stderr, "hostile_test: no region from the monitor\n"), 2;
    memset(r->used, 0, sizeof r->used);
    pid_t pid = fork();
    if (pid == 0) {
      execl(argv[0], argv[0], "hold", "200", seconds, (char *)NULL);
      _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st)) printf("child: signal %d\n", WTERMSIG(st));
    else printf("child: exit %d\n", WEXITSTATUS(st));
    return 0;
  }

  if (!strcmp(mode, "zero-magic")) {
    struct gs_region *r = tenant_map_region();
    CHECK(r != NULL, "no region from the monitor");
    if (r) r->magic = 0;
    for (int i = 0; i < 4; i++) CHECK(child_alloc(argv[0], 200) == 1, "process %d got 200 MiB past a zeroed magic", i);
  } else if (!strcmp(mode, "header")) {
    CHECK(alloc_in_context(200 * MIB) == CUDA_SUCCESS, "the first 200 MiB");
    struct gs_region *r = tenant_map_region();
    CHECK(r != NULL, "no region from the monitor");
    if (r) memset(r, 0, offsetof(struct gs_region, devices));
    CUdeviceptr p;
    CHECK(cuMemAlloc_v2(&p, 200 * MIB) == CUDA_ERROR_OUT_OF_MEMORY, "200 MiB more after the header was zeroed");
    CHECK(child_alloc(argv[0], 200) == 1, "a new process got 200 MiB after the header was zeroed");
  } else if (!strcmp(mode, "devices")) {
    struct gs_region *r = tenant_map_region();
    CHECK(r != NULL, "no region from the monitor");
    for (unsigned i = 0; r && i < GS_MAX_DEVICES; i++) r->devices[i].uuid_lo = r->devices[i].uuid_hi = 0x4242 + i;
    CHECK(child_alloc(argv[0], 200) == 1, "a new process got 200 MiB with every device entry taken");
  } else if (!strcmp(mode, "dlvsym")) {
    void *(*real_dlsym)(void *, const char *) = (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
    CHECK(real_dlsym != NULL, "no dlsym@GLIBC_2.34");
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*init)(unsigned) = real_dlsym ? (CUresult(*)(unsigned))real_dlsym(h, "cuInit") : NULL;
    CUresult (*retain)(CUcontext *, CUdevice) =
        real_dlsym ? (CUresult(*)(CUcontext *, CUdevice))real_dlsym(h, "cuDevicePrimaryCtxRetain") : NULL;
    CUresult (*set)(CUcontext) = real_dlsym ? (CUresult(*)(CUcontext))real_dlsym(h, "cuCtxSetCurrent") : NULL;
    CUresult (*alloc)(CUdeviceptr *, size_t) =
        real_dlsym ? (CUresult(*)(CUdeviceptr *, size_t))real_dlsym(h, "cuMemAlloc_v2") : NULL;
    CUcontext ctx;
    CUdeviceptr p;
    CHECK(alloc && !init(0) && !retain(&ctx, 0) && !set(ctx), "no driver through the real dlsym");
    if (alloc) CHECK(alloc(&p, 512 * MIB) == CUDA_ERROR_OUT_OF_MEMORY, "512 MiB through dlsym fetched by dlvsym");
  } else if (!strcmp(mode, "dlmopen")) {
    void *h = dlmopen(LM_ID_NEWLM, argc > 2 ? argv[2] : "libns_alloc.so", RTLD_NOW);
    CHECK(h != NULL, "dlmopen: %s", dlerror());
    int (*ns_alloc)(unsigned long long) = h ? (int (*)(unsigned long long))dlsym(h, "ns_alloc") : NULL;
    CHECK(ns_alloc != NULL, "no ns_alloc");
    if (ns_alloc) CHECK(ns_alloc(512 * MIB) == CUDA_ERROR_OUT_OF_MEMORY, "512 MiB from a library in a new namespace");
  } else if (!strcmp(mode, "huge")) {
    CHECK(alloc_in_context(200 * MIB) == CUDA_SUCCESS, "the first 200 MiB");
    CUdeviceptr p;
    size_t pitch;
    CHECK(cuMemAlloc_v2(&p, (size_t)-1) == CUDA_ERROR_OUT_OF_MEMORY, "(size_t)-1 bytes");
    CHECK(cuMemAlloc_v2(&p, (size_t)0 - 100 * MIB) == CUDA_ERROR_OUT_OF_MEMORY, "2^64 - 100 MiB bytes");
    CHECK(cuMemAllocPitch_v2(&p, &pitch, (size_t)-1, 2, 4) == CUDA_ERROR_OUT_OF_MEMORY, "a pitch that overflows");
    CHECK(cuMemAllocPitch_v2(&p, &pitch, 1ull << 40, 1ull << 30, 4) == CUDA_ERROR_OUT_OF_MEMORY,
          "a pitched size that overflows");
    /* 2^32 x 2^32 x 1 x 4 channels x 4 bytes: 2^68, which wraps to 0 */
    CUDA_ARRAY3D_DESCRIPTOR wrapping = {1ull << 32, 1ull << 32, 1, CU_AD_FORMAT_FLOAT, 4, 0};
    CUarray arr;
    CHECK(cuArray3DCreate_v2(&arr, &wrapping) == CUDA_ERROR_OUT_OF_MEMORY, "an array whose size wraps to 0");
    CHECK(cuMemAlloc_v2(&p, 200 * MIB) == CUDA_ERROR_OUT_OF_MEMORY, "200 MiB more after the huge asks");
    CHECK(child_alloc(argv[0], 200) == 1, "a new process got 200 MiB after the huge asks");
  } else if (!strcmp(mode, "first")) {
    for (int call = 0; call < 4; call++) {
      pid_t pid = fork(); /* this process has made no CUDA call: each child's is its first */
      if (pid == 0) {
        CUarray arr;
        CUmipmappedArray m;
        CUmemGenericAllocationHandle h;
        if (!context()) _exit(3);
        CUresult r = call == 0   ? cuArrayCreate_v2(&arr, NULL)
                     : call == 1 ? cuArray3DCreate_v2(&arr, NULL)
                     : call == 2 ? cuMipmappedArrayCreate(&m, NULL, 1)
                                 : cuMemCreate(&h, 2u << 20, NULL, 0);
        _exit(r == CUDA_ERROR_INVALID_VALUE ? 0 : 4);
      }
      int st;
      waitpid(pid, &st, 0);
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "call %d first: %s %d", call,
            WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
  } else if (!strcmp(mode, "no-table")) {
    CUdeviceptr p;
    CHECK(context(), "a context");
    unsigned long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    CHECK(statm && fscanf(statm, "%lu", &pages) == 1, "/proc/self/statm");
    if (statm) fclose(statm);
    const rlim_t room = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE); /* the table needs 4 MiB more */
    struct rlimit lim = {room, room};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
    CHECK(cuMemAlloc_v2(&p, 1u << 20) == CUDA_ERROR_OUT_OF_MEMORY, "1 MiB with no allocation table");
  } else if (!strcmp(mode, "vmm")) {
    CHECK(context(), "a context");
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    const size_t size = 100 * MIB;
    CUdeviceptr va[2] = {0, 0};
    CUmemGenericAllocationHandle h = 0, again = 0;
    for (int i = 0; i < 2; i++) {
      CHECK(cuMemCreate(&h, size, &prop, 0) == CUDA_SUCCESS, "handle %d", i);
      CHECK(cuMemAddressReserve(&va[i], size, 0, 0, 0) == CUDA_SUCCESS, "reserve %d", i);
      CHECK(cuMemMap(va[i], size, 0, h, 0) == CUDA_SUCCESS, "map %d", i);
      CHECK(cuMemRelease(h) == CUDA_SUCCESS, "release %d", i); /* mapped: the memory stays */
    }
    CHECK(cuMemCreate(&h, size, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY, "a third 100 MiB beside two mapped");
    CHECK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)va[0]) == CUDA_SUCCESS, "retain");
    CHECK(cuMemUnmap(va[0], size) == CUDA_SUCCESS, "unmap 0");
    CHECK(cuMemCreate(&h, size, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY, "100 MiB while a retained handle holds one");
    CHECK(cuMemRelease(again) == CUDA_SUCCESS, "release the retained handle");
    CHECK(cuMemCreate(&h, size, &prop, 0) == CUDA_SUCCESS, "100 MiB once the first is unmapped and released");
    CHECK(cuMemRelease(h) == CUDA_SUCCESS, "release it unmapped");
    CHECK(cuMemUnmap(va[1], size) == CUDA_SUCCESS, "unmap 1");
    CHECK(cuMemAddressFree(va[0], size) == CUDA_SUCCESS && cuMemAddressFree(va[1], size) == CUDA_SUCCESS, "free VA");
    CHECK(cuMemCreate(&h, 200 * MIB, &prop, 0) == CUDA_SUCCESS, "200 MiB once everything is given back");
    CHECK(cuMemRelease(h) == CUDA_SUCCESS, "release the 200 MiB");
    /* 100 handles of 2 MiB mapped end to end, released at once, then
     * unmapped by one call: each credited (and the tables grown past their
     * first size and emptied again) */
    CUdeviceptr range = 0;
    CHECK(cuMemAddressReserve(&range, 200 * MIB, 0, 0, 0) == CUDA_SUCCESS, "reserve 200 MiB");
    for (int i = 0; i < 100; i++) {
      CUmemGenericAllocationHandle small = 0;
      CHECK(cuMemCreate(&small, 2 * MIB, &prop, 0) == CUDA_SUCCESS, "2 MiB handle %d", i);
      CHECK(cuMemMap(range + (CUdeviceptr)i * 2 * MIB, 2 * MIB, 0, small, 0) == CUDA_SUCCESS, "map %d", i);
      CHECK(cuMemRelease(small) == CUDA_SUCCESS, "release %d", i);
    }
    CHECK(cuMemCreate(&h, 100 * MIB, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY, "100 MiB beside 100 mapped handles");
    CHECK(cuMemUnmap(range, 200 * MIB) == CUDA_SUCCESS, "unmap the 100 at once");
    CHECK(cuMemCreate(&h, 256 * MIB, &prop, 0) == CUDA_SUCCESS, "the whole limit once they are unmapped");
  } else if (!strcmp(mode, "mipmap")) {
    CUdeviceptr p;
    CHECK(context(), "a context");
    /* 16384 x 3200 x 4 channels of bytes: 200 MiB at level 0 */
    CUDA_ARRAY3D_DESCRIPTOR desc = {16384, 3200, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
    CUmipmappedArray m;
    /* all 15 levels: ~267 MiB, more than the 256 MiB limit */
    CHECK(cuMipmappedArrayCreate(&m, &desc, 1000) == CUDA_ERROR_OUT_OF_MEMORY, "1000 levels (15 made) fit 256 MiB");
    CHECK(cuMipmappedArrayCreate(&m, &desc, 0) == CUDA_SUCCESS, "0 levels (1 made, 200 MiB)");
    CHECK(cuMemAlloc_v2(&p, 200 * MIB) == CUDA_ERROR_OUT_OF_MEMORY, "200 MiB beside a 0-level mipmapped array");
    CHECK(cuMipmappedArrayDestroy(m) == CUDA_SUCCESS, "destroy");
    CHECK(cuMemAlloc_v2(&p, 200 * MIB) == CUDA_SUCCESS, "200 MiB once the array is gone");
  } else {
    return fprintf(stderr, "hostile_test: unknown mode %s\n", mode), 2;
  }
  if (!failures) printf("hostile_test %s: the limit held\n", mode);
  return failures ? 1 : 0;
}
