#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/common/error.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <map>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <random>

using namespace gpuslice;
using namespace gpuslice::cdi;
using gpuslice::testing::TempDir;

namespace {

// A typical containerd-generated config.json, trimmed, with fields the CDI
// edits never touch (including ones no OCI version defines).
const char *kOci = R"({
  "ociVersion": "1.0.2-dev",
  "x-vendor-extension": {"keep": [1, 2.5, "three", null, {"deep": true}]},
  "process": {
    "user": {"uid": 1000, "gid": 1001},
    "args": ["sh"],
    "env": ["PATH=/bin", "KEEP=me", "VISIBLE=none"],
    "cwd": "/"
  },
  "root": {"path": "rootfs"},
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
    {"destination": "/etc/hosts", "type": "bind", "source": "/var/lib/hosts", "options": ["rbind"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm"}
  ],
  "linux": {
    "resources": {"devices": [{"allow": false, "access": "rwm"}], "memory": {"limit": 1073741824}},
    "devices": [{"path": "/dev/gpu0", "type": "c", "major": 9, "minor": 9}],
    "namespaces": [{"type": "pid"}, {"type": "mount"}]
  }
})";

HostNode fake_lookup(const std::string &path) {
  if (path == "/host/gpu0")
    return {"c", 195, 0, 0666};
  if (path == "/host/block")
    return {"b", 8, 1, 0660};
  throw Error("lstat " + quote(path) + ": no such file or directory", ENOENT);
}

HostNode no_lookup(const std::string &path) { throw Error("unexpected lookup of " + path); }

ContainerEdits edits_of(const std::string &edits_json) {
  return parse_spec(R"({"cdiVersion": "1.1.0", "kind": "a/b", "devices": [{"name": "x", "containerEdits": )" + edits_json + "}]}")
      .devices[0]
      .edits;
}

} // namespace

TEST_CASE("apply: env replaces in place, later values win, no duplicates", "[cdi][apply]") {
  OciSpec oci = OciSpec::parse(kOci);
  apply_edits(oci, edits_of(R"({"env": ["VISIBLE=0", "NEW=1", "VISIBLE=1", "NEW=2", "KEEPX=y"]})"), no_lookup);
  CHECK(oci["process"]["env"] == OciSpec::parse(R"(["PATH=/bin", "KEEP=me", "VISIBLE=1", "NEW=2", "KEEPX=y"])"));

  // A key twice in the spec: the last one is what runc gives the process,
  // and what the reference replaces; a bare KEY is that key too.
  OciSpec twice = OciSpec::parse(R"({"process": {"env": ["A=1", "A=2", "B", "BB=3"]}})");
  apply_edits(twice, edits_of(R"({"env": ["A=3", "B=4"]})"), no_lookup);
  CHECK(twice["process"]["env"] == OciSpec::parse(R"(["A=1", "A=3", "B=4", "BB=3"])"));
}

TEST_CASE("apply: a complete device node takes the host node's mode where the spec gave none", "[cdi][apply]") {
  OciSpec oci = OciSpec::parse(kOci);
  apply_edits(oci, edits_of(R"({"deviceNodes": [
      {"path": "/dev/a", "hostPath": "/host/block", "type": "b", "major": 8, "minor": 1},
      {"path": "/dev/b", "hostPath": "/host/block", "type": "b", "major": 8, "minor": 1, "fileMode": 384},
      {"path": "/dev/c", "hostPath": "/host/gpu0", "type": "b", "major": 8, "minor": 1}]})"),
              fake_lookup);
  std::map<std::string, OciSpec> by_path;
  for (const auto &d : oci["linux"]["devices"])
    by_path[d["path"].get<std::string>()] = d;
  REQUIRE(by_path.count("/dev/a") + by_path.count("/dev/b") + by_path.count("/dev/c") == 3);
  CHECK(by_path["/dev/a"]["fileMode"] == 0660);        // the host node's, as the reference (1.1.0) does
  CHECK(by_path["/dev/b"]["fileMode"] == 0600);        // the spec's own wins
  CHECK_FALSE(by_path["/dev/c"].contains("fileMode")); // a host node of another type lends nothing
  CHECK(by_path["/dev/a"]["major"] == 8);              // and the spec's numbers stand
}

TEST_CASE("apply: device nodes are completed from the host, replace same path, get cgroup rules", "[cdi][apply]") {
  OciSpec oci = OciSpec::parse(kOci);
  apply_edits(oci, edits_of(R"({"deviceNodes": [
      {"path": "/dev/gpu0", "hostPath": "/host/gpu0", "permissions": "rw"},
      {"path": "/dev/blk", "hostPath": "/host/block", "uid": 7},
      {"path": "/dev/full", "type": "c", "major": 1, "minor": 7, "gid": 8},
      {"path": "/dev/pipe", "type": "p"}]})"),
              fake_lookup);
  const auto &devs = oci["linux"]["devices"];
  REQUIRE(devs.size() == 4);
  // The original /dev/gpu0 (9:9) is gone, replaced by the host's 195:0.
  CHECK(devs[0] == OciSpec::parse(R"({"path": "/dev/gpu0", "type": "c", "major": 195, "minor": 0, "fileMode": 438, "uid": 1000, "gid": 1001})"));
  CHECK(devs[1] == OciSpec::parse(R"({"path": "/dev/blk", "type": "b", "major": 8, "minor": 1, "fileMode": 432, "uid": 7, "gid": 1001})"));
  // Complete node without a host node: nothing looked up is needed, no fileMode invented.
  CHECK(devs[2] == OciSpec::parse(R"({"path": "/dev/full", "type": "c", "major": 1, "minor": 7, "uid": 1000, "gid": 8})"));
  CHECK(devs[3]["type"] == "p");
  const auto &rules = oci["linux"]["resources"]["devices"];
  REQUIRE(rules.size() == 4); // the deny-all plus b/c nodes only, not the pipe
  CHECK(rules[1] == OciSpec::parse(R"({"allow": true, "type": "c", "major": 195, "minor": 0, "access": "rw"})"));
  CHECK(rules[2] == OciSpec::parse(R"({"allow": true, "type": "b", "major": 8, "minor": 1, "access": "rwm"})"));
  CHECK(rules[3]["access"] == "rwm");
  // hostPath and permissions never reach linux.devices.
  CHECK_FALSE(devs[0].contains("hostPath"));
  CHECK_FALSE(devs[0].contains("permissions"));
}

TEST_CASE("apply: a type that disagrees with the host node is an error", "[cdi][apply]") {
  OciSpec oci = OciSpec::parse(kOci);
  CHECK_THROWS_WITH(apply_edits(oci, edits_of(R"({"deviceNodes": [{"path": "/dev/x", "hostPath": "/host/gpu0", "type": "b"}]})"), fake_lookup),
                    Catch::Contains("type \"b\" does not match host node \"/host/gpu0\" of type \"c\""));
  CHECK_THROWS_WITH(apply_edits(oci, edits_of(R"({"deviceNodes": [{"path": "/dev/none"}]})"), fake_lookup),
                    Catch::Contains("device node \"/dev/none\": lstat \"/dev/none\""));
}

TEST_CASE("apply: real host nodes from lstat (/dev/null, mknod, mkfifo)", "[cdi][apply][root]") {
  TempDir t;
  const std::string chr = t / "nvidia0", fifo = t / "fifo";
  REQUIRE(::mknod(chr.c_str(), S_IFCHR | 0620, makedev(195, 255)) == 0); // needs root (CAP_MKNOD)
  REQUIRE(::mkfifo(fifo.c_str(), 0640) == 0);
  REQUIRE(::chmod(chr.c_str(), 0620) == 0); // the umask narrowed them
  REQUIRE(::chmod(fifo.c_str(), 0640) == 0);
  OciSpec oci = OciSpec::parse(R"({"process": {"user": {"uid": 0, "gid": 0}}})");
  apply_edits(oci, edits_of(R"({"deviceNodes": [{"path": "/dev/null"}, {"path": "/dev/nvidiactl", "hostPath": ")" + chr +
                            R"("}, {"path": "/dev/f", "hostPath": ")" + fifo + R"("}]})"));
  const auto &devs = oci["linux"]["devices"];
  CHECK(devs[0] == OciSpec::parse(R"({"path": "/dev/null", "type": "c", "major": 1, "minor": 3, "fileMode": 438})"));
  CHECK(devs[1] == OciSpec::parse(R"({"path": "/dev/nvidiactl", "type": "c", "major": 195, "minor": 255, "fileMode": 400})"));
  CHECK(devs[2] == OciSpec::parse(R"({"path": "/dev/f", "type": "p", "major": 0, "minor": 0, "fileMode": 416})"));
  CHECK_THROWS_WITH(apply_edits(oci, edits_of(R"({"deviceNodes": [{"path": "/dev/x", "hostPath": ")" + t.path() + R"("}]})")),
                    Catch::Contains("is not a device node"));
}

TEST_CASE("apply: mounts replace the same destination, then sort stably by depth", "[cdi][apply]") {
  OciSpec oci = OciSpec::parse(kOci);
  apply_edits(oci, edits_of(R"({"mounts": [
      {"hostPath": "/lib/a.so", "containerPath": "/usr/lib/a.so", "options": ["ro", "bind"]},
      {"hostPath": "/new/hosts", "containerPath": "/etc/hosts", "options": ["ro", "bind"]},
      {"hostPath": "tmpfs", "containerPath": "/x/", "type": "tmpfs"}]})"),
              no_lookup);
  std::vector<std::string> dests;
  for (const auto &m : oci["mounts"])
    dests.push_back(m["destination"]);
  CHECK(dests == std::vector<std::string>{"/proc", "/dev", "/x/", "/dev/shm", "/etc/hosts", "/usr/lib/a.so"});
  CHECK(oci["mounts"][4] == OciSpec::parse(R"({"destination": "/etc/hosts", "source": "/new/hosts", "options": ["ro", "bind"]})"));
  CHECK(oci["mounts"][2] == OciSpec::parse(R"({"destination": "/x/", "type": "tmpfs", "source": "tmpfs"})"));
}

TEST_CASE("apply: hooks, intelRdt, netDevices, additionalGids", "[cdi][apply]") {
  OciSpec oci = OciSpec::parse(kOci);
  oci["hooks"] = OciSpec::parse(R"({"prestart": [{"path": "/old"}]})");
  oci["process"]["user"]["additionalGids"] = OciSpec::parse("[5]");
  apply_edits(oci, edits_of(R"({"hooks": [
        {"hookName": "prestart", "path": "/p", "args": ["p", "1"]},
        {"hookName": "createContainer", "path": "/c", "env": ["A=1"], "timeout": 3}],
      "intelRdt": {"closID": "gold", "schemata": ["L3:0=ff"], "enableMonitoring": true},
      "netDevices": [{"hostInterfaceName": "eth1", "name": "net1"}],
      "additionalGids": [0, 5, 44, 44]})"),
              no_lookup);
  CHECK(oci["hooks"] == OciSpec::parse(R"({"prestart": [{"path": "/old"}, {"path": "/p", "args": ["p", "1"]}],
                                           "createContainer": [{"path": "/c", "env": ["A=1"], "timeout": 3}]})"));
  CHECK(oci["linux"]["intelRdt"] == OciSpec::parse(R"({"closID": "gold", "schemata": ["L3:0=ff"], "enableMonitoring": true})"));
  CHECK(oci["linux"]["netDevices"] == OciSpec::parse(R"({"eth1": {"name": "net1"}})"));
  CHECK(oci["process"]["user"]["additionalGids"] == OciSpec::parse("[5, 44]"));
}

TEST_CASE("apply: untouched fields are preserved byte-for-byte, in order", "[cdi][apply]") {
  OciSpec oci = OciSpec::parse(kOci);
  const OciSpec before = oci;
  apply_edits(oci, edits_of(R"({"env": ["X=1"]})"), no_lookup);
  for (const char *key : {"ociVersion", "x-vendor-extension", "root", "mounts", "linux"})
    CHECK(oci[key].dump() == before[key].dump());
  std::vector<std::string> keys;
  for (const auto &[k, v] : oci.items())
    keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"ociVersion", "x-vendor-extension", "process", "root", "mounts", "linux"});
  // Missing containers are created; wrong types are refused.
  OciSpec bare = OciSpec::object();
  apply_edits(bare, edits_of(R"({"env": ["X=1"], "additionalGids": [3]})"), no_lookup);
  CHECK(bare == OciSpec::parse(R"({"process": {"env": ["X=1"], "user": {"additionalGids": [3]}}})"));
  OciSpec wrong = OciSpec::parse(R"({"process": {"env": "X=1"}})");
  CHECK_THROWS_WITH(apply_edits(wrong, edits_of(R"({"env": ["X=1"]})"), no_lookup), Catch::Contains("process.env is not an array"));
}

TEST_CASE("inject: spec edits once, then devices in request order; all or nothing", "[cdi][apply][registry]") {
  TempDir t;
  t.write("d/gpu.json", R"({"cdiVersion": "0.6.0", "kind": "v.com/gpu",
    "containerEdits": {"env": ["ORDER=spec", "DRIVER=1"]},
    "devices": [
      {"name": "0", "containerEdits": {"env": ["ORDER=0"], "deviceNodes": [{"path": "/dev/g0", "hostPath": "/host/gpu0"}]}},
      {"name": "1", "containerEdits": {"env": ["ORDER=1"], "deviceNodes": [{"path": "/dev/g1", "hostPath": "/host/missing"}]}},
      {"name": "2", "containerEdits": {"env": ["ORDER=2"]}}]})");
  Registry r({t / "d"});
  r.reload();
  REQUIRE(r.errors().empty());

  OciSpec oci = OciSpec::parse(R"({"process": {"env": []}})");
  inject_devices(r, oci, {"v.com/gpu=2", "v.com/gpu=0", "v.com/gpu=2"}, fake_lookup);
  CHECK(oci["process"]["env"] == OciSpec::parse(R"(["ORDER=0", "DRIVER=1"])"));
  CHECK(oci["linux"]["devices"].size() == 1);

  OciSpec untouched = OciSpec::parse(kOci);
  const std::string before = untouched.dump();
  CHECK_THROWS_WITH(inject_devices(r, untouched, {"v.com/gpu=0", "v.com/gpu=7", "x.com/y=z"}, fake_lookup),
                    Catch::Contains("unresolvable CDI devices \"v.com/gpu=7\", \"x.com/y=z\"") &&
                        Catch::Contains("spec dirs searched: " + t / "d"));
  CHECK(untouched.dump() == before);
  // A failing host lookup on the second device leaves nothing behind either.
  CHECK_THROWS_WITH(inject_devices(r, untouched, {"v.com/gpu=0", "v.com/gpu=1"}, fake_lookup), Catch::Contains("/host/missing"));
  CHECK(untouched.dump() == before);
}

// ---------------------------------------------------------------------------
// Applying twice: containerd 1.7+ (enable_cdi), CRI-O and podman apply the
// CDI edits before gpuslice-runtime applies them again.

namespace {

const char *kEveryEditKind = R"({
  "env": ["A=1", "B=2", "A=3"],
  "deviceNodes": [
    {"path": "/dev/gpu0", "hostPath": "/host/gpu0", "permissions": "rw"},
    {"path": "/dev/blk", "hostPath": "/host/block"},
    {"path": "/dev/also-gpu0", "hostPath": "/host/gpu0", "permissions": "rw"},
    {"path": "/dev/pipe", "type": "p"}],
  "netDevices": [{"hostInterfaceName": "eth1", "name": "net1"}],
  "mounts": [
    {"hostPath": "/lib/x", "containerPath": "/usr/lib/x", "options": ["ro", "bind"]},
    {"hostPath": "/lib", "containerPath": "/usr/lib", "type": "bind"}],
  "hooks": [
    {"hookName": "createContainer", "path": "/ldcache", "args": ["ldcache", "--folder", "/usr/lib"]},
    {"hookName": "createContainer", "path": "/ldcache", "args": ["ldcache", "--folder", "/usr/lib"]},
    {"hookName": "prestart", "path": "/p", "env": ["X=1"], "timeout": 5},
    {"hookName": "poststop", "path": "/s"}],
  "intelRdt": {"closID": "gold", "schemata": ["L3:0=ff"]},
  "additionalGids": [44, 45]
})";

} // namespace

TEST_CASE("apply: the same edits applied twice give what applying them once gives, every edit kind", "[cdi][apply]") {
  OciSpec once = OciSpec::parse(kOci);
  apply_edits(once, edits_of(kEveryEditKind), fake_lookup);
  OciSpec twice = once;
  apply_edits(twice, edits_of(kEveryEditKind), fake_lookup);
  CHECK(twice.dump(2) == once.dump(2));
  // applied once, as the reference does: a hook the spec lists twice runs twice
  CHECK(once["hooks"]["createContainer"].size() == 2);
  CHECK(once["hooks"]["prestart"].size() == 1);
  // ... and a node two paths share needs one rule: deny-all, gpu0, blk
  CHECK(once["linux"]["resources"]["devices"].size() == 3);
}

TEST_CASE("apply: edits an engine applied first, in its own JSON form, are recognised", "[cdi][apply]") {
  // What containerd's CDI (Go) leaves for the same edits: keys in its field
  // order, empty fields left out, numbers unsigned.
  OciSpec engine = OciSpec::parse(kOci);
  engine["hooks"] = OciSpec::parse(R"({"prestart": [{"timeout": 5, "env": ["X=1"], "path": "/p"}],
                                       "poststop": [{"path": "/s", "args": []}]})");
  engine["linux"]["resources"]["devices"].push_back(
      OciSpec::parse(R"({"access": "rw", "minor": 0, "major": 195, "type": "c", "allow": true})"));
  apply_edits(engine, edits_of(R"({"deviceNodes": [{"path": "/dev/gpu0", "hostPath": "/host/gpu0", "permissions": "rw"}],
      "hooks": [{"hookName": "prestart", "path": "/p", "env": ["X=1"], "timeout": 5}, {"hookName": "poststop", "path": "/s"}]})"),
              fake_lookup);
  CHECK(engine["hooks"]["prestart"].size() == 1);
  CHECK(engine["hooks"]["poststop"].size() == 1);
  CHECK(engine["linux"]["resources"]["devices"].size() == 2);

  // A different hook (other args) or rule (other access) is added.
  apply_edits(engine, edits_of(R"({"deviceNodes": [{"path": "/dev/gpu0", "hostPath": "/host/gpu0"}],
      "hooks": [{"hookName": "prestart", "path": "/p", "args": ["p", "again"], "env": ["X=1"], "timeout": 5}]})"),
              fake_lookup);
  CHECK(engine["hooks"]["prestart"].size() == 2);
  CHECK(engine["linux"]["resources"]["devices"].size() == 3);

  // An allow that a later deny overrides is granted again, after the deny.
  OciSpec denied = OciSpec::parse(kOci);
  denied["linux"]["resources"]["devices"] = OciSpec::parse(R"([
      {"allow": true, "type": "c", "major": 195, "minor": 0, "access": "rwm"},
      {"allow": false, "type": "c", "major": 195, "minor": 0, "access": "rwm"}])");
  apply_edits(denied, edits_of(R"({"deviceNodes": [{"path": "/dev/gpu0", "hostPath": "/host/gpu0"}]})"), fake_lookup);
  REQUIRE(denied["linux"]["resources"]["devices"].size() == 3);
  CHECK(denied["linux"]["resources"]["devices"][2]["allow"] == true);
}

TEST_CASE("apply: property: for random edits over a random spec, twice is once", "[cdi][apply]") {
  std::mt19937 rng(20261201);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> stages = {"prestart", "createRuntime", "createContainer", "startContainer", "poststart",
                                           "poststop"};
  for (int round = 0; round < 400; ++round) {
    ContainerEdits e;
    for (int i = pick(4); i > 0; --i)
      e.env.push_back("K" + std::to_string(pick(3)) + "=" + std::to_string(pick(5)));
    for (int i = pick(4); i > 0; --i) {
      DeviceNode d;
      d.path = "/dev/n" + std::to_string(pick(3));
      d.type = std::string(1, "bcp"[pick(3)]);
      if (d.type != "p") {
        d.major = 1 + pick(3);
        d.minor = pick(3);
      }
      d.permissions = pick(2) ? "rw" : "";
      if (pick(2))
        d.uid = static_cast<uint32_t>(pick(3));
      e.device_nodes.push_back(d);
    }
    for (int i = pick(3); i > 0; --i)
      e.net_devices.push_back({"eth" + std::to_string(pick(3)), "net" + std::to_string(pick(3))});
    for (int i = pick(4); i > 0; --i)
      e.mounts.push_back({"/h" + std::to_string(pick(3)), "/c" + std::string(pick(2) ? "/d" : "") + std::to_string(pick(3)),
                          pick(2) ? std::vector<std::string>{"ro", "bind"} : std::vector<std::string>{}, pick(2) ? "bind" : ""});
    for (int i = pick(5); i > 0; --i) {
      Hook h{stages[pick(static_cast<int>(stages.size()))], "/hook" + std::to_string(pick(2)), {}, {}, {}};
      if (pick(2))
        h.args = {"hook", std::to_string(pick(2))};
      if (pick(2))
        h.env = {"E=" + std::to_string(pick(2))};
      if (pick(2))
        h.timeout = pick(3);
      e.hooks.push_back(h);
    }
    if (pick(3) == 0)
      e.intel_rdt = IntelRdt{"clos" + std::to_string(pick(2)), "", "", {}, pick(2) == 1, false, false};
    for (int i = pick(3); i > 0; --i)
      e.additional_gids.push_back(static_cast<uint32_t>(pick(4)));

    // A spec that may already hold some of it, in the engine's shape.
    OciSpec oci = OciSpec::parse(kOci);
    if (pick(2))
      oci["hooks"] = OciSpec::parse(R"({"prestart": [{"path": "/hook0"}], "poststop": [{"path": "/hook1", "args": ["hook", "1"]}]})");
    if (pick(2))
      oci["linux"]["resources"]["devices"].push_back(OciSpec::parse(R"({"allow": true, "type": "c", "major": 1, "minor": 0, "access": "rwm"})"));

    OciSpec once = oci;
    apply_edits(once, e, no_lookup);
    OciSpec twice = once;
    apply_edits(twice, e, no_lookup);
    INFO("round " << round);
    REQUIRE(twice.dump(2) == once.dump(2));
  }
}
