// cdiVersion handling: which versions exist, and the lowest version whose
// format allows everything a parsed spec uses.
#pragma once

#include "gpuslice/cdi/spec.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::cdi {

// Versions are compared as (major, minor, patch).
struct Version {
  int major = 0, minor = 0, patch = 0;
  auto operator<=>(const Version &) const = default;
  std::string str() const;
};

inline constexpr Version kCurrentVersion{1, 1, 0};

// Parses "0.6.0" or "v0.6.0"; nullopt for anything that is not a released
// CDI version.
std::optional<Version> parse_version(std::string_view text);

// A field the spec uses that needs at least `needs`.
struct VersionRequirement {
  Version needs;
  std::string field; // e.g. devices[0].containerEdits.deviceNodes[1].hostPath
};

// Every use in `spec` of something newer than `have`.
std::vector<VersionRequirement> requirements_above(const Spec &spec, Version have);

// The lowest version that can express `spec`.
Version minimum_version(const Spec &spec);

} // namespace gpuslice::cdi
