// SELinux labels for the files commit makes, from the container's
// linux.mountLabel and process.selinuxLabel (selinux/labeler.hpp): on a
// node that enforces, the confined container reads its limits file,
// preload list and region socket, and no other container's.
#include "gpuslice/create/modifiers.hpp"

namespace gpuslice::create {

namespace {

class SelinuxLabels final : public Modifier {
public:
  explicit SelinuxLabels(selinux::System &system) : system_(system) {}
  void modify(BundleSpec &spec, Plan &plan, const Facts &facts, const Context &ctx) const override {
    const auto mode = selinux::parse_mode(ctx.config.selinux_label);
    if (mode == selinux::Mode::off)
      return;
    auto labels = selinux::container_labels(spec.mount_label(), spec.process_label(),
                                            ctx.config.selinux_shared_file_label);
    plan.labeler = selinux::Labeler(system_, mode, std::move(labels), facts.selinux_kernel);
  }

private:
  selinux::System &system_;
};

} // namespace

std::unique_ptr<Modifier> selinux_modifier(selinux::System &system) { return std::make_unique<SelinuxLabels>(system); }

} // namespace gpuslice::create
