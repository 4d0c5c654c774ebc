// The API server's resource.k8s.io as gpuslice-kubelet-plugin uses it: the
// newest of v1, v1beta2 and v1beta1 it serves (asked once, and again when a
// claim is not found: the server may have been upgraded since), a claim's
// object, and this node's ResourceSlice. Kept apart from kubelet's wire
// (kubelet_grpc.hpp): these are the only requests the plugin makes, and
// what the DaemonSet's ClusterRole grants.
#pragma once

#include "gpuslice/dra/api_client.hpp"
#include "gpuslice/dra/claim.hpp"
#include "gpuslice/dra/slices.hpp"

#include <memory>
#include <mutex>
#include <string>

namespace gpuslice::dra {

class ResourceApi {
public:
  explicit ResourceApi(std::shared_ptr<const ApiClient> api) : api_(std::move(api)) {}

  // GET of the claim. Throws Error: a namespace or name that is none, a
  // claim not in the API server, a failed request.
  nlohmann::json claim(const ClaimRef &ref);

  // Publishes this node's slice (slices.hpp): made, or replaced with the
  // pool's next generation; every other slice of this node and driver (a
  // former name, a crash's leftover) deleted, so that each device is listed
  // once. Throws Error.
  void publish_slice(SliceContext context);

  // Whether this node's slice is there and owned by the node as it is now:
  // a Node deleted and made again took its slice with it. Throws Error.
  bool slice_current(const std::string &node_name, const std::string &driver_name);

private:
  std::string version(bool ask_again = false);
  // The Node's uid, the owner of its slice. Throws Error.
  std::string node_uid(const std::string &node_name);

  std::shared_ptr<const ApiClient> api_;
  std::mutex mutex_; // the version: kubelet's calls and the republishing thread
  std::string version_;
};

} // namespace gpuslice::dra
