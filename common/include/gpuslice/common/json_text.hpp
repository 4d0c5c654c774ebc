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

} // namespace gpuslice
