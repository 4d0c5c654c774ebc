#include "gpuslice/common/error.hpp"

#include <cctype>
#include <cstring>

namespace gpuslice {

Error system_error(std::string_view what, int err) {
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(err);
  // strerror capitalises ("No such file or directory"); our messages are lowercase.
  const auto pos = msg.size() - std::strlen(std::strerror(err));
  if (pos < msg.size())
    msg[pos] = static_cast<char>(std::tolower(static_cast<unsigned char>(msg[pos])));
  return Error(std::move(msg), err);
}

std::string quote(std::string_view s) {
  const std::size_t cut = s.size() > kMaxQuoted ? s.size() - kMaxQuoted : 0;
  s = s.substr(0, s.size() - cut);
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
  if (cut)
    out.insert(out.size() - 1, "...").append(" (+" + std::to_string(cut) + " bytes)");
  return out;
}

} // namespace gpuslice
