// gpuslice-kubelet-plugin's reading of a ResourceClaim (dra/claim.hpp):
// what the API server allocated on this node, and nothing its author wrote.
#include "gpuslice/common/error.hpp"
#include "gpuslice/dra/claim.hpp"

#include <catch2/catch.hpp>

using namespace gpuslice;
using namespace gpuslice::dra;
using nlohmann::json;

namespace {

const ClaimRef kRef{"team-a", "5c2d4d1e-0000-4000-8000-000000000001", "train"};

// A claim as the API server returns it (resource.k8s.io/v1), allocated on
// node-1 by the scheduler: two devices of ours, one of another driver's.
json allocated_claim() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "train", "namespace": "team-a", "uid": "5c2d4d1e-0000-4000-8000-000000000001",
                 "annotations": {"gpu.gpuslice.io/memory": "80Gi"}},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.gpuslice.io",
             "capacity": {"requests": {"memory": "8Gi"}}}}]}},
    "status": {"allocation": {"devices": {
      "results": [
        {"request": "gpu", "driver": "gpu.gpuslice.io", "pool": "node-1", "device": "gpu-0",
         "shareID": "7b0c6a52-1111-4000-8000-000000000002", "consumedCapacity": {"memory": "8Gi"}},
        {"request": "nic", "driver": "net.example.com", "pool": "node-1", "device": "eth1"},
        {"request": "big/whole", "driver": "gpu.gpuslice.io", "pool": "node-1", "device": "gpu-1"},
        {"request": "gpu", "driver": "gpu.gpuslice.io", "pool": "node-2", "device": "gpu-0"}
      ],
      "config": [
        {"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": "gpu.gpuslice.io",
         "parameters": {"apiVersion": "gpuslice.io/v1alpha1", "kind": "GpuShareConfig", "computeLimit": 30}}},
        {"source": "FromClass", "opaque": {"driver": "gpu.gpuslice.io",
         "parameters": {"apiVersion": "gpuslice.io/v1alpha1", "kind": "GpuShareConfig", "computeLimit": 50,
                        "computePolicy": "burst"}}},
        {"source": "FromClaim", "opaque": {"driver": "net.example.com", "parameters": {"mtu": 9000}}}
      ]}}}
  })");
}

std::vector<AllocatedDevice> read(const json &claim) {
  return allocated_devices(claim, kRef, "gpu.gpuslice.io", "node-1");
}

json share_config(json fields) {
  json c = {{"apiVersion", "gpuslice.io/v1alpha1"}, {"kind", "GpuShareConfig"}};
  c.update(fields);
  return c;
}

} // namespace

TEST_CASE("dra: a claim's devices of this driver and node, their memory, share id and configuration", "[dra]") {
  const auto devices = read(allocated_claim());
  REQUIRE(devices.size() == 2);
  CHECK(devices[0].request == "gpu");
  CHECK(devices[0].device == "gpu-0");
  CHECK(devices[0].memory == 8ull << 30);
  CHECK(devices[0].share_id == "7b0c6a52-1111-4000-8000-000000000002");
  // the class says 50 % burst, the claim 30 % for its request "gpu": the claim's wins, the class's policy stays
  CHECK(devices[0].config.compute_limit == 30);
  CHECK(devices[0].config.compute_policy == sharing::Policy::burst);
  // a whole device (no consumed capacity) of a subrequest: only the class's configuration names no request
  CHECK(devices[1].device == "gpu-1");
  CHECK(devices[1].request == "big/whole");
  CHECK_FALSE(devices[1].memory);
  CHECK(devices[1].share_id.empty());
  CHECK(devices[1].config.compute_limit == 50);

  // a configuration naming a request applies to its subrequests too
  auto claim = allocated_claim();
  claim["status"]["allocation"]["devices"]["config"][0]["requests"] = {"big"};
  const auto by_parent = read(claim);
  CHECK(by_parent[0].config.compute_limit == 50);
  CHECK(by_parent[1].config.compute_limit == 30);

  // no result of this driver here: nothing to prepare, no error
  CHECK(allocated_devices(allocated_claim(), kRef, "gpu.gpuslice.io", "node-3").empty());
}

TEST_CASE("dra: consumed memory in every form the API server writes a quantity", "[dra]") {
  for (const auto &[text, bytes] : std::vector<std::pair<const char *, uint64_t>>{
           {"8Gi", 8ull << 30}, {"8589934592", 8589934592ull}, {"8G", 8000000000ull}, {"8e9", 8000000000ull},
           {"1536Mi", 1536ull << 20}, {"500k", 500000}}) {
    auto claim = allocated_claim();
    claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"] = text;
    INFO(text);
    CHECK(read(claim)[0].memory == bytes);
  }
  auto claim = allocated_claim();
  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"] = "8Gx";
  CHECK_THROWS_WITH(read(claim), Catch::Contains("claim team-a/train") && Catch::Contains("\"gpu-0\"") &&
                                     Catch::Contains("8Gx"));
}

TEST_CASE("dra: a claim that is not the one kubelet means, or not allocated, is an error of that claim", "[dra]") {
  auto other = allocated_claim();
  other["metadata"]["uid"] = "5c2d4d1e-0000-4000-8000-000000000009";
  CHECK_THROWS_WITH(read(other), Catch::Contains("claim team-a/train") &&
                                     Catch::Contains("5c2d4d1e-0000-4000-8000-000000000009") &&
                                     Catch::Contains("5c2d4d1e-0000-4000-8000-000000000001"));
  auto pending = allocated_claim();
  pending.erase("status");
  CHECK_THROWS_WITH(read(pending), Catch::Contains("claim team-a/train") && Catch::Contains("not allocated"));
  pending = allocated_claim();
  pending["status"]["allocation"] = nullptr;
  CHECK_THROWS_WITH(read(pending), Catch::Contains("not allocated"));
  // what the API does not define: refused, not guessed
  auto odd = allocated_claim();
  odd["status"]["allocation"]["devices"]["results"][0]["device"] = 3;
  CHECK_THROWS_WITH(read(odd), Catch::Contains("\"device\" is number"));
  odd = allocated_claim();
  odd["status"]["allocation"]["devices"]["results"][0].erase("device");
  CHECK_THROWS_WITH(read(odd), Catch::Contains("without its request or device"));
  odd = allocated_claim();
  odd["status"]["allocation"]["devices"]["results"][1] = "eth1";
  CHECK_THROWS_AS(read(odd), Error);
  CHECK_THROWS_AS(read(json::array()), Error);
}

TEST_CASE("dra: only the allocation counts, never what the claim's author wrote", "[dra]") {
  // the author's annotation asks for 80Gi and the spec for 8Gi: the allocation's 8Gi is what counts
  auto claim = allocated_claim();
  claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"]["memory"] = "80Gi";
  CHECK(read(claim)[0].memory == 8ull << 30);
  // a configuration in the claim's spec that the allocation does not carry changes nothing
  claim["spec"]["devices"]["config"] = json::array(
      {{{"opaque", {{"driver", "gpu.gpuslice.io"}, {"parameters", share_config({{"computeLimit", 100}})}}}}});
  CHECK(read(claim)[0].config.compute_limit == 30);
}

TEST_CASE("dra: GpuShareConfig is checked field by field", "[dra]") {
  CHECK(parse_share_config(share_config({{"computeLimit", 1}})).compute_limit == 1);
  CHECK(parse_share_config(share_config({{"computeLimit", 100}, {"computePolicy", "fixed"}})) ==
        ShareConfig{100, sharing::Policy::fixed});
  CHECK(parse_share_config(share_config(json::object())) == ShareConfig{});
  const std::vector<std::pair<json, const char *>> bad = {
      {share_config({{"computeLimit", 0}}), "from 1 to 100"},
      {share_config({{"computeLimit", 101}}), "from 1 to 100"},
      {share_config({{"computeLimit", "30"}}), "from 1 to 100"},
      {share_config({{"computeLimit", 30.5}}), "from 1 to 100"},
      {share_config({{"computePolicy", "fair"}}), "fair"},
      {share_config({{"computePolicy", 1}}), "not a string"},
      {share_config({{"memoryLimit", "8Gi"}}), "unknown field \"memoryLimit\""},
      {share_config({{"kind", "GpuConfig"}}), "GpuConfig"},
      {share_config({{"apiVersion", "gpuslice.io/v1"}}), "gpuslice.io/v1"},
      {json::array(), "JSON object"},
  };
  for (const auto &[parameters, says] : bad) {
    INFO(parameters.dump());
    CHECK_THROWS_WITH(parse_share_config(parameters), Catch::Contains(says));
  }
  // in a claim: an error of that claim
  auto claim = allocated_claim();
  claim["status"]["allocation"]["devices"]["config"][0]["opaque"]["parameters"]["computeLimit"] = 0;
  CHECK_THROWS_WITH(read(claim), Catch::Contains("claim team-a/train") && Catch::Contains("computeLimit"));
  claim = allocated_claim();
  claim["status"]["allocation"]["devices"]["config"][0]["opaque"].erase("parameters");
  CHECK_THROWS_WITH(read(claim), Catch::Contains("without parameters"));
}
