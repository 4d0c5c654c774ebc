#include "gpuslice/common/error.hpp"
#include "gpuslice/shim/bundle.hpp"
#include "gpuslice/shim/sharing.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

using namespace gpuslice;
using namespace gpuslice::shim;
using gpuslice::testing::TempDir;

namespace {
cdi::ContainerEdits env_edits(std::vector<std::string> env) {
  cdi::ContainerEdits e;
  e.env = std::move(env);
  return e;
}
} // namespace

TEST_CASE("limits come from the CDI edits, or gpushare's env only when accepted", "[shim][sharing]") {
  Config config;
  const auto none = cdi::OciSpec::parse(R"({"process": {"env": ["GPUSLICE_MEMORY_LIMIT=64Gi", "ALIYUN_COM_GPU_MEM_CONTAINER=3"]}})");
  // The container's own GPUSLICE_* env is never a limit.
  CHECK_FALSE(container_limits(env_edits({}), none, config).has_value());

  auto l = container_limits(env_edits({"GPUSLICE_MEMORY_LIMIT=256Mi", "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_COMPUTE_POLICY=burst"}), none, config);
  REQUIRE(l);
  REQUIRE(l->devices.size() == 1);
  CHECK(l->devices[0].key == "*");
  CHECK(l->devices[0].memory == 256u << 20);
  CHECK(l->devices[0].compute == 30);
  CHECK(l->devices[0].policy == sharing::Policy::burst);

  config.accept_gpushare_env = true;
  auto g = container_limits(env_edits({}), none, config);
  REQUIRE(g);
  CHECK(g->devices[0].memory == 3ull << 30);
  // CDI edits win over gpushare's env.
  CHECK(container_limits(env_edits({"GPUSLICE_MEMORY_LIMIT=1Gi"}), none, config)->devices[0].memory == 1ull << 30);

  CHECK_THROWS_WITH(container_limits(env_edits({"GPUSLICE_COMPUTE_LIMIT=101"}), none, config), Catch::Contains("1 to 100"));
  CHECK_THROWS_WITH(container_limits(env_edits({"GPUSLICE_MEMORY_LIMIT=lots"}), none, config), Catch::Contains("GPUSLICE_MEMORY_LIMIT"));
  CHECK_THROWS_WITH(container_limits(env_edits({"GPUSLICE_COMPUTE_POLICY=greedy"}), none, config), Catch::Contains("GPUSLICE_COMPUTE_POLICY"));
  const auto bad = cdi::OciSpec::parse(R"({"process": {"env": ["ALIYUN_COM_GPU_MEM_CONTAINER=x"]}})");
  CHECK_THROWS_WITH(container_limits(env_edits({}), bad, config), Catch::Contains("ALIYUN_COM_GPU_MEM_CONTAINER"));
}

TEST_CASE("preload: the interposer first, then the image's entries", "[shim][sharing]") {
  CHECK(merged_preload(std::nullopt) == std::string(kInterposerContainerPath) + "\n");
  CHECK(merged_preload(std::string("/lib/libjemalloc.so")) == std::string(kInterposerContainerPath) + "\n/lib/libjemalloc.so\n");
  CHECK_THROWS_AS(merged_preload(std::string("a\0b", 3)), Error);
}

TEST_CASE("prepare_bundle wires limits: state dir files and mounts; cleans up on failure", "[shim][sharing]") {
  TempDir t;
  t.write("cdi/gpu.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n"
                          "  - name: \"0\"\n    containerEdits:\n      env: [GPUSLICE_MEMORY_LIMIT=256Mi]\n"
                          "  - name: plain\n    containerEdits:\n      env: [A=1]\n");
  t.write("interposer.so", "not really a library");
  t.write("b/rootfs/etc/ld.so.preload", "/usr/lib/libimage.so\n");
  Config config;
  config.spec_dirs = {t / "cdi"};
  config.state_dir = t / "state";
  config.interposer_path = t / "interposer.so";
  t.write("b/config.json", R"({"root": {"path": "rootfs"}, "process": {"env": []}, "mounts": [], "annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}})");
  const auto edit = prepare_bundle(t / "b", "ctr1", config, kDefaultConfigPath);
  CHECK(edit.shared);
  const std::string dir = t / "state/containers/ctr1";
  CHECK(sharing::parse_limits(fs::read_file(dir + "/limits")) == sharing::Limits{{{"*", 256u << 20, std::nullopt, std::nullopt}}, ""});
  struct stat lst {};
  REQUIRE(::stat((dir + "/limits").c_str(), &lst) == 0);
  CHECK((lst.st_mode & 0222) == 0); // read-only
  CHECK(fs::read_file(dir + "/ld.so.preload") == std::string(kInterposerContainerPath) + "\n/usr/lib/libimage.so\n");
  struct stat st {};
  REQUIRE(::stat((dir + "/region").c_str(), &st) == 0);
  CHECK(st.st_size > 0);
  const auto oci = cdi::OciSpec::parse(fs::read_file(t / "b/config.json"));
  std::map<std::string, cdi::OciSpec> by_dest;
  for (const auto &m : oci["mounts"])
    by_dest[m["destination"]] = m;
  CHECK(by_dest.at(kInterposerContainerPath)["source"] == t / "interposer.so");
  CHECK(by_dest.at("/run/gpuslice/limits")["source"] == dir + "/limits");
  CHECK(by_dest.at("/run/gpuslice/region")["source"] == dir + "/region");
  CHECK(by_dest.at("/etc/ld.so.preload")["source"] == dir + "/ld.so.preload");
  CHECK(by_dest.at("/run/gpuslice/limits")["options"][1] == "ro");
  CHECK(by_dest.at("/run/gpuslice/region")["options"][1] == "rw");
  CHECK(by_dest.at(kInterposerContainerPath)["options"][1] == "ro");

  // A device without limits: no state dir, no interposer.
  t.write("b2/config.json", R"({"root": {"path": "rootfs"}, "annotations": {"cdi.k8s.io/x": "v.com/gpu=plain"}})");
  CHECK_FALSE(prepare_bundle(t / "b2", "ctr2", config, kDefaultConfigPath).shared);
  CHECK(::access((t / "state/containers/ctr2").c_str(), F_OK) != 0);

  // A failure after the state dir was made removes it again.
  t.write("b3/config.json", R"({"annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}})"); // no root.path
  CHECK_THROWS_WITH(prepare_bundle(t / "b3", "ctr3", config, kDefaultConfigPath), Catch::Contains("root.path"));
  CHECK(::access((t / "state/containers/ctr3").c_str(), F_OK) != 0);
  // An unsafe container id is refused before anything is created.
  t.write("b4/config.json", R"({"root": {"path": "rootfs"}, "annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}})");
  CHECK_THROWS_AS(prepare_bundle(t / "b4", "../escape", config, kDefaultConfigPath), Error);
}
