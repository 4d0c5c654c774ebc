// gpuslice-hook at createRuntime, for `run`: runc creates, starts and waits
// in one call, and only a hook sees the container's init in between. Its
// environment is explicit and minimal: never the container's, whatever the
// runtime and stage would otherwise pass (an image's LD_PRELOAD reaching a
// host hook is how CVE-2025-23266 happened). `create` needs none: the
// runtime records the init itself, and `delete` removes the state, so a
// poststop hook would be one more exec on every GPU container's way out.
#include "gpuslice/create/modifiers.hpp"

#include "gpuslice/common/strings.hpp"

namespace gpuslice::create {

namespace {

class Hooks final : public Modifier {
public:
  void modify(BundleSpec &spec, Plan &, const Facts &, const Context &ctx) const override {
    if (ctx.hooks != HookMode::add)
      return;
    OciHook hook{ctx.config.hook_path, {"gpuslice-hook", "createRuntime"}, {std::string("PATH=") + kDefaultPath}, 30};
    if (ctx.config_file != kDefaultConfigPath)
      hook.env.push_back("GPUSLICE_CONFIG=" + ctx.config_file);
    spec.add_hook("createRuntime", hook);
  }
};

} // namespace

std::unique_ptr<Modifier> hooks_modifier() { return std::make_unique<Hooks>(); }

} // namespace gpuslice::create
