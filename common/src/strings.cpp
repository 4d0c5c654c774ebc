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

std::string_view env_key(std::string_view entry) { return entry.substr(0, entry.find('=')); }

bool env_sets(std::string_view entry, std::string_view key) {
  return entry.size() > key.size() && entry.compare(0, key.size(), key) == 0 && entry[key.size()] == '=';
}

std::optional<std::string> env_value(const std::vector<std::string> &env, std::string_view key) {
  std::optional<std::string> out;
  for (const auto &e : env)
    if (env_sets(e, key))
      out = e.substr(key.size() + 1);
  return out;
}

} // namespace gpuslice
