// A CDI spec for the driver that discover() found, in the shape of
// `nvidia-ctk cdi generate`: one device per GPU (named by index, UUID or
// both) plus "all"; common edits holding the control nodes and, read-only,
// the driver's libraries, tools, firmware and persistenced socket, and a
// createContainer hook (gpuslice-hook update-ldcache) so that programs find
// the libraries. With limits or slices, each device carries gpuslice's
// sharing env and GPUSLICE_GPU_UUID, so that limits stay per GPU.
#pragma once

#include "gpuslice/nvidia/discover.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpuslice::nvidia {

enum class Naming { index, uuid, both };

struct GenerateOptions {
  std::string kind = "nvidia.com/gpu";
  Naming naming = Naming::index;
  std::string cdi_version;   // empty: the lowest that holds the spec
  int slices = 0;            // 0: one device per GPU; N: N devices per GPU, "<name>-<k>"
  std::string memory_limit;  // GPUSLICE_MEMORY_LIMIT per device ("" none)
  std::string compute_limit; // GPUSLICE_COMPUTE_LIMIT per device ("" none; with slices: 100/N)
  std::string hook_path;     // gpuslice-hook as installed
};

// The spec, checked by the CDI library (parsed, validated, its cdiVersion
// able to hold it). Throws Error.
nlohmann::ordered_json generate_spec(const Driver &driver, const GenerateOptions &options);

// One device of a spec: its name, the GPUs whose nodes it holds, and the
// env of its edits.
struct SpecDevice {
  std::string name;
  std::vector<const Gpu *> gpus;
  std::vector<std::string> env;
};

// A spec of `kind` with `devices` and, as common edits, what every GPU
// container of the driver needs (control nodes, libraries, tools, the
// ldcache hook at hook_path), checked as generate_spec's; cdi_version ""
// is the lowest that holds it. Throws Error. generate_spec and the DRA
// plugin's claim specs are made by it.
nlohmann::ordered_json spec_of(const Driver &driver, const std::string &kind, const std::vector<SpecDevice> &devices,
                               const std::string &hook_path, const std::string &cdi_version = "");

// "GPUSLICE_GPU_UUID=GPU-...": what keeps a device's limits to its GPU.
// Throws Error for a GPU whose UUID the driver did not say.
std::string gpu_env(const Gpu &gpu);

// The spec as YAML (block style, strings double-quoted) or JSON.
std::string to_yaml(const nlohmann::ordered_json &doc);

} // namespace gpuslice::nvidia
