// The node-wide activity table of the burst policy (layout in
// gpuslice/region.h): which container is busy on which GPU, so that a burst
// container knows whether it runs alone. Written only on the host, by each
// container's monitor for its own container; mounted read-only into burst
// containers, which read it with pread. Created once at its fixed size and
// never resized.
#pragma once

#include "gpuslice/common/fd.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace gpuslice::sharing {

// Creates the table when missing (mode 0644, owner: the caller), or checks
// the existing one (a regular file of the right size, not a symlink). Returns
// a read-write descriptor of its own. Throws Error naming the path.
UniqueFd open_activity_table(const std::string &path);

// One container's entries in the table, one per GPU it is busy on. An entry
// is claimed with an OFD write lock on its lock byte (the kernel drops it
// when the monitor dies, so a dead monitor's entry can be taken over).
class ActivityPublisher {
public:
  ActivityPublisher(UniqueFd table, uint64_t owner) : table_(std::move(table)), owner_(owner) {}
  ~ActivityPublisher();
  ActivityPublisher(const ActivityPublisher &) = delete;
  ActivityPublisher &operator=(const ActivityPublisher &) = delete;

  // Says the container is busy on GPU (uuid_lo, uuid_hi) until `until`
  // (CLOCK_MONOTONIC ns). False when every entry is taken.
  bool publish(uint64_t uuid_lo, uint64_t uuid_hi, uint64_t until);
  // Frees every entry of this container.
  void clear();
  // clear(), then the table's descriptor, for whoever publishes next; this
  // publisher publishes nothing more.
  UniqueFd release();

private:
  UniqueFd table_;
  uint64_t owner_;
  std::map<std::pair<uint64_t, uint64_t>, unsigned> entries_;
};

} // namespace gpuslice::sharing
