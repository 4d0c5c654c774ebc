// A create as gpuslice-runtime's `run` makes it (create::create_bundle): the
// hook added, the monitor of a container with limits started at once,
// watching this process. What the tests look at of it.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/create/create.hpp"

#include <string>
#include <vector>

namespace gpuslice::testing {

struct Prepared {
  bool written = false; // config.json rewritten, a state dir made
  bool shared = false;  // with limits
  std::vector<std::string> devices, warnings, notes;
};

inline Prepared prepare(const std::string &bundle, const std::string &id, const Config &config) {
  create::BundleCreate request{bundle, id, "", true};
  auto created = create::create_bundle(request, config, kDefaultConfigPath);
  if (!created)
    return {};
  return {true, created->limits, created->devices, created->warnings, created->notes};
}

} // namespace gpuslice::testing
