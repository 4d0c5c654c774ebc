// Added cost of libgpuslice-cuda.so per call, against the driver called
// directly in the same process: the fake driver here, the real libcuda.so.1
// on a GPU machine (tests/gpu/run.sh). Both are loaded here, the driver's
// entry points are taken from it, the wrapped ones from the interposer (whose
// real driver is that same library). Device 0 has a memory limit and no
// compute share; device 1, where there is one, a fixed 50% share that is not
// throttling (empty kernels). The kernel is PTX (an empty `spin`), which the
// real driver compiles and the fake accepts as is.
// Prints ns/op, the difference, the ratio, the targets and the command line.
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/sharing/monitor.hpp"
#include "gpuslice/sharing/region.hpp"

extern "C" {
#include "gpuslice/cuda_api.h"
#include "gpuslice/region.h"
}

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

namespace {

// extern "C" __global__ void spin(unsigned long long) {}
constexpr const char *kSpinPtx = R"(.version 7.0
.target sm_50
.address_size 64
.visible .entry spin(.param .u64 spin_param_0)
{
  ret;
}
)";

template <class T> T sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) {
    std::fprintf(stderr, "bench_interposer: no %s: %s\n", name, dlerror());
    std::exit(1);
  }
  return reinterpret_cast<T>(p);
}

// Best of `reps` runs of `n` calls of fn, in ns per call.
double ns_per_op(long n, const std::function<void(long)> &fn, int reps = 7) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    auto t0 = std::chrono::steady_clock::now();
    fn(n);
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n));
  }
  return best;
}

struct Api {
  PFN_gs_cuMemAlloc_v2 alloc;
  PFN_gs_cuMemFree_v2 free_;
  PFN_gs_cuLaunchKernel launch;
  PFN_gs_cuMemGetInfo_v2 info;
  PFN_gs_cuGetProcAddress_v2 gpa;
};

Api load(void *h) {
  return {sym<PFN_gs_cuMemAlloc_v2>(h, "cuMemAlloc_v2"), sym<PFN_gs_cuMemFree_v2>(h, "cuMemFree_v2"),
          sym<PFN_gs_cuLaunchKernel>(h, "cuLaunchKernel"), sym<PFN_gs_cuMemGetInfo_v2>(h, "cuMemGetInfo_v2"),
          sym<PFN_gs_cuGetProcAddress_v2>(h, "cuGetProcAddress_v2")};
}

void row(const char *what, double direct, double interposed, double target) {
  double added = interposed - direct;
  std::printf("%-34s %9.1f %11.1f %+9.1f %7.2fx", what, direct, interposed, added, interposed / direct);
  if (target > 0)
    std::printf("   target <= +%.0f: %s", target, added <= target ? "met" : "MISSED");
  std::printf("\n");
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_interposer LIBCUDA INTERPOSER [ITERATIONS]\n"
                         "  LIBCUDA: the fake driver's path, or libcuda.so.1 for the machine's\n");
    return 1;
  }
  long n = argc > 3 ? std::atol(argv[3]) : 1000000;
  auto dir = std::filesystem::temp_directory_path() / ("gpuslice-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  gpuslice::sharing::Limits limits;
  limits.devices.push_back({"0", 64ull << 30, {}, {}});
  limits.devices.push_back({"1", 64ull << 30, 50, gpuslice::sharing::Policy::fixed});
  gpuslice::sharing::write_limits_file(dir / "limits", limits);
  {
    // The region comes from a monitor, as in a container.
    gpuslice::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    gpuslice::sharing::MonitorSetup monitor;
    monitor.region = gpuslice::sharing::create_region();
    monitor.listener = gpuslice::sharing::listen_region_socket(dir_fd.get(), "region.sock", dir / "region.sock");
    monitor.watched = gpuslice::sharing::open_pidfd(static_cast<int>(::getpid()));
    monitor.cleanup = [dir] { std::error_code ec; std::filesystem::remove_all(dir, ec); };
    gpuslice::sharing::spawn_monitor(std::move(monitor));
  }
  ::setenv(GS_ENV_LIMITS, (dir / "limits").c_str(), 1);
  ::setenv(GS_ENV_REGION, (dir / "region.sock").c_str(), 1);
  ::setenv("FAKE_CUDA_DEVICES", "2", 1);

  void *fake = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void *lib = fake ? dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!lib) {
    std::fprintf(stderr, "bench_interposer: %s\n", dlerror());
    return 1;
  }
  Api direct = load(fake), wrapped = load(lib);
  auto init = sym<PFN_gs_cuInit>(fake, "cuInit");
  auto retain = sym<PFN_gs_cuDevicePrimaryCtxRetain>(fake, "cuDevicePrimaryCtxRetain");
  auto set_current = sym<PFN_gs_cuCtxSetCurrent>(fake, "cuCtxSetCurrent");
  auto load_module = sym<PFN_gs_cuModuleLoadData>(fake, "cuModuleLoadData");
  auto get_function = sym<PFN_gs_cuModuleGetFunction>(fake, "cuModuleGetFunction");
  auto device_count = sym<PFN_gs_cuDeviceGetCount>(fake, "cuDeviceGetCount");
  auto synchronize = sym<PFN_gs_cuCtxSynchronize>(fake, "cuCtxSynchronize");
  CUcontext ctx0, ctx1 = nullptr;
  CUmodule mod;
  CUfunction spin;
  int devices = 0;
  if (init(0) || device_count(&devices) || retain(&ctx0, 0) || (devices > 1 && retain(&ctx1, 1)) ||
      set_current(ctx0) || load_module(&mod, kSpinPtx) || get_function(&spin, mod, "spin"))
    return std::fprintf(stderr, "bench_interposer: driver setup failed\n"), 1;

  auto pair = [](const Api &a) {
    return [&a](long k) {
      for (long i = 0; i < k; i++) {
        CUdeviceptr p;
        if (a.alloc(&p, 4096) || a.free_(p))
          std::abort();
      }
    };
  };
  uint64_t zero = 0;
  void *params[] = {&zero};
  // Synchronized once per run: a real GPU's queue bounds both alike.
  auto launch = [&](const Api &a) {
    return [&a, &spin, &params, synchronize](long k) {
      for (long i = 0; i < k; i++)
        if (a.launch(spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr))
          std::abort();
      if (synchronize())
        std::abort();
    };
  };
  auto info = [](const Api &a) {
    return [&a](long k) {
      size_t f, t;
      for (long i = 0; i < k; i++)
        if (a.info(&f, &t))
          std::abort();
    };
  };
  auto gpa = [](const Api &a) {
    return [&a](long k) {
      void *p;
      CUdriverProcAddressQueryResult st;
      for (long i = 0; i < k; i++)
        if (a.gpa("cuMemAlloc", &p, 12080, 0, &st))
          std::abort();
    };
  };
  // first calls: initialisation and device setup are not what is measured
  pair(wrapped)(10);
  info(wrapped)(10);
  launch(wrapped)(10);
  if (ctx1) {
    set_current(ctx1);
    launch(wrapped)(10000);
    set_current(ctx0);
  }

  std::printf("%-34s %9s %11s %9s %8s\n", "ns per call", "direct", "interposed", "added", "ratio");
  row("cuMemAlloc_v2 + cuMemFree_v2", ns_per_op(n, pair(direct)), ns_per_op(n, pair(wrapped)), 100);
  row("cuLaunchKernel, no share", ns_per_op(n, launch(direct)), ns_per_op(n, launch(wrapped)), 3);
  if (ctx1) {
    set_current(ctx1);
    row("cuLaunchKernel, fixed 50% (idle)", ns_per_op(n, launch(direct)), ns_per_op(n, launch(wrapped)), 3);
    set_current(ctx0);
  }
  row("cuMemGetInfo_v2", ns_per_op(n, info(direct)), ns_per_op(n, info(wrapped)), 50);
  row("cuGetProcAddress_v2(cuMemAlloc)", ns_per_op(n / 10, gpa(direct)), ns_per_op(n / 10, gpa(wrapped)), 0);
  std::printf("command:");
  for (int i = 0; i < argc; i++)
    std::printf(" %s", argv[i]);
  std::printf("\n");
  std::filesystem::remove_all(dir);
  return 0;
}
