#include "gpuslice/common/build_id.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

namespace gpuslice {

namespace {

int build_id_note(struct dl_phdr_info *info, size_t, void *data) {
  auto &out = *static_cast<std::string *>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const char *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
    const char *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const char *name = p + sizeof note;
      const char *desc = name + ((note.n_namesz + 3) & ~3u);
      const char *next = desc + ((note.n_descsz + 3) & ~3u);
      if (next > end)
        break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static constexpr char hex[] = "0123456789abcdef";
        for (uint32_t k = 0; k < note.n_descsz; ++k)
          out += hex[static_cast<uint8_t>(desc[k]) >> 4], out += hex[static_cast<uint8_t>(desc[k]) & 15];
        return 1;
      }
      p = next;
    }
  }
  return 1; // the first object is the program: its id or none
}

} // namespace

const std::string &own_build_id() {
  static const std::string id = [] {
    std::string out;
    ::dl_iterate_phdr(build_id_note, &out);
    return out;
  }();
  return id;
}

} // namespace gpuslice
