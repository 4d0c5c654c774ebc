// toml++ 3.3 (Debian 12, Ubuntu 24.04) reaches __builtin_unreachable() when
// it tests some non-ASCII characters for white space: its generated
// is_non_ascii_horizontal_whitespace() has no answer for U+00A1..U+0499,
// U+2C5E..U+2FFF, U+3001..U+3057 and U+FB26..U+FEFE. That is undefined behaviour (a wild jump in an optimised
// build), found by fuzzing. Where toml++ makes that test depends on how far
// its parser got in invalid text, not only on whether the character sits in
// a string or comment (two lexical pre-checks were each defeated by the
// fuzzer), so these characters are refused anywhere before toml++ sees the
// text. containerd and gpuslice configuration needs none of them; other
// non-ASCII text (most CJK, symbols, emoji) is unaffected.
#pragma once

#include <string_view>

namespace gpuslice {

// Throws Error naming the character and the line.
void check_toml_text(std::string_view text);

} // namespace gpuslice
