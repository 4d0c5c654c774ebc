#include "gpuslice/create/create.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include <unistd.h>

#include <cerrno>

namespace gpuslice::create {

Context context_of(const Config &config, const std::string &config_file, const std::string &id,
                   const std::string &bundle_dir, HookMode hooks) {
  return {config, config_file, id, state::container_dir_path(config.state_dir, id), bundle_dir, hooks};
}

std::vector<std::string> devices_of(const Facts &facts) {
  std::vector<std::string> out = facts.requests.devices;
  for (const auto &name : facts.applied)
    out.push_back(name + " (applied by the engine)");
  return out;
}

Plan plan_create(BundleSpec &spec, const Facts &facts, const Context &ctx, selinux::System &system) {
  Plan plan;
  if (facts.asks_nothing())
    return plan;
  plan.warnings = facts.warnings;
  for (const auto &m : modifiers(system))
    m->modify(spec, plan, facts, ctx);
  return plan;
}

std::optional<Created> create_bundle(BundleCreate &request, const Config &config, const std::string &config_file) {
  const std::string bundle = request.bundle_dir.empty() ? std::string(".") : request.bundle_dir;
  const std::string path = bundle + "/config.json";
  BundleSpec spec = BundleSpec::load(path);
  const Context ctx = context_of(config, config_file, request.container_id, bundle,
                                 request.run ? HookMode::add : HookMode::none);
  Facts facts = gather_facts(spec, ctx);
  if (facts.asks_nothing())
    return std::nullopt;
  Plan plan = plan_create(spec, facts, ctx);
  if (request.pid_file.empty())
    request.pid_file = ctx.state_path + "/" + state::kInitPidFile;
  // Without limits nothing of gpuslice's waits for runc: the init is the
  // process that file names (absolute as runc makes it, lexically from its
  // cwd, which is this process's).
  if (!plan.monitor)
    plan.record.init_pid_file = fs::absolute(request.pid_file);
  MonitorStart start;
  if (request.run)
    start = {MonitorStart::When::after_this_process, 0, request.pid_file};
  Committed committed = commit(plan, facts, ctx, start, [&](const state::ContainerDir &) {
    // A file an earlier container left there (runc fails before it writes
    // its own) names another process, which start times cannot always tell
    // from the init (they count 10 ms ticks): removed before runc runs, and
    // only now that the id is this create's.
    if (::unlink(request.pid_file.c_str()) != 0 && errno != ENOENT)
      throw system_error("cannot remove the pid file " + quote(request.pid_file) + " an earlier container left");
    spec.save(path);
  });
  return Created{std::move(committed.dir), std::move(committed.monitor), devices_of(facts), plan.warnings,
                 plan.monitor, plan.notes};
}

} // namespace gpuslice::create
