/* Which pages of gpuslice-runtime to map in as the entry hands over to the
 * full program, in one madvise each instead of a page fault each.
 *
 * On the virtual machines GPU nodes often are, a page fault is an exit to
 * the hypervisor: on a nested 2-core VM, ~10 us for a fresh anonymous page
 * and ~20 us for a 64 KiB window of text, where MADV_POPULATE_WRITE takes
 * 0.5 to 3 us a page and MADV_POPULATE_READ 0.13 us a page of text in the
 * page cache. A create with devices took ~35 such faults in the pages below
 * (docs/start-overhead.md), the same ones every time. Pure, as fast_path.h:
 * the entry makes the calls. */
#ifndef GPUSLICE_SHIM_STARTUP_PAGES_H
#define GPUSLICE_SHIM_STARTUP_PAGES_H

#include <elf.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stack below the entry's that start-up and a create use (a create
 * with devices reaches 3 pages down, parsing its TOML config). */
#define GPUSLICE_FP_STACK_PREFAULT (16 * 1024)
/* The end of the executable segment, where the link puts what follows
 * .text: .init, .fini, glibc's __libc_freeres_fn and the .iplt, whose stubs
 * every call of a string function goes through. */
#define GPUSLICE_FP_TEXT_TAIL (16 * 1024)

struct gpuslice_fp_page_range {
  unsigned long start, end; /* page-aligned, start < end */
  int write;                /* 1: MADV_POPULATE_WRITE, 0: MADV_POPULATE_READ */
};

/* Where the ordered link put the end of what start-up runs and writes
 * (shim/hot-text.order lists the markers last; the link puts the listed
 * functions and objects first in their sections); 0 where it was not
 * ordered, and a marker outside its segment counts as 0. */
struct gpuslice_fp_hot_ends {
  unsigned long text;  /* the executable segment up to here; 0: all of it */
  unsigned long relro; /* the writable segment it lies in, from its start up to here; 0: all of its file part */
  unsigned long bss;   /* the bss up to here; 0: none of it */
};

/* What the kernel added to the addresses of a program header table it
 * loaded at `phdr` (AT_PHDR): a PIE's is what PT_PHDR says, a static
 * non-PIE program (no PT_PHDR) has none. */
unsigned long gpuslice_fp_load_bias(const Elf64_Phdr *phdr, size_t phnum);

/* The ranges to populate, at most 3 per PT_LOAD and 1 for the stack, into
 * out (max of them); their count. A program header table as the kernel
 * loaded it (AT_PHDR, AT_PHNUM), `bias` added to its addresses (0 in a
 * static non-PIE program), `page` the page size (AT_PAGESZ), `stack` the
 * entry's stack pointer (0: none):
 * - the executable segment: read, up to hot.text and its last
 *   GPUSLICE_FP_TEXT_TAIL, or all of it;
 * - a read-only one: none of it (a create reads 2 or 3 scattered pages of
 *   its 500 KB of strings and unwind tables, fewer than populating costs);
 * - a writable one: its file part written (each page copied, as a first
 *   write does), only up to hot.relro in the one that holds it (.data.rel.ro
 *   and the GOT, which start-up mostly only reads) and then its last page,
 *   read (the GOT's) where PT_GNU_RELRO covers the segment, and its bss up to hot.bss when that lies inside it;
 * - the stack: GPUSLICE_FP_STACK_PREFAULT below `stack`'s page, written.
 * A header out of place (a segment that wraps or is empty) is skipped. */
int gpuslice_fp_startup_pages(const Elf64_Phdr *phdr, size_t phnum, unsigned long bias, unsigned long page,
                              unsigned long stack, struct gpuslice_fp_hot_ends hot,
                              struct gpuslice_fp_page_range *out, int max);

#ifdef __cplusplus
}
#endif

#endif
