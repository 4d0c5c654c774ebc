#include "gpuslice/dra/claim_spec.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/nvidia/generate.hpp"
#include "gpuslice/sharing/limits.hpp"

#include <algorithm>
#include <cctype>

namespace gpuslice::dra {

bool safe_uid(const std::string &uid) {
  return !uid.empty() && uid.size() <= 64 &&
         std::all_of(uid.begin(), uid.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; });
}

std::string claim_spec_file(const std::string &driver_name, const std::string &uid) {
  return driver_name + "-claim_" + uid + ".json";
}

ClaimSpec claim_spec(const ClaimRef &ref, const std::vector<AllocatedDevice> &allocated, const SpecContext &context) {
  return with_context("claim " + ref.namespace_name + "/" + ref.name, [&] {
    const std::string kind = context.driver_name + "/claim";
    ClaimSpec out;
    std::vector<nvidia::SpecDevice> devices;
    for (const auto &a : allocated) {
      const PoolDevice *d = find_device(context.pool, a.device);
      if (!d)
        throw Error("device " + quote(a.device) + " is not in this node's pool (GPUs changed since it was allocated?)");
      const auto &gpu = context.driver.gpus.at(d->gpu);
      std::vector<std::string> env = {nvidia::gpu_env(gpu)};
      if (const auto memory = a.memory ? a.memory : d->memory_limit)
        env.push_back("GPUSLICE_MEMORY_LIMIT=" + std::to_string(*memory));
      if (const auto compute = a.config.compute_limit ? a.config.compute_limit : d->compute_limit)
        env.push_back("GPUSLICE_COMPUTE_LIMIT=" + std::to_string(*compute));
      if (a.config.compute_policy)
        env.push_back("GPUSLICE_COMPUTE_POLICY=" + std::string(sharing::policy_name(*a.config.compute_policy)));
      const std::string name = ref.uid + "-" + a.device;
      devices.push_back({name, {&gpu}, env});
      out.devices.push_back({a.request, context.pool_name, a.device, {kind + "=" + name}, a.share_id});
    }
    out.spec = nvidia::spec_of(context.driver, kind, devices, context.hook_path);
    return out;
  });
}

} // namespace gpuslice::dra
