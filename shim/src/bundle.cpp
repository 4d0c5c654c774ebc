#include "gpuslice/shim/bundle.hpp"

#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/sharing/activity.hpp"
#include "gpuslice/sharing/monitor.hpp"
#include "gpuslice/sharing/region.hpp"
#include "gpuslice/shim/exec_env.hpp"
#include "gpuslice/shim/requests.hpp"
#include "gpuslice/shim/sharing.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace gpuslice::shim {

namespace {
// runc's own config.json of a busybox container is 3 KiB, a Kubernetes
// pod's 20 KiB; a bundle cannot make a runtime on the node read more.
constexpr std::size_t kMaxBundleConfigSize = 16u << 20;
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

namespace {

// The container's root filesystem on the host, absolute: root.path,
// relative to the bundle unless absolute.
std::string rootfs_path(const cdi::OciSpec &oci, const std::string &bundle_dir) {
  auto root = oci.find("root");
  if (root == oci.end() || !root->is_object() || !root->contains("path") || !(*root)["path"].is_string())
    throw Error("OCI spec has no root.path");
  const std::string path = (*root)["path"].get<std::string>();
  return fs::absolute(fs::is_absolute(path) ? path : bundle_dir + "/" + path);
}

void write_in(int dir_fd, const char *name, const std::string &text, mode_t mode, const std::string &shown) {
  UniqueFd f(::openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!f || ::write(f.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fchmod(f.get(), mode) != 0)
    throw system_error("cannot write " + quote(shown + "/" + name));
}

// Everything a container with limits gets on the host besides its state
// dir: the limits file, preload list and region socket in it, the region
// itself, and its monitor. On failure the caller removes the state dir (a
// monitor already started cleans up when this process ends without a
// container).
void set_up_sharing(cdi::OciSpec &oci, const sharing::Limits &limits, const std::string &rootfs,
                    const state::ContainerDir &dir, CreateRequest &request, const Config &config) {
  const SharingFiles files = plan_sharing_files(limits, rootfs);
  write_in(dir.fd.get(), "limits", files.limits, 0444, dir.path);
  write_in(dir.fd.get(), "ld.so.preload", files.preload, 0444, dir.path);
  add_sharing_mounts(oci, files, dir.path, rootfs, config);

  sharing::MonitorSetup monitor;
  monitor.region = sharing::create_region();
  monitor.listener = sharing::listen_region_socket(dir.fd.get(), kRegionSocketName, dir.path + "/" + kRegionSocketName);
  if (files.burst)
    monitor.activity_table = sharing::open_activity_table(fs::clean_path(config.state_dir) + "/activity");
  // This process becomes runc (exec): once it exits, `create` is over and
  // runc has written the init's pid.
  monitor.watched = sharing::open_pidfd(static_cast<int>(::getpid()));
  if (request.pid_file.empty())
    request.pid_file = dir.path + "/" + kInitPidFile;
  monitor.pid_file = fs::absolute(request.pid_file);
  const auto creator = state::process_id(static_cast<int>(::getpid()));
  monitor.cleanup = [state_dir = config.state_dir, id = request.container_id, creator] {
    try {
      state::remove_container_dir(state_dir, id, creator);
    } catch (const Error &) {
      // the poststop hook or the next create removes it
    }
  };
  sharing::spawn_monitor(std::move(monitor));
}

} // namespace

BundleEdit prepare_bundle(CreateRequest &request, const Config &config, const std::string &config_file) {
  const std::string bundle_dir = request.bundle_dir.empty() ? std::string(".") : request.bundle_dir;
  const std::string path = bundle_dir + "/config.json";
  cdi::OciSpec oci;
  with_context("OCI spec " + quote(path), [&] {
    oci = parse_json<cdi::OciSpec>(fs::read_file(path, kMaxBundleConfigSize));
    if (!oci.is_object())
      throw Error("not a JSON object");
  });

  Requests requests = collect_requests(oci, config);
  BundleEdit edit;
  if (requests.empty())
    return edit;

  cdi::Registry registry(config.spec_dirs, cdi::ChangeDetection::none);
  registry.reload();
  for (const auto &e : registry.errors())
    edit.warnings.push_back("CDI spec " + e.path + ": " + e.message);
  const cdi::ContainerEdits edits = cdi::collect_edits(registry, requests.devices);
  std::vector<ClaimedEnv> claimed;
  for (const auto &name : requests.devices) {
    const cdi::ResolvedDevice *d = registry.find(name); // collect_edits resolved every one
    ClaimedEnv c{name, d->spec->edits.env};
    c.env.insert(c.env.end(), d->device->edits.env.begin(), d->device->edits.env.end());
    claimed.push_back(std::move(c));
  }
  const auto limits = container_limits(claimed, oci, config);
  cdi::OciSpec edited = oci;
  cdi::apply_edits(edited, edits);
  add_gpuslice_hooks(edited, config, config_file);
  // Every GPU container gets its state dir: the CDI env for `exec`, and
  // for one with limits everything sharing needs. What no runtime knows any
  // more (a create killed half-way, a container whose poststop never ran)
  // goes first, so that a stale id does not block this one.
  state::collect_stale(config.state_dir);
  state::ContainerDir dir = state::create_container_dir(config.state_dir, request.container_id);
  try {
    record_cdi_env(dir.fd.get(), edits.env, dir.path);
    if (limits) {
      set_up_sharing(edited, *limits, rootfs_path(oci, bundle_dir), dir, request, config);
      edit.shared = true;
    }
    std::string text;
    try {
      text = edited.dump();
    } catch (const nlohmann::json::exception &e) {
      throw Error(std::string("cannot serialise the edited OCI spec: ") + e.what());
    }
    with_context("OCI spec " + quote(path), [&] { fs::write_file_atomic(path, text, static_cast<mode_t>(-1), fs::Durability::atomic); });
  } catch (...) {
    state::remove_container_dir(config.state_dir, request.container_id);
    throw;
  }
  edit.written = true;
  edit.devices = std::move(requests.devices);
  return edit;
}

} // namespace gpuslice::shim
