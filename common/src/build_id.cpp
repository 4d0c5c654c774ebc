#include "gpuslice/common/build_id.hpp"

#include "gpuslice/common/build_id.h"

#include <sys/auxv.h>

namespace gpuslice {

const std::string &own_build_id() {
  static const std::string id = [] {
    char hex[2 * GS_MAX_BUILD_ID + 1];
    const auto *phdr = reinterpret_cast<const Elf64_Phdr *>(::getauxval(AT_PHDR));
    return std::string(hex, phdr ? gs_build_id(phdr, ::getauxval(AT_PHNUM), hex) : 0);
  }();
  return id;
}

} // namespace gpuslice
