#include "gpuslice/create/modifiers.hpp"

#include "gpuslice/common/json_text.hpp"
#include "gpuslice/create/bundle.hpp"
#include "gpuslice/create/exec_env.hpp"
#include "gpuslice/create/image_glibc.hpp"
#include "gpuslice/create/container_limits.hpp"

namespace gpuslice::create {

namespace {

class CdiEdits final : public Modifier {
public:
  explicit CdiEdits(cdi::ContainerEdits edits) : edits_(std::move(edits)) {}
  void modify(CreateContext &ctx) const override { cdi::apply_edits(ctx.spec.json(), edits_); }

private:
  cdi::ContainerEdits edits_;
};

class Hooks final : public Modifier {
public:
  void modify(CreateContext &ctx) const override { add_gpuslice_hooks(ctx.spec.json(), ctx.config, ctx.config_file); }
};

class ExecEnv final : public Modifier {
public:
  explicit ExecEnv(std::vector<std::string> env) : env_(std::move(env)) {}
  void modify(CreateContext &ctx) const override { ctx.plan.files.emplace_back(kCdiEnvFile, cdi_env_text(env_)); }

private:
  std::vector<std::string> env_;
};

class Sharing final : public Modifier {
public:
  explicit Sharing(sharing::Limits limits) : limits_(std::move(limits)) {}
  void modify(CreateContext &ctx) const override {
    require_image_glibc(ctx.rootfs, GPUSLICE_GLIBC_FLOOR);
    const SharingFiles files = plan_sharing_files(limits_, ctx.rootfs);
    add_sharing_mounts(ctx.spec.json(), files, ctx.state_path, ctx.rootfs, ctx.config);
    ctx.plan.files.emplace_back("limits", files.limits);
    ctx.plan.files.emplace_back("ld.so.preload", files.preload);
    ctx.plan.monitor = true;
    ctx.plan.burst = files.burst;
    ctx.plan.limits = limits_;
  }

private:
  sharing::Limits limits_;
};

// A string two levels down ("linux", "mountLabel"); nullopt when absent.
std::optional<std::string> nested_string(const cdi::OciSpec &oci, const char *outer, const char *key) {
  auto it = oci.find(outer);
  if (it == oci.end())
    return std::nullopt;
  return string_member(*it, key, std::string(outer) + "." + key);
}

class SelinuxLabels final : public Modifier {
public:
  explicit SelinuxLabels(selinux::System &system) : system_(system) {}
  void modify(CreateContext &ctx) const override {
    const auto mode = selinux::parse_mode(ctx.config.selinux_label);
    if (mode == selinux::Mode::off)
      return;
    const auto &oci = ctx.spec.json();
    auto labels = selinux::container_labels(nested_string(oci, "linux", "mountLabel"),
                                            nested_string(oci, "process", "selinuxLabel"),
                                            ctx.config.selinux_shared_file_label);
    ctx.plan.labeler = selinux::Labeler(system_, mode, std::move(labels));
  }

private:
  selinux::System &system_;
};

} // namespace

std::unique_ptr<Modifier> cdi_edits_modifier(cdi::ContainerEdits edits) { return std::make_unique<CdiEdits>(std::move(edits)); }
std::unique_ptr<Modifier> hooks_modifier() { return std::make_unique<Hooks>(); }
std::unique_ptr<Modifier> exec_env_modifier(std::vector<std::string> env) { return std::make_unique<ExecEnv>(std::move(env)); }
std::unique_ptr<Modifier> sharing_modifier(sharing::Limits limits) { return std::make_unique<Sharing>(std::move(limits)); }
std::unique_ptr<Modifier> selinux_modifier(selinux::System &system) { return std::make_unique<SelinuxLabels>(system); }

} // namespace gpuslice::create
