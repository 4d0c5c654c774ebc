#include "gpuslice/hook/unprepared.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/shim/bundle_spec.hpp"
#include "gpuslice/shim/requests.hpp"
#include "gpuslice/state/container_dir.hpp"

namespace gpuslice::hook {

void refuse_unprepared(const ContainerState &state, const Config &config) {
  if (state::container_dir_exists(config.state_dir, state.id))
    return; // gpuslice-runtime prepared it
  if (state.bundle.empty())
    throw Error("container " + quote(state.id) + ": the container state names no bundle: cannot tell which devices "
                "it requests");
  shim::BundleSpec spec = shim::BundleSpec::load(state.bundle + "/config.json");
  const auto requests = shim::collect_requests(spec.json(), config);
  if (requests.empty())
    return;
  throw Error("container " + quote(state.id) + " requests CDI devices " + join(requests.devices, ", ") +
              " but was not created through gpuslice-runtime, and gpuslice-hook does not inject devices itself: "
              "it would run without its GPU, its limits and the interposer. Run it with gpuslice-runtime as the "
              "OCI runtime (podman --runtime /usr/bin/gpuslice-runtime; CRI-O: a runtime handler)");
}

} // namespace gpuslice::hook
