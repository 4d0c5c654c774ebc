// `gpuslice cdi generate` without a driver: the parsers of the kernel
// module's /proc files, and the spec made from a known driver (naming,
// slices, "all", the ldcache hook, the lowest cdiVersion), read back by the
// CDI library from its YAML and its JSON.
#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/nvidia/discover.hpp"
#include "gpuslice/nvidia/generate.hpp"

#include <catch2/catch.hpp>

using namespace gpuslice;
using namespace gpuslice::nvidia;

namespace {

Driver two_gpus() {
  Driver d;
  d.version = "550.54.15";
  d.control.push_back(DeviceNode{{"/dev/nvidiactl", "/dev/nvidiactl"}, 195, 255});
  d.control.push_back(DeviceNode{{"/dev/nvidia-uvm", "/dev/nvidia-uvm"}, 510, 0});
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.index = i;
    g.bus_id = "0000:0" + std::to_string(i) + ":00.0";
    g.uuid = "GPU-0000000" + std::to_string(i) + "-aaaa-bbbb-cccc-dddddddddddd";
    g.model = "NVIDIA H200";
    g.node = DeviceNode{{"/dev/nvidia" + std::to_string(i), "/dev/nvidia" + std::to_string(i)}, 195, i};
    d.gpus.push_back(g);
  }
  d.libraries.push_back({"/drv/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"});
  d.libraries.push_back({"/drv/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
                         "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15"});
  d.binaries.push_back({"/drv/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi"});
  return d;
}

std::vector<std::string> device_names(const nlohmann::ordered_json &spec) {
  std::vector<std::string> out;
  for (const auto &d : spec["devices"])
    out.push_back(d["name"]);
  return out;
}

} // namespace

TEST_CASE("cdi generate: the kernel module's files", "[nvidia]") {
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
                             "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n") == "550.54.15");
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65  Release Build\n") ==
        "580.65");
  CHECK_THROWS_AS(parse_driver_version("GCC version:  gcc version 12.2.0\n"), Error);
  const auto info = parse_gpu_information("Model: \t\t NVIDIA H200\nIRQ:   \t\t 35\n"
                                          "GPU UUID: \t GPU-5b1e9a3c-0000-1111-2222-333344445555\n"
                                          "Bus Location: \t 0000:3b:00.0\nDevice Minor: \t 3\n");
  CHECK(info.model == "NVIDIA H200");
  CHECK(info.uuid == "GPU-5b1e9a3c-0000-1111-2222-333344445555");
  CHECK(info.bus_location == "0000:3b:00.0");
  CHECK(info.minor == 3);
  CHECK(parse_gpu_information("Device Minor: \t x\n").minor == -1);
}

TEST_CASE("cdi generate: devices, common edits and the lowest version", "[nvidia]") {
  GenerateOptions o;
  o.hook_path = "/usr/bin/gpuslice-hook";
  const auto spec = generate_spec(two_gpus(), o);
  CHECK(spec["kind"] == "nvidia.com/gpu");
  CHECK(device_names(spec) == std::vector<std::string>{"0", "1", "all"});
  CHECK(spec["devices"][2]["containerEdits"]["deviceNodes"].size() == 2);
  const auto &edits = spec["containerEdits"];
  CHECK(edits["deviceNodes"].size() == 2);
  CHECK(edits["mounts"].size() == 3);
  CHECK(edits["mounts"][0]["hostPath"] == "/drv/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15");
  CHECK(edits["mounts"][0]["options"] == nlohmann::ordered_json::array({"ro", "nosuid", "nodev", "bind"}));
  const auto &hook = edits["hooks"][0];
  CHECK(hook["hookName"] == "createContainer");
  CHECK(hook["args"] == nlohmann::ordered_json::array(
                            {"gpuslice-hook", "update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"}));
  CHECK(hook["env"].size() == 1);
  // hostPath (0.5.0) is not needed when the node is where the container has
  // it; createContainer hooks are 0.5.0 too
  CHECK(spec["cdiVersion"] == "0.5.0");
  CHECK_FALSE(spec["devices"][0]["containerEdits"].contains("env"));

  // read back by the library, from YAML and from JSON, the same
  const cdi::Spec from_yaml = cdi::parse_spec(to_yaml(spec));
  const cdi::Spec from_json = cdi::parse_spec(spec.dump());
  REQUIRE(from_yaml.devices.size() == 3);
  CHECK(from_yaml.devices[1].name == from_json.devices[1].name);
  CHECK(from_yaml.edits.mounts.size() == 3);
  CHECK(from_yaml.edits.hooks[0].args == from_json.edits.hooks[0].args);
  CHECK(from_yaml.edits.device_nodes[0].minor == 255);
}

TEST_CASE("cdi generate: naming, slices and limits", "[nvidia]") {
  GenerateOptions o;
  o.hook_path = "/usr/bin/gpuslice-hook";
  o.naming = Naming::both;
  CHECK(device_names(generate_spec(two_gpus(), o)) ==
        std::vector<std::string>{"0", "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", "1",
                                 "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd", "all"});
  o.naming = Naming::index;
  o.slices = 4;
  o.memory_limit = "20Gi";
  const auto sliced = generate_spec(two_gpus(), o);
  CHECK(device_names(sliced) ==
        std::vector<std::string>{"0-0", "0-1", "0-2", "0-3", "1-0", "1-1", "1-2", "1-3", "all"});
  CHECK(sliced["devices"][5]["containerEdits"]["env"] ==
        nlohmann::ordered_json::array({"GPUSLICE_GPU_UUID=GPU-00000001-aaaa-bbbb-cccc-dddddddddddd",
                                       "GPUSLICE_MEMORY_LIMIT=20Gi", "GPUSLICE_COMPUTE_LIMIT=25"}));
  CHECK_FALSE(sliced["devices"][8]["containerEdits"].contains("env")); // all: whole GPUs

  Driver no_uuid = two_gpus();
  no_uuid.gpus[1].uuid.clear();
  o.slices = 0;
  CHECK_THROWS_WITH(generate_spec(no_uuid, o), Catch::Contains("no UUID"));
  o.memory_limit.clear();
  o.naming = Naming::uuid;
  CHECK_THROWS_WITH(generate_spec(no_uuid, o), Catch::Contains("by index"));
  o.naming = Naming::index;
  o.cdi_version = "0.3.0";
  CHECK_THROWS_WITH(generate_spec(two_gpus(), o), Catch::Contains("needs 0.5.0"));
  o.cdi_version = "1.0.0";
  CHECK(generate_spec(two_gpus(), o)["cdiVersion"] == "1.0.0");
  o.cdi_version = "0.9.9";
  CHECK_THROWS_WITH(generate_spec(two_gpus(), o), Catch::Contains("not a CDI version"));
  o.cdi_version.clear();
  o.kind = "bad kind";
  CHECK_THROWS_AS(generate_spec(two_gpus(), o), Error);
}
