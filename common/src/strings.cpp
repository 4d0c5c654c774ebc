#include "gpuslice/common/strings.hpp"

namespace gpuslice {

std::vector<std::string> split(std::string_view text, char separator, EmptyParts empty) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  for (;;) {
    std::size_t j = text.find(separator, i);
    if (j == std::string_view::npos)
      j = text.size();
    if (j > i || empty == EmptyParts::keep)
      parts.emplace_back(text.substr(i, j - i));
    if (j == text.size())
      return parts;
    i = j + 1;
  }
}

} // namespace gpuslice
