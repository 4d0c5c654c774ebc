// Which CDI devices a container asks for, read from its OCI spec:
//  - annotations whose key starts with a configured prefix (cdi.k8s.io/ by
//    default): how a DRA claim's or a device plugin's devices arrive;
//  - linux.devices entries whose path is a qualified CDI name (the CDI
//    edits drop them from the spec: they are not device nodes);
//  - NVIDIA_VISIBLE_DEVICES / GPUSLICE_VISIBLE_DEVICES, only when the config
//    accepts env requests: any pod author can set env, so on a shared node
//    this lets a pod reach every GPU a spec describes. Off by default.
#pragma once

#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/common/config.hpp"

#include <string>
#include <vector>

namespace gpuslice::create {

struct Requests {
  std::vector<std::string> devices; // qualified names, request order, no duplicates
  std::size_t from_annotations = 0; // devices[0, from_annotations) came from annotations
  bool empty() const { return devices.empty(); }
};

// Throws Error naming the annotation, device entry or variable that is not a
// valid request.
Requests collect_requests(const BundleSpec &spec, const Config &config);

// What in a config.json's bytes makes a create more than an exec of the
// runtime (for the front's record, runtime/front_record.hpp): the annotation
// prefixes, the env names of requests when accepted, and the limits' env
// names (refuse_limits_not_claimed, sharing.hpp). A spec that holds none
// (nor an escape, nor a CDI name in linux.devices) has no request.
std::vector<std::string> create_triggers(const Config &config);

// "0,1" / "GPU-uuid" / "all" / "vendor/class=name" from a *_VISIBLE_DEVICES
// value; "", "none" and "void" ask for nothing.
std::vector<std::string> devices_from_env_value(const std::string &value, const std::string &default_kind);

} // namespace gpuslice::create
