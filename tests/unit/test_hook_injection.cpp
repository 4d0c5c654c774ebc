// gpuslice-hook's plan: the difference between the spec the engine ran and
// the one gpuslice-runtime would have written (hook/injection.hpp); and the
// spec's hooks it runs (hook/spec_hooks.hpp).
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/hook/child.hpp"
#include "gpuslice/hook/injection.hpp"
#include "gpuslice/hook/spec_hooks.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <linux/mount.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

using namespace gpuslice;
using namespace gpuslice::hook;
using cdi::OciSpec;

namespace {

OciSpec engine_spec() {
  return OciSpec::parse(R"({
    "process": {"env": ["PATH=/bin", "TERM=xterm"]},
    "root": {"path": "/b/rootfs"},
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
               {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]}],
    "linux": {"devices": [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229}],
              "resources": {"devices": [{"allow": false, "access": "rwm"}]}}})");
}

} // namespace

TEST_CASE("hook injection: only what the edits add", "[hook]") {
  const OciSpec before = engine_spec();
  OciSpec after = before;
  after["process"]["env"].push_back("NVIDIA_VISIBLE_DEVICES=0");
  after["mounts"].push_back(OciSpec::parse(
      R"({"destination": "/usr/lib/libcuda.so.1", "type": "bind", "source": "/host/libcuda.so.1", "options": ["ro", "nosuid", "nodev", "bind"]})"));
  after["mounts"].push_back(OciSpec::parse(R"({"destination": "/etc", "type": "bind", "source": "/b/rootfs/etc", "options": ["bind"]})"));
  after["linux"]["devices"].push_back(OciSpec::parse(
      R"({"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0, "fileMode": 432, "uid": 0, "gid": 44})"));
  after["linux"]["resources"]["devices"].push_back(
      OciSpec::parse(R"({"allow": true, "type": "c", "major": 195, "minor": 0, "access": "rw"})"));
  after["hooks"] = OciSpec::parse(R"({"createContainer": [{"path": "/usr/bin/nvidia-ctk", "args": ["nvidia-ctk", "hook"], "env": ["A=1"], "timeout": 5}]})");

  const Injection inj = plan_injection(before, after, "/b/rootfs/", {{"/dev/nvidia0", "/var/run/dev/nvidia0"}});
  REQUIRE(inj.nodes.size() == 1);
  CHECK(inj.nodes[0].path == "/dev/nvidia0");
  CHECK(inj.nodes[0].host_path == "/var/run/dev/nvidia0");
  CHECK(inj.nodes[0].type == 'c');
  CHECK(inj.nodes[0].major == 195);
  CHECK(inj.nodes[0].mode == 0660);
  CHECK(inj.nodes[0].gid == 44);
  REQUIRE(inj.mounts.size() == 2);
  CHECK(inj.mounts[0].source == "/host/libcuda.so.1");
  CHECK_FALSE(inj.mounts[0].in_rootfs);
  CHECK_FALSE(inj.mounts[0].recursive);
  CHECK(inj.mounts[0].attributes == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  // a pin: the container's own /etc, resolved in its root, recursively so
  // that what the engine mounted inside stays
  CHECK(inj.mounts[1].in_rootfs);
  CHECK(inj.mounts[1].source == "/etc");
  CHECK(inj.mounts[1].recursive);
  REQUIRE(inj.rules.size() == 1);
  CHECK(inj.rules[0].access == "rw");
  REQUIRE(inj.hooks.size() == 1);
  CHECK(inj.hooks[0].stage == "createContainer");
  CHECK(inj.hooks[0].env == std::vector<std::string>{"A=1"});
  CHECK(inj.hooks[0].timeout == 5);
  CHECK(inj.env == std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=0"});

  // What the engine applied already (its own CDI) is not done again.
  CHECK(plan_injection(after, after, "/b/rootfs").empty());
}

TEST_CASE("hook injection: what a hook cannot do faithfully is refused", "[hook]") {
  const OciSpec before = engine_spec();
  auto with_mount = [&](const char *json) {
    OciSpec after = before;
    after["mounts"].push_back(OciSpec::parse(json));
    return after;
  };
  CHECK_THROWS_WITH(plan_injection(before, with_mount(R"({"destination": "/x", "type": "tmpfs", "source": "tmpfs"})"), "/r"),
                    Catch::Contains("only bind mounts"));
  CHECK_THROWS_WITH(plan_injection(before, with_mount(R"({"destination": "/x", "source": "/h", "options": ["bind", "shared"]})"), "/r"),
                    Catch::Contains("\"shared\""));
  CHECK_THROWS_WITH(plan_injection(before, with_mount(R"({"destination": "x", "source": "/h", "options": ["bind"]})"), "/r"),
                    Catch::Contains("not absolute"));
  CHECK_THROWS_WITH(plan_injection(before, with_mount(R"({"destination": "/x", "source": "h", "options": ["bind"]})"), "/r"),
                    Catch::Contains("not absolute"));
  for (const char *stage : {"startContainer", "poststart", "poststop"}) {
    OciSpec after = before;
    after["hooks"][stage] = OciSpec::parse(R"([{"path": "/h"}])");
    CHECK_THROWS_WITH(plan_injection(before, after, "/r"), Catch::Contains(stage));
  }
  OciSpec deny = before;
  deny["linux"]["resources"]["devices"].push_back(OciSpec::parse(R"({"allow": false, "type": "c", "major": 1})"));
  CHECK_THROWS_WITH(plan_injection(before, deny, "/r"), Catch::Contains("deny"));
  OciSpec bad_node = before;
  bad_node["linux"]["devices"].push_back(OciSpec::parse(R"({"path": "/dev/x", "type": "s"})"));
  CHECK_THROWS_AS(plan_injection(before, bad_node, "/r"), Error);
  OciSpec bad_access = before;
  bad_access["linux"]["resources"]["devices"].push_back(OciSpec::parse(R"({"allow": true, "access": "rwx"})"));
  CHECK_THROWS_AS(plan_injection(before, bad_access, "/r"), Error);
}

TEST_CASE("hook injection: the spec's hooks run as the engine would run them", "[hook]") {
  gpuslice::testing::TempDir t;
  const std::string out = t / "seen";
  // its own env only, the state on stdin
  run_spec_hooks({HookToRun{"createContainer", "/bin/sh",
                            {"sh", "-c", "env > " + out + ".env; cat > " + out + ".state"}, {"ONLY=1"}, 5}},
                 R"({"id": "c1"})");
  CHECK(fs::read_file(out + ".state") == R"({"id": "c1"})");
  const std::string env = fs::read_file(out + ".env");
  CHECK(env.find("ONLY=1") != std::string::npos);
  CHECK(env.find("HOME=") == std::string::npos);
  CHECK_THROWS_WITH(run_spec_hooks({HookToRun{"prestart", "/bin/sh", {"sh", "-c", "echo broken >&2; exit 3"}, {}, 5}}, "{}"),
                    Catch::Contains("prestart hook \"/bin/sh\" failed with status 3: \"broken\""));
  CHECK_THROWS_WITH(run_spec_hooks({HookToRun{"prestart", t / "missing", {}, {}, 5}}, "{}"),
                    Catch::Contains("cannot execute it"));
  CHECK_THROWS_WITH(run_spec_hooks({HookToRun{"prestart", "/bin/sleep", {"sleep", "30"}, {}, 1}}, "{}"),
                    Catch::Contains("did not finish within 1 s"));
}

TEST_CASE("hook injection: a hook gone before its state is written does not kill us", "[hook]") {
  // A hook may exit without reading its stdin, before the state is written
  // (a loaded machine): EPIPE, not SIGPIPE (which once killed this test
  // binary, and would kill gpuslice-hook, now and then).
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  ::close(p[0]);
  errno = 0;
  CHECK(write_to_child(p[1], "{}") == -1);
  CHECK(errno == EPIPE);
  sigset_t pending;
  ::sigemptyset(&pending);
  ::sigpending(&pending);
  CHECK_FALSE(::sigismember(&pending, SIGPIPE));
  sigset_t mask;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  CHECK_FALSE(::sigismember(&mask, SIGPIPE)); // left as it was
  ::close(p[1]);
}
