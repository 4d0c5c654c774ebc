/* Which pages to map in before glibc starts (startup_pages.h). */
#include "startup_pages.h"

static unsigned long page_down(unsigned long a, unsigned long page) { return a & ~(page - 1); }
static unsigned long page_up(unsigned long a, unsigned long page) { return (a + page - 1) & ~(page - 1); }

static int add(struct gpuslice_fp_page_range *out, int n, int max, unsigned long start, unsigned long end,
               int write) {
  if (n < max && start < end) {
    out[n].start = start;
    out[n].end = end;
    out[n].write = write;
    ++n;
  }
  return n;
}

/* The executable segment [start, end): up to hot_text and its tail when
 * hot_text lies inside, else all of it. */
static int add_text(struct gpuslice_fp_page_range *out, int n, int max, unsigned long start, unsigned long end,
                    unsigned long hot_text, unsigned long page) {
  if (hot_text <= start || hot_text > end)
    return add(out, n, max, page_down(start, page), page_up(end, page), 0);
  const unsigned long hot_end = page_up(hot_text, page);
  const unsigned long tail = page_down(end - start > GPUSLICE_FP_TEXT_TAIL ? end - GPUSLICE_FP_TEXT_TAIL : start, page);
  if (tail <= hot_end)
    return add(out, n, max, page_down(start, page), page_up(end, page), 0);
  n = add(out, n, max, page_down(start, page), hot_end, 0);
  return add(out, n, max, tail, page_up(end, page), 0);
}

unsigned long gpuslice_fp_load_bias(const Elf64_Phdr *phdr, size_t phnum) {
  for (size_t i = 0; i < phnum; ++i)
    if (phdr[i].p_type == PT_PHDR)
      return (unsigned long)phdr - phdr[i].p_vaddr;
  return 0;
}

int gpuslice_fp_startup_pages(const Elf64_Phdr *phdr, size_t phnum, unsigned long bias, unsigned long page,
                              unsigned long stack, struct gpuslice_fp_hot_ends hot,
                              struct gpuslice_fp_page_range *out, int max) {
  int n = 0;
  if (page == 0 || (page & (page - 1)) != 0)
    return 0;
  unsigned long relro_start = 0, relro_end = 0;
  for (size_t i = 0; i < phnum; ++i)
    if (phdr[i].p_type == PT_GNU_RELRO && phdr[i].p_vaddr + bias + phdr[i].p_memsz >= phdr[i].p_vaddr + bias) {
      relro_start = phdr[i].p_vaddr + bias;
      relro_end = relro_start + phdr[i].p_memsz;
    }
  for (size_t i = 0; i < phnum; ++i) {
    const Elf64_Phdr *p = &phdr[i];
    if (p->p_type != PT_LOAD || p->p_memsz == 0 || p->p_filesz > p->p_memsz)
      continue;
    const unsigned long start = p->p_vaddr + bias;
    const unsigned long mem_end = start + p->p_memsz;
    const unsigned long file_end = start + p->p_filesz;
    if (mem_end < start || page_up(mem_end, page) < mem_end)
      continue;
    if (p->p_flags & PF_W) {
      const int ordered = hot.relro > start && hot.relro <= file_end;
      const unsigned long written = ordered ? hot.relro : file_end;
      n = add(out, n, max, page_down(start, page), page_up(written, page), 1);
      /* Past the ordered objects, the last page of a segment that is all
       * RELRO (lld's): the GOT, which the link puts after .data.rel.ro and
       * start-up reads. (In a segment that goes on with .data, it would
       * be .data's, and written.) */
      if (ordered && start >= relro_start && file_end <= relro_end &&
          page_down(file_end - 1, page) >= page_up(written, page))
        n = add(out, n, max, page_down(file_end - 1, page), page_up(file_end, page), 0);
      if (hot.bss > page_up(file_end, page) && hot.bss <= mem_end)
        n = add(out, n, max, page_up(file_end, page), page_up(hot.bss, page), 1);
    } else if (p->p_flags & PF_X) {
      n = add_text(out, n, max, start, mem_end, hot.text, page);
    }
  }
  const unsigned long top = page_down(stack, page);
  if (top > GPUSLICE_FP_STACK_PREFAULT)
    n = add(out, n, max, top - GPUSLICE_FP_STACK_PREFAULT, top, 1);
  return n;
}
