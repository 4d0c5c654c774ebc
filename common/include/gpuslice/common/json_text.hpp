// Parsing JSON that someone else wrote (a bundle's config.json, a hook's
// state on stdin, a spec) into nlohmann's types without letting its shape
// hurt the parser's caller. nlohmann parses iteratively, but copying,
// dumping and comparing a document recurse once per nesting level: a
// config.json nested 50,000 deep parses fine and then overflows the stack.
// No OCI spec, state or CDI spec nests deeper than a dozen levels, so the
// text is refused before parsing when it nests deeper than kMaxJsonDepth.
#pragma once

#include "gpuslice/common/error.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpuslice {

inline constexpr std::size_t kMaxJsonDepth = 128;

// Throws Error when arrays and objects nest deeper than max_depth (strings
// are skipped, escapes included); says nothing about the text's validity.
void check_json_depth(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// The parsed document; throws Error "invalid JSON: <reason>" (never a
// nlohmann exception) or the depth error above.
template <typename Json = nlohmann::json> Json parse_json(std::string_view text) {
  check_json_depth(text);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception &e) { // parse_error, or out_of_range for a huge number
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] "; keep the reason.
    if (auto pos = what.find("] "); pos != std::string::npos)
      what.erase(0, pos + 2);
    throw Error("invalid JSON: " + what);
  }
}

// Typed access to a member of a JSON object that someone else wrote: the
// value, nullopt when the member is absent or null, and an Error naming
// `where` (the member's JSON path, e.g. "linux.devices[2].path") when it is
// of another type. nlohmann's own accessors throw type_error there, which
// no caller expects.
template <typename Json>
std::optional<std::string> string_member(const Json &object, std::string_view key, std::string_view where) {
  if (!object.is_object())
    return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || it->is_null())
    return std::nullopt;
  if (!it->is_string())
    throw Error(std::string(where) + " is not a string");
  return it->template get<std::string>();
}

template <typename Json> std::optional<bool> bool_member(const Json &object, std::string_view key, std::string_view where) {
  if (!object.is_object())
    return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || it->is_null())
    return std::nullopt;
  if (!it->is_boolean())
    throw Error(std::string(where) + " is not a boolean");
  return it->template get<bool>();
}

} // namespace gpuslice
