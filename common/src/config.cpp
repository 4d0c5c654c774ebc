#include "gpuslice/common/config.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/toml_text.hpp"

#include <toml++/toml.h>

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace gpuslice {

namespace {

std::string where(const toml::node &n) {
  const auto &src = n.source();
  return "line " + std::to_string(src.begin.line);
}

void reject_unknown(const toml::table &t, const std::string &table_name, const std::set<std::string> &known) {
  for (const auto &[key, node] : t) {
    if (!known.count(std::string(key.str())))
      throw Error("unknown key " + quote(table_name.empty() ? std::string(key.str()) : table_name + "." + std::string(key.str())) + " at " + where(node));
  }
}

void get(const toml::table &t, const char *key, std::string &out, const std::string &table_name) {
  if (const auto *n = t.get(key)) {
    auto v = n->value<std::string>();
    if (!v)
      throw Error(quote(table_name + "." + key) + " must be a string at " + where(*n));
    out = *v;
  }
}

void get(const toml::table &t, const char *key, bool &out, const std::string &table_name) {
  if (const auto *n = t.get(key)) {
    // Not value<bool>(): it takes 0 and 1 as well.
    if (!n->is_boolean())
      throw Error(quote(table_name + "." + key) + " must be true or false at " + where(*n));
    out = n->as_boolean()->get();
  }
}

void get(const toml::table &t, const char *key, std::vector<std::string> &out, const std::string &table_name) {
  if (const auto *n = t.get(key)) {
    const auto *arr = n->as_array();
    if (!arr)
      throw Error(quote(table_name + "." + key) + " must be an array of strings at " + where(*n));
    out.clear();
    for (const auto &el : *arr) {
      auto v = el.value<std::string>();
      if (!v)
        throw Error(quote(table_name + "." + key) + " must be an array of strings at " + where(el));
      out.push_back(*v);
    }
  }
}

void get(const toml::table &t, const char *key, int &out, const std::string &table_name, int min, int max) {
  if (const auto *n = t.get(key)) {
    auto v = n->value<int64_t>();
    if (!v || *v < min || *v > max)
      throw Error(quote(table_name + "." + key) + " must be a whole number from " + std::to_string(min) + " to " +
                  std::to_string(max) + " at " + where(*n));
    out = static_cast<int>(*v);
  }
}

// "200ms", "1s", "2.5s": from 10 ms to an hour.
int parse_interval_ms(const std::string &text) {
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const double ms = unit == "ms" ? value : unit == "s" ? value * 1000 : -1;
  if (used == 0 || ms < 10 || ms > 3600 * 1000)
    throw Error(quote(text) + " is not a duration from 10ms to 3600s (\"200ms\", \"1s\")");
  return static_cast<int>(ms);
}

// Every table a config file may have, and the keys of each.
const std::map<std::string, std::set<std::string>> &known_keys() {
  static const std::map<std::string, std::set<std::string>> keys{
      {"cdi", {"spec-dirs", "annotation-prefixes"}},
      {"runtime",
       {"runtimes", "accept-env-requests", "default-kind", "hook-path", "state-dir", "interposer-path", "shim-path",
        "accept-gpushare-env"}},
      {"monitor", {"interval", "action", "memory-tolerance", "nvml-path"}},
      {"admission", {"max-containers-per-gpu", "allow-memory-overcommit"}},
      {"log", {"level", "target", "directory"}},
      {"selinux", {"label", "shared-file-label"}},
  };
  return keys;
}

void reject_unknown(const toml::table &t, const std::string &table_name) {
  reject_unknown(t, table_name, known_keys().at(table_name));
}

const toml::table *sub(const toml::table &root, const char *name) {
  const auto *n = root.get(name);
  if (!n)
    return nullptr;
  const auto *t = n->as_table();
  if (!t)
    throw Error(quote(name) + " must be a table at " + where(*n));
  return t;
}

} // namespace

std::string config_path() {
  const char *env = ::secure_getenv("GPUSLICE_CONFIG");
  return env && *env ? env : kDefaultConfigPath;
}

Config parse_config(const std::string &toml_text, const std::string &origin) {
  return with_context("config " + quote(origin), [&] {
    toml::table root;
    root = parse_toml(toml_text, origin);
    Config c;
    std::set<std::string> tables;
    for (const auto &[name, keys] : known_keys())
      tables.insert(name);
    reject_unknown(root, "", tables);
    if (const auto *t = sub(root, "cdi")) {
      reject_unknown(*t, "cdi");
      get(*t, "spec-dirs", c.spec_dirs, "cdi");
      get(*t, "annotation-prefixes", c.annotation_prefixes, "cdi");
    }
    if (const auto *t = sub(root, "runtime")) {
      reject_unknown(*t, "runtime");
      get(*t, "runtimes", c.runtimes, "runtime");
      get(*t, "accept-env-requests", c.accept_env_requests, "runtime");
      get(*t, "default-kind", c.default_kind, "runtime");
      get(*t, "hook-path", c.hook_path, "runtime");
      get(*t, "state-dir", c.state_dir, "runtime");
      get(*t, "interposer-path", c.interposer_path, "runtime");
      get(*t, "shim-path", c.shim_path, "runtime");
      get(*t, "accept-gpushare-env", c.accept_gpushare_env, "runtime");
    }
    if (const auto *t = sub(root, "monitor")) {
      reject_unknown(*t, "monitor");
      std::string interval;
      get(*t, "interval", interval, "monitor");
      if (t->contains("interval"))
        c.monitor_interval_ms = with_context("monitor.interval", [&] { return parse_interval_ms(interval); });
      get(*t, "action", c.monitor_action, "monitor");
      get(*t, "memory-tolerance", c.monitor_memory_tolerance, "monitor");
      get(*t, "nvml-path", c.monitor_nvml_path, "monitor");
      if (c.monitor_action != "log" && c.monitor_action != "kill" && c.monitor_action != "freeze")
        throw Error("monitor.action " + quote(c.monitor_action) + " is not one of log, kill, freeze");
    }
    if (const auto *t = sub(root, "admission")) {
      reject_unknown(*t, "admission");
      get(*t, "max-containers-per-gpu", c.max_containers_per_gpu, "admission", 0, 1000000);
      get(*t, "allow-memory-overcommit", c.allow_memory_overcommit, "admission");
    }
    if (const auto *t = sub(root, "log")) {
      reject_unknown(*t, "log");
      get(*t, "level", c.log.level, "log");
      get(*t, "target", c.log.target, "log");
      get(*t, "directory", c.log.directory, "log");
    }
    if (const auto *t = sub(root, "selinux")) {
      reject_unknown(*t, "selinux");
      get(*t, "label", c.selinux_label, "selinux");
      get(*t, "shared-file-label", c.selinux_shared_file_label, "selinux");
    }
    for (const auto &[table_name, table] : root)
      if (const auto *t = table.as_table())
        for (const auto &[key, value] : *t)
          c.from_file.insert(std::string(table_name.str()) + "." + std::string(key.str()));
    static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error", "critical", "off"};
    if (!levels.count(c.log.level))
      throw Error("log.level " + quote(c.log.level) + " is not one of trace, debug, info, warn, error, critical, off");
    if (c.log.target != "file" && c.log.target != "syslog" && c.log.target != "stderr")
      throw Error("log.target " + quote(c.log.target) + " is not one of file, syslog, stderr");
    if (c.selinux_label != "auto" && c.selinux_label != "on" && c.selinux_label != "off")
      throw Error("selinux.label " + quote(c.selinux_label) + " is not one of auto, on, off");
    if (c.runtimes.empty())
      throw Error("runtime.runtimes must name at least one runtime");
    return c;
  });
}

std::vector<std::string> config_keys() {
  std::vector<std::string> out;
  for (const auto &[table, keys] : known_keys())
    for (const auto &key : keys)
      out.push_back(table + "." + key);
  return out;
}

namespace {
constexpr std::size_t kMaxConfigSize = 1u << 20;
} // namespace

std::optional<std::string> read_config_text(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
    return std::nullopt;
  return fs::read_file(path, kMaxConfigSize);
}

Config load_config(const std::string &path) {
  const auto text = read_config_text(path);
  return text ? parse_config(*text, path) : Config{};
}

} // namespace gpuslice
