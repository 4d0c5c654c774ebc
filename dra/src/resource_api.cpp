#include "gpuslice/dra/resource_api.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/log.hpp"

#include <algorithm>

namespace gpuslice::dra {

namespace {

// A DNS subdomain, as Kubernetes names nodes, namespaces and claims: nothing
// that could leave its place in a URL path.
bool api_name(const std::string &s) {
  return !s.empty() && s.size() <= 253 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  }) && s.front() != '.' && s.find("..") == std::string::npos;
}

} // namespace

std::string ResourceApi::version(bool ask_again) {
  std::lock_guard lock(mutex_);
  if (!version_.empty() && !ask_again)
    return version_;
  const auto group = api_->get("/apis/resource.k8s.io");
  for (const char *version : {"v1", "v1beta2", "v1beta1"})
    if (group.contains("versions") && group["versions"].is_array())
      for (const auto &v : group["versions"])
        if (v.is_object() && v.value("version", "") == version)
          return version_ = version;
  throw Error("the API server serves no resource.k8s.io version this plugin reads (v1, v1beta2, v1beta1)");
}

nlohmann::json ResourceApi::claim(const ClaimRef &ref) {
  if (!api_name(ref.namespace_name) || !api_name(ref.name))
    throw Error("claim " + quote(ref.namespace_name + "/" + ref.name) + " is not a namespace and name");
  for (int attempt = 0;; ++attempt) {
    try {
      return api_->get("/apis/resource.k8s.io/" + version(attempt > 0) + "/namespaces/" + ref.namespace_name +
                       "/resourceclaims/" + ref.name);
    } catch (const ApiError &e) {
      if (e.status != 404)
        throw Error(e.what());
      if (attempt > 0)
        throw Error("claim " + ref.namespace_name + "/" + ref.name + " is not in the API server: " + e.what());
    }
  }
}

std::string ResourceApi::node_uid(const std::string &node_name) {
  if (!api_name(node_name))
    throw Error("node name " + quote(node_name) + " is not a Kubernetes name");
  const auto node = api_->get("/api/v1/nodes/" + node_name);
  const std::string uid = node.value("metadata", nlohmann::json::object()).value("uid", "");
  if (uid.empty())
    throw Error("node " + node_name + " has no uid in the API server");
  return uid;
}

bool ResourceApi::slice_current(const std::string &node_name, const std::string &driver_name) {
  const std::string uid = node_uid(node_name);
  nlohmann::json slice;
  try {
    slice = api_->get("/apis/resource.k8s.io/" + version() + "/resourceslices/" + slice_name(node_name, driver_name));
  } catch (const ApiError &e) {
    if (e.status == 404)
      return false;
    throw Error(e.what());
  }
  for (const auto &owner : slice.value("metadata", nlohmann::json::object()).value("ownerReferences", nlohmann::json::array()))
    if (owner.is_object() && owner.value("kind", "") == "Node" && owner.value("uid", "") == uid)
      return true;
  return false;
}

void ResourceApi::publish_slice(SliceContext context) {
  const std::string version = this->version();
  context.node_uid = node_uid(context.node_name);
  const std::string base = "/apis/resource.k8s.io/" + version + "/resourceslices";
  const std::string mine = slice_name(context.node_name, context.driver_name);
  const auto list = api_->get(base + "?fieldSelector=spec.nodeName%3D" + context.node_name);
  long generation = 1;
  std::string resource_version;
  for (const auto &item : list.value("items", nlohmann::json::array())) {
    const auto &meta = item.value("metadata", nlohmann::json::object());
    const auto &spec = item.value("spec", nlohmann::json::object());
    if (spec.value("driver", "") != context.driver_name || spec.value("nodeName", "") != context.node_name)
      continue;
    const std::string name = meta.value("name", "");
    if (name == mine) {
      resource_version = meta.value("resourceVersion", "");
      generation = spec.value("pool", nlohmann::json::object()).value("generation", 0L) + 1;
      continue;
    }
    api_->send("DELETE", base + "/" + name);
    log::line("info", "deleted the stale ResourceSlice " + name);
  }
  auto slice = resource_slice(context, version, generation);
  if (resource_version.empty()) {
    api_->send("POST", base, &slice);
  } else {
    slice["metadata"]["resourceVersion"] = resource_version;
    api_->send("PUT", base + "/" + mine, &slice);
  }
  log::line("info", "published ResourceSlice " + mine + " (resource.k8s.io/" + version + ", generation " +
                        std::to_string(generation) + ", " + std::to_string(context.pool.size()) + " device(s))");
}

} // namespace gpuslice::dra
