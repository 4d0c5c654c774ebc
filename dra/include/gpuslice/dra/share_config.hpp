// GpuShareConfig: the opaque configuration a DeviceClass or a claim gives
// gpuslice's DRA driver for the devices it applies to,
//   {"apiVersion": "gpuslice.io/v1alpha1", "kind": "GpuShareConfig",
//    "computeLimit": 30, "computePolicy": "burst"}
// Why only compute: a device's memory is what the scheduler allocated
// (consumedCapacity), and a configuration that could say otherwise would
// let a claim's author take more than the scheduler counted.
#pragma once

#include "gpuslice/sharing/limits.hpp"

#include <nlohmann/json.hpp>

#include <optional>

namespace gpuslice::dra {

inline constexpr const char *kShareConfigApiVersion = "gpuslice.io/v1alpha1";
inline constexpr const char *kShareConfigKind = "GpuShareConfig";

struct ShareConfig {
  std::optional<int> compute_limit; // percent of the GPU's time, 1..100
  std::optional<sharing::Policy> compute_policy;
  bool operator==(const ShareConfig &) const = default;
};

// An opaque configuration's parameters. Throws Error naming the field: a
// wrong apiVersion or kind, an unknown field, a limit out of range, an
// unknown policy.
ShareConfig parse_share_config(const nlohmann::json &parameters);

// `later`'s fields where it sets them, else `earlier`'s: a claim's
// configuration overrides its class's.
ShareConfig merged(const ShareConfig &earlier, const ShareConfig &later);

} // namespace gpuslice::dra
