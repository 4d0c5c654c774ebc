// cdi.k8s.io/ annotations: how a DRA driver or device plugin asks a runtime
// for CDI devices through the OCI spec's annotations.
#pragma once

#include "gpuslice/cdi/spec.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::cdi {

inline constexpr std::string_view kAnnotationPrefix = "cdi.k8s.io/";

// cdi.k8s.io/<plugin>_<deviceId> with '/' in the device id turned into '_'.
// Throws Error when the part after the prefix is not a valid annotation name
// (at most 63 characters, alphanumeric at both ends, [A-Za-z0-9_.-] inside).
std::string annotation_key(std::string_view plugin, std::string_view device_id);

// Comma-separated qualified names; throws Error on an invalid name.
std::string annotation_value(const std::vector<std::string> &devices);

// Devices requested by every annotation whose key starts with one of
// `prefixes`, in key order, duplicates dropped (first kept). Values are split
// on ',' without trimming; an invalid qualified name throws Error naming the
// annotation key.
std::vector<std::string> parse_annotations(const Annotations &annotations,
                                           const std::vector<std::string> &prefixes = {std::string(kAnnotationPrefix)});

} // namespace gpuslice::cdi
