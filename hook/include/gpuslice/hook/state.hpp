// The OCI state runc passes to a hook on stdin. It names the container, so it
// decides which host paths the hook touches: every field is validated before
// use, as if the container had written it.
#pragma once

#include <string>
#include <string_view>

namespace gpuslice::hook {

struct ContainerState {
  std::string oci_version;
  std::string id;
  std::string status;
  int pid = 0;
  std::string bundle;
};

// Throws Error naming the field.
ContainerState parse_state(std::string_view json_text);

} // namespace gpuslice::hook
