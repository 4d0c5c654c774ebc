// Any bytes as a container's usage region, which the tenant can write:
// what the monitor reads of it every interval (read_region, the dead-slot
// reclaim that writes into it, the container id) must succeed or throw
// gpuslice::Error; nothing else may escape, crash or read out of bounds.
// The first byte picks the file's size: the input's own (short, long), or
// the region's with the input at its start.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/sharing/region.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  static const int fd = ::memfd_create("fuzz-region", MFD_CLOEXEC);
  if (fd < 0 || size == 0)
    return 0;
  const bool exact = data[0] & 1;
  data++;
  size--;
  if (::ftruncate(fd, 0) != 0 || ::ftruncate(fd, static_cast<off_t>(exact ? GS_REGION_SIZE : size)) != 0)
    return 0;
  if (size && ::pwrite(fd, data, exact && size > GS_REGION_SIZE ? GS_REGION_SIZE : size, 0) < 0)
    return 0;
  try {
    (void)gpuslice::sharing::read_region(fd);
    (void)gpuslice::sharing::reclaim_dead_slots(fd);
    (void)gpuslice::sharing::read_region(fd);
  } catch (const gpuslice::Error &) {
  }
  try {
    (void)gpuslice::sharing::container_id(fd);
  } catch (const gpuslice::Error &) {
  }
  return 0;
}
