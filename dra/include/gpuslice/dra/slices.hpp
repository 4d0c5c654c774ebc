// This node's ResourceSlice: the pool as the scheduler sees it. One slice
// per node and driver, named "<node>-<driver>", owned by the Node object
// (deleted with it), its pool named after the node. Each device has its
// GPU's attributes (uuid, productName, driverVersion, index) and capacity
// "memory" in bytes; without slices a device may be allocated to several
// claims at once (allowMultipleAllocations: consumable capacity, each
// claim taking the memory it asks for).
#pragma once

#include "gpuslice/dra/pool.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gpuslice::dra {

struct SliceContext {
  std::string driver_name, node_name, node_uid;
  const nvidia::Driver &driver;
  const std::vector<PoolDevice> &pool;
  bool shared = true; // one device per GPU, several claims on it
};

std::string slice_name(const std::string &node_name, const std::string &driver_name);

// The slice in resource.k8s.io `version`'s shape: v1 and v1beta2 list a
// device's attributes and capacity in the device, v1beta1 under "basic".
// Throws Error for another version.
nlohmann::json resource_slice(const SliceContext &context, const std::string &version, long generation);

} // namespace gpuslice::dra
