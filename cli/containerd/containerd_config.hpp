// `gpuslice configure containerd`: registers the gpuslice runtime handler in
// containerd's CRI plugin, and takes it out again.
//
// Why it is built as a plan: every file change is computed first (pure apart
// from reading the files), then either printed (--dry-run) or applied. The
// unit tests check plans and applied results against sample configs; the
// front end only prints them.
//
// What it writes, per containerd config version (docs/configure-containerd.md):
//  - version 2 and 3: a drop-in file (default <config dir>/conf.d/99-gpuslice.toml)
//    that carries the WHOLE CRI plugin table (a copy of the effective one, plus
//    the gpuslice handler), because containerd before 2.1 replaces a plugin's
//    table by key when it merges imports; plus an `imports` entry in the main
//    file unless an existing entry already covers the drop-in.
//  - version 1 (no imports in practice): a marked block appended to the main file.
#pragma once

#include "gpuslice/common/install_paths.hpp"

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpuslice::containerd {

struct ConfigureOptions {
  std::string config_path = "/etc/containerd/config.toml";
  std::string drop_in_path; // empty: <dir of config_path>/conf.d/99-gpuslice.toml
  std::string runtime_path = installed::kRuntimePath;
  std::string handler_name = "gpuslice";
  bool set_as_default = false;
};

// One file operation of a plan.
struct FileChange {
  enum class Kind { write, remove };
  Kind kind = Kind::write;
  std::string path;
  std::string content;                   // for write
  mode_t mode = static_cast<mode_t>(-1); // for write: -1 keeps the replaced file's mode (0644 when new)
  std::string summary;                   // one line for the user
};

struct Plan {
  std::vector<FileChange> changes; // in the order they must be applied; empty: nothing to do
  std::vector<std::string> notes;  // things the user should know (stale copies, restarts)
};

// The annotation patterns the handler passes through to the OCI spec.
const std::vector<std::string> &handler_annotation_patterns();

// <dir of config_path>/conf.d/99-gpuslice.toml
std::string default_drop_in_path(const std::string &config_path);

// containerd's config version of a parsed file: the `version` key, 1 without it.
int config_version_of(const std::string &text, const std::string &source_name);

// The key under `plugins` of the table that holds `containerd.runtimes` for a
// config version: "cri", "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime".
std::string runtime_plugin_key(int version);

Plan plan_configure(const ConfigureOptions &options);
Plan plan_remove(const ConfigureOptions &options);

// Applies the changes in order; creates the drop-in's directory when missing.
void apply(const Plan &plan);

// Human-readable account of a plan: with dry_run, every file's full new
// content; otherwise one line per change.
std::string describe(const Plan &plan, bool dry_run);

} // namespace gpuslice::containerd
