// This node's pool: the devices gpuslice-kubelet-plugin publishes in its
// ResourceSlices and prepares claims from. One device per GPU, named
// "gpu-<minor>" after its /dev/nvidia<minor> (device names are DNS labels):
// not after its index, which shifts when a GPU before it is gone, and would
// then give an allocated name to another GPU. Its capacity is the GPU's
// memory; or, with slices N (for clusters without consumable capacity), N
// per GPU, "gpu-<minor>-slice-<k>", each with 1/N of the GPU's memory and
// compute as its enforced limits.
#pragma once

#include "gpuslice/nvidia/discover.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuslice::dra {

inline constexpr int kMaxSlices = 64;

struct PoolDevice {
  std::string name;
  std::size_t gpu = 0;                  // its GPU: an index into Driver::gpus
  uint64_t memory = 0;                  // bytes: the capacity "memory" it is published with
  std::optional<uint64_t> memory_limit; // with slices: its share, enforced
  std::optional<int> compute_limit;     // with slices: 100 / N
  bool operator==(const PoolDevice &) const = default;
};

// memory[i]: the memory of driver.gpus[i] in bytes. Throws Error for slices
// outside 0..kMaxSlices, or a GPU without a UUID (its limits could not be
// kept to it).
std::vector<PoolDevice> pool_devices(const nvidia::Driver &driver, const std::vector<uint64_t> &memory, int slices);

// The device of that name, or nullptr.
const PoolDevice *find_device(const std::vector<PoolDevice> &pool, const std::string &name);

} // namespace gpuslice::dra
