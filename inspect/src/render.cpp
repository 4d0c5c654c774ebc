// The report as a person reads it (a table like `kubectl inspect cgpu`'s),
// as a program reads it (JSON), and as Prometheus scrapes it (the text
// exposition format, for node_exporter's textfile collector). The JSON
// and metric names are an interface: docs/inspect.md lists them, and they
// change only by adding.
#include "gpuslice/inspect/report.hpp"

#include "gpuslice/sharing/limits.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

namespace gpuslice::inspect {

namespace {

std::string size_or_dash(const std::optional<uint64_t> &bytes) {
  return bytes ? sharing::format_size(*bytes) : "-";
}

std::string pod_of(const ContainerRow &c) {
  if (c.pod_name.empty())
    return "-";
  return c.pod_namespace.empty() ? c.pod_name : c.pod_namespace + "/" + c.pod_name;
}

std::string gpu_name(const std::string &uuid) { return uuid == "*" ? "(unnamed)" : uuid; }

std::string actions_of(const ContainerRow &c) {
  std::string out;
  auto add = [&](unsigned n, const char *what) {
    if (n)
      out += (out.empty() ? "" : ", ") + std::string(what) + " " + std::to_string(n);
  };
  add(c.breaches, "breaches");
  add(c.killed, "killed");
  add(c.frozen, "frozen");
  add(c.bypasses, "bypasses");
  return out.empty() ? "-" : out;
}

// Columns padded to their widest cell, two spaces apart.
std::string columns(const std::vector<std::vector<std::string>> &rows) {
  std::vector<std::size_t> width;
  for (const auto &row : rows)
    for (std::size_t i = 0; i < row.size(); i++) {
      width.resize(std::max(width.size(), row.size()));
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (const auto &row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); i++)
      line += i + 1 < row.size() ? row[i] + std::string(width[i] - row[i].size() + 2, ' ') : row[i];
    out += line + "\n";
  }
  return out;
}

struct Totals {
  std::optional<uint64_t> total, used; // NVML's, over the GPUs it lists
  uint64_t allotted = 0;
};

Totals totals_of(const NodeReport &report) {
  Totals t;
  for (const auto &g : report.gpus) {
    if (g.total)
      t.total = t.total.value_or(0) + *g.total;
    if (g.used)
      t.used = t.used.value_or(0) + *g.used;
    t.allotted += g.allotted;
  }
  return t;
}

} // namespace

std::string to_table(const NodeReport &report, bool details) {
  std::vector<std::vector<std::string>> rows{{"GPU", "UUID", "MODEL", "CONTAINERS", "ALLOTTED/TOTAL", "USED/TOTAL"}};
  for (const auto &g : report.gpus)
    rows.push_back({g.index ? std::to_string(*g.index) : "-", gpu_name(g.uuid), g.model.empty() ? "-" : g.model,
                    std::to_string(g.containers), sharing::format_size(g.allotted) + "/" + size_or_dash(g.total),
                    size_or_dash(g.used) + "/" + size_or_dash(g.total)});
  std::string out = columns(rows);
  const Totals t = totals_of(report);
  std::string share;
  if (t.total && *t.total > 0) {
    char pct[16];
    std::snprintf(pct, sizeof pct, " (%.0f%%)", 100.0 * static_cast<double>(t.allotted) / static_cast<double>(*t.total));
    share = pct;
  }
  out += "\nAllotted/total GPU memory in node: " + sharing::format_size(t.allotted) + "/" + size_or_dash(t.total) +
         share + "; used " + size_or_dash(t.used) + "; " + std::to_string(report.containers.size()) +
         " containers with limits\n";
  if (!report.nvml_error.empty())
    out += "NVML: " + report.nvml_error + " (memory totals and use unknown)\n";
  if (!details)
    return out;
  std::vector<std::vector<std::string>> c_rows{{"CONTAINER", "POD", "GPU", "MEMORY LIMIT", "USED (INTERPOSER/NVML)",
                                                "COMPUTE", "SM USED", "PROCESSES", "MONITOR", "ACTIONS"}};
  for (const auto &c : report.containers) {
    bool first = true;
    for (const auto &g : c.gpus) {
      std::string compute = "-";
      if (g.compute_share)
        compute = std::to_string(*g.compute_share) + "% " + (g.compute_policy.empty() ? "" : g.compute_policy);
      std::string pids;
      for (unsigned pid : g.processes)
        pids += (pids.empty() ? "" : ",") + std::to_string(pid);
      c_rows.push_back({first ? c.id : "", first ? pod_of(c) : "", gpu_name(g.gpu), size_or_dash(g.memory_limit),
                        size_or_dash(g.used_interposer) + "/" + size_or_dash(g.used_nvml), compute,
                        g.sm_percent ? std::to_string(*g.sm_percent) + "%" : "-", pids.empty() ? "-" : pids,
                        first ? c.monitor : "", first ? actions_of(c) : ""});
      first = false;
    }
  }
  return out + "\n" + columns(c_rows);
}

std::string to_json(const NodeReport &report) {
  using nlohmann::json;
  auto opt = [](const auto &value) { return value ? json(*value) : json(nullptr); };
  json gpus = json::array();
  for (const auto &g : report.gpus)
    gpus.push_back({{"index", opt(g.index)},
                    {"uuid", g.uuid},
                    {"model", g.model.empty() ? json(nullptr) : json(g.model)},
                    {"memory", {{"total", opt(g.total)}, {"used", opt(g.used)}, {"allotted", g.allotted}}},
                    {"containers", g.containers}});
  json containers = json::array();
  for (const auto &c : report.containers) {
    json c_gpus = json::array();
    for (const auto &g : c.gpus)
      c_gpus.push_back({{"gpu", g.gpu},
                        {"memory_limit", opt(g.memory_limit)},
                        {"compute_share", opt(g.compute_share)},
                        {"compute_policy", g.compute_policy.empty() ? json(nullptr) : json(g.compute_policy)},
                        {"used", {{"interposer", opt(g.used_interposer)}, {"nvml", opt(g.used_nvml)}}},
                        {"sm_percent", opt(g.sm_percent)},
                        {"processes", g.processes}});
    containers.push_back(
        {{"id", c.id},
         {"pod", c.pod_name.empty() ? json(nullptr) : json{{"namespace", c.pod_namespace}, {"name", c.pod_name}}},
         {"monitor", c.monitor},
         {"action", c.action.empty() ? json(nullptr) : json(c.action)},
         {"gpus", c_gpus},
         {"enforcement", {{"breaches", c.breaches}, {"killed", c.killed}, {"frozen", c.frozen}, {"bypasses", c.bypasses}}}});
  }
  const Totals t = totals_of(report);
  json out{{"gpus", gpus},
           {"containers", containers},
           {"node",
            {{"containers", report.containers.size()},
             {"memory", {{"total", opt(t.total)}, {"used", opt(t.used)}, {"allotted", t.allotted}}}}},
           {"nvml_error", report.nvml_error.empty() ? json(nullptr) : json(report.nvml_error)}};
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

std::string label_value(const std::string &value) {
  std::string out;
  for (char ch : value) {
    if (ch == '\\' || ch == '"')
      out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// One metric family: its HELP and TYPE lines, then its samples; nothing at
// all when it has no sample.
class Family {
public:
  Family(std::string name, std::string type, std::string help)
      : name_(std::move(name)), type_(std::move(type)), help_(std::move(help)) {}
  void add(const Labels &labels, uint64_t value) { add(labels, std::to_string(value)); }
  void add(const Labels &labels, const std::string &value) {
    std::string l;
    for (const auto &[k, v] : labels)
      l += (l.empty() ? "" : ",") + k + "=\"" + label_value(v) + "\"";
    samples_ += name_ + (l.empty() ? "" : "{" + l + "}") + " " + value + "\n";
  }
  std::string text() const {
    return samples_.empty() ? "" : "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " " + type_ + "\n" + samples_;
  }

private:
  std::string name_, type_, help_, samples_;
};

std::string ratio(unsigned percent) {
  char text[16];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(percent) / 100.0);
  return text;
}

} // namespace

std::string to_prometheus(const NodeReport &report) {
  Family nvml_up("gpuslice_nvml_up", "gauge", "Whether NVML answered (1) or not (0).");
  Family info("gpuslice_gpu_info", "gauge", "The node's GPUs: index and model (value 1).");
  Family total("gpuslice_gpu_memory_total_bytes", "gauge", "GPU memory, from NVML.");
  Family used("gpuslice_gpu_memory_used_bytes", "gauge", "GPU memory in use, from NVML.");
  Family allotted("gpuslice_gpu_memory_allotted_bytes", "gauge", "Sum of the memory limits of the GPU's containers.");
  Family hosted("gpuslice_gpu_containers", "gauge", "Containers with limits on the GPU.");
  Family limit("gpuslice_container_memory_limit_bytes", "gauge", "A container's memory limit on a GPU.");
  Family c_used("gpuslice_container_memory_used_bytes", "gauge",
                "A container's GPU memory in use: as its interposer counts it (source=interposer, written by the "
                "tenant) and as the driver does (source=nvml).");
  Family share("gpuslice_container_compute_share_ratio", "gauge", "A container's compute share of a GPU (0-1).");
  Family sm("gpuslice_container_sm_utilization_ratio", "gauge",
            "SM utilization of a container's processes on a GPU, from NVML's samples over the last 10 monitor "
            "intervals (0-1).");
  Family procs("gpuslice_container_processes", "gauge", "A container's processes on a GPU, as NVML lists them.");
  Family up("gpuslice_container_monitor_up", "gauge", "Whether the container's gpuslice-shim runs (1) or not (0).");
  Family breaches("gpuslice_container_limit_breaches_total", "counter",
                  "Times a container went over a GPU memory limit (NVML's view).");
  Family killed("gpuslice_container_processes_killed_total", "counter", "Processes killed for going over a limit.");
  Family frozen("gpuslice_container_freezes_total", "counter", "Times a container was frozen for going over a limit.");
  Family bypasses("gpuslice_container_bypasses_total", "counter",
                  "Processes seen using a GPU without the interposer (static binaries, loader tricks).");

  nvml_up.add({}, report.nvml_error.empty() ? 1 : 0);
  for (const auto &g : report.gpus) {
    const Labels gpu{{"gpu", g.uuid}};
    if (g.index)
      info.add({{"gpu", g.uuid}, {"index", std::to_string(*g.index)}, {"model", g.model}}, 1);
    if (g.total)
      total.add(gpu, *g.total);
    if (g.used)
      used.add(gpu, *g.used);
    allotted.add(gpu, g.allotted);
    hosted.add(gpu, static_cast<uint64_t>(g.containers));
  }
  for (const auto &c : report.containers) {
    const Labels who{{"container", c.id}, {"namespace", c.pod_namespace}, {"pod", c.pod_name}};
    up.add(who, c.monitor == "running" ? 1 : 0);
    breaches.add(who, c.breaches);
    killed.add(who, c.killed);
    frozen.add(who, c.frozen);
    bypasses.add(who, c.bypasses);
    for (const auto &g : c.gpus) {
      Labels on = who;
      on.emplace_back("gpu", g.gpu);
      if (g.memory_limit)
        limit.add(on, *g.memory_limit);
      for (const auto &[source, bytes] : {std::pair{"interposer", g.used_interposer}, std::pair{"nvml", g.used_nvml}})
        if (bytes) {
          Labels l = on;
          l.emplace_back("source", source);
          c_used.add(l, *bytes);
        }
      if (g.compute_share) {
        Labels l = on;
        l.emplace_back("policy", g.compute_policy);
        share.add(l, ratio(static_cast<unsigned>(*g.compute_share)));
      }
      if (g.sm_percent)
        sm.add(on, ratio(*g.sm_percent));
      if (g.used_nvml)
        procs.add(on, static_cast<uint64_t>(g.processes.size()));
    }
  }
  std::string out;
  for (const Family *f : {&nvml_up, &info, &total, &used, &allotted, &hosted, &limit, &c_used, &share, &sm, &procs,
                          &up, &breaches, &killed, &frozen, &bypasses})
    out += f->text();
  return out;
}

} // namespace gpuslice::inspect
