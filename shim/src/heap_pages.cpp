#include "gpuslice/shim/heap_pages.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace gpuslice::shim {

void map_in_heap_top(std::size_t bytes) {
  // glibc's main arena grows by brk, its top chunk ending at the break:
  // mallinfo2's keepcost is that chunk's size.
  const struct mallinfo2 info = ::mallinfo2();
  void *const brk_end = ::sbrk(0);
  if (brk_end == reinterpret_cast<void *>(-1) || info.keepcost == 0)
    return;
  const auto end = reinterpret_cast<std::uintptr_t>(brk_end);
  if (info.keepcost > end)
    return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t start = (end - info.keepcost) & ~(page - 1);
  const std::uintptr_t stop = std::min(end, start + bytes);
  if (start < stop)
    ::madvise(reinterpret_cast<void *>(start), stop - start, MADV_POPULATE_WRITE);
}

} // namespace gpuslice::shim
