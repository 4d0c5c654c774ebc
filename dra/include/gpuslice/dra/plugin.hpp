// What gpuslice-kubelet-plugin answers kubelet, apart from the wire: for
// each claim of a NodePrepareResources call, its devices' CDI ids (from the
// checkpoint when it is prepared already, else from the API server's
// allocation, written as the claim's CDI spec), or that claim's error; for
// NodeUnprepareResources, the claim's spec and entry removed. One claim's
// failure is never another's, nor the call's.
#pragma once

#include "gpuslice/dra/claim.hpp"
#include "gpuslice/dra/claim_spec.hpp"
#include "gpuslice/dra/store.hpp"

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace gpuslice::dra {

struct PluginOptions {
  std::string driver_name = "gpu.gpuslice.io";
  std::string node_name;
  std::string cdi_root = "/var/run/cdi";
  std::string plugin_dir; // default /var/lib/kubelet/plugins/<driver-name>
  std::string hook_path;  // gpuslice-hook as installed
  int slices = 0;
};

// The claim object, from the API server (or a test). Throws Error (or
// ApiError) when it cannot be had.
using ClaimGetter = std::function<nlohmann::json(const ClaimRef &)>;

struct ClaimResult {
  std::vector<PreparedDevice> devices;
  std::string error; // set: the claim failed
};

class Plugin {
public:
  Plugin(PluginOptions options, nvidia::Driver driver, std::vector<PoolDevice> pool, ClaimGetter get_claim);

  // By claim uid, one for each claim asked.
  std::map<std::string, ClaimResult> prepare(const std::vector<ClaimRef> &claims);
  // By claim uid: "" or the error.
  std::map<std::string, std::string> unprepare(const std::vector<ClaimRef> &claims);

  // The node's GPUs changed: later claims are prepared from these. Claims
  // prepared before keep their specs.
  void update(nvidia::Driver driver, std::vector<PoolDevice> pool);

  const PluginOptions &options() const { return options_; }

private:
  std::vector<PreparedDevice> prepare_one(const ClaimRef &ref);

  PluginOptions options_;
  nvidia::Driver driver_;
  std::vector<PoolDevice> pool_;
  ClaimGetter get_claim_;
  std::mutex mutex_; // kubelet may call twice at once, GPUs may change; the store is one
  ClaimStore store_;
};

} // namespace gpuslice::dra
