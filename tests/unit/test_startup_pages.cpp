// Which of gpuslice-runtime's pages its entry maps in before glibc starts
// (shim/fast_path/startup_pages.h), and the heap's top that main maps in
// (shim/heap_pages.hpp): the ranges lie in the segments they are for, and
// are ones the kernel takes.
#include "gpuslice/shim/heap_pages.hpp"

#include "../../shim/fast_path/startup_pages.h"

#include <catch2/catch.hpp>

#include <malloc.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace {

Elf64_Phdr load(unsigned long vaddr, unsigned long filesz, unsigned long memsz, unsigned flags) {
  Elf64_Phdr p{};
  p.p_type = PT_LOAD;
  p.p_vaddr = vaddr;
  p.p_filesz = filesz;
  p.p_memsz = memsz;
  p.p_flags = flags;
  return p;
}

// gpuslice-runtime's program headers as lld linked them (readelf -lW).
std::vector<Elf64_Phdr> runtime_headers() {
  Elf64_Phdr tls{};
  tls.p_type = PT_TLS;
  tls.p_vaddr = 0x4c5810;
  tls.p_memsz = 0x148;
  Elf64_Phdr stack{};
  stack.p_type = PT_GNU_STACK;
  stack.p_flags = PF_R | PF_W;
  Elf64_Phdr relro{}; // lld's: the first writable segment, to its page's end
  relro.p_type = PT_GNU_RELRO;
  relro.p_vaddr = 0x4c5810;
  relro.p_memsz = 0xc7f0;
  return {load(0x200000, 0x7d9ac, 0x7d9ac, PF_R), load(0x27e9c0, 0x245e50, 0x245e50, PF_R | PF_X),
          load(0x4c5810, 0xb998, 0xb998, PF_R | PF_W), load(0x4d21c0, 0x2628, 0x127b68, PF_R | PF_W), tls, stack,
          relro};
}

struct Range {
  unsigned long start, end;
  int write;
  bool operator==(const Range &o) const { return start == o.start && end == o.end && write == o.write; }
};

std::ostream &operator<<(std::ostream &os, const Range &r) {
  return os << std::hex << "[0x" << r.start << ", 0x" << r.end << (r.write ? ") write" : ") read");
}

std::vector<Range> pages(const std::vector<Elf64_Phdr> &h, unsigned long bias, unsigned long stack,
                         gpuslice_fp_hot_ends hot, int max = 32) {
  std::vector<gpuslice_fp_page_range> out(static_cast<std::size_t>(max));
  const int n = gpuslice_fp_startup_pages(h.data(), h.size(), bias, 4096, stack, hot, out.data(), max);
  REQUIRE(n >= 0);
  REQUIRE(n <= max);
  std::vector<Range> r;
  for (int i = 0; i < n; ++i)
    r.push_back({out[i].start, out[i].end, out[i].write});
  return r;
}

} // namespace

TEST_CASE("startup pages: an ordered link maps in its text and bss up to the markers", "[fast-path]") {
  const unsigned long sp = 0x7fffe5a47e58;
  const std::vector<Range> want = {
      {0x27e000, 0x32a000, 0}, // text up to gpuslice_hot_text_end (0x329580)
      {0x4c0000, 0x4c5000, 0}, // the text's last 16 KiB: .fini, .iplt
      {0x4c5000, 0x4c8000, 1}, // .tdata, .data.rel.ro up to gpuslice_hot_relro_end (0x4c7d68)
      {0x4d1000, 0x4d2000, 0}, // the segment's last page: the GOT, read
      {0x4d2000, 0x4d5000, 1}, // .data
      {0x4d5000, 0x4d9000, 1}, // .bss up to gpuslice_hot_bss_end (0x4d8980)
      {0x7fffe5a43000, 0x7fffe5a47000, 1}, // the stack below the entry's
  };
  CHECK(pages(runtime_headers(), 0, sp, {0x329580, 0x4c7d69, 0x4d8981}) == want);
  // none of the read-only segment: a create reads 2 or 3 of its pages
  for (const Range &r : pages(runtime_headers(), 0, sp, {0x329580, 0x4c7d69, 0x4d8981}))
    CHECK((r.end <= 0x200000 || r.start >= 0x27e000));
}

TEST_CASE("startup pages: without markers, all the text and no bss", "[fast-path]") {
  const std::vector<Range> want = {{0x27e000, 0x4c5000, 0}, {0x4c5000, 0x4d2000, 1}, {0x4d2000, 0x4d5000, 1}};
  CHECK(pages(runtime_headers(), 0, 0, {0, 0, 0}) == want);
  // markers that lie outside their segments count for none
  CHECK(pages(runtime_headers(), 0, 0, {0x4d0000, 0x4d2100, 0x27f000}) == want);
  CHECK(pages(runtime_headers(), 0, 0, {0x27e9c0, 0x4c5810, 0x4d21c0 + 0x127b68 + 1}) == want);
  // a hot end within the tail: the text is one range
  CHECK(pages(runtime_headers(), 0, 0, {0x4c2000, 0, 0})[0] == Range{0x27e000, 0x4c5000, 0});
}

TEST_CASE("startup pages: a PIE's segments are where its bias puts them", "[fast-path]") {
  // the bias: where PT_PHDR says the table is against where it was loaded
  std::vector<Elf64_Phdr> with_phdr = runtime_headers();
  Elf64_Phdr self{};
  self.p_type = PT_PHDR;
  self.p_vaddr = 0x40;
  with_phdr.insert(with_phdr.begin(), self);
  CHECK(gpuslice_fp_load_bias(with_phdr.data(), with_phdr.size()) ==
        reinterpret_cast<unsigned long>(with_phdr.data()) - 0x40);
  const std::vector<Elf64_Phdr> static_headers = runtime_headers(); // no PT_PHDR
  CHECK(gpuslice_fp_load_bias(static_headers.data(), static_headers.size()) == 0);

  const unsigned long bias = 0x555555554000;
  const auto r = pages(runtime_headers(), bias, 0, {bias + 0x329580, bias + 0x4c7d69, bias + 0x4d8981});
  REQUIRE(r.size() == 6);
  CHECK(r[0] == Range{bias + 0x27e000, bias + 0x32a000, 0});
  CHECK(r[3] == Range{bias + 0x4d1000, bias + 0x4d2000, 0});
  CHECK(r[5] == Range{bias + 0x4d5000, bias + 0x4d9000, 1});
}

TEST_CASE("startup pages: the GOT's page once, and only past the ordered objects", "[fast-path]") {
  // the marker in the segment's last page: that page is in the written range already
  auto r = pages(runtime_headers(), 0, 0, {0x329580, 0x4d1100, 0x4d8981});
  REQUIRE(r.size() == 5);
  CHECK(r[2] == Range{0x4c5000, 0x4d2000, 1});
  CHECK(r[3] == Range{0x4d2000, 0x4d5000, 1});
  // the marker at the segment's very end: all written, nothing more
  r = pages(runtime_headers(), 0, 0, {0x329580, 0x4c5810 + 0xb998, 0x4d8981});
  REQUIRE(r.size() == 5);
  CHECK(r[2] == Range{0x4c5000, 0x4d2000, 1});
  CHECK(r[3] == Range{0x4d2000, 0x4d5000, 1});
  // no PT_GNU_RELRO over the segment (GNU ld's one writable segment, .data
  // after the GOT): its last page is .data's, not one to map in read-only
  auto headers = runtime_headers();
  headers.pop_back();
  r = pages(headers, 0, 0, {0x329580, 0x4c7d69, 0x4d8981});
  REQUIRE(r.size() == 5);
  CHECK(r[2] == Range{0x4c5000, 0x4c8000, 1});
  CHECK(r[3] == Range{0x4d2000, 0x4d5000, 1});
}

TEST_CASE("startup pages: headers out of place are skipped, the output never overrun", "[fast-path]") {
  std::vector<Elf64_Phdr> h = {load(0x1000, 0x3000, 0x2000, PF_R | PF_W),       // more file than memory
                               load(~0ul - 0x1000, 0x10, 0x3000, PF_R | PF_X),   // wraps
                               load(0x9000, 0, 0, PF_R | PF_X),                  // empty
                               load(0x20000, 0x100, 0x100, PF_R | PF_X)};
  CHECK(pages(h, 0, 0, {0, 0, 0}) == std::vector<Range>{{0x20000, 0x21000, 0}});
  CHECK(pages(runtime_headers(), 0, 0x7fffe5a47e58, {0x329580, 0x4c7d69, 0x4d8981}, 2).size() == 2);
  std::vector<gpuslice_fp_page_range> out(8);
  CHECK(gpuslice_fp_startup_pages(h.data(), h.size(), 0, 0, 0, {0, 0, 0}, out.data(), 8) == 0);
  CHECK(gpuslice_fp_startup_pages(h.data(), h.size(), 0, 4095, 0, {0, 0, 0}, out.data(), 8) == 0);
  // a stack too low to leave room below is left alone
  CHECK(pages(h, 0, 0x4000, {0, 0, 0}).size() == 1);
}

TEST_CASE("startup pages: the ranges for this very process are ones the kernel populates", "[fast-path]") {
  const auto *phdr = reinterpret_cast<const Elf64_Phdr *>(::getauxval(AT_PHDR));
  const unsigned long phnum = ::getauxval(AT_PHNUM);
  REQUIRE(phdr);
  const unsigned long bias = gpuslice_fp_load_bias(phdr, phnum);
  std::vector<gpuslice_fp_page_range> out(16);
  const int n = gpuslice_fp_startup_pages(phdr, phnum, bias, static_cast<unsigned long>(::sysconf(_SC_PAGESIZE)),
                                          0, {0, 0, 0}, out.data(), 16);
  REQUIRE(n >= 2); // the text and the data, at least
  for (int i = 0; i < n; ++i) {
    INFO((Range{out[i].start, out[i].end, out[i].write}));
    // MADV_POPULATE_READ / _WRITE: ENOMEM for memory not mapped, EFAULT or
    // EPERM for a write to memory that is not writable
    const int rc = ::madvise(reinterpret_cast<void *>(out[i].start), out[i].end - out[i].start,
                             out[i].write ? 23 : 22);
    CHECK((rc == 0 || errno == EINVAL)); // EINVAL: a kernel before 5.14
  }
  // and the vDSO's first page, which the entry maps in too
  const unsigned long vdso = ::getauxval(AT_SYSINFO_EHDR);
  REQUIRE(vdso != 0);
  const int rc = ::madvise(reinterpret_cast<void *>(vdso), static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), 22);
  CHECK((rc == 0 || errno == EINVAL));
}

TEST_CASE("heap pages: the top of the heap is mapped in, up to the break", "[shim]") {
  void *keep = std::malloc(100); // the heap exists
  const struct mallinfo2 info = ::mallinfo2();
  auto *const brk_end = static_cast<unsigned char *>(::sbrk(0));
  gpuslice::shim::map_in_heap_top(gpuslice::shim::kCreateHeapBytes);
  if (info.keepcost > 0) { // glibc's allocator (a sanitizer's has no top chunk)
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t start = (reinterpret_cast<std::uintptr_t>(brk_end) - info.keepcost) & ~(page - 1);
    const std::uintptr_t end =
        std::min(reinterpret_cast<std::uintptr_t>(brk_end), start + gpuslice::shim::kCreateHeapBytes);
    REQUIRE(start < end);
    std::vector<unsigned char> resident((end - start) / page);
    REQUIRE(::mincore(reinterpret_cast<void *>(start), end - start, resident.data()) == 0);
    for (std::size_t i = 0; i < resident.size(); ++i) {
      INFO("page " << i << " of " << resident.size());
      CHECK((resident[i] & 1));
    }
    CHECK(::sbrk(0) == brk_end); // the break did not move
  }
  std::free(keep);
}
