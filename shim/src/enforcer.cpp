#include "gpuslice/shim/enforcer.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/sharing/region.hpp"

#include <signal.h>

#include <algorithm>
#include <ctime>
#include <vector>

namespace gpuslice::shim {

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

Enforcer::Enforcer(EnforcerSetup setup, std::function<std::unique_ptr<Nvml>()> load_nvml)
    : setup_(std::move(setup)), load_nvml_(std::move(load_nvml)) {}

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

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF); 0 when there is none.
std::size_t utf8_length(const std::string &s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return i + k < s.size() && b(k) >= lo && b(k) <= hi;
  };
  const unsigned c = b(0);
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// A JSON string (the pod's name comes from an annotation: escape it all;
// a byte that is not UTF-8 becomes U+FFFD, or the whole file would not parse).
std::string json_string(const std::string &text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else if (const std::size_t n = utf8_length(text, i); n > 1) {
      out.append(text, i, n);
      i += n;
      continue;
    } else if (n == 0) {
      out += "\xef\xbf\xbd";
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out + "\"";
}

} // namespace

std::string Enforcer::status_json() const {
  std::string json = "{\"container\": " + json_string(setup_.container_id);
  if (!setup_.pod.empty())
    json += ", \"pod\": " + json_string(setup_.pod);
  json += ", \"action\": " + json_string(setup_.action == Action::log    ? "log"
                                          : setup_.action == Action::kill ? "kill"
                                                                          : "freeze");
  json += ", \"nvml\": " + std::string(nvml_ && cgroup_ ? "true" : "false");
  json += ", \"breaches\": " + std::to_string(counts_.breaches) + ", \"killed\": " + std::to_string(counts_.killed) +
          ", \"frozen\": " + std::to_string(counts_.frozen) + ", \"bypasses\": " + std::to_string(counts_.bypasses);
  json += ", \"gpus\": {";
  const char *sep = "";
  for (const auto &[uuid, v] : view_) {
    json += sep + json_string(uuid) + ": {";
    std::string fields;
    auto field = [&](const std::string &name, const std::string &value) {
      fields += (fields.empty() ? "\"" : ", \"") + name + "\": " + value;
    };
    if (v.interposer_used)
      field("used_interposer", std::to_string(*v.interposer_used));
    if (v.nvml_used)
      field("used_nvml", std::to_string(*v.nvml_used));
    if (v.sm_percent)
      field("sm_percent", std::to_string(*v.sm_percent));
    std::string pids;
    for (unsigned pid : v.pids)
      pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
    field("processes", "[" + pids + "]");
    json += fields + "}";
    sep = ", ";
  }
  return json + "}}\n";
}

void Enforcer::write_status() {
  if (!setup_.report)
    return;
  std::string json = status_json();
  if (json == written_)
    return;
  try {
    setup_.report(json);
    written_ = std::move(json);
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

std::optional<int> Enforcer::share_for(const std::string &uuid) const {
  std::optional<int> any, exact;
  for (const auto &d : setup_.limits.devices) {
    if (!d.compute || !d.policy || *d.policy == sharing::Policy::native)
      continue;
    if (d.key == uuid)
      exact = d.compute;
    else if (d.key == "*")
      any = d.compute;
  }
  return exact ? exact : any;
}

void Enforcer::enforce_memory(const std::vector<GpuProcesses> &gpus, const std::set<unsigned> &members) {
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
        say("pid " + std::to_string(p.pid) + " uses " + std::to_string(p.used) + " bytes on GPU " + gpu.uuid +
            " without the interposer (it never took the container's region): a bypass");
      }
    }
    const auto limit = limit_for(gpu.uuid);
    if (!usage.empty() || limit || share_for(gpu.uuid)) {
      GpuView &v = view_[gpu.uuid];
      v.nvml_used = used;
      for (const auto &[pid, bytes] : usage)
        v.pids.insert(pid);
    }
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
    }
  }
}

void Enforcer::report_compute(const std::set<unsigned> &members) {
  for (auto &[uuid, v] : view_) {
    const auto share = share_for(uuid);
    if (!share)
      continue;
    // NVML may give several samples of one process since the last look:
    // each process counts with its mean.
    std::map<unsigned, std::pair<unsigned, unsigned>> per_pid; // pid -> (sum, samples)
    for (const auto &u : nvml_->utilization(uuid, &last_sample_us_[uuid]))
      if (members.count(u.pid)) {
        per_pid[u.pid].first += u.sm;
        per_pid[u.pid].second++;
      }
    unsigned now = 0;
    for (const auto &[pid, sum] : per_pid)
      now += sum.first / sum.second;
    auto &window = sm_window_[uuid];
    window.push_back(std::min(now, 100u));
    if (window.size() > std::max(1u, setup_.window))
      window.erase(window.begin());
    unsigned total = 0;
    for (unsigned w : window)
      total += w;
    const unsigned mean = (total + static_cast<unsigned>(window.size()) / 2) / static_cast<unsigned>(window.size());
    v.sm_percent = mean;
    if (window.size() >= std::max(1u, setup_.window) && static_cast<int>(mean) > *share + 10) {
      if (compute_over_said_.insert(uuid).second)
        say("GPU " + uuid + ": its processes used " + std::to_string(mean) + "% of the SMs over the last " +
            std::to_string(window.size()) + " intervals, share " + std::to_string(*share) +
            "% (reported only: the interposer throttles the container's launches)");
    } else if (static_cast<int>(mean) <= *share) {
      compute_over_said_.erase(uuid);
    }
  }
}

void Enforcer::check(int region_fd) {
  try {
    sharing::reclaim_dead_slots(region_fd);
  } catch (const Error &) {
    // an overwritten region: its processes refuse their charges
  }
  // The interposer's view, for the status file (the tenant writes it:
  // reported, never trusted to decide anything).
  std::map<std::string, GpuView> previous = std::move(view_);
  view_.clear();
  try {
    for (const auto &d : sharing::read_region(region_fd).devices)
      view_[sharing::uuid_text(d.uuid)].interposer_used = d.used;
  } catch (const Error &) {
  }
  if (load_nvml_) {
    nvml_ = load_nvml_();
    load_nvml_ = nullptr;
  }
  if (nvml_ && cgroup_) {
    tick_++;
    try {
      const std::vector<GpuProcesses> gpus = nvml_->processes();
      const std::vector<int> mine = cgroup_processes(*cgroup_);
      const std::set<unsigned> members(mine.begin(), mine.end());
      enforce_memory(gpus, members);
      report_compute(members);
    } catch (const Error &e) {
      if (!nvml_error_said_)
        say("cannot read the driver's accounting: " + e.message());
      nvml_error_said_ = true;
      // keep what NVML said last rather than report nothing
      for (auto &[uuid, v] : previous) {
        view_[uuid].nvml_used = v.nvml_used;
        view_[uuid].sm_percent = v.sm_percent;
        view_[uuid].pids = v.pids;
      }
    }
  }
  write_status();
}

} // namespace gpuslice::shim
