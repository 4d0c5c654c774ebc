// The create path as a list of steps over the typed spec (the shape of the
// NVIDIA toolkit's modifier list): each modifier only changes the spec and
// declares what the host must hold for the container (files in its state
// dir, its monitor); `commit` then performs every side effect, with one
// rollback. A new concern (SELinux labels, admission) is one more modifier.
#pragma once

#include <sys/types.h>

#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/selinux/labeler.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuslice::create {

// What the host must hold for the container, declared by the modifiers.
struct HostPlan {
  std::vector<std::pair<std::string, std::string>> files; // name in the state dir -> content (0444)
  bool monitor = false;                                    // the usage region, its socket, the monitor
  bool burst = false;                                      // the monitor publishes to the activity table
  selinux::Labeler labeler;                                // labels what commit makes (inactive: none)
  std::optional<sharing::Limits> limits;                   // the container's: admitted per GPU (admission.hpp)
};

// A container's monitor made ready by commit_host (run/, the usage region
// and its socket, the monitor's arguments) but not yet started: `create`
// starts it once runc has made the init (take_monitor, or launch_monitor
// where runc runs as a child: monitor_start.hpp), so that its start-up does
// not compete with runc's create for the CPU and it watches the init from
// the first moment.
struct PendingMonitor {
  shim::MonitorSetup setup; // region, listener and activity table; nothing watched yet
  std::string program;         // gpuslice-shim
  std::vector<std::string> args;
};

struct CreateContext {
  BundleSpec &spec;
  const Config &config;
  std::string config_file;  // passed on to gpuslice-hook when not the default
  std::string container_id;
  std::string state_path;   // <state-dir>/containers/<id>, created by commit
  std::string rootfs;       // the container's root on the host, absolute
  HostPlan plan;
  std::vector<std::string> warnings; // for gpuslice-runtime to log once the create is done
  int init_pid = 0;                  // the container's init when it runs already (gpuslice-hook)
  bool defer_monitor = false;        // commit_host leaves the monitor in pending_monitor, not started
  std::optional<PendingMonitor> pending_monitor{};
};

class Modifier {
public:
  virtual ~Modifier() = default;
  // Changes ctx.spec and ctx.plan only; throws Error.
  virtual void modify(CreateContext &ctx) const = 0;
};

using Modifiers = std::vector<std::unique_ptr<Modifier>>;

// The claimed devices' CDI edits.
std::unique_ptr<Modifier> cdi_edits_modifier(cdi::ContainerEdits edits);
// gpuslice-hook at createRuntime.
std::unique_ptr<Modifier> hooks_modifier();
// The CDI env, recorded for `exec` (exec_env.hpp).
std::unique_ptr<Modifier> exec_env_modifier(std::vector<std::string> env);
// GPU limits: limits file, preload list, mounts, monitor (sharing.hpp).
std::unique_ptr<Modifier> sharing_modifier(sharing::Limits limits);
// SELinux labels for what commit makes, from the container's
// linux.mountLabel and process.selinuxLabel (selinux/labeler.hpp).
std::unique_ptr<Modifier> selinux_modifier(selinux::System &system = selinux::kernel());

// What a create asks for: the requested devices (none: the spec asks for
// nothing and ctx is untouched) and the spec files that failed to load.
struct CreatePlan {
  std::vector<std::string> devices;
  std::vector<std::string> warnings;
  std::map<std::string, std::string> host_nodes; // the edits' device nodes: container path -> host path
};
// Resolves ctx.spec's CDI requests and runs the create path's modifiers over
// it (ctx.spec and ctx.plan change, nothing else): gpuslice-runtime before
// runc, and gpuslice-hook, which then injects the difference itself. With
// HookMode::add, gpuslice-hook is added for createRuntime.
// Throws Error naming the device, spec or setting.
enum class HookMode { add, none };
CreatePlan plan_create(CreateContext &ctx, const std::string &bundle_dir, HookMode hooks);

// Performs ctx.plan on the host: admission for a container with limits, the
// state dir (stale ones collected first; a live id refused), its files, the
// region and monitor (of ctx.init_pid when set, else of the pid runc writes
// to pid_file; only made ready, in ctx.pending_monitor, with
// ctx.defer_monitor), each labelled by ctx.plan.labeler; then `finish`.
// A `pid_file` that exists is removed once the state dir is made. On
// failure (`finish`'s included) the state dir is removed. Throws Error.
state::ContainerDir commit_host(CreateContext &ctx, const std::string &pid_file,
                                const std::function<void(const state::ContainerDir &)> &finish);

// commit_host, finished by writing the spec to `config_json` (the pid file
// runc will write is request_pid_file, set to one in the state dir when
// empty). On failure nothing is left. Returns the state dir, still open.
state::ContainerDir commit(CreateContext &ctx, std::string &request_pid_file, const std::string &config_json);

// Writes `text` to a new file dir_fd/name (`shown` names the dir in errors)
// and labels it the container's read-only file. Throws Error.
void write_in(int dir_fd, const std::string &name, const std::string &text, mode_t mode, const std::string &shown,
              const selinux::Labeler &labeler);

// runtime.shim-path, or gpuslice-shim beside this very program.
std::string shim_program(const Config &config);

} // namespace gpuslice::create
