// Validation of a decoded spec: names, versions, and each kind of edit. Every
// problem is reported (not only the first) so `gpuslice cdi validate` can list
// them all. Stricter than the reference where that protects users: container
// paths, bind-mount host paths and hook paths must be absolute.
#pragma once

#include "gpuslice/cdi/spec.hpp"

#include <string>
#include <vector>

namespace gpuslice::cdi {

// Problems in `spec`, each "<field>: <reason>"; empty when valid.
std::vector<std::string> validate_spec(const Spec &spec);

// Annotation keys that are not Kubernetes-style (checked lowercased, as the
// reference library does): worth a warning in `cdi validate`, never a
// reason to refuse a spec.
std::vector<std::string> annotation_warnings(const Spec &spec);

} // namespace gpuslice::cdi
