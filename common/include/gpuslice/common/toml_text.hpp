// Parsing TOML with the distribution's toml++ (3.3 on Debian 12, Ubuntu
// 24.04), all of valid TOML included.
//
// Why not toml::parse directly: toml++ 3.3 reaches __builtin_unreachable()
// when it tests some non-ASCII characters for white space (its generated
// is_non_ascii_horizontal_whitespace() has no answer for U+00A1..U+0499,
// U+2C5E..U+2FFF, U+3001..U+3057 and U+FB26..U+FEFE): undefined behaviour,
// found by fuzzing. Where it makes that test depends on how far its parser
// got, so no lexical pre-check can tell the safe places (two were defeated
// by the fuzzer), and refusing the characters refused `# réglages` in a
// French user's config. So each such character is replaced, before toml++
// sees the text, by one of the same UTF-8 length that toml++ handles and
// that the text does not contain; string values and keys of the result get
// the original characters back, and so do error messages. Lines, columns
// and byte offsets of the result are those of the original text.
#pragma once

#include <toml++/toml.h>

#include <string_view>

namespace gpuslice {

// The parsed table; throws Error "<reason> at line L, column C".
toml::table parse_toml(std::string_view text, std::string_view source_name);

} // namespace gpuslice
