// Hook mode, as podman and CRI-O run gpuslice-hook (the packaged
// oci-hooks.d file: stage prestart, for containers with cdi.k8s.io/
// annotations), without gpuslice-runtime in front of the OCI runtime.
// gpuslice-hook does not inject devices itself yet: such a container would
// start without its GPU, its limits and its interposer, and nobody would be
// told. Until it does, it is refused, naming the devices and what to do.
// A container that gpuslice-runtime created has its state dir already (its
// create made it before runc ran): nothing to refuse.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/hook/state.hpp"

namespace gpuslice::hook {

// Throws Error when the container of `state` requests CDI devices (read
// from its bundle's config.json with the runtime's own rules) and was not
// created through gpuslice-runtime.
void refuse_unprepared(const ContainerState &state, const Config &config);

} // namespace gpuslice::hook
