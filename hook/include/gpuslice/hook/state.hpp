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

// A container id usable as one path component: [A-Za-z0-9_.-], not "." or
// "..", at most 255 bytes. (containerd and runc ids already satisfy this.)
bool is_safe_container_id(std::string_view id);

} // namespace gpuslice::hook
