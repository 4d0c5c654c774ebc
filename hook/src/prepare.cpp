#include "gpuslice/hook/prepare.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/create/create.hpp"
#include "gpuslice/hook/device_cgroup.hpp"
#include "gpuslice/hook/in_container.hpp"
#include "gpuslice/hook/injection.hpp"
#include "gpuslice/hook/spec_hooks.hpp"
#include "gpuslice/state/container_dir.hpp"

namespace gpuslice::hook {

Prepared prepare_container(const ContainerState &state, const std::string &state_json, const Config &config,
                           const std::string &config_file) {
  Prepared out;
  if (const auto dir = state::open_container_dir(config.state_dir, state.id)) {
    state::record_init(*dir, state.id, state.pid);
    return out;
  }
  if (state.bundle.empty())
    throw Error("container " + quote(state.id) + ": the container state names no bundle: cannot tell which devices "
                "it requests");
  if (state.pid <= 0)
    throw Error("container " + quote(state.id) + ": the container state names no init pid");
  create::BundleSpec spec = create::BundleSpec::load(state.bundle + "/config.json");
  const create::BundleSpec before = spec;
  const create::Context ctx = create::context_of(config, config_file, state.id, state.bundle, create::HookMode::none);
  create::Facts facts = create::gather_facts(spec, ctx);
  if (facts.asks_nothing())
    return out; // asks for nothing: no state dir, nothing to undo
  create::Plan plan = create::plan_create(spec, facts, ctx);
  const std::string root = spec.root_path();
  const std::string rootfs = fs::clean_path(fs::is_absolute(root) ? root : state.bundle + "/" + root);
  const Injection injection = plan_injection(before.document(), spec.document(), rootfs, facts.host_nodes);
  create::commit(plan, facts, ctx, {create::MonitorStart::When::on_init, state.pid, ""},
                 [&](const state::ContainerDir &) {
                   inject_in_container(state.pid, rootfs, injection);
                   with_context("device cgroup", [&] { allow_devices(state.pid, injection.rules); });
                   run_spec_hooks(injection.hooks, state_json);
                 });
  if (!injection.env.empty())
    out.warnings.push_back("the CDI edits set " + join(injection.env, " ") +
                           " in the container's env, which a hook cannot give a created process (gpuslice exec has "
                           "them; gpuslice-runtime gives them to the container)");
  out.warnings.insert(out.warnings.end(), plan.warnings.begin(), plan.warnings.end());
  out.notes = plan.notes;
  out.injected = true;
  out.devices = create::devices_of(facts);
  return out;
}

} // namespace gpuslice::hook
