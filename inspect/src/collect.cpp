// Collecting the node's report: NVML for the GPUs, then each container's
// state dir. The state dir is root's, written by gpuslice-runtime and
// gpuslice-shim, yet read here as anything read from disk is: files opened
// without following links, bounded, and a file that does not parse
// leaves its fields unknown rather than failing the whole report.
#include "gpuslice/inspect/report.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/create/admission.hpp"
#include "gpuslice/state/container_dir.hpp"
#include "gpuslice/shim/nvml.hpp"

#include <fcntl.h>

#include <algorithm>

namespace gpuslice::inspect {

namespace {

// Unreadable is unknown here, not a failed report.
std::optional<std::string> read_in(int dir_fd, const char *name) {
  try {
    return state::read_state_file(dir_fd, name);
  } catch (const Error &) {
    return std::nullopt;
  }
}

template <typename T> std::optional<T> number(const nlohmann::json &object, const char *key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned())
    return std::nullopt;
  return it->get<T>();
}

ContainerGpu &gpu_in(ContainerRow &c, const std::string &gpu) {
  for (auto &g : c.gpus)
    if (g.gpu == gpu)
      return g;
  c.gpus.push_back(ContainerGpu{});
  c.gpus.back().gpu = gpu;
  return c.gpus.back();
}

// What gpuslice-shim wrote (enforcer.hpp's status_json).
void read_status(const std::string &text, ContainerRow &c) {
  nlohmann::json status;
  try {
    status = parse_json(text);
  } catch (const Error &) {
    return;
  }
  if (!status.is_object())
    return;
  if (auto pod = status.find("pod"); pod != status.end() && pod->is_string()) {
    const std::string p = pod->get<std::string>();
    const auto slash = p.find('/');
    c.pod_namespace = slash == std::string::npos ? "" : p.substr(0, slash);
    c.pod_name = slash == std::string::npos ? p : p.substr(slash + 1);
  }
  if (auto action = status.find("action"); action != status.end() && action->is_string())
    c.action = action->get<std::string>();
  c.breaches = number<unsigned>(status, "breaches").value_or(0);
  c.killed = number<unsigned>(status, "killed").value_or(0);
  c.frozen = number<unsigned>(status, "frozen").value_or(0);
  c.bypasses = number<unsigned>(status, "bypasses").value_or(0);
  auto gpus = status.find("gpus");
  if (gpus == status.end() || !gpus->is_object())
    return;
  for (const auto &[uuid, view] : gpus->items()) {
    if (!view.is_object())
      continue;
    ContainerGpu &g = gpu_in(c, uuid);
    g.used_interposer = number<uint64_t>(view, "used_interposer");
    g.used_nvml = number<uint64_t>(view, "used_nvml");
    g.sm_percent = number<unsigned>(view, "sm_percent");
    if (auto pids = view.find("processes"); pids != view.end() && pids->is_array())
      for (const auto &pid : *pids)
        if (pid.is_number_unsigned())
          g.processes.push_back(pid.get<unsigned>());
  }
}

} // namespace

NodeReport collect(const Config &config) {
  NodeReport report;
  std::string why;
  if (auto nvml = shim::Nvml::load(config.monitor_nvml_path, why)) {
    try {
      for (const auto &info : nvml->devices())
        report.gpus.push_back({info.index, info.uuid, info.model, info.total, info.used, 0, 0});
    } catch (const Error &e) {
      why = e.message();
    }
  }
  if (report.gpus.empty())
    report.nvml_error = why.empty() ? "NVML lists no GPU" : why;
  // Devices that name no GPU are on the node's only one, when it has one
  // (as admission counts them).
  const std::string unnamed = report.gpus.size() == 1 ? report.gpus[0].uuid : std::string(create::kUnnamedGpu);
  auto gpu_of = [&](const std::string &key) { return key.rfind("GPU-", 0) == 0 ? key : unnamed; };

  auto dirs = state::open_container_dirs(config.state_dir);
  std::sort(dirs.begin(), dirs.end(), [](const state::NamedDir &a, const state::NamedDir &b) { return a.id < b.id; });
  for (const auto &dir : dirs) {
    const auto limits_text = read_in(dir.fd.get(), state::kLimitsFile);
    if (!limits_text)
      continue; // a container without limits (or one being created)
    ContainerRow c;
    c.id = dir.id;
    try {
      for (const auto &d : sharing::parse_limits(*limits_text).devices) {
        ContainerGpu &g = gpu_in(c, gpu_of(d.key));
        if (d.memory)
          g.memory_limit = g.memory_limit.value_or(0) + *d.memory;
        if (d.compute)
          g.compute_share = d.compute;
        if (d.policy)
          g.compute_policy = sharing::policy_name(*d.policy);
      }
    } catch (const Error &) {
      gpu_in(c, create::kUnnamedGpu); // counted, as admission counts it
    }
    std::optional<state::Record> record;
    try {
      record = state::read_record(dir.fd.get(), dir.id);
    } catch (const Error &) {
      // shown without what its record would say
    }
    if (record && !record->usage.empty())
      read_status(record->usage, c);
    c.monitor = record && record->monitor && state::process_alive(*record->monitor) ? "running" : "gone";
    for (auto &g : c.gpus) {
      std::sort(g.processes.begin(), g.processes.end());
      auto row = std::find_if(report.gpus.begin(), report.gpus.end(), [&](const GpuRow &r) { return r.uuid == g.gpu; });
      if (row == report.gpus.end()) {
        report.gpus.push_back(GpuRow{});
        row = std::prev(report.gpus.end());
        row->uuid = g.gpu;
      }
      row->containers++;
      row->allotted += g.memory_limit.value_or(0);
    }
    report.containers.push_back(std::move(c));
  }
  return report;
}

} // namespace gpuslice::inspect
