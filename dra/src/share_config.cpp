#include "gpuslice/dra/share_config.hpp"

#include "gpuslice/common/error.hpp"

namespace gpuslice::dra {

ShareConfig parse_share_config(const nlohmann::json &parameters) {
  if (!parameters.is_object())
    throw Error("a GpuShareConfig is a JSON object, not " + std::string(parameters.type_name()));
  auto string_field = [&](const char *key) -> std::string {
    const auto it = parameters.find(key);
    if (it == parameters.end() || !it->is_string())
      throw Error(std::string("GpuShareConfig: \"") + key + "\" must be a string");
    return it->get<std::string>();
  };
  if (const auto v = string_field("apiVersion"); v != kShareConfigApiVersion)
    throw Error("GpuShareConfig: apiVersion " + quote(v) + " is not " + kShareConfigApiVersion);
  if (const auto k = string_field("kind"); k != kShareConfigKind)
    throw Error("opaque configuration of kind " + quote(k) + ": gpuslice's driver takes only " + kShareConfigKind);
  ShareConfig config;
  for (const auto &item : parameters.items()) {
    const std::string &key = item.key();
    const nlohmann::json &value = item.value();
    if (key == "apiVersion" || key == "kind")
      continue;
    if (key == "computeLimit") {
      if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > 100)
        throw Error("GpuShareConfig: computeLimit " + value.dump() + " is not a whole percent from 1 to 100");
      config.compute_limit = value.get<int>();
    } else if (key == "computePolicy") {
      if (!value.is_string())
        throw Error("GpuShareConfig: computePolicy " + value.dump() + " is not a string");
      config.compute_policy = with_context("GpuShareConfig: computePolicy",
                                           [&] { return sharing::parse_policy(value.get<std::string>()); });
    } else {
      throw Error("GpuShareConfig: unknown field " + quote(key) + " (computeLimit and computePolicy are known)");
    }
  }
  return config;
}

ShareConfig merged(const ShareConfig &earlier, const ShareConfig &later) {
  ShareConfig out = earlier;
  if (later.compute_limit)
    out.compute_limit = later.compute_limit;
  if (later.compute_policy)
    out.compute_policy = later.compute_policy;
  return out;
}

} // namespace gpuslice::dra
