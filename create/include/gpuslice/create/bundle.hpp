// What `gpuslice-runtime create` does to a bundle before runc sees it: find
// the container's GPU requests, apply their CDI edits, add gpuslice-hook, and
// replace config.json atomically. A container that asks for nothing is not
// touched at all (not even rewritten), so it pays only for reading its spec.
#pragma once

#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/create/modifiers.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <chrono>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace gpuslice::create {

// What `create` was asked: the bundle, the container id, and the pid file
// runc will write (set by prepare_bundle to one in the state dir when the
// caller gave none and the container gets state: the caller then passes it
// on to runc, and reads the init's pid from it; one already there, an
// earlier container's, is removed first).
struct CreateRequest {
  std::string bundle_dir;
  std::string container_id;
  std::string pid_file;
  // `create`: the monitor of a container with limits is made ready but
  // not started (BundleEdit::monitor); the caller starts it once runc has
  // made the init.
  bool defer_monitor = false;
};

struct BundleEdit {
  bool written = false;
  std::vector<std::string> devices;  // what was injected
  std::vector<std::string> warnings; // spec files that failed to load (others were used)
  bool shared = false;               // GPU limits were wired in
  std::optional<PendingMonitor> monitor{}; // with defer_monitor: to start (monitor_start.hpp)
  state::ContainerDir state_dir{};         // when written: the container's, still open
};

// Throws Error naming the device, spec or file; config.json is then untouched
// and nothing is left in the state dir. A container with a device gets its
// state dir (<state-dir>/containers/<container_id>); one with GPU limits
// also the limits file, preload list and region socket, their mounts (see
// sharing.hpp), and its monitor (sharing/monitor.hpp). With HookMode::add,
// gpuslice-hook records the init at createRuntime (`run`, where nothing
// else sees the init before the container ends); `create` records it
// itself (lifecycle.hpp).
BundleEdit prepare_bundle(CreateRequest &request, const Config &config, const std::string &config_file,
                          HookMode hooks);

// A create's or run's bundle directory: `bundle` (--bundle), else the
// current one.
inline std::string bundle_dir(const std::string &bundle) { return bundle.empty() ? std::string(".") : bundle; }

// Removes what creates killed while writing the bundle's config.json
// left there (fs::remove_stale_temporaries); `bundle` as bundle_dir takes it.
void tidy_bundle(const std::string &bundle);

// The pid file in the state dir runc writes when the caller named none.
inline constexpr const char *kInitPidFile = "init.pid";

// How often a create looks for stale state dirs (a create killed half-way,
// a container whose delete never came): each costs a little memory and,
// with limits, a place on a GPU until then (admission collects before it
// refuses).
inline constexpr std::chrono::seconds kStaleCollectionInterval{60};

// Adds gpuslice-hook for createRuntime with an explicit minimal
// environment: never the container's, whatever the runtime and stage would
// otherwise pass (an image's LD_PRELOAD reaching a host hook is how
// CVE-2025-23266 happened). `config_file` is passed on when not the default.
void add_gpuslice_hooks(cdi::OciSpec &oci, const Config &config, const std::string &config_file);

} // namespace gpuslice::create
