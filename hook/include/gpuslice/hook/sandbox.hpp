// Running a host program over a container's root, the root filesystem being
// hostile input: what gpuslice-hook update-ldcache does with the host's
// ldconfig (CVE-2025-23267 was ldconfig following an image's link out of
// the root, as root on the host).
//
// The program is opened on the host before anything of the container is
// looked at, and must be a static executable: it is exec'd by descriptor
// inside the container's root, so no loader, library or file of the
// container is ever executed, and nothing of the host remains reachable.
// A forked child:
//  - enters the container's mount namespace (pidfd of its init), or stays
//    in the caller's when the caller runs in it already;
//  - unshares new PID, IPC, UTS and network namespaces; the program is
//    pid 1 of its own PID namespace, killed with its parent;
//  - chroots into the root (resolved in that namespace);
//  - sets resource limits (CPU time, address space, file size, open files,
//    no core);
//  - drops every capability but the ones asked for, from the bounding set
//    too (a root exec would otherwise get them back), then
//    PR_SET_NO_NEW_PRIVS;
//  - loads a seccomp filter (libseccomp): an allowlist of file and memory
//    system calls, EPERM for everything else, and a kill for what could
//    reach outside the sandbox (mount, namespaces, ptrace, bpf, modules,
//    keys, chroot);
//  - execveat()s the descriptor with an empty environment.
#pragma once

#include "gpuslice/common/fd.hpp"
#include "gpuslice/hook/child.hpp"

#include <string>
#include <vector>

namespace gpuslice::hook {

struct SandboxedRun {
  std::string root;            // chroot here (as the target mount namespace sees it)
  int mount_ns_of = 0;         // enter this process's mount namespace first; 0: the caller's
  std::vector<int> keep_caps;  // CAP_* values kept (effective and permitted)
  int timeout_s = 30;          // wall clock, then SIGKILL
};

// How it ended (signal SIGSYS: the seccomp kill).
using SandboxResult = ChildEnd;

// A descriptor of the static executable `path` on the host. Throws Error
// when it is not a regular file, not an ELF executable, or asks for a
// program interpreter (a dynamic one).
UniqueFd open_static_executable(const std::string &path);

// Runs `program` (from open_static_executable) with `argv`. Throws Error
// when the sandbox cannot be set up (the message names the step); a
// program that fails is reported in the result.
SandboxResult run_sandboxed(const SandboxedRun &how, int program, const std::vector<std::string> &argv);

} // namespace gpuslice::hook
