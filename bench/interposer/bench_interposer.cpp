// Added cost of libgpuslice-cuda.so per call, against the driver called
// directly in the same process: here the fake driver (addresses come back
// from malloc, so a freed one is soon handed out again) and the null driver
// (null_driver.c: nothing done, never an address twice, each allocation's
// table slot a new one), the real libcuda.so.1 on a GPU machine
// (tests/gpu/run.sh). Allocations are of 1 MiB. Both are loaded here, the driver's
// entry points are taken from it, the wrapped ones from the interposer (whose
// real driver is that same library). Device 0 has a memory limit and no
// compute share; device 1, where there is one, a fixed 50% share that is not
// throttling (empty kernels). The kernel is PTX (an empty `spin`), which the
// real driver compiles and the fake accepts as is.
//
// Why interleaved runs and an A/A pair: a real driver's call takes
// microseconds and drifts by more than the targets (an H200, run one after
// the other: cuMemGetInfo +203 ns, cuMemAlloc+Free -416 ns). Each turn times
// the direct calls, the wrapped ones and the direct ones again; the added
// cost is the median of the turns' differences, and the two direct runs of
// each turn say how noisy that median is: an added cost over the target by
// less than its noise is not resolved, neither met nor missed. Launches are timed as they are
// submitted, in chunks the GPU's queue takes without blocking; the wait for
// the GPU is not timed.
// Prints ns/op, the difference, the ratio, its noise (+-), the verdict
// (met, MISSED, or "not resolved") and the command line.
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/shim/loop.hpp"
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
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

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

// Times k calls (fn(k)), in ns per call; fn returns the ns it timed itself,
// or a negative number to be timed whole.
using Calls = std::function<double(long)>;

double per_call(long n, const Calls &fn) {
  auto t0 = std::chrono::steady_clock::now();
  double timed = fn(n);
  auto t1 = std::chrono::steady_clock::now();
  if (timed < 0)
    timed = std::chrono::duration<double, std::nano>(t1 - t0).count();
  return timed / static_cast<double>(n);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Compared {
  double direct, interposed; // medians of the runs, ns per call
  double added;              // median of each turn's wrapped - direct
  double resolution;         // how far that median may be off: 2 standard errors
};

// `reps` turns of direct, wrapped, direct again (the order turned around
// every other turn), each turn's wrapped run compared with the mean of its
// two direct ones, so that a drift weighs on both alike. The two direct
// runs of a turn differ by noise alone: their spread (MAD, as a standard
// deviation) gives the noise of one turn's difference (x sqrt(3/4): one
// run against the mean of two, instead of one against one) and of the
// median of `reps` of them (x 1.25 / sqrt(reps)).
Compared compare(long n, const Calls &direct, const Calls &wrapped, int reps = 11) {
  std::vector<double> base, with, added, aa;
  for (int r = 0; r < reps; r++) {
    double a, w, b;
    if (r % 2 == 0) {
      a = per_call(n, direct);
      w = per_call(n, wrapped);
      b = per_call(n, direct);
    } else {
      b = per_call(n, direct);
      w = per_call(n, wrapped);
      a = per_call(n, direct);
    }
    base.push_back((a + b) / 2);
    with.push_back(w);
    added.push_back(w - (a + b) / 2);
    aa.push_back(a - b);
  }
  const double aa_median = median(aa);
  std::vector<double> deviation;
  for (double d : aa)
    deviation.push_back(std::abs(d - aa_median));
  const double sigma_turn = 1.4826 * median(deviation) * std::sqrt(0.75);
  return {median(base), median(with), median(added), 2 * 1.2533 * sigma_turn / std::sqrt(static_cast<double>(reps))};
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

void row(const char *what, const Compared &c, double target) {
  std::printf("%-34s %9.1f %11.1f %+9.1f %7.2fx %7.1f", what, c.direct, c.interposed, c.added,
              c.interposed / c.direct, c.resolution);
  if (target > 0) {
    std::printf("   target <= +%.0f: ", target);
    if (c.added <= target)
      std::printf("met\n");
    else if (c.added <= target + c.resolution)
      std::printf("not resolved (the noise is +-%.1f)\n", c.resolution);
    else
      std::printf("MISSED\n");
  } else {
    std::printf("\n");
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_interposer LIBCUDA INTERPOSER [ITERATIONS]\n"
                         "  LIBCUDA: the fake or the null driver's path, or libcuda.so.1 for the machine's\n");
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
    gpuslice::shim::MonitorSetup monitor;
    monitor.region = gpuslice::sharing::create_region();
    monitor.listener = gpuslice::shim::listen_region_socket(dir_fd.get(), "region.sock", dir / "region.sock");
    monitor.watched = gpuslice::shim::open_pidfd(static_cast<int>(::getpid()));
    monitor.cleanup = [dir] { std::error_code ec; std::filesystem::remove_all(dir, ec); };
    gpuslice::shim::spawn_monitor(std::move(monitor));
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
        if (a.alloc(&p, 1 << 20) || a.free_(p))
          std::abort();
      }
      return -1.0;
    };
  };
  uint64_t zero = 0;
  void *params[] = {&zero};
  // Chunks of 64 launches, each timed as it is submitted; the GPU is waited
  // for between chunks, untimed, so that its queue never makes a launch wait.
  auto launch = [&](const Api &a) {
    return [&a, &spin, &params, synchronize](long k) {
      double timed = 0;
      for (long done = 0; done < k;) {
        long chunk = std::min(64L, k - done);
        auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < chunk; i++)
          if (a.launch(spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr))
            std::abort();
        auto t1 = std::chrono::steady_clock::now();
        timed += std::chrono::duration<double, std::nano>(t1 - t0).count();
        if (synchronize())
          std::abort();
        done += chunk;
      }
      return timed;
    };
  };
  auto info = [](const Api &a) {
    return [&a](long k) {
      size_t f, t;
      for (long i = 0; i < k; i++)
        if (a.info(&f, &t))
          std::abort();
      return -1.0;
    };
  };
  auto gpa = [](const Api &a) {
    return [&a](long k) {
      void *p;
      CUdriverProcAddressQueryResult st;
      for (long i = 0; i < k; i++)
        if (a.gpa("cuMemAlloc", &p, 12080, 0, &st))
          std::abort();
      return -1.0;
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

  std::printf("%-34s %9s %11s %9s %8s %7s\n", "ns per call (median)", "direct", "interposed", "added", "ratio", "+-");
  // a quarter as many: a real driver takes ~60 us a pair
  row("cuMemAlloc_v2 + cuMemFree_v2", compare(n / 4, pair(direct), pair(wrapped)), 100);
  row("cuLaunchKernel, no share", compare(n, launch(direct), launch(wrapped)), 3);
  if (ctx1) {
    set_current(ctx1);
    row("cuLaunchKernel, fixed 50% (idle)", compare(n, launch(direct), launch(wrapped)), 3);
    set_current(ctx0);
  }
  row("cuMemGetInfo_v2", compare(n, info(direct), info(wrapped)), 50);
  row("cuGetProcAddress_v2(cuMemAlloc)", compare(n / 10, gpa(direct), gpa(wrapped)), 0);
  std::printf("command:");
  for (int i = 0; i < argc; i++)
    std::printf(" %s", argv[i]);
  std::printf("\n");
  std::filesystem::remove_all(dir);
  return 0;
}
