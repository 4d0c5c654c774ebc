/* build_id.h. Pure: built freestanding into the front as well. */
#include "gpuslice/common/build_id.h"

size_t gs_build_id(const Elf64_Phdr *phdr, size_t phnum, char hex[2 * GS_MAX_BUILD_ID + 1]) {
  hex[0] = 0;
  unsigned long bias = 0; /* where a PIE was loaded: its headers' address against their own p_vaddr */
  for (size_t i = 0; i < phnum; ++i)
    if (phdr[i].p_type == PT_PHDR)
      bias = (unsigned long)phdr - phdr[i].p_vaddr;
  for (size_t i = 0; i < phnum; ++i) {
    if (phdr[i].p_type != PT_NOTE)
      continue;
    const unsigned char *p = (const unsigned char *)(phdr[i].p_vaddr + bias);
    const unsigned char *const end = p + phdr[i].p_memsz;
    while ((size_t)(end - p) >= sizeof(Elf64_Nhdr)) {
      const Elf64_Nhdr *note = (const Elf64_Nhdr *)p;
      const unsigned char *name = p + sizeof *note;
      const size_t name_room = ((size_t)note->n_namesz + 3) & ~(size_t)3;
      const size_t desc_room = ((size_t)note->n_descsz + 3) & ~(size_t)3;
      if (name_room > (size_t)(end - name) || desc_room > (size_t)(end - name) - name_room)
        break;
      const unsigned char *desc = name + name_room;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && name[0] == 'G' && name[1] == 'N' &&
          name[2] == 'U' && name[3] == 0) {
        if (note->n_descsz == 0 || note->n_descsz > GS_MAX_BUILD_ID)
          return 0;
        for (size_t k = 0; k < note->n_descsz; ++k) {
          hex[2 * k] = "0123456789abcdef"[desc[k] >> 4];
          hex[2 * k + 1] = "0123456789abcdef"[desc[k] & 15];
        }
        hex[2 * note->n_descsz] = 0;
        return 2 * (size_t)note->n_descsz;
      }
      p = desc + desc_room;
    }
  }
  return 0;
}
