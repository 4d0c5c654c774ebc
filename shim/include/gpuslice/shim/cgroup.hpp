// The cgroup of a container's init, as its monitor needs it: which
// processes are the container's (the driver reports host pids), and how to
// freeze them all at once. cgroup v2 (a unified hierarchy at
// /sys/fs/cgroup) or v1 (the freezer controller's hierarchy, hybrid hosts
// included).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpuslice::shim {

struct ContainerCgroup {
  std::string dir; // the cgroup's directory
  bool v2 = false;
};

// The path that /proc/PID/cgroup's text gives for the v2 hierarchy
// ("0::PATH") or for the v1 hierarchy holding `controller`; nullopt when
// none. (gpuslice-hook's device cgroup reads the same lines.)
std::optional<std::string> cgroup_path_in(const std::string &proc_cgroup, bool v2, const char *controller);

// nullopt when the process has no cgroup of its own (its cgroup is the
// root, or the monitor's own): nothing in it could be told from the host's.
std::optional<ContainerCgroup> cgroup_of(int pid, const std::string &root = "/sys/fs/cgroup");

// The pids in the cgroup and the cgroups below it.
std::vector<int> cgroup_processes(const ContainerCgroup &cgroup);

// Freezes every process in it (v2 cgroup.freeze, v1 freezer.state).
// Throws Error.
void freeze(const ContainerCgroup &cgroup);

} // namespace gpuslice::shim
