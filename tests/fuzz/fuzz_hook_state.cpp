// Input: what gpuslice-hook reads on stdin, the OCI container state the
// engine passes (it names the container, so it decides which host paths the
// hook touches). Anything but gpuslice::Error escaping is a crash; an
// accepted state must name a container with a safe id and, when it names a
// bundle, an absolute one.
#include "gpuslice/common/error.hpp"
#include "gpuslice/hook/state.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  using namespace gpuslice;
  try {
    const auto state = hook::parse_state(std::string_view(reinterpret_cast<const char *>(data), size));
    if (!state::is_safe_container_id(state.id) || (!state.bundle.empty() && state.bundle[0] != '/') || state.pid < 0)
      std::abort();
  } catch (const Error &) {
  }
  return 0;
}
