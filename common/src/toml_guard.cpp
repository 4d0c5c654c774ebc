#include "gpuslice/common/toml_guard.hpp"

#include "gpuslice/common/error.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

namespace gpuslice {

void check_toml_text(std::string_view text) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      ++line;
    if (c < 0x80)
      continue;
    // Decode just enough UTF-8 to know the code point; invalid UTF-8 is
    // toml++'s to report (it checks before any white-space test).
    const std::size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
    if (len == 1 || i + len > text.size())
      continue;
    uint32_t cp = c & (0x7fu >> len);
    bool valid = true;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      valid = valid && (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (!valid)
      continue;
    // Computed from toml++'s table: the code points it neither classifies
    // nor rejects before reaching unreachable().
    if ((cp >= 0xA1 && cp <= 0x499) || (cp >= 0x2C5E && cp <= 0x2FFF) || (cp >= 0x3001 && cp <= 0x3057) ||
        (cp >= 0xFB26 && cp <= 0xFEFE)) {
      char code[16];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(cp));
      throw Error(std::string("character ") + code + " at line " + std::to_string(line) +
                  " cannot be read safely by this system's TOML library (toml++ 3.3); remove it");
    }
    i += len - 1;
  }
}

} // namespace gpuslice
