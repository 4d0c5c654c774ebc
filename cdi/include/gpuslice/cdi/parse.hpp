// Reading CDI specs from JSON or YAML text. The content decides the format
// (a spec in a .yaml file may be JSON). Parsing is strict, like the reference
// library: an unknown field, a wrong type or a duplicate key is an error that
// names the field.
#pragma once

#include "gpuslice/cdi/spec.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::cdi {

// Parses and decodes; throws Error naming the field. Does not validate.
Spec parse_spec(std::string_view text);

// Reads, parses and validates a spec file. Throws Error (with the path) on a
// parse error; validation problems go to `problems` (one line each) and make
// the spec unusable.
Spec load_spec_file(const std::string &path, int priority, std::vector<std::string> &problems);

} // namespace gpuslice::cdi
