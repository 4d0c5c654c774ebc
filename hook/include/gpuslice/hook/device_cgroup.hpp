// Letting a running container open the device nodes gpuslice-hook made:
// its engine set up the device cgroup at create from the spec it had, which
// did not hold them.
//
// cgroup v1: one line per rule in the container's devices.allow.
// cgroup v2: device access is decided by BPF_CGROUP_DEVICE programs, and
// with BPF_F_ALLOW_MULTI every program attached must allow an access. So an
// added program could never allow what runc's denies; instead each program
// attached to the container's cgroup is replaced, atomically
// (BPF_F_REPLACE), by a copy of itself behind a prelude that allows the new
// nodes: the engine's rules stay exactly as they were for everything else.
// A rule is checked by type, major, minor and access (r, w, m).
//
// Engines that rebuild the program later (`runc update`) drop the prelude,
// as they drop any hook's additions.
#pragma once

#include "gpuslice/hook/injection.hpp"

#include <linux/bpf.h>

#include <string>
#include <vector>

namespace gpuslice::hook {

// Both hierarchies of the process `pid`, whichever it is in. Throws Error
// naming the cgroup.
void allow_devices(int pid, const std::vector<DeviceRule> &rules);

// The parts, for tests. A v1 devices cgroup directory; a cgroup2 directory.
void allow_devices_v1(const std::string &cgroup_dir, const std::vector<DeviceRule> &rules);
void allow_devices_v2(const std::string &cgroup_dir, const std::vector<DeviceRule> &rules);

// The prelude: with r1 the bpf_cgroup_dev_ctx, returns 1 for an access a
// rule allows and falls through (r1 kept) otherwise.
std::vector<bpf_insn> allow_prelude(const std::vector<DeviceRule> &rules);

// A loaded BPF_PROG_TYPE_CGROUP_DEVICE program of `insns` (fd); for tests,
// a program that stands in for the engine's. Throws Error with the
// verifier's log.
int load_device_program(const std::vector<bpf_insn> &insns);

// Attaches it to the cgroup2 directory with `flags` (BPF_F_ALLOW_MULTI...).
void attach_device_program(const std::string &cgroup_dir, int prog_fd, unsigned flags);

// "c 195:0 rwm", "a *:* rwm": a rule as devices.allow takes it.
std::string v1_rule_text(const DeviceRule &rule);

} // namespace gpuslice::hook
