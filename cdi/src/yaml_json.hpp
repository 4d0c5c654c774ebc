// YAML text to a JSON tree, over libyaml's event parser. libyaml rather than
// yaml-cpp: building a node tree with yaml-cpp costs ~350 us for a typical
// 2 KiB spec, ten times the event parser, and a node with 1,000 spec files has
// to load in well under 150 ms.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace gpuslice::cdi {

// Scalars become JSON strings (plain `~`, `null` and empty scalars become
// null); the schema-directed decoder types them. Keys must be scalars, keys
// are unique, strings must be UTF-8, one document only, aliases are expanded
// within a size bound. Throws Error naming the line or the field.
nlohmann::json yaml_to_json(std::string_view text);

} // namespace gpuslice::cdi
