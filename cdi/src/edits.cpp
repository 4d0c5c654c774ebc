#include "gpuslice/cdi/spec.hpp"

namespace gpuslice::cdi {

namespace {
template <typename T> void append_all(std::vector<T> &to, const std::vector<T> &from) {
  to.insert(to.end(), from.begin(), from.end());
}
} // namespace

void ContainerEdits::append(const ContainerEdits &other) {
  append_all(env, other.env);
  append_all(device_nodes, other.device_nodes);
  append_all(net_devices, other.net_devices);
  append_all(hooks, other.hooks);
  append_all(mounts, other.mounts);
  if (other.intel_rdt)
    intel_rdt = other.intel_rdt;
  append_all(additional_gids, other.additional_gids);
}

} // namespace gpuslice::cdi
