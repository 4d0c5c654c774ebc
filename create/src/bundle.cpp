#include "gpuslice/create/bundle.hpp"

#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/cdi/spec_cache.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/sharing/activity.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/sharing/region.hpp"
#include "gpuslice/create/admission.hpp"
#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/create/exec_env.hpp"
#include "gpuslice/create/modifiers.hpp"
#include "gpuslice/create/monitor_start.hpp"
#include "gpuslice/create/requests.hpp"
#include "gpuslice/create/container_limits.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <cerrno>
#include <optional>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuslice::create {

namespace {
const std::string kHookPath = std::string("PATH=") + kDefaultPath;
} // namespace

void add_gpuslice_hooks(cdi::OciSpec &oci, const Config &config, const std::string &config_file) {
  cdi::OciSpec env = cdi::OciSpec::array({kHookPath});
  if (config_file != kDefaultConfigPath)
    env.push_back("GPUSLICE_CONFIG=" + config_file);
  auto &hooks = oci["hooks"];
  if (!hooks.is_object())
    hooks = cdi::OciSpec::object();
  // createRuntime only: `delete` goes through gpuslice-runtime, which
  // removes the state itself once runc is done, so a poststop hook would
  // be one more exec on every GPU container's way out for nothing.
  for (const char *stage : {"createRuntime"}) {
    cdi::OciSpec hook = {{"path", config.hook_path}, {"args", {"gpuslice-hook", stage}}, {"env", env}, {"timeout", 30}};
    auto &list = hooks[stage];
    if (!list.is_array())
      list = cdi::OciSpec::array();
    bool present = false;
    for (const auto &h : list)
      present = present || (string_member(h, "path", std::string("hooks.") + stage + "[].path") == config.hook_path &&
                            h.contains("args") && h["args"] == hook["args"]);
    if (!present)
      list.push_back(std::move(hook));
  }
}

std::string shim_program(const Config &config) {
  if (!config.shim_path.empty())
    return config.shim_path;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    throw system_error("cannot find gpuslice-shim beside this program (/proc/self/exe)");
  return fs::dirname(std::string_view(self, static_cast<std::size_t>(n))) + "/gpuslice-shim";
}

void write_in(int dir_fd, const std::string &name, const std::string &text, mode_t mode, const std::string &shown,
              const selinux::Labeler &labeler) {
  const UniqueFd f = fs::create_file_at(dir_fd, name, text, mode, shown);
  labeler.label_fd(f.get(), selinux::Share::private_read_only, shown + "/" + name);
}

state::ContainerDir commit_host(CreateContext &ctx, const std::string &pid_file,
                                const std::function<void(const state::ContainerDir &)> &finish) {
  // A container with limits takes its place on its GPUs under the lock,
  // held until its own limits file is in place (admission.hpp).
  UniqueFd admission;
  if (ctx.plan.limits)
    admission = state::lock_containers(ctx.config.state_dir);
  // What no runtime knows any more (a create killed half-way, a container
  // whose delete never came) is collected now and then, not on every
  // create (state::collect_stale_now_and_then). A stale dir of this very id
  // goes in create_container_dir; stale ones that hold places on a GPU go
  // before a refusal is final.
  state::collect_stale_now_and_then(ctx.config.state_dir, kStaleCollectionInterval);
  if (ctx.plan.limits) {
    const GpuMemory gpu_memory = [&](std::string &why) { return node_gpu_memory(ctx.config, why); };
    try {
      admit(*ctx.plan.limits, ctx.config, gpu_memory, ctx.warnings);
    } catch (const Error &) {
      if (state::collect_stale(ctx.config.state_dir).empty())
        throw;
      admit(*ctx.plan.limits, ctx.config, gpu_memory, ctx.warnings);
    }
  }
  state::ContainerDir dir = state::create_container_dir(ctx.config.state_dir, ctx.container_id);
  try {
    // A file an earlier container left there (runc fails before it writes
    // its own) names another process, which start times cannot always tell
    // from the init (they count 10 ms ticks): removed before runc runs. Only
    // once the id is this create's: a create refused for an id in use must
    // not take the pid file of that container (its dir may live by it).
    if (!pid_file.empty() && ::unlink(pid_file.c_str()) != 0 && errno != ENOENT)
      throw system_error("cannot remove the pid file " + quote(pid_file) + " an earlier container left");
    ctx.plan.labeler.label_fd(dir.fd.get(), selinux::Share::private_file, dir.path);
    for (const auto &[name, text] : ctx.plan.files)
      write_in(dir.fd.get(), name, text, 0444, dir.path, ctx.plan.labeler);
    admission.reset(); // before the monitor: a forked child would hold the lock on
    if (ctx.plan.monitor && ctx.defer_monitor && ctx.init_pid == 0)
      ctx.pending_monitor = prepare_monitor(dir, ctx);
    else if (ctx.plan.monitor)
      start_monitor(dir, ctx, pid_file);
    finish(dir);
  } catch (...) {
    state::remove_container_dir(ctx.config.state_dir, ctx.container_id);
    throw;
  }
  return dir;
}

state::ContainerDir commit(CreateContext &ctx, std::string &pid_file, const std::string &config_json) {
  if (pid_file.empty()) // runc is given one: the runtime reads the init's pid from it
    pid_file = ctx.state_path + "/" + kInitPidFile;
  // No process of gpuslice's waits for the runtime of a container without
  // limits (exec_create): its init, once the runtime has exited, is the
  // one this file names (state::kInitPidFileRecord). Absolute as runc makes
  // it (lexically, from its cwd, which is this process's).
  if (!ctx.plan.monitor)
    ctx.plan.files.emplace_back(state::kInitPidFileRecord, fs::absolute(pid_file) + "\n");
  return commit_host(ctx, pid_file, [&](const state::ContainerDir &) { ctx.spec.save(config_json); });
}

CreatePlan plan_create(CreateContext &ctx, const std::string &bundle_dir, HookMode hooks) {
  CreatePlan plan;
  Requests requests = collect_requests(ctx.spec.json(), ctx.config);
  if (requests.empty()) {
    refuse_limits_not_claimed(ctx.spec.json());
    return plan;
  }
  if (!state::is_safe_container_id(ctx.container_id))
    throw Error("container id " + quote(ctx.container_id) + " is not a safe path component");

  // Only the specs of the kinds asked for: a node's other specs (some of
  // them large) are not parsed on every create.
  std::set<std::string> kinds;
  for (const auto &name : requests.devices)
    kinds.insert(name.substr(0, name.find('=')));
  cdi::Registry registry(ctx.config.spec_dirs, cdi::ChangeDetection::none);
  // Root's cache of parsed specs: a node's driver spec is not parsed again
  // on every create (spec_cache.hpp).
  std::optional<cdi::SpecCache> cache;
  if (::geteuid() == 0)
    registry.use_cache(&cache.emplace(cdi::kDefaultSpecCacheDir));
  registry.reload(kinds);
  for (const auto &e : registry.errors())
    plan.warnings.push_back("CDI spec " + e.path + ": " + e.message);
  cdi::ContainerEdits edits = cdi::collect_edits(registry, requests.devices);
  for (const auto &node : edits.device_nodes)
    plan.host_nodes[node.path] = node.host_path.empty() ? node.path : node.host_path;
  std::vector<ClaimedEnv> claimed;
  for (const auto &name : requests.devices) {
    const cdi::ResolvedDevice *d = registry.find(name); // collect_edits resolved every one
    ClaimedEnv c{name, d->spec->edits.env};
    c.env.insert(c.env.end(), d->device->edits.env.begin(), d->device->edits.env.end());
    claimed.push_back(std::move(c));
  }
  const auto limits = container_limits(claimed, ctx.spec.json(), ctx.config);
  if (!limits)
    refuse_limits_not_claimed(ctx.spec.json());

  Modifiers modifiers;
  modifiers.push_back(exec_env_modifier(edits.env));
  modifiers.push_back(cdi_edits_modifier(std::move(edits)));
  if (hooks == HookMode::add)
    modifiers.push_back(hooks_modifier());
  modifiers.push_back(selinux_modifier());
  if (limits) {
    const std::string root = ctx.spec.root_path();
    ctx.rootfs = fs::absolute(fs::is_absolute(root) ? root : bundle_dir + "/" + root);
    modifiers.push_back(sharing_modifier(*limits));
  }
  for (const auto &m : modifiers)
    m->modify(ctx);
  plan.devices = std::move(requests.devices);
  return plan;
}

void tidy_bundle(const std::string &bundle) { fs::remove_stale_temporaries(bundle_dir(bundle) + "/config.json"); }

BundleEdit prepare_bundle(CreateRequest &request, const Config &config, const std::string &config_file,
                          HookMode hooks) {
  const std::string bundle = bundle_dir(request.bundle_dir);
  const std::string path = bundle + "/config.json";
  BundleSpec spec = BundleSpec::load(path);
  CreateContext ctx{spec, config, config_file, request.container_id,
                    fs::clean_path(config.state_dir) + "/containers/" + request.container_id, std::string(), {}, {}};
  ctx.defer_monitor = request.defer_monitor;
  CreatePlan plan = plan_create(ctx, bundle, hooks);
  BundleEdit edit;
  edit.warnings = std::move(plan.warnings);
  if (plan.devices.empty())
    return edit;
  edit.state_dir = commit(ctx, request.pid_file, path);
  edit.warnings.insert(edit.warnings.end(), ctx.warnings.begin(), ctx.warnings.end());
  edit.written = true;
  edit.shared = ctx.plan.monitor;
  edit.monitor = std::move(ctx.pending_monitor);
  edit.devices = std::move(plan.devices);
  return edit;
}

} // namespace gpuslice::create
