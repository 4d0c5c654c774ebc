// The monitor of a container with limits: gpuslice-shim's arguments, and
// the container's SELinux labels, in the record, so that a monitor started
// again after a crash gets what the create's got.
#include "gpuslice/create/modifiers.hpp"

#include "gpuslice/create/monitor_setup.hpp"

namespace gpuslice::create {

namespace {

// "namespace/name" of the pod, from the annotations kubelet's runtime sets
// (containerd's CRI, then CRI-O's); for the monitor's log lines only.
std::optional<std::string> pod_of(const std::map<std::string, std::string> &annotations) {
  for (const auto &[ns_key, name_key] :
       {std::pair{"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name"},
        std::pair{"io.kubernetes.pod.namespace", "io.kubernetes.pod.name"}}) {
    auto ns = annotations.find(ns_key), name = annotations.find(name_key);
    if (ns != annotations.end() && name != annotations.end())
      return ns->second + "/" + name->second;
  }
  return std::nullopt;
}

class Monitor final : public Modifier {
public:
  void modify(BundleSpec &spec, Plan &plan, const Facts &, const Context &ctx) const override {
    if (!plan.monitor)
      return;
    plan.record.monitor_args = monitor_args(ctx.config, ctx.container_id, ctx.state_path, pod_of(spec.annotations()));
    if (const auto &labels = plan.labeler.labels(); plan.labeler.active() && labels)
      plan.record.selinux = state::Labels{labels->private_file, labels->socket};
  }
};

} // namespace

std::unique_ptr<Modifier> monitor_modifier() { return std::make_unique<Monitor>(); }

} // namespace gpuslice::create
