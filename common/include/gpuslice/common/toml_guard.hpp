// toml++ 3.3 (Debian 12, Ubuntu 24.04) reaches __builtin_unreachable() when
// it meets some non-ASCII characters (U+00A1..U+0499, U+FB46..U+FEFE) where
// it tests for white space: outside strings and comments, or after a
// line-ending backslash in a multi-line string. That is undefined behaviour,
// found by fuzzing. TOML allows non-ASCII only inside strings and comments,
// so such text is invalid anyway: refuse it before toml++ sees it.
#pragma once

#include <string_view>

namespace gpuslice {

// Throws Error ("non-ASCII character outside a string or comment at line N").
void check_toml_text(std::string_view text);

} // namespace gpuslice
