// What gpuslice-shim does every monitor interval for its container: reclaim
// the region slots of dead processes, read the driver's per-process usage
// (NVML) of the container's processes (its cgroup), compare each GPU's
// total with the container's limit, and act (monitor.action):
//   log     one line when a GPU goes over its limit (again once it was
//           back under);
//   kill    SIGKILL the process that grew last, then the next, until the
//           GPU is back under its limit;
//   freeze  freeze the container's cgroup.
// A process the driver sees that never took the region is a bypass (a
// static binary, a loader trick): logged once, whatever the action. Every
// action is one log line (container, pod, pid, GPU, used, limit) and is
// counted in the status file (<state dir>/status, JSON, rewritten when
// something in it changes; `gpuslice inspect` reads it, docs/inspect.md).
// The compute share is reported, not enforced (the interposer throttles
// launches): the SM utilization NVML samples for the container's processes,
// averaged over the last `window` intervals (10), goes into the status file, and
// one line is logged when it stays more than 10 points over the share.
#pragma once

#include "gpuslice/shim/cgroup.hpp"
#include "gpuslice/shim/nvml.hpp"

#include "gpuslice/sharing/limits.hpp"

#include <chrono>
#include <functional>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpuslice::shim {

enum class Action { log, kill, freeze };
Action parse_action(const std::string &text); // throws Error

struct EnforcerSetup {
  sharing::Limits limits;
  Action action = Action::log;
  uint64_t tolerance = 0; // bytes over the limit tolerated
  std::string container_id, pod; // pod: "namespace/name", or empty
  // Where the report (status_json) goes when it changed: the container's
  // record (gpuslice-shim's main); none: kept to itself.
  std::function<void(const std::string &json)> report;
  FILE *log = nullptr;           // where the lines go (not owned)
  unsigned window = 10;          // intervals the compute report averages over
};

struct Counts {
  unsigned breaches = 0, killed = 0, frozen = 0, bypasses = 0;
};

class Enforcer {
public:
  Enforcer(EnforcerSetup setup, std::unique_ptr<Nvml> nvml);
  // NVML from `load_nvml`, called at the first check rather than here:
  // loading it (nvmlInit opens every GPU of the node) is milliseconds of
  // CPU that would compete with the container's own start, which the
  // monitor's start overlaps; the first check comes an interval later
  // anyway, and a container that ends before it never needs NVML.
  Enforcer(EnforcerSetup setup, std::function<std::unique_ptr<Nvml>()> load_nvml);

  void connected(int pid) { connected_.insert(pid); }
  void init_started(int pid); // the container's init: its cgroup
  // One interval, with `region_fd` (dead slots reclaimed). Never throws.
  void check(int region_fd);

  const Counts &counts() const { return counts_; }

  // Per GPU (UUID): what the status file reports of it.
  struct GpuView {
    std::optional<uint64_t> nvml_used, interposer_used;
    std::optional<unsigned> sm_percent; // averaged over the window
    std::set<unsigned> pids;
  };
  const std::map<std::string, GpuView> &gpus() const { return view_; }

  // The status file's text (one JSON object; docs/inspect.md).
  std::string status_json() const;

private:
  void say(const std::string &line);
  void enforce_memory(const std::vector<GpuProcesses> &gpus, const std::set<unsigned> &members);
  void report_compute(const std::set<unsigned> &members);
  std::optional<int> share_for(const std::string &uuid) const;
  void act(const std::string &uuid, uint64_t used, uint64_t limit, std::map<unsigned, uint64_t> usage);
  void write_status();
  std::optional<uint64_t> limit_for(const std::string &uuid) const;

  EnforcerSetup setup_;
  std::unique_ptr<Nvml> nvml_;
  std::function<std::unique_ptr<Nvml>()> load_nvml_; // empty once called
  std::optional<ContainerCgroup> cgroup_;
  std::set<int> connected_;
  std::set<unsigned> bypass_said_;
  std::set<std::string> over_; // GPUs over their limit at the last check
  std::set<unsigned> killed_;  // dying: neither counted nor killed again
  std::map<unsigned, std::pair<uint64_t, uint64_t>> last_; // pid -> (used, tick of its last growth)
  uint64_t tick_ = 0;
  bool frozen_ = false;
  bool nvml_error_said_ = false;
  Counts counts_;
  std::map<std::string, GpuView> view_;
  std::map<std::string, unsigned long long> last_sample_us_; // per GPU: NVML's utilization samples seen
  std::map<std::string, std::vector<unsigned>> sm_window_;    // per GPU: the last `window` intervals' sums
  std::set<std::string> compute_over_said_;
  std::string written_; // the status file as last written
};

} // namespace gpuslice::shim
