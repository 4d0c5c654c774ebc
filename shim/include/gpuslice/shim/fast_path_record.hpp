// The record gpuslice-runtime's fast path relies on (shim/fast_path/
// fast_path.h): the full program, the only one that parses the config,
// writes down what one config file's exact bytes and one $PATH resolve to,
// so that the entry can exec the runtime without starting the C library.
#pragma once

#include "gpuslice/common/build_id.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/shim/runtime.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::shim {

struct FastPathFacts {
  std::string writer; // the build id of the binary that writes it (own_build_id); empty: no record
  std::string config_path;
  std::optional<std::string> config_text; // nullopt: no file there (the defaults)
  std::optional<std::string> path_env;    // nullopt: $PATH unset
  FoundRuntime runtime;                   // what locate_runtime found, and where it looked first
  std::string state_dir; // the config's
  // What in a config.json makes the full program look at a create
  // (create_triggers, requests.hpp); nullopt: no create on the fast path.
  std::optional<std::vector<std::string>> create_triggers;
  // config_snapshot() of what config_text parsed to; nullopt: none kept.
  std::optional<std::string> config_parsed;
};

// What this build made of a config, as the record keeps it: this build's
// id, then encode_config's bytes; nullopt when the binary has no build id
// (another build could not tell the bytes are not its own).
std::optional<std::string> config_snapshot(const Config &config, const std::string &build_id = own_build_id());
// The config in `snapshot`, when this very build wrote it; nullopt for
// anything else, which the caller then parses from the text.
std::optional<Config> config_from_snapshot(std::string_view snapshot, const std::string &build_id = own_build_id());

// The record's bytes; nullopt when the fast path could not use one (no
// writer's build id, a relative path, a newline in a value, a config too large to hold, a
// record too large for the entry to read). The parsed config is left out
// of a record it would make too large.
std::optional<std::string> fast_path_record(const FastPathFacts &facts);

// Records kept in the records' dir: one per config path, and a node uses
// one (tests and benches make hundreds). A save that writes one removes the
// oldest past this many.
inline constexpr std::size_t kMaxFastPathRecords = 64;

// Saves the record of this run (the config as read, the runtime found and
// where it was looked for, this process's $PATH, and `config_parsed`:
// config_snapshot() of what `config_text` parsed to) into `dir`, unless the
// same is there already. Root only.
// Best effort, and silent: the fast path is an optimisation, and a failure
// here only costs the next calls their speed. `on_disk`: the record's bytes
// as the entry read them from `dir` moments ago (it checked that the dir
// and the file are root's alone), which spares reading them again.
void save_fast_path_record(const std::string &config_path, const std::optional<std::string> &config_text,
                           const FoundRuntime &runtime, const std::string &state_dir,
                           const std::vector<std::string> &create_triggers,
                           const std::optional<std::string> &config_parsed, const std::string &dir,
                           std::optional<std::string_view> on_disk = std::nullopt);

} // namespace gpuslice::shim
