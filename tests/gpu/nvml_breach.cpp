// gpuslice-shim's enforcement on whatever NVML the machine has, without a
// container: the machine with a GPU (tests/gpu/run.sh) has neither runc nor
// containerd. Watches the processes of PID's cgroup exactly as a
// container's monitor does (shim::Enforcer, monitor.action = kill, a
// 100 ms interval, `LIMIT` bytes on every GPU), prints what NVML reports
// for them, and exits once PID is gone:
//   nvml_breach NVML_LIBRARY PID LIMIT_BYTES [TIMEOUT_S]
// exit 0 when PID was killed by the enforcer within TIMEOUT_S (default 30),
// 1 when not, 2 on a usage error. PID must be in a cgroup of its own (the
// caller makes one), and it never takes a usage region: a bypass, which the
// log line also says. With the fake NVML and the fake driver's accounting,
// tests/gpu/nvml_breach_fake.sh runs it in CI.
#include "gpuslice/shim/enforcer.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/sharing/region.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

using namespace gpuslice;

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: nvml_breach NVML_LIBRARY PID LIMIT_BYTES [TIMEOUT_S]\n");
    return 2;
  }
  const int pid = std::atoi(argv[2]);
  const uint64_t limit = std::strtoull(argv[3], nullptr, 10);
  const int timeout_s = argc == 5 ? std::atoi(argv[4]) : 30;
  std::string why;
  auto nvml = shim::Nvml::load(argv[1], why);
  if (!nvml) {
    std::fprintf(stderr, "nvml_breach: %s\n", why.c_str());
    return 1;
  }
  try {
    for (const auto &gpu : nvml->devices())
      std::printf("GPU %u %s %s: %llu of %llu bytes used\n", gpu.index, gpu.uuid.c_str(), gpu.model.c_str(),
                  static_cast<unsigned long long>(gpu.used), static_cast<unsigned long long>(gpu.total));
  } catch (const Error &e) {
    std::printf("nvml_breach: %s\n", e.what());
    return 1;
  }
  shim::EnforcerSetup setup;
  setup.limits.devices.push_back({"*", limit, std::nullopt, std::nullopt});
  setup.action = shim::Action::kill;
  setup.container_id = "gpu-check";
  setup.log = stdout;
  shim::Enforcer enforcer(std::move(setup), std::move(nvml));
  enforcer.init_started(pid);
  const UniqueFd region = sharing::create_region();
  const auto start = std::chrono::steady_clock::now();
  auto last_print = start - std::chrono::seconds(1);
  while (::kill(pid, 0) == 0) {
    enforcer.check(region.get());
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print >= std::chrono::seconds(1)) {
      last_print = now;
      for (const auto &[uuid, view] : enforcer.gpus())
        std::printf("  NVML: %s: the cgroup's processes use %llu bytes%s\n", uuid.c_str(),
                    static_cast<unsigned long long>(view.nvml_used.value_or(0)),
                    view.sm_percent ? (", SM " + std::to_string(*view.sm_percent) + "%").c_str() : "");
      std::fflush(stdout);
    }
    if (now - start > std::chrono::seconds(timeout_s)) {
      std::printf("nvml_breach: pid %d still runs after %d s: not killed\n", pid, timeout_s);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  const bool killed = enforcer.counts().killed > 0;
  std::printf("nvml_breach: pid %d gone after %lld ms; killed by the enforcer: %s; bypasses logged: %u\n", pid,
              static_cast<long long>(ms.count()), killed ? "yes" : "no", enforcer.counts().bypasses);
  return killed ? 0 : 1;
}
