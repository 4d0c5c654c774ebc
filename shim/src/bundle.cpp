#include "gpuslice/shim/bundle.hpp"

#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/hook/state_dir.hpp"
#include "gpuslice/shim/requests.hpp"
#include "gpuslice/shim/sharing.hpp"

namespace gpuslice::shim {

namespace {
// runc's own config.json of a busybox container is 3 KiB, a Kubernetes
// pod's 20 KiB; a bundle cannot make a runtime on the node read more.
constexpr std::size_t kMaxBundleConfigSize = 16u << 20;
constexpr const char *kHookPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
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
      present = present || (h.is_object() && h.value("path", std::string()) == config.hook_path &&
                            h.contains("args") && h["args"] == hook["args"]);
    if (!present)
      list.push_back(std::move(hook));
  }
}

namespace {

// The container's root filesystem on the host: root.path, relative to the
// bundle unless absolute.
std::string rootfs_path(const cdi::OciSpec &oci, const std::string &bundle_dir) {
  auto root = oci.find("root");
  if (root == oci.end() || !root->is_object() || !root->contains("path") || !(*root)["path"].is_string())
    throw Error("OCI spec has no root.path");
  const std::string path = (*root)["path"].get<std::string>();
  return fs::is_absolute(path) ? path : bundle_dir + "/" + path;
}

} // namespace

BundleEdit prepare_bundle(const std::string &bundle_dir_arg, const std::string &container_id, const Config &config,
                          const std::string &config_file) {
  const std::string bundle_dir = bundle_dir_arg.empty() ? std::string(".") : bundle_dir_arg;
  const std::string path = bundle_dir + "/config.json";
  cdi::OciSpec oci;
  with_context("OCI spec " + quote(path), [&] {
    oci = parse_json<cdi::OciSpec>(fs::read_file(path, kMaxBundleConfigSize));
    if (!oci.is_object())
      throw Error("not a JSON object");
  });

  Requests requests = collect_requests(oci, config);
  BundleEdit edit;
  std::string container_dir;
  if (requests.empty() && !requests.removed_linux_devices)
    return edit;

  if (!requests.empty()) {
    cdi::Registry registry(config.spec_dirs, cdi::ChangeDetection::none);
    registry.reload();
    for (const auto &e : registry.errors())
      edit.warnings.push_back("CDI spec " + e.path + ": " + e.message);
    const cdi::ContainerEdits edits = cdi::collect_edits(registry, requests.devices);
    const auto limits = container_limits(edits, oci, config);
    cdi::OciSpec edited = oci;
    cdi::apply_edits(edited, edits);
    add_gpuslice_hooks(edited, config, config_file);
    if (limits) {
      container_dir = hook::create_container_dir(config.state_dir, container_id);
      try {
        wire_sharing(edited, *limits, container_dir, rootfs_path(oci, bundle_dir), config);
      } catch (...) {
        hook::remove_container_dir(config.state_dir, container_id);
        throw;
      }
      edit.shared = true;
    }
    oci = std::move(edited);
  }
  try {
    std::string text;
    try {
      text = oci.dump();
    } catch (const nlohmann::json::exception &e) {
      throw Error(std::string("cannot serialise the edited OCI spec: ") + e.what());
    }
    with_context("OCI spec " + quote(path), [&] { fs::write_file_atomic(path, text, static_cast<mode_t>(-1), fs::Durability::atomic); });
  } catch (...) {
    if (edit.shared)
      hook::remove_container_dir(config.state_dir, container_id);
    throw;
  }
  edit.written = true;
  edit.devices = std::move(requests.devices);
  return edit;
}

} // namespace gpuslice::shim
