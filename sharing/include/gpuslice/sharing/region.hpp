// Host side of the shared usage region (layout in gpuslice/region.h and
// docs/region.md): create it for a container, read it without trusting it,
// and drop the usage of processes that died.
//
// The region is a sealed memfd: nothing on any filesystem names it, it can
// neither shrink under a mapping nor grow, and it lives exactly as long as
// the monitor holding it and the processes mapping it. The monitor hands it
// to each process of the container over the region socket.
#pragma once

#include "gpuslice/common/fd.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::sharing {

// A fresh region (header written, counters zero), sealed against resizing.
// Throws Error.
UniqueFd create_region();

// Which region a descriptor is: its inode (a memfd's is unique while it
// lives). As the state dir records it: "DEV INO".
struct RegionId {
  uint64_t dev = 0, ino = 0;
  bool operator==(const RegionId &) const = default;
};
RegionId region_id(int region_fd); // throws Error
std::string to_text(const RegionId &id);
std::optional<RegionId> parse_region_id(std::string_view text);

// The region `id`, taken back from one of `pids` that maps it (their
// /proc/PID/map_files: root only), for a monitor started again after its
// predecessor died; the region lives as long as any process maps it. Only
// a mapping whose inode is `id` is opened, so nothing a process maps in
// its place is taken for the region. Empty when none maps it.
UniqueFd recover_region(const std::vector<int> &pids, const RegionId &id);
// Those of `pids` that map the region `id`: the processes that took it
// from a monitor that is gone (gpuslice-shim's --connected).
std::vector<int> processes_mapping(const std::vector<int> &pids, const RegionId &id);

struct DeviceUsage {
  std::array<uint8_t, 16> uuid{};
  uint64_t uuid_lo = 0, uuid_hi = 0; // as stored (a zero half is stored as 1)
  uint64_t used = 0;                 // bytes, live and dead-but-unreclaimed slots
  uint64_t busy_until = 0;           // burst: CLOCK_MONOTONIC ns, as the tenant wrote it
};

struct RegionUsage {
  std::vector<DeviceUsage> devices;
  unsigned slots_in_use = 0; // slots with any usage
};

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML and nvidia-smi name it.
std::string uuid_text(const std::array<uint8_t, 16> &uuid);

// Reads a copy of the region with pread and validates it (the tenant writes
// it); throws Error when it is not a valid region.
RegionUsage read_region(int region_fd);

// Drops the usage of slots whose owner is dead; returns how many it dropped.
unsigned reclaim_dead_slots(int region_fd);

// The container's id in the activity table (GS_CONTAINER_ID of the region).
uint64_t container_id(int region_fd);

} // namespace gpuslice::sharing
