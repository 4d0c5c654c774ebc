#include "gpuslice/dra/slices.hpp"

#include "gpuslice/common/error.hpp"

namespace gpuslice::dra {

using nlohmann::json;

std::string slice_name(const std::string &node_name, const std::string &driver_name) {
  return node_name + "-" + driver_name;
}

json resource_slice(const SliceContext &c, const std::string &version, long generation) {
  if (version != "v1" && version != "v1beta2" && version != "v1beta1")
    throw Error("no ResourceSlice shape for resource.k8s.io/" + version);
  json devices = json::array();
  for (const auto &d : c.pool) {
    const auto &gpu = c.driver.gpus.at(d.gpu);
    json attributes = {{"uuid", {{"string", gpu.uuid}}}, {"index", {{"int", gpu.index}}}};
    if (!gpu.model.empty())
      attributes["productName"] = {{"string", gpu.model}};
    if (!c.driver.version.empty())
      attributes["driverVersion"] = {{"version", c.driver.version}};
    json device = {{"attributes", attributes}, {"capacity", {{"memory", {{"value", std::to_string(d.memory)}}}}}};
    if (c.shared)
      device["allowMultipleAllocations"] = true;
    if (version == "v1beta1") {
      devices.push_back({{"name", d.name}, {"basic", device}});
    } else {
      device["name"] = d.name;
      devices.push_back(device);
    }
  }
  return {{"apiVersion", "resource.k8s.io/" + version},
          {"kind", "ResourceSlice"},
          {"metadata",
           {{"name", slice_name(c.node_name, c.driver_name)},
            {"ownerReferences",
             json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", c.node_name}, {"uid", c.node_uid},
                           {"controller", true}}})}}},
          {"spec",
           {{"driver", c.driver_name},
            {"nodeName", c.node_name},
            {"pool", {{"name", c.node_name}, {"generation", generation}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

} // namespace gpuslice::dra
