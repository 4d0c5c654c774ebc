// What the create path's steps hand each other (create.hpp says in which
// order): the call's context, the host's facts, and the plan the modifiers
// make of them.
#pragma once

#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/create/admission.hpp"
#include "gpuslice/create/container_limits.hpp"
#include "gpuslice/create/image.hpp"
#include "gpuslice/create/requests.hpp"
#include "gpuslice/selinux/labeler.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/state/record.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuslice::create {

// Whether the spec gets gpuslice-hook at createRuntime: `run` (runc
// creates, starts and waits in one call: only a hook sees the init), not
// `create` (the runtime records the init itself) nor gpuslice-hook's own.
enum class HookMode { add, none };

// Who asks and where: the call, nothing of the host.
struct Context {
  const Config &config;
  std::string config_file; // passed on to gpuslice-hook when not the default
  std::string container_id;
  std::string state_path; // <state-dir>/containers/<id>
  std::string bundle_dir;
  HookMode hooks = HookMode::none;
};

// What the host says, gathered before any modifier runs (facts.cpp): the
// modifiers read nothing else.
struct Facts {
  Requests requests;
  cdi::ContainerEdits edits;                     // the requested devices', merged in request order
  std::map<std::string, std::string> host_nodes; // the edits' device nodes: container path -> host path
  // What lstat says of each host path of those nodes, or why it could not.
  struct HostDevice {
    cdi::HostNode node;
    std::string error;
  };
  std::map<std::string, HostDevice> host_devices;
  std::vector<ClaimedEnv> claimed;
  // Limited devices the engine applied itself before the runtime ran
  // (containerd 1.7+ and CRI-O apply the CRI CDIDevices field, which never
  // reaches the runtime): recognised by their GPUSLICE_ env and their
  // device nodes in config.json (facts.cpp). Their limits are in `claimed`;
  // their edits are not applied again.
  std::vector<std::string> applied;
  std::vector<std::string> warnings;             // spec files that failed to load (the others were used)
  std::optional<sharing::Limits> limits;         // the container's, when it has any
  // With limits:
  std::string rootfs; // the container's root on the host, absolute
  std::optional<ImageFacts> image;
  std::optional<AdmissionFacts> admission; // read under the containers dir's lock, held here until the commit
  UniqueFd admission_lock;
  // Whether the kernel has SELinux (asked only when config.selinux_label is not off).
  bool selinux_kernel = false;

  // Nothing for gpuslice to do: the runtime is exec'd with config.json untouched.
  bool asks_nothing() const { return requests.empty() && applied.empty(); }
};

// What the modifiers make: the state the create commits besides the spec.
struct Plan {
  state::Record record;                                   // the state dir's record (its creator: commit's)
  std::vector<std::pair<std::string, std::string>> files; // bind-mounted files of the state dir -> text (0444)
  bool monitor = false;                                   // the usage region, its socket, the monitor
  bool burst = false;                                     // the monitor publishes to the activity table
  selinux::Labeler labeler;                               // labels what commit makes (inactive: none)
  // Directories the image lacks that gpuslice pins (/etc, /run), made in
  // the container's root before the runtime mounts them onto themselves.
  std::vector<std::string> image_dirs;
  std::vector<std::string> warnings;                      // for the caller to log once the create is done
  std::vector<std::string> notes;                         // the same, at info
};

} // namespace gpuslice::create
