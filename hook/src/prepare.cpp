#include "gpuslice/hook/prepare.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/hook/device_cgroup.hpp"
#include "gpuslice/hook/in_container.hpp"
#include "gpuslice/hook/injection.hpp"
#include "gpuslice/hook/spec_hooks.hpp"
#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/create/modifiers.hpp"
#include "gpuslice/state/container_dir.hpp"

namespace gpuslice::hook {

Prepared prepare_container(const ContainerState &state, const std::string &state_json, const Config &config,
                           const std::string &config_file) {
  Prepared out;
  if (state::container_dir_exists(config.state_dir, state.id)) {
    state::record_init(config.state_dir, state.id, state.pid);
    return out;
  }
  if (state.bundle.empty())
    throw Error("container " + quote(state.id) + ": the container state names no bundle: cannot tell which devices "
                "it requests");
  if (state.pid <= 0)
    throw Error("container " + quote(state.id) + ": the container state names no init pid");
  create::BundleSpec spec = create::BundleSpec::load(state.bundle + "/config.json");
  const cdi::OciSpec before = spec.json();
  create::CreateContext ctx{spec, config, config_file, state.id,
                          fs::clean_path(config.state_dir) + "/containers/" + state.id, std::string(), {}, {},
                          state.pid};
  create::CreatePlan plan = create::plan_create(ctx, state.bundle, create::HookMode::none);
  out.warnings = std::move(plan.warnings);
  if (plan.devices.empty())
    return out; // asks for nothing: no state dir, nothing to undo
  const std::string root = spec.root_path();
  const std::string rootfs = fs::clean_path(fs::is_absolute(root) ? root : state.bundle + "/" + root);
  const Injection injection = plan_injection(before, spec.json(), rootfs, plan.host_nodes);
  create::commit_host(ctx, /*pid_file=*/"", [&](const state::ContainerDir &dir) {
    const auto init = state::process_id(state.pid);
    if (!init)
      throw Error("container " + quote(state.id) + ": its init (pid " + std::to_string(state.pid) + ") is gone");
    state::write_process_record(dir.fd.get(), state::kInitRecord, *init, dir.path);
    inject_in_container(state.pid, rootfs, injection);
    with_context("device cgroup", [&] { allow_devices(state.pid, injection.rules); });
    run_spec_hooks(injection.hooks, state_json);
  });
  if (!injection.env.empty())
    out.warnings.push_back("the CDI edits set " + join(injection.env, " ") +
                           " in the container's env, which a hook cannot give a created process (gpuslice exec has "
                           "them; gpuslice-runtime gives them to the container)");
  out.warnings.insert(out.warnings.end(), ctx.warnings.begin(), ctx.warnings.end());
  out.injected = true;
  out.devices = std::move(plan.devices);
  return out;
}

} // namespace gpuslice::hook
