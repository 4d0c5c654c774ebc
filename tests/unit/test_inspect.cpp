// gpuslice inspect (inspect/): what it collects from a state dir without
// NVML (and how it treats files it cannot use), and its three renderings of
// a known report. The real thing, with containers, monitors and the fake
// NVML, and promtool over the metrics: tests/integration/test_monitor.py.
#include "gpuslice/inspect/report.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

using namespace gpuslice;
using namespace gpuslice::inspect;
using gpuslice::testing::TempDir;

namespace {

const std::string kGpu = "GPU-aaaaaaaa-0000-0000-0000-000000000000";

NodeReport known_report() {
  NodeReport r;
  r.gpus.push_back({0u, kGpu, "NVIDIA H200", 150ull << 30, 20ull << 30, 12ull << 30, 2});
  ContainerRow a;
  a.id = "a";
  a.pod_namespace = "team-\"x\"";
  a.pod_name = "trainer-0";
  a.monitor = "running";
  a.action = "kill";
  a.killed = 2;
  a.breaches = 3;
  a.gpus.push_back({kGpu, 8ull << 30, 30, "fixed", 6ull << 30, 7ull << 30, 28u, {41, 40}});
  ContainerRow b;
  b.id = "b";
  b.monitor = "gone";
  b.gpus.push_back({kGpu, 4ull << 30, std::nullopt, "", std::nullopt, std::nullopt, std::nullopt, {}});
  r.containers = {a, b};
  return r;
}

} // namespace

TEST_CASE("inspect: the table, with and without details", "[inspect]") {
  const std::string table = to_table(known_report(), false);
  CHECK(table == "GPU  UUID                                      MODEL        CONTAINERS  ALLOTTED/TOTAL  USED/TOTAL\n"
                 "0    " + kGpu + "  NVIDIA H200  2           12 GiB/150 GiB  20 GiB/150 GiB\n"
                 "\nAllotted/total GPU memory in node: 12 GiB/150 GiB (8%); used 20 GiB; 2 containers with limits\n");
  const std::string details = to_table(known_report(), true);
  CHECK_THAT(details, Catch::Contains("a          team-\"x\"/trainer-0  " + kGpu +
                                      "  8 GiB         6 GiB/7 GiB             30% fixed  28%      41,40      running  "
                                      "breaches 3, killed 2"));
  CHECK_THAT(details, Catch::Contains("b          -                   " + kGpu + "  4 GiB         -/-"));
}

TEST_CASE("inspect: JSON keeps every field, unknown ones null", "[inspect]") {
  const auto j = nlohmann::json::parse(to_json(known_report()));
  CHECK(j["gpus"][0]["memory"] == nlohmann::json{{"total", 150ull << 30}, {"used", 20ull << 30}, {"allotted", 12ull << 30}});
  CHECK(j["containers"][0]["pod"] == nlohmann::json{{"namespace", "team-\"x\""}, {"name", "trainer-0"}});
  CHECK(j["containers"][0]["gpus"][0]["processes"] == nlohmann::json{41, 40});
  CHECK(j["containers"][0]["enforcement"]["killed"] == 2);
  CHECK(j["containers"][1]["pod"].is_null());
  CHECK(j["containers"][1]["gpus"][0]["used"] == nlohmann::json{{"interposer", nullptr}, {"nvml", nullptr}});
  CHECK(j["containers"][1]["gpus"][0]["compute_policy"].is_null());
  CHECK(j["node"]["containers"] == 2);
  CHECK(j["nvml_error"].is_null());
}

TEST_CASE("inspect: Prometheus text: HELP and TYPE per family, escaped labels, counters", "[inspect]") {
  const std::string prom = to_prometheus(known_report());
  CHECK_THAT(prom, Catch::Contains("# HELP gpuslice_gpu_memory_total_bytes GPU memory, from NVML.\n"
                                   "# TYPE gpuslice_gpu_memory_total_bytes gauge\n"
                                   "gpuslice_gpu_memory_total_bytes{gpu=\"" + kGpu + "\"} 161061273600\n"));
  CHECK_THAT(prom, Catch::Contains("gpuslice_container_processes_killed_total{container=\"a\",namespace=\"team-\\\"x\\\"\","
                                   "pod=\"trainer-0\"} 2\n"));
  CHECK_THAT(prom, Catch::Contains("# TYPE gpuslice_container_limit_breaches_total counter\n"));
  CHECK_THAT(prom, Catch::Contains("gpuslice_container_compute_share_ratio{container=\"a\",namespace=\"team-\\\"x\\\"\","
                                   "pod=\"trainer-0\",gpu=\"" + kGpu + "\",policy=\"fixed\"} 0.30\n"));
  CHECK_THAT(prom, Catch::Contains("gpuslice_container_monitor_up{container=\"b\",namespace=\"\",pod=\"\"} 0\n"));
  CHECK_THAT(prom, Catch::Contains("gpuslice_nvml_up 1\n"));
  // b has no usage known: no sample rather than a zero that is not true
  CHECK_THAT(prom, !Catch::Contains("gpuslice_container_memory_used_bytes{container=\"b\""));
}

TEST_CASE("inspect: collected from the state dir; without NVML the GPUs are the ones limits name", "[inspect]") {
  TempDir t;
  Config config;
  config.state_dir = t / "state";
  config.monitor_nvml_path = t / "no-libnvidia-ml.so.1";
  t.write("state/containers/c1/limits", "gpuslice-limits 1\ndevice " + kGpu + " memory 1073741824 compute 30 policy burst\n");
  t.write("state/containers/c1/status",
          R"({"container": "c1", "pod": "ns/p", "action": "freeze", "frozen": 1, "gpus": {")" + kGpu +
              R"(": {"used_interposer": 5, "used_nvml": 7, "sm_percent": 31, "processes": [9, 8]}}})");
  t.write("state/containers/c1/monitor", std::to_string(::getpid()) + " 1"); // wrong start time: not this process
  t.write("state/containers/c2/limits", "gpuslice-limits 1\ndevice * memory 2048\n");
  t.write("state/containers/c2/status", "{not json");
  t.write("state/containers/c3/ld.so.preload", "x"); // no limits: not listed
  t.write("state/containers/c4/limits", "garbage");
  const NodeReport r = collect(config);
  CHECK_THAT(r.nvml_error, Catch::StartsWith("cannot load"));
  REQUIRE(r.containers.size() == 3);
  const ContainerRow &c1 = r.containers[0];
  CHECK(c1.id == "c1");
  CHECK(c1.pod_namespace == "ns");
  CHECK(c1.pod_name == "p");
  CHECK(c1.monitor == "gone");
  CHECK(c1.frozen == 1);
  REQUIRE(c1.gpus.size() == 1);
  CHECK(c1.gpus[0].memory_limit == (1ull << 30));
  CHECK(c1.gpus[0].compute_policy == "burst");
  CHECK(c1.gpus[0].used_nvml == 7u);
  CHECK(c1.gpus[0].processes == std::vector<unsigned>{8, 9});
  CHECK(r.containers[1].gpus[0].gpu == "*");
  CHECK(r.containers[1].gpus[0].memory_limit == 2048u);
  CHECK(r.containers[1].action.empty());
  CHECK(r.containers[2].gpus[0].gpu == "*"); // unreadable limits: counted where admission counts it
  REQUIRE(r.gpus.size() == 2);
  CHECK(r.gpus[0].uuid == kGpu);
  CHECK(!r.gpus[0].index);
  CHECK(r.gpus[1].uuid == "*");
  CHECK(r.gpus[1].containers == 2);
  CHECK(r.gpus[1].allotted == 2048u);
  CHECK_THAT(to_table(r, false), Catch::Contains("NVML: cannot load"));
}
