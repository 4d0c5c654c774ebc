// gpuslice-hook update-ldcache --folder DIR...: the container's ld cache
// made to know the driver libraries a CDI spec mounted (the createContainer
// hook of the specs `gpuslice cdi generate` writes), by the host's ldconfig
// run in the sandbox of sandbox.hpp with only CAP_DAC_OVERRIDE (an image
// whose files belong to a mapped user). The folders are given on
// ldconfig's command line: the image's /etc/ld.so.conf is not changed.
//
// Where it runs: from the host (prestart, createRuntime, or gpuslice-hook
// running a spec's hooks in hook mode), it enters the mount namespace of
// the state's init; run by runc or crun at createContainer it is inside
// the container's namespaces already (its PID namespace is not the one
// /proc belongs to, and the state's pid means nothing on /proc) and stays
// in its own. Either way the root is the bundle's root.path, mounted there
// and not yet pivoted into.
#pragma once

#include "gpuslice/hook/state.hpp"

#include <string>
#include <vector>

namespace gpuslice::hook {

// The host's ldconfig: the first of these that is a static executable
// (Ubuntu's /sbin/ldconfig is a shell script around ldconfig.real).
inline const std::vector<std::string> kLdconfigCandidates = {"/sbin/ldconfig.real", "/sbin/ldconfig",
                                                            "/usr/sbin/ldconfig"};

// Folders: absolute, at most 64, each at most 4096 bytes, no NUL. Throws
// Error naming the folder or the failure (with ldconfig's last words).
void update_ldcache(const ContainerState &state, const std::vector<std::string> &folders,
                    const std::vector<std::string> &ldconfig_candidates = kLdconfigCandidates);

} // namespace gpuslice::hook
