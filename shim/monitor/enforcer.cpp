#include "enforcer.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/sharing/region.hpp"

#include <signal.h>

#include <algorithm>
#include <ctime>
#include <vector>

namespace gpuslice::monitor {

Action parse_action(const std::string &text) {
  if (text == "log")
    return Action::log;
  if (text == "kill")
    return Action::kill;
  if (text == "freeze")
    return Action::freeze;
  throw Error("monitor.action " + quote(text) + " is not one of log, kill, freeze");
}

Enforcer::Enforcer(EnforcerSetup setup, std::unique_ptr<Nvml> nvml)
    : setup_(std::move(setup)), nvml_(std::move(nvml)) {}

void Enforcer::say(const std::string &line) {
  if (!setup_.log)
    return;
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  ::gmtime_r(&now, &t);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &t);
  std::fprintf(setup_.log, "%s gpuslice-shim container %s%s: %s\n", stamp, setup_.container_id.c_str(),
               setup_.pod.empty() ? "" : (" (pod " + setup_.pod + ")").c_str(), line.c_str());
  std::fflush(setup_.log);
}

void Enforcer::init_started(int pid) {
  cgroup_ = cgroup_of(pid);
  if (!cgroup_)
    say("its init (pid " + std::to_string(pid) +
        ") has no cgroup of its own: its processes cannot be told apart, GPU memory is not checked");
}

std::optional<uint64_t> Enforcer::limit_for(const std::string &uuid) const {
  std::optional<uint64_t> any, exact;
  for (const auto &d : setup_.limits.devices) {
    if (d.key == uuid && d.memory)
      exact = d.memory;
    else if (d.key == "*" && d.memory)
      any = d.memory;
  }
  return exact ? exact : any;
}

void Enforcer::write_status() {
  if (setup_.status_file.empty())
    return;
  const std::string json = "{\"breaches\": " + std::to_string(counts_.breaches) +
                           ", \"killed\": " + std::to_string(counts_.killed) +
                           ", \"frozen\": " + std::to_string(counts_.frozen) +
                           ", \"bypasses\": " + std::to_string(counts_.bypasses) + "}\n";
  try {
    fs::write_file_atomic(setup_.status_file, json, 0644);
  } catch (const Error &) {
    // the container's state dir is gone: it is ending
  }
}

void Enforcer::act(const std::string &uuid, uint64_t used, uint64_t limit, std::map<unsigned, uint64_t> usage) {
  counts_.breaches++;
  const std::string what = "GPU " + uuid + " used " + std::to_string(used) + " bytes, limit " + std::to_string(limit);
  switch (setup_.action) {
  case Action::log:
    say(what + ": over the limit (monitor.action = log)");
    break;
  case Action::freeze:
    if (!frozen_) {
      try {
        freeze(*cgroup_);
        frozen_ = true;
        counts_.frozen++;
        say(what + ": froze the container (monitor.action = freeze)");
      } catch (const Error &e) {
        say(what + ": " + e.message());
      }
    }
    break;
  case Action::kill: {
    // The one that grew last first: it is the one that crossed the line.
    std::vector<std::pair<uint64_t, unsigned>> order; // (tick of last growth, pid)
    for (const auto &[pid, bytes] : usage)
      order.emplace_back(last_[pid].second, pid);
    std::sort(order.rbegin(), order.rend());
    for (const auto &[tick, pid] : order) {
      if (used <= limit + setup_.tolerance)
        break;
      if (::kill(static_cast<pid_t>(pid), SIGKILL) == 0) {
        killed_.insert(pid);
        counts_.killed++;
        say(what + ": killed pid " + std::to_string(pid) + " (" + std::to_string(usage[pid]) +
            " bytes; monitor.action = kill)");
        used -= std::min(used, usage[pid]);
      }
    }
    break;
  }
  }
}

void Enforcer::check(int region_fd) {
  try {
    sharing::reclaim_dead_slots(region_fd);
  } catch (const Error &) {
    // an overwritten region: its processes refuse their charges
  }
  if (!nvml_ || !cgroup_)
    return;
  tick_++;
  std::vector<GpuProcesses> gpus;
  try {
    gpus = nvml_->processes();
  } catch (const Error &e) {
    if (!nvml_error_said_)
      say("cannot read the driver's process list: " + e.message());
    nvml_error_said_ = true;
    return;
  }
  const std::vector<int> mine = cgroup_processes(*cgroup_);
  const std::set<unsigned> members(mine.begin(), mine.end());
  bool changed = false;
  for (const auto &gpu : gpus) {
    std::map<unsigned, uint64_t> usage;
    uint64_t used = 0;
    for (const auto &p : gpu.processes) {
      // A SIGKILLed process may still be listed for a moment: its memory is
      // on its way back.
      if (!members.count(p.pid) || killed_.count(p.pid))
        continue;
      usage[p.pid] += p.used;
      used += p.used;
      auto &[before, grew] = last_[p.pid];
      if (p.used > before)
        grew = tick_;
      before = p.used;
      if (!connected_.count(static_cast<int>(p.pid)) && bypass_said_.insert(p.pid).second) {
        counts_.bypasses++;
        changed = true;
        say("pid " + std::to_string(p.pid) + " uses " + std::to_string(p.used) + " bytes on GPU " + gpu.uuid +
            " without the interposer (it never took the container's region): a bypass");
      }
    }
    const auto limit = limit_for(gpu.uuid);
    const bool over = limit && used > *limit + setup_.tolerance;
    const bool was_over = over_.count(gpu.uuid) > 0;
    if (!over) {
      over_.erase(gpu.uuid);
      continue;
    }
    over_.insert(gpu.uuid);
    // kill acts at every check while over; log and freeze once per breach
    if (setup_.action == Action::kill || !was_over) {
      act(gpu.uuid, used, *limit, usage);
      changed = true;
    }
  }
  if (changed)
    write_status();
}

} // namespace gpuslice::monitor
