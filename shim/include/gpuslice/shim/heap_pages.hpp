// The heap pages a create is about to use, mapped in at once.
//
// Why: on a VM a page fault is an exit to the hypervisor (~10 us for a fresh
// page on a nested 2-core VM, 20 times what MADV_POPULATE_WRITE takes a
// page), and a create's parse of its config, config.json and CDI spec
// writes ~12 fresh pages at the top of the heap, one fault each. The entry
// (fast_path/startup_pages.h) does the same for the binary's own pages
// before glibc starts; the heap exists only after.
#pragma once

#include <cstddef>

namespace gpuslice::shim {

// What a create with limits writes of the heap, with room to spare.
inline constexpr std::size_t kCreateHeapBytes = 64 * 1024;

// Populates up to `bytes` of the heap's top chunk (glibc's main arena,
// where the next allocations come from), never past the break. Best effort:
// nothing happens under an allocator that is not glibc's (a sanitizer's) or
// on a kernel without MADV_POPULATE_WRITE (before 5.14).
void map_in_heap_top(std::size_t bytes = kCreateHeapBytes);

} // namespace gpuslice::shim
