// gpuslice-kubelet-plugin's preparation of a claim without kubelet: this
// node's pool (dra/pool.hpp), the claim's CDI spec (dra/claim_spec.hpp) read
// back by the CDI library, and the prepared claims kept across a restart
// (dra/store.hpp).
#include "tempdir.hpp"

#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/dra/claim_spec.hpp"
#include "gpuslice/dra/store.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>

using namespace gpuslice;
using namespace gpuslice::dra;
using gpuslice::testing::TempDir;

namespace {

constexpr uint64_t kGpuMemory = 80ull << 30;

nvidia::Driver two_gpus() {
  nvidia::Driver d;
  d.version = "550.54.15";
  d.control.push_back({{"/dev/nvidiactl", "/dev/nvidiactl"}, 195, 255});
  for (int i = 0; i < 2; ++i) {
    nvidia::Gpu g;
    g.index = i;
    g.bus_id = "0000:0" + std::to_string(i) + ":00.0";
    g.uuid = "GPU-0000000" + std::to_string(i) + "-aaaa-bbbb-cccc-dddddddddddd";
    g.node = {{"/dev/nvidia" + std::to_string(i), "/dev/nvidia" + std::to_string(i)}, 195, i};
    d.gpus.push_back(g);
  }
  d.libraries.push_back({"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"});
  return d;
}

const ClaimRef kClaim{"team-a", "5c2d4d1e-0000-4000-8000-000000000001", "train"};

AllocatedDevice allocated(const std::string &device, std::optional<uint64_t> memory = std::nullopt,
                          ShareConfig config = {}) {
  return {"gpu", device, memory, memory ? "7b0c6a52-1111-4000-8000-000000000002" : "", config};
}

// The env of device `name` in a spec.
std::vector<std::string> env_of(const nlohmann::ordered_json &spec, const std::string &name) {
  for (const auto &d : spec["devices"])
    if (d["name"] == name)
      return d["containerEdits"].value("env", std::vector<std::string>{});
  FAIL("no device " << name);
  return {};
}

} // namespace

TEST_CASE("dra: the pool has a device per GPU, or N slices of each", "[dra]") {
  const auto driver = two_gpus();
  const auto whole = pool_devices(driver, {kGpuMemory, kGpuMemory / 2}, 0);
  REQUIRE(whole.size() == 2);
  CHECK(whole[0] == PoolDevice{"gpu-0", 0, kGpuMemory, std::nullopt, std::nullopt});
  CHECK(whole[1] == PoolDevice{"gpu-1", 1, kGpuMemory / 2, std::nullopt, std::nullopt});
  const auto sliced = pool_devices(driver, {kGpuMemory, kGpuMemory}, 4);
  REQUIRE(sliced.size() == 8);
  CHECK(sliced[5] == PoolDevice{"gpu-1-slice-1", 1, 20ull << 30, 20ull << 30, 25});
  CHECK(find_device(sliced, "gpu-1-slice-3") == &sliced[7]);
  CHECK(find_device(sliced, "gpu-1") == nullptr);
  CHECK_THROWS_WITH(pool_devices(driver, {1, 1}, 65), Catch::Contains("between 0 and 64"));
  CHECK_THROWS_AS(pool_devices(driver, {1}, 0), Error);
  auto no_uuid = driver;
  no_uuid.gpus[1].uuid.clear();
  CHECK_THROWS_WITH(pool_devices(no_uuid, {1, 1}, 0), Catch::Contains("0000:01:00.0") && Catch::Contains("UUID"));
}

TEST_CASE("dra: a claim's spec gives each device its GPU and its share, under names of the claim's uid", "[dra]") {
  const auto driver = two_gpus();
  const auto pool = pool_devices(driver, {kGpuMemory, kGpuMemory}, 0);
  const SpecContext context{driver, pool, "gpu.gpuslice.io", "node-1", "/usr/bin/gpuslice-hook"};
  const auto prepared = claim_spec(
      kClaim, {allocated("gpu-0", 8ull << 30, {30, sharing::Policy::burst}), allocated("gpu-1")}, context);
  const std::string a = kClaim.uid + "-gpu-0", b = kClaim.uid + "-gpu-1";
  CHECK(prepared.spec["kind"] == "gpu.gpuslice.io/claim");
  CHECK(env_of(prepared.spec, a) ==
        std::vector<std::string>{"GPUSLICE_GPU_UUID=GPU-00000000-aaaa-bbbb-cccc-dddddddddddd",
                                 "GPUSLICE_MEMORY_LIMIT=8589934592", "GPUSLICE_COMPUTE_LIMIT=30",
                                 "GPUSLICE_COMPUTE_POLICY=burst"});
  // a whole GPU: only which GPU it is, no limit
  CHECK(env_of(prepared.spec, b) == std::vector<std::string>{"GPUSLICE_GPU_UUID=GPU-00000001-aaaa-bbbb-cccc-dddddddddddd"});
  REQUIRE(prepared.devices.size() == 2);
  CHECK(prepared.devices[0] == PreparedDevice{"gpu", "node-1", "gpu-0", {"gpu.gpuslice.io/claim=" + a},
                                              "7b0c6a52-1111-4000-8000-000000000002"});
  CHECK(prepared.devices[1].cdi_ids == std::vector<std::string>{"gpu.gpuslice.io/claim=" + b});
  // what the engines will read: the CDI library takes it, with the driver's common edits
  const auto parsed = cdi::parse_spec(prepared.spec.dump());
  CHECK(cdi::validate_spec(parsed).empty());
  CHECK(prepared.spec["containerEdits"]["deviceNodes"][0]["path"] == "/dev/nvidiactl");
  CHECK(prepared.spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"] == "/dev/nvidia0");

  // the same claim name in another namespace: other names, another file
  const ClaimRef other{"team-b", "5c2d4d1e-0000-4000-8000-000000000002", "train"};
  const auto theirs = claim_spec(other, {allocated("gpu-0", 8ull << 30)}, context);
  CHECK(theirs.devices[0].cdi_ids[0] != prepared.devices[0].cdi_ids[0]);
  CHECK(claim_spec_file("gpu.gpuslice.io", other.uid) != claim_spec_file("gpu.gpuslice.io", kClaim.uid));
  CHECK(claim_spec_file("gpu.gpuslice.io", kClaim.uid) == "gpu.gpuslice.io-claim_" + kClaim.uid + ".json");
}

TEST_CASE("dra: slices carry their share unless the allocation or a config says more", "[dra]") {
  const auto driver = two_gpus();
  const auto pool = pool_devices(driver, {kGpuMemory, kGpuMemory}, 4);
  const SpecContext context{driver, pool, "gpu.gpuslice.io", "node-1", "/usr/bin/gpuslice-hook"};
  const auto spec = claim_spec(kClaim, {allocated("gpu-1-slice-2"), allocated("gpu-0-slice-0", std::nullopt, {10, {}})},
                               context).spec;
  CHECK(env_of(spec, kClaim.uid + "-gpu-1-slice-2") ==
        std::vector<std::string>{"GPUSLICE_GPU_UUID=GPU-00000001-aaaa-bbbb-cccc-dddddddddddd",
                                 "GPUSLICE_MEMORY_LIMIT=21474836480", "GPUSLICE_COMPUTE_LIMIT=25"});
  CHECK(env_of(spec, kClaim.uid + "-gpu-0-slice-0")[2] == "GPUSLICE_COMPUTE_LIMIT=10");
}

TEST_CASE("dra: a device not in the pool is that claim's error", "[dra]") {
  const auto driver = two_gpus();
  const auto pool = pool_devices(driver, {kGpuMemory, kGpuMemory}, 0);
  const SpecContext context{driver, pool, "gpu.gpuslice.io", "node-1", "/usr/bin/gpuslice-hook"};
  CHECK_THROWS_WITH(claim_spec(kClaim, {allocated("gpu-7")}, context),
                    Catch::Contains("claim team-a/train") && Catch::Contains("\"gpu-7\"") &&
                        Catch::Contains("not in this node's pool"));
}

TEST_CASE("dra: prepared claims outlive the plugin, and unprepare needs only the uid", "[dra]") {
  TempDir tmp;
  const auto driver = two_gpus();
  const auto pool = pool_devices(driver, {kGpuMemory, kGpuMemory}, 0);
  const SpecContext context{driver, pool, "gpu.gpuslice.io", "node-1", "/usr/bin/gpuslice-hook"};
  const auto spec = claim_spec(kClaim, {allocated("gpu-0", 8ull << 30)}, context);
  const std::string cdi_root = tmp / "run/cdi", plugin_dir = tmp / "plugins/gpu.gpuslice.io";
  ::mkdir((tmp / "run").c_str(), 0755);
  ::mkdir((tmp / "plugins").c_str(), 0755);
  {
    ClaimStore store(cdi_root, plugin_dir, "gpu.gpuslice.io"); // makes both dirs
    CHECK_FALSE(store.prepared(kClaim.uid));
    store.add(kClaim, spec);
    CHECK(store.prepared(kClaim.uid) == spec.devices);
    CHECK_FALSE(ClaimStore(cdi_root, plugin_dir, "gpu.gpuslice.io").prepared(kClaim.uid)); // not saved yet
    store.save();
  }
  struct stat st {};
  REQUIRE(::stat(ClaimStore(cdi_root, plugin_dir, "gpu.gpuslice.io").spec_path(kClaim.uid).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  CHECK(cdi::parse_spec(fs::read_file(cdi_root + "/" + claim_spec_file("gpu.gpuslice.io", kClaim.uid))).kind ==
        "gpu.gpuslice.io/claim");

  ClaimStore restarted(cdi_root, plugin_dir, "gpu.gpuslice.io");
  CHECK(restarted.prepared(kClaim.uid) == spec.devices);
  restarted.remove(kClaim.uid);
  restarted.save();
  CHECK_FALSE(restarted.prepared(kClaim.uid));
  CHECK(::access(restarted.spec_path(kClaim.uid).c_str(), F_OK) != 0);
  restarted.remove(kClaim.uid);                               // again: no error
  // a uid that is none names no file: every way in refuses it
  for (const char *uid : {"", "../../etc/cdi/x", "a b", "5c2d/4d1e"}) {
    INFO(uid);
    CHECK_THROWS_WITH(restarted.prepared(uid), Catch::Contains("not a Kubernetes uid"));
    CHECK_THROWS_WITH(restarted.remove(uid), Catch::Contains("not a Kubernetes uid"));
    CHECK_THROWS_WITH(restarted.add({"team-a", uid, "train"}, spec), Catch::Contains("not a Kubernetes uid"));
  }
  CHECK(safe_uid(kClaim.uid));
  CHECK_FALSE(safe_uid(std::string(65, 'a')));
  restarted.remove("5c2d4d1e-0000-4000-8000-00000000000f"); // never prepared: no error
  CHECK_FALSE(ClaimStore(cdi_root, plugin_dir, "gpu.gpuslice.io").prepared(kClaim.uid));

  // a spec removed behind its back: not prepared any more (prepared again by the next call)
  restarted.add(kClaim, spec);
  restarted.save();
  ::unlink(restarted.spec_path(kClaim.uid).c_str());
  CHECK_FALSE(ClaimStore(cdi_root, plugin_dir, "gpu.gpuslice.io").prepared(kClaim.uid));
  // a spec written before a kill -9 that left no checkpoint entry: removed by name
  fs::write_file_atomic(restarted.spec_path("5c2d4d1e-0000-4000-8000-00000000000e"), "{}", 0644);
  restarted.remove("5c2d4d1e-0000-4000-8000-00000000000e");
  CHECK(::access(restarted.spec_path("5c2d4d1e-0000-4000-8000-00000000000e").c_str(), F_OK) != 0);

  fs::write_file_atomic(plugin_dir + "/checkpoint.json", "{\"version\": 1, \"claims\": {\"../x\": {}}}", 0600);
  CHECK_THROWS_WITH(ClaimStore(cdi_root, plugin_dir, "gpu.gpuslice.io"),
                    Catch::Contains("checkpoint.json") && Catch::Contains("\"../x\""));
  fs::write_file_atomic(plugin_dir + "/checkpoint.json", "{\"version\": 7}", 0600);
  CHECK_THROWS_WITH(ClaimStore(cdi_root, plugin_dir, "gpu.gpuslice.io"), Catch::Contains("version 1"));
}
