// A container's limits (create/container_limits.hpp) and how a create
// wires them (modifier_sharing.cpp); exec's CDI env.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/create/container_limits.hpp"
#include "gpuslice/runtime/verbs.hpp"
#include "gpuslice/sharing/limits.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "create_for_tests.hpp"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <map>
#include <unistd.h>

using namespace gpuslice;
using namespace gpuslice::create;
using gpuslice::runtime::add_cdi_env;
using gpuslice::testing::prepare;
using gpuslice::testing::TempDir;

namespace {
std::vector<ClaimedEnv> env_edits(std::vector<std::string> env) { return {{"v.com/gpu=0", std::move(env)}}; }
} // namespace

TEST_CASE("limits come from the CDI edits, or gpushare's env only when accepted", "[create][sharing]") {
  Config config;
  const std::vector<std::string> none{"GPUSLICE_MEMORY_LIMIT=64Gi", "ALIYUN_COM_GPU_MEM_CONTAINER=3"};
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
  const std::vector<std::string> bad{"ALIYUN_COM_GPU_MEM_CONTAINER=x"};
  CHECK_THROWS_WITH(container_limits(env_edits({}), bad, config), Catch::Contains("ALIYUN_COM_GPU_MEM_CONTAINER"));
}

TEST_CASE("limits per claimed device and per GPU: 2 GPUs x 2 slices", "[create][sharing]") {
  Config config;
  const std::vector<std::string> oci;
  const std::string A = "GPU-aaaaaaaa-0000-0000-0000-000000000001", B = "GPU-bbbbbbbb-0000-0000-0000-000000000002";
  const ClaimedEnv a1{"v.com/gpu=a1", {"GPUSLICE_GPU_UUID=" + A, "GPUSLICE_MEMORY_LIMIT=8Gi", "GPUSLICE_COMPUTE_LIMIT=30"}};
  const ClaimedEnv a2{"v.com/gpu=a2", {"GPUSLICE_GPU_UUID=" + A, "GPUSLICE_MEMORY_LIMIT=1Gi", "GPUSLICE_COMPUTE_LIMIT=20"}};
  // the GPU named by a driver's own NVIDIA_VISIBLE_DEVICES does as well
  const ClaimedEnv b1{"v.com/gpu=b1", {"NVIDIA_VISIBLE_DEVICES=" + B, "GPUSLICE_MEMORY_LIMIT=2Gi"}};
  const ClaimedEnv b2{"v.com/gpu=b2", {"NVIDIA_VISIBLE_DEVICES=" + B, "GPUSLICE_MEMORY_LIMIT=4Gi"}};
  using DL = sharing::DeviceLimit;
  const auto all = container_limits({a1, a2, b1, b2}, oci, config);
  REQUIRE(all);
  // Before: every GPU held to the last device's limit (4 GiB).
  CHECK(all->devices == std::vector<DL>{{A, 9ull << 30, 50, sharing::Policy::fixed}, {B, 6ull << 30, std::nullopt, std::nullopt}});
  CHECK(container_limits({a1, b1}, oci, config)->devices ==
        std::vector<DL>{{A, 8ull << 30, 30, sharing::Policy::fixed}, {B, 2ull << 30, std::nullopt, std::nullopt}});
  // compute adds up to at most the whole GPU
  const ClaimedEnv a3{"v.com/gpu=a3", {"GPUSLICE_GPU_UUID=" + A, "GPUSLICE_MEMORY_LIMIT=1Gi", "GPUSLICE_COMPUTE_LIMIT=90"}};
  CHECK(container_limits({a1, a3}, oci, config)->devices[0].compute == 100);
  // a slice without a memory limit leaves its GPU's memory unlimited
  const ClaimedEnv a4{"v.com/gpu=a4", {"GPUSLICE_GPU_UUID=" + A, "GPUSLICE_COMPUTE_LIMIT=10"}};
  CHECK_FALSE(container_limits({a1, a4}, oci, config)->devices[0].memory.has_value());
  // a device without limits is not a slice
  CHECK(container_limits({a1, {"v.com/gpu=whole", {"A=1"}}}, oci, config)->devices.size() == 1);
  // two limited devices that do not say which GPU: refused, naming both
  CHECK_THROWS_WITH(container_limits({{"v.com/gpu=x", {"GPUSLICE_MEMORY_LIMIT=1Gi"}}, {"v.com/gpu=y", {"GPUSLICE_MEMORY_LIMIT=2Gi"}}},
                                     oci, config),
                    Catch::Contains("\"v.com/gpu=x\" and \"v.com/gpu=y\"") && Catch::Contains("GPUSLICE_GPU_UUID"));
  // slices of one GPU must agree on the policy
  const ClaimedEnv a5{"v.com/gpu=a5", {"GPUSLICE_GPU_UUID=" + A, "GPUSLICE_COMPUTE_LIMIT=10", "GPUSLICE_COMPUTE_POLICY=burst"}};
  CHECK_THROWS_WITH(container_limits({a1, a5}, oci, config), Catch::Contains("v.com/gpu=a5") && Catch::Contains("differs"));
  CHECK_THROWS_WITH(container_limits({{"v.com/gpu=z", {"GPUSLICE_GPU_UUID=7", "GPUSLICE_MEMORY_LIMIT=1Gi"}}}, oci, config),
                    Catch::Contains("not a GPU UUID"));
}

TEST_CASE("preload: the interposer first, then the image's entries", "[create][sharing]") {
  CHECK(merged_preload(std::nullopt) == std::string(kInterposerContainerPath) + "\n");
  CHECK(merged_preload(std::string("/lib/libjemalloc.so")) == std::string(kInterposerContainerPath) + "\n/lib/libjemalloc.so\n");
  CHECK_THROWS_AS(merged_preload(std::string("a\0b", 3)), Error);
}

namespace {

struct Node {
  TempDir t;
  Config config;
  Node() {
    t.write("cdi/gpu.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n"
                            "  - name: \"0\"\n    containerEdits:\n      env: [GPUSLICE_MEMORY_LIMIT=256Mi]\n"
                            "  - name: burst\n    containerEdits:\n      env: [GPUSLICE_COMPUTE_LIMIT=30, GPUSLICE_COMPUTE_POLICY=burst]\n"
                            "  - name: plain\n    containerEdits:\n      env: [A=1]\n");
    t.write("interposer.so", "not really a library");
    config.spec_dirs = {t / "cdi"};
    config.state_dir = t / "state";
    config.interposer_path = t / "interposer.so";
    config.shim_path = GPUSLICE_SHIM; // not beside unit_tests
  }
  std::string bundle(const std::string &name, const std::string &device, const std::string &extra = "") {
    t.write(name + "/config.json", R"({"root": {"path": "rootfs")" + extra + R"(}, "process": {"env": []}, "mounts": [],
        "annotations": {"cdi.k8s.io/x": "v.com/gpu=)" + device + R"("}})");
    ::mkdir((t / (name + "/rootfs")).c_str(), 0755);
    return t / name;
  }
};

std::vector<cdi::OciSpec> mounts_of(const std::string &bundle) {
  const auto oci = cdi::OciSpec::parse(fs::read_file(bundle + "/config.json"));
  return {oci["mounts"].begin(), oci["mounts"].end()};
}

} // namespace

TEST_CASE("create wires limits: state dir, region socket, read-only mounts, pins last", "[create][sharing]") {
  Node n;
  const std::string b = n.bundle("b", "0");
  n.t.write("b/rootfs/etc/ld.so.preload", "/usr/lib/libimage.so\n");
  const auto edit = prepare(b, "ctr1", n.config);
  CHECK(edit.shared);
  const std::string dir = n.t / "state/containers/ctr1";
  CHECK(sharing::parse_limits(fs::read_file(dir + "/limits")) == sharing::Limits{{{"*", 256u << 20, std::nullopt, std::nullopt}}, ""});
  struct stat lst {};
  REQUIRE(::stat((dir + "/limits").c_str(), &lst) == 0);
  CHECK((lst.st_mode & 0222) == 0); // read-only
  CHECK(fs::read_file(dir + "/ld.so.preload") == std::string(kInterposerContainerPath) + "\n/usr/lib/libimage.so\n");
  struct stat sock {};
  REQUIRE(::stat((dir + "/run/region.sock").c_str(), &sock) == 0);
  CHECK(S_ISSOCK(sock.st_mode));
  // run/ is the container's /run/gpuslice: the socket, and mount points
  for (const char *name : {"limits", "libgpuslice-cuda.so"}) {
    struct stat mp {};
    REQUIRE(::lstat((dir + "/run/" + name).c_str(), &mp) == 0);
    CHECK((S_ISREG(mp.st_mode) && mp.st_size == 0));
  }
  struct stat dst {};
  REQUIRE(::stat(dir.c_str(), &dst) == 0);
  CHECK((dst.st_mode & 07777) == 0700);
  REQUIRE(::stat((n.t / "state").c_str(), &dst) == 0);

  const auto mounts = mounts_of(b);
  std::vector<std::string> order;
  for (const auto &m : mounts)
    order.push_back(m["destination"]);
  CHECK(order == std::vector<std::string>{"/etc", "/run", "/run/gpuslice", "/run/gpuslice/limits",
                                          kInterposerContainerPath, "/etc/ld.so.preload"});
  CHECK(mounts[0]["source"] == n.t / "b/rootfs/etc"); // pins: the directory onto itself, first
  CHECK(mounts[0]["options"] == cdi::OciSpec::parse(R"(["bind"])"));
  CHECK(mounts[1]["source"] == n.t / "b/rootfs/run");
  CHECK(mounts[2]["source"] == dir + "/run"); // a directory: a restarted monitor's socket is seen there
  CHECK(mounts[2]["options"] == cdi::OciSpec::parse(R"(["bind", "ro", "nosuid", "nodev", "noexec"])"));
  CHECK(mounts[3]["source"] == dir + "/limits");
  CHECK(mounts[4]["source"] == n.t / "interposer.so");
  CHECK(mounts[5]["source"] == dir + "/ld.so.preload");
  for (std::size_t i = 3; i <= 5; i++) // nothing of gpuslice's is writable in the container
    CHECK(mounts[i]["options"] == cdi::OciSpec::parse(R"(["rbind", "ro", "nosuid", "nodev"])"));
}

TEST_CASE("create: pins go before every mount of the spec", "[create][sharing]") {
  Node n;
  n.t.write("b/config.json", R"({"root": {"path": "rootfs"}, "annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}, "mounts": [
      {"destination": "/proc", "type": "proc", "source": "proc"},
      {"destination": "/etc/hosts", "type": "bind", "source": "/etc/hosts", "options": ["rbind", "ro"]},
      {"destination": "/var/run/secrets", "type": "tmpfs", "source": "tmpfs"},
      {"destination": "/run/secrets/x", "type": "tmpfs", "source": "tmpfs"}]})");
  ::mkdir((n.t / "b/rootfs").c_str(), 0755);
  REQUIRE(prepare(n.t / "b", "c", n.config).shared);
  std::vector<std::string> order;
  for (const auto &m : mounts_of(n.t / "b"))
    order.push_back(m["destination"]);
  // (/var/run/secrets lands in /run where the image links /var/run to /run)
  CHECK(order == std::vector<std::string>{"/etc", "/run", "/proc", "/etc/hosts", "/var/run/secrets", "/run/secrets/x",
                                          "/run/gpuslice", "/run/gpuslice/limits", kInterposerContainerPath,
                                          "/etc/ld.so.preload"});
}

TEST_CASE("create: burst mounts the node's activity table read-only; a read-only root gets no pins",
          "[create][sharing]") {
  Node n;
  const std::string b = n.bundle("b", "burst", R"(, "readonly": true)");
  REQUIRE(prepare(b, "c", n.config).shared);
  const auto mounts = mounts_of(b);
  bool activity = false;
  for (const auto &m : mounts) {
    if (m["destination"] == "/run/gpuslice/activity") {
      activity = true;
      CHECK(m["source"] == n.t / "state/activity");
      CHECK(m["options"][1] == "ro");
    }
    CHECK(m["destination"] != "/etc"); // renaming inside a read-only root fails anyway
    CHECK(m["destination"] != "/run");
  }
  CHECK(activity);
  struct stat st {};
  REQUIRE(::stat((n.t / "state/activity").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644); // written by the host only
  CHECK(sharing::parse_limits(fs::read_file(n.t / "state/containers/c/limits")).activity == "/run/gpuslice/activity");
}

TEST_CASE("create: the /etc and /run a writable root lacks are made in it, then pinned", "[create][sharing]") {
  Node n;
  const std::string b = n.bundle("b", "0", R"(, "readonly": false)"); // its rootfs is empty
  REQUIRE(prepare(b, "c1", n.config).shared);
  for (const char *dir : {"/etc", "/run"}) {
    struct stat st {};
    REQUIRE(::lstat((b + "/rootfs" + dir).c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    const auto mounts = mounts_of(b);
    CHECK(std::any_of(mounts.begin(), mounts.end(), [&](const cdi::OciSpec &m) {
      return m["destination"] == dir && m["source"] == b + "/rootfs" + dir;
    }));
  }
  // A read-only root gets no pin, and nothing is made in it.
  const std::string ro = n.bundle("ro", "0", R"(, "readonly": true)");
  REQUIRE(prepare(ro, "c2", n.config).shared);
  CHECK(::access((ro + "/rootfs/etc").c_str(), F_OK) != 0);
  CHECK(::access((ro + "/rootfs/run").c_str(), F_OK) != 0);
  // A create refused (its id is taken) makes nothing in the root.
  const std::string failing = n.bundle("failing", "0", R"(, "readonly": false)");
  CHECK_THROWS(prepare(failing, "c1", n.config));
  CHECK(::access((failing + "/rootfs/etc").c_str(), F_OK) != 0);
}

TEST_CASE("create: a /run the spec already mounts is not pinned again", "[create][sharing]") {
  Node n;
  n.t.write("b/config.json", R"({"root": {"path": "rootfs"}, "mounts": [{"destination": "/run", "type": "tmpfs", "source": "tmpfs"}],
      "annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}})");
  ::mkdir((n.t / "b/rootfs").c_str(), 0755);
  REQUIRE(prepare(n.t / "b", "c", n.config).shared);
  int runs = 0;
  for (const auto &m : mounts_of(n.t / "b"))
    runs += m["destination"] == "/run";
  CHECK(runs == 1);
}

TEST_CASE("create: symlinks and wrong types on gpuslice's destinations are refused, nothing left",
          "[create][sharing]") {
  Node n;
  struct Case {
    const char *what;
    std::function<void(const std::string &rootfs)> make;
    const char *message;
  };
  const std::vector<Case> cases = {
      {"dangling preload link", [](const std::string &r) {
         ::mkdir((r + "/etc").c_str(), 0755);
         REQUIRE(::symlink("nonexistent/../x", (r + "/etc/ld.so.preload").c_str()) == 0);
       }, "\"/etc/ld.so.preload\" is (or goes through) a symbolic link"},
      {"/run as a link", [](const std::string &r) { REQUIRE(::symlink("/tmp", (r + "/run").c_str()) == 0); },
       "\"/run\" is (or goes through) a symbolic link"},
      {"/etc as a link", [](const std::string &r) { REQUIRE(::symlink("/", (r + "/etc").c_str()) == 0); },
       "\"/etc\" is (or goes through) a symbolic link"},
      {"/run/gpuslice as a link", [](const std::string &r) {
         ::mkdir((r + "/run").c_str(), 0755);
         REQUIRE(::symlink("/", (r + "/run/gpuslice").c_str()) == 0);
       }, "\"/run/gpuslice\" is (or goes through) a symbolic link"},
      {"preload as a directory", [](const std::string &r) {
         ::mkdir((r + "/etc").c_str(), 0755);
         ::mkdir((r + "/etc/ld.so.preload").c_str(), 0755);
       }, "\"/etc/ld.so.preload\" is not a regular file"},
  };
  int i = 0;
  for (const auto &c : cases) {
    CAPTURE(c.what);
    const std::string name = "b" + std::to_string(i++);
    const std::string b = n.bundle(name, "0");
    const std::string before = fs::read_file(b + "/config.json");
    c.make(b + "/rootfs");
    CHECK_THROWS_WITH(prepare(b, name, n.config), Catch::Contains(c.message));
    CHECK(fs::read_file(b + "/config.json") == before);
    CHECK(::access((n.t / ("state/containers/" + name)).c_str(), F_OK) != 0);
  }
}

TEST_CASE("create: a device without limits gets only its CDI env recorded; a failure leaves nothing; unsafe ids "
          "refused",
          "[create][sharing]") {
  Node n;
  CHECK_FALSE(prepare(n.bundle("b2", "plain"), "ctr2", n.config).shared);
  const auto dir = state::open_container_dir(n.config.state_dir, "ctr2");
  REQUIRE(dir);
  CHECK(state::read_record(dir->fd.get(), dir->path).cdi_env == std::vector<std::string>{"A=1"});
  CHECK(::access((n.t / "state/containers/ctr2/limits").c_str(), F_OK) != 0);
  CHECK(::access((n.t / "state/containers/ctr2/region.sock").c_str(), F_OK) != 0);
  n.t.write("b3/config.json", R"({"annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}})"); // no root.path
  CHECK_THROWS_WITH(prepare(n.t / "b3", "ctr3", n.config), Catch::Contains("root.path"));
  CHECK(::access((n.t / "state/containers/ctr3").c_str(), F_OK) != 0);
  CHECK_THROWS_AS(prepare(n.bundle("b4", "0"), "../escape", n.config), Error);
}

TEST_CASE("exec: the recorded CDI env is added where the process does not set it", "[create][exec]") {
  Node n;
  REQUIRE_FALSE(prepare(n.bundle("b", "plain"), "ctr", n.config).shared);
  n.t.write("process.json", R"({"args": ["sh"], "env": ["PATH=/bin", "A=mine"], "cwd": "/"})");
  CHECK(add_cdi_env(n.t / "process.json", n.config.state_dir, "ctr") == 0); // A is the request's own
  n.t.write("process.json", R"({"args": ["sh"], "env": ["PATH=/bin"], "cwd": "/"})");
  CHECK(add_cdi_env(n.t / "process.json", n.config.state_dir, "ctr") == 1);
  const auto p = cdi::OciSpec::parse(fs::read_file(n.t / "process.json"));
  CHECK(p["env"] == cdi::OciSpec::parse(R"(["PATH=/bin", "A=1"])"));
  CHECK(p["args"] == cdi::OciSpec::parse(R"(["sh"])"));
  // no state: a container without devices, untouched
  n.t.write("other.json", R"({"args": ["sh"]})");
  CHECK(add_cdi_env(n.t / "other.json", n.config.state_dir, "no-such") == 0);
  CHECK(fs::read_file(n.t / "other.json") == R"({"args": ["sh"]})");
  n.t.write("bad.json", R"({"env": "x"})");
  CHECK_THROWS_WITH(add_cdi_env(n.t / "bad.json", n.config.state_dir, "ctr"), Catch::Contains("\"env\" is not an array"));
}

TEST_CASE("create: a limit in the env that no claimed device gives is refused, config.json untouched",
          "[create][sharing]") {
  Node n;
  // What containerd with enable_cdi leaves for a limited device passed only
  // in the CRI CDIDevices field: its edits applied, no annotation.
  n.t.write("engine/config.json", R"({"root": {"path": "rootfs"}, "process": {"env": ["GPUSLICE_MEMORY_LIMIT=256Mi"]}})");
  const std::string before = fs::read_file(n.t / "engine/config.json");
  CHECK_THROWS_WITH(prepare(n.t / "engine", "e1", n.config),
                    Catch::Contains("sets GPUSLICE_MEMORY_LIMIT") && Catch::Contains("refusing to start it unlimited") &&
                        Catch::Contains("device nodes"));
  CHECK(fs::read_file(n.t / "engine/config.json") == before);
  // Beside a claimed device without limits, and for a compute limit alike.
  const std::string b = n.bundle("plain-claimed", "plain");
  auto oci = cdi::OciSpec::parse(fs::read_file(b + "/config.json"));
  oci["process"]["env"].push_back("GPUSLICE_COMPUTE_LIMIT=30");
  n.t.write("plain-claimed/config.json", oci.dump());
  CHECK_THROWS_WITH(prepare(b, "e2", n.config), Catch::Contains("sets GPUSLICE_COMPUTE_LIMIT"));
  CHECK(::access((n.t / "state/containers/e2").c_str(), F_OK) != 0);
  // A claimed device with limits: the container's own value is just ignored (test above).
  oci["annotations"]["cdi.k8s.io/x"] = "v.com/gpu=0";
  n.t.write("plain-claimed/config.json", oci.dump());
  CHECK(prepare(b, "e3", n.config).shared);
  // No GPUSLICE_ limit in the env, no request: untouched, no error.
  n.t.write("none/config.json", R"({"root": {"path": "rootfs"}, "process": {"env": ["GPUSLICE_COMPUTE_POLICY=burst"]}})");
  CHECK_FALSE(prepare(n.t / "none", "e4", n.config).written);
}

namespace {

// A bundle as an engine leaves it after applying CDI devices itself (the
// CRI CDIDevices field): `env` and `nodes` (linux.devices entries) in
// config.json, no annotation.
std::string engine_bundle(Node &n, const std::string &name, const std::string &env, const std::string &nodes) {
  n.t.write(name + "/config.json", R"({"root": {"path": "rootfs"}, "process": {"env": [)" + env +
                                       R"(]}, "mounts": [], "linux": {"devices": [)" + nodes + "]}}");
  ::mkdir((n.t / (name + "/rootfs")).c_str(), 0755);
  return n.t / name;
}

constexpr const char *kSlicesSpec = R"({"cdiVersion": "0.6.0", "kind": "slice.example/gpu", "devices": [
  {"name": "a", "containerEdits": {"env": ["GPUSLICE_MEMORY_LIMIT=512Mi", "GPUSLICE_GPU_UUID=GPU-aaaa-1111"],
   "deviceNodes": [{"path": "/dev/fakegpu0", "type": "c", "major": 195, "minor": 0}]}},
  {"name": "b", "containerEdits": {"env": ["GPUSLICE_MEMORY_LIMIT=512Mi", "GPUSLICE_GPU_UUID=GPU-aaaa-1111"],
   "deviceNodes": [{"path": "/dev/fakegpu0", "type": "c", "major": 195, "minor": 0}]}},
  {"name": "null", "containerEdits": {"env": ["GPUSLICE_MEMORY_LIMIT=64Mi", "GPUSLICE_GPU_UUID=GPU-bbbb-2222"],
   "deviceNodes": [{"path": "/dev/slice-null", "hostPath": "/dev/null"}]}}]})";
constexpr const char *kNode0 = R"({"path": "/dev/fakegpu0", "type": "c", "major": 195, "minor": 0})";
constexpr const char *kEnvA = R"("PATH=/bin", "GPUSLICE_MEMORY_LIMIT=512Mi", "GPUSLICE_GPU_UUID=GPU-aaaa-1111")";

sharing::Limits limits_of(Node &n, const std::string &id) {
  return sharing::parse_limits(fs::read_file(n.t / ("state/containers/" + id + "/limits")));
}

} // namespace

TEST_CASE("create: a limited device the engine applied is recognised by its env and its device nodes",
          "[create][sharing]") {
  Node n;
  n.t.write("cdi/slices.json", kSlicesSpec);
  const std::string b = engine_bundle(n, "applied", kEnvA, kNode0);
  const auto edit = prepare(b, "applied", n.config);
  REQUIRE(edit.shared);
  // Two slices of GPU-aaaa-1111 with the same variables: one limit, not their sum.
  CHECK(limits_of(n, "applied") == sharing::Limits{{{"GPU-aaaa-1111", 512u << 20, std::nullopt, std::nullopt}}, ""});
  // The engine's edits are not applied a second time.
  const auto oci = cdi::OciSpec::parse(fs::read_file(b + "/config.json"));
  CHECK(oci["linux"]["devices"].size() == 1);
  CHECK(std::count(oci["process"]["env"].begin(), oci["process"]["env"].end(), "GPUSLICE_MEMORY_LIMIT=512Mi") == 1);
  CHECK(std::any_of(oci["mounts"].begin(), oci["mounts"].end(),
                    [](const cdi::OciSpec &m) { return m["destination"] == "/run/gpuslice/limits"; }));
  // The numbers of a node the spec leaves to the host: the host's (/dev/null, c 1:3).
  const std::string null = engine_bundle(n, "null", R"("GPUSLICE_MEMORY_LIMIT=64Mi", "GPUSLICE_GPU_UUID=GPU-bbbb-2222")",
                                         R"({"path": "/dev/slice-null", "type": "c", "major": 1, "minor": 3})");
  REQUIRE(prepare(null, "null", n.config).shared);
  CHECK(limits_of(n, "null") == sharing::Limits{{{"GPU-bbbb-2222", 64u << 20, std::nullopt, std::nullopt}}, ""});
}

TEST_CASE("create: a limit in the env without the device's nodes, or unlike any device's, is refused",
          "[create][sharing]") {
  Node n;
  n.t.write("cdi/slices.json", kSlicesSpec);
  const auto refused = [&](const std::string &name, const std::string &env, const std::string &nodes) {
    const std::string b = engine_bundle(n, name, env, nodes);
    const std::string before = fs::read_file(b + "/config.json");
    CHECK_THROWS_WITH(prepare(b, name, n.config), Catch::Contains("refusing to start it unlimited"));
    CHECK(fs::read_file(b + "/config.json") == before);
    CHECK(::access((n.t / ("state/containers/" + name)).c_str(), F_OK) != 0);
  };
  // The pod author's env alone: exactly a slice's variables, no node.
  refused("env-only", kEnvA, "");
  // The node with other numbers, or at another path.
  refused("other-minor", kEnvA, R"({"path": "/dev/fakegpu0", "type": "c", "major": 195, "minor": 1})");
  refused("other-path", kEnvA, R"({"path": "/dev/fakegpu9", "type": "c", "major": 195, "minor": 0})");
  refused("host-numbers", R"("GPUSLICE_MEMORY_LIMIT=64Mi", "GPUSLICE_GPU_UUID=GPU-bbbb-2222")",
          R"({"path": "/dev/slice-null", "type": "c", "major": 1, "minor": 5})");
  // Another value, a variable the device does not set, or one of its variables missing.
  refused("other-value", R"("GPUSLICE_MEMORY_LIMIT=1Gi", "GPUSLICE_GPU_UUID=GPU-aaaa-1111")", kNode0);
  refused("extra-limit", std::string(kEnvA) + R"(, "GPUSLICE_COMPUTE_LIMIT=30")", kNode0);
  refused("missing-uuid", R"("GPUSLICE_MEMORY_LIMIT=512Mi")", kNode0);
}

TEST_CASE("create: devices of different limits that config.json matches alike are refused", "[create][sharing]") {
  Node n;
  n.t.write("cdi/two.json", R"({"cdiVersion": "0.6.0", "kind": "two.example/gpu", "devices": [
    {"name": "small", "containerEdits": {"env": ["GPUSLICE_MEMORY_LIMIT=512Mi"],
     "deviceNodes": [{"path": "/dev/fakegpu0", "type": "c", "major": 195, "minor": 0}]}},
    {"name": "pinned", "containerEdits": {"env": ["GPUSLICE_MEMORY_LIMIT=512Mi", "GPUSLICE_GPU_UUID=GPU-aaaa-1111"],
     "deviceNodes": [{"path": "/dev/fakegpu0", "type": "c", "major": 195, "minor": 0}]}}]})");
  const std::string b = engine_bundle(n, "ambiguous", kEnvA, kNode0);
  CHECK_THROWS_WITH(prepare(b, "ambiguous", n.config),
                    Catch::Contains("two.example/gpu=pinned") && Catch::Contains("two.example/gpu=small") &&
                        Catch::Contains("cannot tell which the engine applied"));
}
