// What the API server allocated to one ResourceClaim on this node, read
// from the claim object as the API server returns it (resource.k8s.io v1,
// v1beta2 and v1beta1 hold status.allocation in the same shape): the
// devices this driver serves from this node's pool, the memory each
// consumes (consumable capacity, KEP-5075), its share id, and the
// GpuShareConfig that applies to it.
//
// Why only status.allocation: it is what the scheduler decided and the API
// server admitted (the trust model, docs/kubernetes.md). A claim's spec,
// annotations and labels are its author's and are never read; the opaque
// configurations that count are the ones the allocation copied from the
// DeviceClass and the claim.
#pragma once

#include "gpuslice/dra/share_config.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuslice::dra {

// A claim as kubelet names it (the DRA API's Claim message).
struct ClaimRef {
  std::string namespace_name, uid, name;
};

struct AllocatedDevice {
  std::string request;            // the claim's request ("gpu", or "gpu/small": a subrequest)
  std::string device;             // its name in the pool
  std::optional<uint64_t> memory; // consumedCapacity.memory in bytes; none: the whole device
  std::string share_id;           // shareID of a device allocated to several claims, else ""
  ShareConfig config;             // the class's configurations, then the claim's, in their order
  bool operator==(const AllocatedDevice &) const = default;
};

// The devices of `driver` in `pool` allocated to the claim, in the
// allocation's order. Throws Error naming the claim: another uid than
// kubelet's (the claim was deleted and made again), no allocation, a
// result or configuration that is not what the API defines, a memory that
// is no quantity, a GpuShareConfig that does not parse.
std::vector<AllocatedDevice> allocated_devices(const nlohmann::json &claim, const ClaimRef &ref,
                                               const std::string &driver, const std::string &pool);

} // namespace gpuslice::dra
