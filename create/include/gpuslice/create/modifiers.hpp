// The create path's modifiers, the shape of the NVIDIA toolkit's list: each
// changes the typed spec and the plan from the facts gathered before it,
// and does nothing else (no file read, no system call): what it needs of
// the host is in Facts. commit.hpp then performs the plan. A new concern is
// one file with one modifier, and one line in modifiers().
#pragma once

#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/create/plan.hpp"
#include "gpuslice/selinux/system.hpp"

#include <memory>
#include <vector>

namespace gpuslice::create {

class Modifier {
public:
  virtual ~Modifier() = default;
  // Changes `spec` and `plan` only. Throws Error (a refusal).
  virtual void modify(BundleSpec &spec, Plan &plan, const Facts &facts, const Context &ctx) const = 0;
};

using Modifiers = std::vector<std::unique_ptr<Modifier>>;

// The claimed devices' CDI edits, and their env recorded for `exec`
// (modifier_cdi_edits.cpp).
std::unique_ptr<Modifier> cdi_edits_modifier();
// gpuslice-hook at createRuntime, with HookMode::add (modifier_hooks.cpp).
std::unique_ptr<Modifier> hooks_modifier();
// SELinux labels for what commit makes, from linux.mountLabel and
// process.selinuxLabel (modifier_selinux.cpp).
std::unique_ptr<Modifier> selinux_modifier(selinux::System &system);
// GPU limits: the limits file, the preload list, the mounts that put them
// and the interposer in the container (modifier_sharing.cpp).
std::unique_ptr<Modifier> sharing_modifier();
// The container's monitor: its arguments and labels in the record
// (modifier_monitor.cpp).
std::unique_ptr<Modifier> monitor_modifier();
// The per-GPU cap and the memory of the GPUs (modifier_admission.cpp).
std::unique_ptr<Modifier> admission_modifier();

// The list, in order. `system`: the SELinux seam (the kernel's, or a test's).
Modifiers modifiers(selinux::System &system);

} // namespace gpuslice::create
