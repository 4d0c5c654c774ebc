// YAML text to a JSON tree, over libyaml's event parser. libyaml rather than
// yaml-cpp: building yaml-cpp's node tree costs several times the event
// parser for each spec, and a node with a thousand spec files reads them all
// on a create.
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
