#include "gpuslice/common/toml_guard.hpp"

#include "gpuslice/common/error.hpp"

#include <string>

namespace gpuslice {

void check_toml_text(std::string_view text) {
  enum class State { bare, comment, basic, multi_basic, literal, multi_literal } state = State::bare;
  std::size_t line = 1;
  bool after_line_continuation = false; // in a multi-line basic string, white space after "\" + newline
  auto fail = [&]() { throw Error("non-ASCII character outside a string or comment at line " + std::to_string(line)); };
  auto starts = [&](std::size_t i, std::string_view s) { return text.substr(i, s.size()) == s; };
  // A UTF-8 byte-order mark is fine at the very start.
  std::size_t i = starts(0, "\xEF\xBB\xBF") ? 3 : 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    const bool ascii = static_cast<unsigned char>(c) < 0x80;
    switch (state) {
    case State::bare:
      if (!ascii)
        fail();
      if (c == '#')
        state = State::comment;
      else if (starts(i, "\"\"\"")) {
        state = State::multi_basic;
        i += 2;
      } else if (starts(i, "'''")) {
        state = State::multi_literal;
        i += 2;
      } else if (c == '"')
        state = State::basic;
      else if (c == '\'')
        state = State::literal;
      break;
    case State::comment:
      if (c == '\n')
        state = State::bare;
      break;
    case State::basic:
      if (c == '\\')
        ++i;
      else if (c == '"' || c == '\n')
        state = State::bare;
      break;
    case State::literal:
      if (c == '\'' || c == '\n')
        state = State::bare;
      break;
    case State::multi_literal:
      if (starts(i, "'''")) {
        state = State::bare;
        i += 2;
      }
      break;
    case State::multi_basic:
      if (after_line_continuation) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
          break;
        if (!ascii)
          fail();
        after_line_continuation = false;
      }
      if (c == '\\') {
        std::size_t j = i + 1;
        while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r'))
          ++j;
        if (j < text.size() && text[j] == '\n')
          after_line_continuation = true;
        else
          ++i; // an escape: skip the escaped character
      } else if (starts(i, "\"\"\"")) {
        state = State::bare;
        i += 2;
      }
      break;
    }
    if (c == '\n')
      ++line;
  }
}

} // namespace gpuslice
