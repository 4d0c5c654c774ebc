// Host side of the shared usage region (layout in gpuslice/region.h and
// docs/region.md): create it for a container, read it without trusting it,
// and drop the usage of processes that died.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace gpuslice::sharing {

// Creates (or re-initialises when invalid) the region file, mode 0666 so that
// any user inside the container can map it. Throws Error naming the path.
void create_region(const std::string &path);

// Creates the node-wide activity file of the burst policy when missing.
void create_activity_file(const std::string &path);

struct DeviceUsage {
  std::array<uint8_t, 16> uuid{};
  uint64_t used = 0; // bytes, all live and dead-but-unreclaimed slots
};

struct RegionUsage {
  std::vector<DeviceUsage> devices;
  unsigned slots_in_use = 0; // slots with any usage
};

// Reads a copy of the region with read(2) (a tenant can truncate it under a
// mapping) and validates it; throws Error when it is not a valid region.
RegionUsage read_region(const std::string &path);

// Drops the usage of slots whose owner is dead; returns how many it dropped.
unsigned reclaim_dead_slots(const std::string &path);

} // namespace gpuslice::sharing
