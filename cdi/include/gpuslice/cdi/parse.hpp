// Reading CDI specs from JSON or YAML text. The content decides the format
// (a spec in a .yaml file may be JSON). Parsing is strict, like the reference
// library: an unknown field, a wrong type or a duplicate key is an error that
// names the field.
#pragma once

#include "gpuslice/cdi/spec.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::cdi {

// Parses and decodes; throws Error naming the field. Does not validate.
// Spec files larger than this are refused before they are read.
inline constexpr std::size_t kMaxSpecSize = 4u << 20;

Spec parse_spec(std::string_view text);

// Whether parse_spec reads `text` as JSON (its first non-blank byte is '{')
// rather than YAML.
bool looks_like_json(std::string_view text);

// The spec's kind when the text states it plainly (a top-level "kind" the
// reader cannot mistake), without a parse; nullopt when unsure. A registry
// may skip a file whose kind is known and not wanted (spec_kind.cpp).
std::optional<std::string> plain_spec_kind(std::string_view text);

} // namespace gpuslice::cdi
