// Small string helpers shared by the parsers of comma lists, PATH and paths.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuslice {

enum class EmptyParts { keep, skip };

// "a,,b" split on ',' -> {"a", "", "b"} (keep) or {"a", "b"} (skip); "" -> {""} or {}.
std::vector<std::string> split(std::string_view text, char separator, EmptyParts empty);

} // namespace gpuslice
