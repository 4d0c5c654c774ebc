#include "gpuslice/common/json_text.hpp"

namespace gpuslice {

template nlohmann::json parse_json<nlohmann::json>(std::string_view);
template nlohmann::ordered_json parse_json<nlohmann::ordered_json>(std::string_view);

void check_json_depth(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        json_detail::nested_too_deep(max_depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

} // namespace gpuslice
