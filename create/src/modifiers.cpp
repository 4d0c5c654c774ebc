#include "gpuslice/create/modifiers.hpp"

namespace gpuslice::create {

Modifiers modifiers(selinux::System &system) {
  Modifiers list;
  list.push_back(cdi_edits_modifier());
  list.push_back(hooks_modifier());
  list.push_back(selinux_modifier(system)); // before what labels its files
  list.push_back(sharing_modifier());
  list.push_back(monitor_modifier()); // after sharing: only a container with limits has a monitor
  list.push_back(admission_modifier());
  return list;
}

} // namespace gpuslice::create
