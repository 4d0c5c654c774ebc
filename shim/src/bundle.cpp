#include "gpuslice/shim/bundle.hpp"

#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/sharing/activity.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/sharing/monitor.hpp"
#include "gpuslice/sharing/region.hpp"
#include "gpuslice/shim/admission.hpp"
#include "gpuslice/shim/bundle_spec.hpp"
#include "gpuslice/shim/exec_env.hpp"
#include "gpuslice/shim/modifiers.hpp"
#include "gpuslice/shim/requests.hpp"
#include "gpuslice/shim/sharing.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuslice::shim {

namespace {
const std::string kHookPath = std::string("PATH=") + kDefaultPath;
constexpr const char *kInitPidFile = "init.pid";
} // namespace

void add_gpuslice_hooks(cdi::OciSpec &oci, const Config &config, const std::string &config_file) {
  cdi::OciSpec env = cdi::OciSpec::array({kHookPath});
  if (config_file != kDefaultConfigPath)
    env.push_back("GPUSLICE_CONFIG=" + config_file);
  auto &hooks = oci["hooks"];
  if (!hooks.is_object())
    hooks = cdi::OciSpec::object();
  for (const char *stage : {"createRuntime", "poststop"}) {
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

namespace {

void write_in(int dir_fd, const std::string &name, const std::string &text, mode_t mode, const std::string &shown,
              const selinux::Labeler &labeler) {
  UniqueFd f(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!f || ::write(f.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fchmod(f.get(), mode) != 0)
    throw system_error("cannot write " + quote(shown + "/" + name));
  labeler.label_fd(f.get(), selinux::Share::private_read_only, shown + "/" + name);
}

// "namespace/name" of the pod, from the annotations kubelet's runtime sets
// (containerd's CRI, then CRI-O's); for the monitor's log lines only.
std::optional<std::string> pod_of(const cdi::OciSpec &oci) {
  auto annotations = oci.find("annotations");
  if (annotations == oci.end() || !annotations->is_object())
    return std::nullopt;
  for (const auto &[ns_key, name_key] :
       {std::pair{"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name"},
        std::pair{"io.kubernetes.pod.namespace", "io.kubernetes.pod.name"}}) {
    auto ns = annotations->find(ns_key), name = annotations->find(name_key);
    if (ns != annotations->end() && name != annotations->end() && ns->is_string() && name->is_string())
      return ns->get<std::string>() + "/" + name->get<std::string>();
  }
  return std::nullopt;
}

// The usage region, its socket in the state dir, and the monitor that holds
// the region for as long as the container lives.
void start_monitor(const state::ContainerDir &dir, const CreateContext &ctx, std::string &pid_file) {
  const selinux::Labeler &labeler = ctx.plan.labeler;
  sharing::MonitorSetup monitor;
  monitor.region = sharing::create_region();
  labeler.label_fd(monitor.region.get(), selinux::Share::private_file, "the usage region");
  const std::string socket_path = dir.path + "/" + kRegionSocketName;
  {
    const auto socket_label = labeler.socket_label();
    monitor.listener = sharing::listen_region_socket(dir.fd.get(), kRegionSocketName, socket_path);
  }
  labeler.label_in_dir(dir.fd.get(), kRegionSocketName, selinux::Share::private_file, socket_path);
  if (ctx.plan.burst) {
    const std::string activity = fs::clean_path(ctx.config.state_dir) + "/activity";
    monitor.activity_table = sharing::open_activity_table(activity);
    labeler.label_fd(monitor.activity_table.get(), selinux::Share::shared_read_only, activity);
  }
  // This process becomes runc (exec): once it exits, `create` is over and
  // runc has written the init's pid.
  monitor.watched = sharing::open_pidfd(static_cast<int>(::getpid()));
  if (pid_file.empty())
    pid_file = dir.path + "/" + kInitPidFile;
  monitor.pid_file = fs::absolute(pid_file);
  const auto creator = state::process_id(static_cast<int>(::getpid()));
  if (!creator)
    throw Error("cannot read this process's start time from /proc");
  // It removes the state dir when the container ends, only if it is still
  // the one this process created, and checks the container's GPU memory
  // against the driver's accounting meanwhile.
  const Config &c = ctx.config;
  const uint64_t tolerance =
      with_context("monitor.memory-tolerance", [&] { return sharing::parse_size(c.monitor_memory_tolerance); });
  std::vector<std::string> args{"--state-dir", fs::clean_path(c.state_dir), "--id", ctx.container_id, "--creator",
                                state::to_text(*creator),
                                "--limits", dir.path + "/limits", "--interval-ms", std::to_string(c.monitor_interval_ms),
                                "--action", c.monitor_action, "--tolerance", std::to_string(tolerance),
                                "--nvml", c.monitor_nvml_path};
  if (c.log.target == "file")
    args.insert(args.end(), {"--log-file", c.log.directory + "/gpuslice-shim.log"});
  if (auto pod = pod_of(ctx.spec.json()))
    args.insert(args.end(), {"--pod", *pod});
  sharing::exec_monitor(std::move(monitor), shim_program(c), args);
}

} // namespace

void commit(CreateContext &ctx, std::string &pid_file, const std::string &config_json) {
  // A container with limits takes its place on its GPUs under the lock,
  // held until its own limits file is in place (admission.hpp).
  UniqueFd admission;
  if (ctx.plan.limits)
    admission = state::lock_containers(ctx.config.state_dir);
  // What no runtime knows any more (a create killed half-way, a container
  // whose poststop never ran) goes first, so that a stale id does not block
  // this one, nor hold a place on a GPU.
  state::collect_stale(ctx.config.state_dir);
  if (ctx.plan.limits)
    admit(*ctx.plan.limits, ctx.config,
          [&](std::string &why) { return node_gpu_memory(ctx.config, why); }, ctx.warnings);
  const state::ContainerDir dir = state::create_container_dir(ctx.config.state_dir, ctx.container_id);
  try {
    ctx.plan.labeler.label_fd(dir.fd.get(), selinux::Share::private_file, dir.path);
    for (const auto &[name, text] : ctx.plan.files)
      write_in(dir.fd.get(), name, text, 0444, dir.path, ctx.plan.labeler);
    admission.reset(); // before the monitor: a forked child would hold the lock on
    if (ctx.plan.monitor)
      start_monitor(dir, ctx, pid_file);
    ctx.spec.save(config_json);
  } catch (...) {
    state::remove_container_dir(ctx.config.state_dir, ctx.container_id);
    throw;
  }
}

BundleEdit prepare_bundle(CreateRequest &request, const Config &config, const std::string &config_file) {
  const std::string bundle_dir = request.bundle_dir.empty() ? std::string(".") : request.bundle_dir;
  const std::string path = bundle_dir + "/config.json";
  BundleSpec spec = BundleSpec::load(path);
  Requests requests = collect_requests(spec.json(), config);
  BundleEdit edit;
  if (requests.empty()) {
    refuse_limits_not_claimed(spec.json());
    return edit;
  }
  if (!state::is_safe_container_id(request.container_id))
    throw Error("container id " + quote(request.container_id) + " is not a safe path component");

  cdi::Registry registry(config.spec_dirs, cdi::ChangeDetection::none);
  registry.reload();
  for (const auto &e : registry.errors())
    edit.warnings.push_back("CDI spec " + e.path + ": " + e.message);
  cdi::ContainerEdits edits = cdi::collect_edits(registry, requests.devices);
  std::vector<ClaimedEnv> claimed;
  for (const auto &name : requests.devices) {
    const cdi::ResolvedDevice *d = registry.find(name); // collect_edits resolved every one
    ClaimedEnv c{name, d->spec->edits.env};
    c.env.insert(c.env.end(), d->device->edits.env.begin(), d->device->edits.env.end());
    claimed.push_back(std::move(c));
  }
  const auto limits = container_limits(claimed, spec.json(), config);
  if (!limits)
    refuse_limits_not_claimed(spec.json());

  CreateContext ctx{spec, config, config_file, request.container_id,
                    fs::clean_path(config.state_dir) + "/containers/" + request.container_id, std::string(), {}, {}};
  Modifiers modifiers;
  modifiers.push_back(exec_env_modifier(edits.env));
  modifiers.push_back(cdi_edits_modifier(std::move(edits)));
  modifiers.push_back(hooks_modifier());
  modifiers.push_back(selinux_modifier());
  if (limits) {
    const std::string root = spec.root_path();
    ctx.rootfs = fs::absolute(fs::is_absolute(root) ? root : bundle_dir + "/" + root);
    modifiers.push_back(sharing_modifier(*limits));
  }
  for (const auto &m : modifiers)
    m->modify(ctx);
  commit(ctx, request.pid_file, path);
  edit.warnings.insert(edit.warnings.end(), ctx.warnings.begin(), ctx.warnings.end());
  edit.written = true;
  edit.shared = ctx.plan.monitor;
  edit.devices = std::move(requests.devices);
  return edit;
}

} // namespace gpuslice::shim
