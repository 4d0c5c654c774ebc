// What gpuslice-hook must do itself when no runtime wrapper edited the
// container's spec (podman, CRI-O, a plain runc or crun with the hook in
// config.json): the difference between the spec the engine ran and the
// spec gpuslice-runtime would have written. At prestart the engine has
// already made its mounts and device nodes, so only what is new is done,
// never twice: a device or mount the engine applied already (its own CDI
// support) is not in the difference.
//
// Pure: the seam between planning (unit-tested without root) and the
// side effects (in_container.hpp, device_cgroup.hpp, spec_hooks.hpp).
#pragma once

#include "gpuslice/cdi/apply.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpuslice::hook {

struct NodeToMake {
  std::string path;      // in the container, absolute
  std::string host_path; // the node on the host (CDI hostPath; else path): bound instead in a user namespace
  char type = 'c';       // c, b or p
  int64_t major = 0, minor = 0;
  uint32_t mode = 0666; // permission bits
  uint32_t uid = 0, gid = 0;
};

struct BindToMake {
  std::string source;      // on the host; in_rootfs: a path inside the container's root
  std::string destination; // in the container, absolute
  bool recursive = false;
  bool in_rootfs = false;  // a pin: the container's own directory bound onto itself
  uint64_t attributes = 0; // MOUNT_ATTR_RDONLY, _NOSUID, _NODEV, _NOEXEC
};

struct DeviceRule {
  char type = 'a';                // a, c or b
  int64_t major = -1, minor = -1; // -1: any
  std::string access = "rwm";
};

struct HookToRun {
  std::string stage;
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  int timeout = 0; // seconds; 0: none given
};

struct Injection {
  std::vector<NodeToMake> nodes;
  std::vector<BindToMake> mounts; // in the order to make them: parents first
  std::vector<DeviceRule> rules;  // device cgroup: allow
  std::vector<HookToRun> hooks;   // the CDI spec's, in stage order
  std::vector<std::string> env;   // process env the spec adds, which no hook can give a created process
  bool empty() const { return nodes.empty() && mounts.empty() && rules.empty() && hooks.empty(); }
};

// The difference. `rootfs`: the container's root as the engine mounted it
// (absolute), which tells a pin from a host source. Throws Error for what
// the hook cannot do faithfully (a mount that is not a bind, an unknown
// mount option, a hook of a stage already past when the hook runs), so
// that such a container fails instead of running without part of its
// device.
// `host_nodes`: container path -> host path of the edits' device nodes.
Injection plan_injection(const cdi::OciSpec &before, const cdi::OciSpec &after, const std::string &rootfs,
                         const std::map<std::string, std::string> &host_nodes = {});

} // namespace gpuslice::hook
