// The small text helpers of the limits file, shared by the writer
// (limits.cpp) and the reader (limits_file.cpp). Not installed.
#pragma once

#include "gpuslice/common/error.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::sharing::limits_text {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    auto pos = s.find(sep);
    out.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos)
      return out;
    s.remove_prefix(pos + 1);
  }
}

inline bool valid_key(std::string_view k) {
  if (k == "*")
    return true;
  if (k.empty() || k.size() >= 48)
    return false;
  if (k.rfind("GPU-", 0) == 0 || k.rfind("MIG-", 0) == 0) {
    for (char c : k.substr(4))
      if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == '-'))
        return false;
    return true;
  }
  for (char c : k)
    if (c < '0' || c > '9')
      return false;
  return true;
}

inline uint64_t parse_u64(std::string_view s, std::string_view what) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw Error("invalid " + std::string(what) + " " + gpuslice::quote(s));
  return v;
}


} // namespace gpuslice::sharing::limits_text
