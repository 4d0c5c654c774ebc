// Input: a bundle's config.json as gpuslice-hook reads it after the engine
// made the container (hook mode: podman, CRI-O, plain runc or crun), taken
// as the spec the edits produced and compared with a plain engine spec.
// Anything but gpuslice::Error escaping is a crash; so is a plan that would
// act on a relative path, or a spec that differs from itself.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/hook/injection.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  using namespace gpuslice;
  static const cdi::OciSpec engine = cdi::OciSpec::parse(
      R"({"root": {"path": "/b/rootfs"}, "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
          "linux": {"devices": [], "resources": {"devices": [{"allow": false, "access": "rwm"}]}}})");
  cdi::OciSpec after;
  try {
    after = parse_json<cdi::OciSpec>(std::string_view(reinterpret_cast<const char *>(data), size));
  } catch (const Error &) {
    return 0;
  }
  try {
    if (!hook::plan_injection(after, after, "/b/rootfs").empty())
      std::abort();
  } catch (const Error &) {
  }
  try {
    const auto plan = hook::plan_injection(engine, after, "/b/rootfs");
    for (const auto &n : plan.nodes)
      if (n.path.empty() || n.path[0] != '/')
        std::abort();
    for (const auto &m : plan.mounts)
      if (m.destination.empty() || m.destination[0] != '/' || m.source.empty() || m.source[0] != '/')
        std::abort();
  } catch (const Error &) {
  }
  return 0;
}
