// /etc/gpuslice/config.toml (<sysconfdir>/gpuslice/config.toml): written by root and trusted. Every key and its
// default is documented in docs/config.md; an unknown key is an error so that
// a typo never silently falls back to a default.
#pragma once

#include "gpuslice/common/install_paths.hpp"
#include "gpuslice/common/log.hpp"

#include <array>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice {

// Where CDI specs are, by default, in priority order (the CDI spec's own).
inline constexpr std::array<const char *, 2> kDefaultSpecDirs{"/etc/cdi", "/var/run/cdi"};

inline constexpr const char *kDefaultConfigPath = installed::kConfigPath;

struct Config {
  // [cdi]
  std::vector<std::string> spec_dirs{kDefaultSpecDirs.begin(), kDefaultSpecDirs.end()};
  std::vector<std::string> annotation_prefixes{"cdi.k8s.io/"};
  // [runtime]
  std::vector<std::string> runtimes{"runc", "crun"};
  bool accept_env_requests = false;
  std::string default_kind = "nvidia.com/gpu";
  std::string hook_path = installed::kHookPath;
  std::string state_dir = "/run/gpuslice";
  std::string interposer_path = installed::kInterposerPath;
  std::string shim_path; // empty: gpuslice-shim beside the running gpuslice-runtime
  bool accept_gpushare_env = false;
  // [log]
  log::Options log;
  // [monitor] (gpuslice-shim: shim/enforcer.hpp)
  int monitor_interval_ms = 1000;
  std::string monitor_action = "log";       // log, kill, freeze
  std::string monitor_memory_tolerance = "0"; // a size
  std::string monitor_nvml_path = "libnvidia-ml.so.1";
  // [admission]
  int max_containers_per_gpu = 20;
  bool allow_memory_overcommit = false;
  // [selinux] (docs/selinux.md)
  std::string selinux_label = "auto"; // auto, on, off
  std::string selinux_shared_file_label = "system_u:object_r:container_ro_file_t:s0";
  // The keys the config file set ("runtime.hook-path"); the others are the
  // compiled-in defaults above.
  std::set<std::string> from_file;
  // A field added here goes with the key that sets it into
  // test_common.cpp's every_key(), which checks that each key is read.

  bool operator==(const Config &) const = default;
};

// Path from $GPUSLICE_CONFIG (read with secure_getenv) or the default.
std::string config_path();

// Parses TOML text; `origin` names it in errors.
Config parse_config(const std::string &toml_text, const std::string &origin);

// The text of config file `path`; nullopt when there is none (the
// defaults), any other failure throws.
std::optional<std::string> read_config_text(const std::string &path);

// Loads `path`; a missing file gives the defaults, any other failure throws.
Config load_config(const std::string &path);

// Every key a config file may set, as "table.key".
std::vector<std::string> config_keys();

} // namespace gpuslice
