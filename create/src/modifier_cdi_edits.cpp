// The claimed devices' CDI edits, applied to the spec in CDI's order
// (cdi/apply.hpp), with the host's device nodes as gathered. Their env also
// goes into the record: containerd 1.6 builds the processes `exec` starts
// from the spec it stored before these edits, so `exec` adds it back.
#include "gpuslice/create/modifiers.hpp"

#include "gpuslice/common/error.hpp"

namespace gpuslice::create {

namespace {

class CdiEdits final : public Modifier {
public:
  void modify(BundleSpec &spec, Plan &plan, const Facts &facts, const Context &) const override {
    spec.apply(facts.edits, [&](const std::string &host_path) {
      const auto node = facts.host_devices.find(host_path);
      if (node == facts.host_devices.end())
        throw Error("no host device node " + quote(host_path) + " was looked at");
      if (!node->second.error.empty())
        throw Error(node->second.error);
      return node->second.node;
    });
    plan.record.cdi_env = facts.edits.env;
  }
};

} // namespace

std::unique_ptr<Modifier> cdi_edits_modifier() { return std::make_unique<CdiEdits>(); }

} // namespace gpuslice::create
