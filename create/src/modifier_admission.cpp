// Admission of a container with limits (admission.hpp): the per-GPU cap
// and the GPUs' memory, from the load read under the containers dir's lock.
#include "gpuslice/create/modifiers.hpp"

namespace gpuslice::create {

namespace {

class Admission final : public Modifier {
public:
  void modify(BundleSpec &, Plan &plan, const Facts &facts, const Context &ctx) const override {
    if (facts.limits && facts.admission)
      check_admission(*facts.limits, *facts.admission, ctx.config, plan.warnings, plan.notes);
  }
};

} // namespace

std::unique_ptr<Modifier> admission_modifier() { return std::make_unique<Admission>(); }

} // namespace gpuslice::create
