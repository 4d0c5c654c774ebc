// Applying CDI container edits to an OCI runtime spec held as JSON. Fields the
// edits do not touch are kept as they were, unknown ones included, in their
// original order (ordered_json).
#pragma once

#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/cdi/spec.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuslice::cdi {

using OciSpec = nlohmann::ordered_json;

// What lstat() says about a host device node; the seam that lets tests and
// fuzzers fill nodes without touching the host.
struct HostNode {
  std::string type; // b, c, p, or "" for anything else
  int64_t major = 0, minor = 0;
  uint32_t mode = 0; // permission bits
};
using HostNodeLookup = std::function<HostNode(const std::string &host_path)>;

// lstat()s the path; throws Error naming it when it cannot.
HostNode lstat_host_node(const std::string &host_path);

// Applies `edits` to `oci` in the CDI order: env, device nodes, net devices,
// mounts (then a stable sort by destination depth), hooks, intelRdt,
// additional gids. On error `oci` may be partly edited: callers that need
// all-or-nothing use inject_devices().
void apply_edits(OciSpec &oci, const ContainerEdits &edits, const HostNodeLookup &lookup = lstat_host_node);

// The merged edits of `devices` in request order: the first time a spec is
// seen its spec-level edits, then the device's. Throws Error listing every
// unresolved device and the dirs searched; duplicates are applied once.
ContainerEdits collect_edits(const Registry &registry, const std::vector<std::string> &devices);

// Resolves and applies, all or nothing: on any error `oci` is unchanged.
void inject_devices(const Registry &registry, OciSpec &oci, const std::vector<std::string> &devices,
                    const HostNodeLookup &lookup = lstat_host_node);

} // namespace gpuslice::cdi
