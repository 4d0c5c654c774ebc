/* The C library's own dlsym, dlvsym and dlmopen, found without them.
 *
 * This library exports wrappers under those very names (a program must not
 * reach around the CUDA wrappers through them), and it comes before libc in
 * every lookup scope: any lookup by name, RTLD_NEXT included, would need one
 * of the functions being looked for, and a versioned reference at link time
 * is bound to our own definition (-Bsymbolic). So the definitions are read
 * from the ELF dynamic symbol table of the loaded libc.so.6 (libdl.so.2
 * before glibc 2.34), default version only, through dl_iterate_phdr.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

struct wanted {
  const char *name;
  void *found;
};

static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++) h = h * 33 + (unsigned char)*s;
  return h;
}

static int is_c_library(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strcmp(base, "libc.so.6") == 0 || strcmp(base, "libdl.so.2") == 0;
}

/* Some architectures leave .dynamic unrelocated (read-only): addresses
 * below the load address are offsets. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) p) {
  return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct wanted *w = arg;
  if (!info->dlpi_name || !is_c_library(info->dlpi_name)) return 0;
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return 0;
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const uint32_t *gnu = NULL;
  const ElfW(Half) *versym = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
    case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_addr(info, dyn->d_un.d_ptr); break;
    case DT_STRTAB: strtab = (const char *)dyn_addr(info, dyn->d_un.d_ptr); break;
    case DT_GNU_HASH: gnu = (const uint32_t *)dyn_addr(info, dyn->d_un.d_ptr); break;
    case DT_VERSYM: versym = (const ElfW(Half) *)dyn_addr(info, dyn->d_un.d_ptr); break;
    default: break;
    }
  }
  if (!symtab || !strtab || !gnu) return 0;
  const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
  const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_size);
  const uint32_t *chain = buckets + nbuckets;
  const uint32_t h = gnu_hash(w->name);
  if (nbuckets == 0) return 0;
  for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
    const uint32_t ch = chain[i - symoffset];
    const ElfW(Sym) *s = &symtab[i];
    if ((ch | 1) == (h | 1) && s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
        strcmp(strtab + s->st_name, w->name) == 0 && (!versym || !(versym[i] & 0x8000))) {
      w->found = (void *)(info->dlpi_addr + s->st_value);
      return strstr(info->dlpi_name, "libc.so.6") ? 1 : 0; /* libc wins over libdl's stubs */
    }
    if (ch & 1) break;
  }
  return 0;
}

void *gs_libc_function(const char *name) {
  struct wanted w = {name, NULL};
  dl_iterate_phdr(visit, &w);
  return w.found;
}
