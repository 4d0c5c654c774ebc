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
#include "gpuslice/shim/bundle_spec.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuslice::shim {

// What the host must hold for the container, declared by the modifiers.
struct HostPlan {
  std::vector<std::pair<std::string, std::string>> files; // name in the state dir -> content (0444)
  bool monitor = false;                                    // the usage region, its socket, the monitor
  bool burst = false;                                      // the monitor publishes to the activity table
  selinux::Labeler labeler;                                // labels what commit makes (inactive: none)
  std::optional<sharing::Limits> limits;                   // the container's: admitted per GPU (admission.hpp)
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
// gpuslice-hook at createRuntime and poststop.
std::unique_ptr<Modifier> hooks_modifier();
// The CDI env, recorded for `exec` (exec_env.hpp).
std::unique_ptr<Modifier> exec_env_modifier(std::vector<std::string> env);
// GPU limits: limits file, preload list, mounts, monitor (sharing.hpp).
std::unique_ptr<Modifier> sharing_modifier(sharing::Limits limits);
// SELinux labels for what commit makes, from the container's
// linux.mountLabel and process.selinuxLabel (selinux/labeler.hpp).
std::unique_ptr<Modifier> selinux_modifier(selinux::System &system = selinux::libselinux());

// Performs ctx.plan, then writes the spec to `config_json`: admission for a
// container with limits, the state dir (stale ones collected first; a live
// id refused), its files, the region and monitor, each labelled by
// ctx.plan.labeler (the pid file runc will write is request_pid_file, set to one
// in the state dir when empty). On failure nothing is left.
void commit(CreateContext &ctx, std::string &request_pid_file, const std::string &config_json);

// Writes `text` to a new file dir_fd/name (`shown` names the dir in errors)
// and labels it the container's read-only file. Throws Error.
void write_in(int dir_fd, const std::string &name, const std::string &text, mode_t mode, const std::string &shown,
              const selinux::Labeler &labeler);

// runtime.shim-path, or gpuslice-shim beside this very program.
std::string shim_program(const Config &config);

} // namespace gpuslice::shim
