// CDI's merge on a config.json's text (shim/fast_path/cdi_merge.h) writes the
// document cdi::apply_edits builds, or hands the create to the full program
// (-1), never anything else: fixed cases, then random specs and edits
// against apply_edits itself.
#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"

#include "../../shim/fast_path/cdi_merge.h"

#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace gpuslice;
using cdi::OciSpec;

namespace {

// The C edits of complete cdi edits, and the strings they point into.
struct CEdits {
  std::vector<std::string> strings;
  std::vector<gpuslice_fp_env_entry> env;
  std::vector<gpuslice_fp_device_node> devices;
  std::vector<gpuslice_fp_keyed_json> mounts, hooks;
  gpuslice_fp_edits edits{};

  explicit CEdits(const cdi::ContainerEdits &e) {
    strings.reserve(4 * (e.env.size() + e.device_nodes.size() + e.mounts.size() + e.hooks.size()) + 1);
    auto keep = [&](std::string s) { return strings.emplace_back(std::move(s)).c_str(); };
    for (const auto &entry : e.env)
      env.push_back({keep(std::string(entry.substr(0, entry.find('=')))), keep(OciSpec(entry).dump())});
    for (const auto &d : e.device_nodes)
      devices.push_back({keep(d.path), d.type[0], static_cast<unsigned long long>(d.major),
                         static_cast<unsigned long long>(d.minor), d.file_mode ? *d.file_mode : -1LL,
                         d.uid ? *d.uid : -1LL, d.gid ? *d.gid : -1LL,
                         keep(d.permissions.empty() ? "rwm" : d.permissions)});
    for (const auto &m : e.mounts)
      mounts.push_back({keep(m.container_path), keep(cdi::mount_object(m).dump())});
    for (const auto &h : e.hooks)
      hooks.push_back({keep(h.hook_name), keep(cdi::hook_object(h).dump())});
    edits = {static_cast<int>(env.size()), env.data(), static_cast<int>(devices.size()), devices.data(),
             static_cast<int>(mounts.size()), mounts.data(), static_cast<int>(hooks.size()), hooks.data()};
  }
};

cdi::HostNode no_host_node(const std::string &path) { throw Error("no host node " + path); }

// What apply_edits makes of text: the document, or nullopt when it refuses.
std::optional<OciSpec> full_program(const std::string &text, const cdi::ContainerEdits &e) {
  OciSpec oci = parse_json<OciSpec>(text);
  try {
    cdi::apply_edits(oci, e, no_host_node);
  } catch (const Error &) {
    return std::nullopt;
  }
  return oci;
}

// What the entry makes of it: the document, or nullopt for -1.
std::optional<OciSpec> entry(const std::string &text, const cdi::ContainerEdits &e, std::size_t work_size = 4096) {
  std::vector<gpuslice_fp_json_node> nodes(4096);
  const int count = gpuslice_fp_json_parse(text.data(), text.size(), nodes.data(), 4096, GPUSLICE_FP_JSON_MAX_DEPTH);
  REQUIRE(count > 0);
  CEdits c(e);
  std::string out(text.size() + 64 * 1024, '\0');
  std::vector<int> work(work_size + 1);
  const long n = gpuslice_fp_apply_edits(text.data(), nodes.data(), count, &c.edits, out.data(), out.size(),
                                         work.data(), work_size);
  if (n < 0)
    return std::nullopt;
  out.resize(static_cast<std::size_t>(n));
  return parse_json<OciSpec>(out);
}

cdi::DeviceNode node(const std::string &path, int64_t major, int64_t minor, const std::string &type = "c") {
  cdi::DeviceNode d;
  d.path = path;
  d.type = type;
  d.major = major;
  d.minor = minor;
  return d;
}

cdi::Mount mount(const std::string &to, const std::string &from, std::vector<std::string> options = {}) {
  cdi::Mount m;
  m.container_path = to;
  m.host_path = from;
  m.options = std::move(options);
  return m;
}

cdi::Hook hook(const std::string &stage, const std::string &path) {
  cdi::Hook h;
  h.hook_name = stage;
  h.path = path;
  h.args = {path, "arg"};
  return h;
}

cdi::ContainerEdits nvidia_like_edits() {
  cdi::ContainerEdits e;
  e.env = {"NVIDIA_VISIBLE_DEVICES=void", "PATH=/usr/bin", "LIST=a=b"};
  e.device_nodes = {node("/dev/nvidiactl", 195, 255), node("/dev/nvidia0", 195, 0), node("/dev/nvidia-uvm", 510, 0)};
  e.device_nodes[1].file_mode = 0666;
  e.device_nodes[2].uid = 0;
  e.device_nodes[2].permissions = "rw";
  e.mounts = {mount("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/host/libcuda.so.1", {"ro", "nosuid", "bind"}),
              mount("/dev/shm", "/host/shm"), mount("/usr/bin/nvidia-smi", "/host/nvidia-smi", {"ro", "bind"})};
  e.hooks = {hook("createContainer", "/usr/bin/nvidia-cdi-hook"), hook("createContainer", "/usr/bin/ldconfig"),
             hook("createRuntime", "/usr/bin/true")};
  e.hooks[0].timeout = 30;
  return e;
}

} // namespace

TEST_CASE("fast path merge: a runc config.json gets the very edits apply_edits makes", "[fast-path]") {
  // `runc spec` (runc 1.1): what the benches' containers run with.
  const std::string runc = fs::read_file(GPUSLICE_SOURCE_DIR "/tests/data/runc-spec/config.json");
  const cdi::ContainerEdits e = nvidia_like_edits();
  const auto expected = full_program(runc, e);
  REQUIRE(expected);
  const auto got = entry(runc, e);
  REQUIRE(got);
  CHECK(*got == *expected);
  // What the cases below rely on: runc's spec has no linux.devices and no hooks.
  CHECK(!parse_json<OciSpec>(runc)["linux"].contains("devices"));
  CHECK((*got)["linux"]["devices"].size() == 3);
  CHECK((*got)["hooks"]["createContainer"].size() == 2);
  CHECK((*got)["process"]["env"][0] == "PATH=/usr/bin"); // in place
}

TEST_CASE("fast path merge: replaces by key, keeps rules already granted, sorts mounts by depth", "[fast-path]") {
  const std::string text = R"({"process":{"user":{"uid":1000,"gid":0},"env":["A=1","NVIDIA_VISIBLE_DEVICES=all","B",7,"B=2"]},
    "mounts":[{"destination":"/usr/bin/nvidia-smi","source":"/old"},{"destination":"/proc","type":"proc"},
              {"destination":"/a/b/../../c/./d/"},{"destination":"rel/x"},{"destination":"../../up"},{"source":"none"},3],
    "linux":{"devices":[{"path":"/dev/nvidia0","type":"c","major":1,"minor":1},{"path":"/dev/other","type":"c","major":9,"minor":9}],
             "resources":{"devices":[{"allow":false,"access":"rwm"},{"allow":true,"type":"c","major":195,"minor":255,"access":"rwm"}]}},
    "hooks":{"createContainer":[],"prestart":[{"path":"/x"}]}})";
  const cdi::ContainerEdits e = nvidia_like_edits();
  const auto expected = full_program(text, e);
  REQUIRE(expected);
  const auto got = entry(text, e);
  REQUIRE(got);
  CHECK(*got == *expected);
  CHECK((*got)["linux"]["resources"]["devices"].size() == 4); // nvidiactl's rule was there
  CHECK((*got)["linux"]["devices"][1]["uid"] == 1000);        // the process's
  CHECK(!(*got)["linux"]["devices"][1].contains("gid"));        // gid 0: none
  // Its lists in the work area given: each list's elements and new items, and as many ints again at most.
  CHECK(!entry(text, e, 8));
  CHECK(entry(text, e, 64) == expected);
}

TEST_CASE("fast path merge: hands over what apply_edits would judge on what it does not compare", "[fast-path]") {
  const cdi::ContainerEdits e = nvidia_like_edits();
  for (const std::string &text : std::vector<std::string>{
           R"({"process":{"env":["A\u003d1"]},"mounts":[],"linux":{"resources":{"devices":[]}}})", // an escaped env entry
           R"({"process":{"env":[]},"mounts":[],"linux":{"devices":[{"path":"/dev/nvidia\u0030"}],"resources":{"devices":[]}}})",
           R"({"process":{"env":[]},"mounts":[],"linux":{"resources":{"devices":[{"allow":true,"type":"c","major":195.0,"minor":255,"access":"rwm"}]}}})",
           R"({"process":{"env":[]},"mounts":[],"linux":{"resources":{"devices":[]}},"hooks":{"createRuntime":[{"path":"/usr/bin/true"}]}})",
           R"({"process":{"env":[]},"mounts":[{"destination":"/d\u0065v/shm"}],"linux":{"resources":{"devices":[]}}})",
           R"({"process":{"env":[]},"mounts":[],"linux":{"resources":{}}})",    // apply_edits creates the rules' list
           R"({"process":{},"mounts":[],"linux":{"resources":{"devices":[]}}})", // ... the env
           R"({"process":{"env":null},"mounts":[],"linux":{"resources":{"devices":[]}}})",
           R"({"process":{"env":[]},"mounts":[],"linux":{"devices":[{"path":7}],"resources":{"devices":[]}}})", // refused
           R"([])"}) {
    INFO(text);
    CHECK(!entry(text, e));
  }
}

TEST_CASE("fast path merge: random specs and edits, against apply_edits", "[fast-path]") {
  std::mt19937 random(15);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  auto one_of = [&](const std::vector<std::string> &v) { return v[pick(v.size())]; };
  const std::vector<std::string> keys = {"A", "B", "PATH", "NVIDIA_VISIBLE_DEVICES", ""};
  const std::vector<std::string> paths = {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/fuse"};
  const std::vector<std::string> destinations = {"/", "/a", "/a/b", "/a/b/c", "a/b", "../x", "/a/../b", "/dev/shm",
                                                 "/x/", "", "/usr/lib/libcuda.so.1"};
  const std::vector<std::string> stages = {"prestart", "createRuntime", "createContainer", "poststop"};
  int written = 0, handed_over = 0, refused = 0;
  for (int round = 0; round < 2000; ++round) {
    OciSpec spec = OciSpec::object();
    spec["ociVersion"] = "1.0.2";
    OciSpec process = {{"env", OciSpec::array()}};
    for (std::size_t i = pick(5); i > 0; --i)
      process["env"].push_back(pick(6) ? OciSpec(one_of(keys) + "=" + std::to_string(pick(3))) : OciSpec(one_of(keys)));
    if (pick(2))
      process["user"] = {{"uid", pick(3) ? OciSpec(pick(2) ? 1000 : 0) : OciSpec(-5)}, {"gid", OciSpec(pick(3) * 500)}};
    spec["process"] = process;
    OciSpec mounts = OciSpec::array();
    for (std::size_t i = pick(6); i > 0; --i)
      mounts.push_back(pick(8) ? OciSpec{{"destination", one_of(destinations)}, {"source", "s" + std::to_string(i)}}
                               : OciSpec{{"source", "none"}});
    spec["mounts"] = mounts;
    OciSpec linux_ = OciSpec::object();
    if (pick(2)) {
      linux_["devices"] = OciSpec::array();
      for (std::size_t i = pick(4); i > 0; --i)
        linux_["devices"].push_back({{"path", one_of(paths)}, {"type", "c"}, {"major", 1}, {"minor", i}});
    }
    OciSpec rules = OciSpec::array();
    for (std::size_t i = pick(5); i > 0; --i) {
      OciSpec r = {{"allow", pick(3) != 0}, {"access", pick(4) ? "rwm" : "rw"}};
      if (pick(4)) {
        r["type"] = pick(5) ? "c" : "b";
        r["major"] = pick(2) ? 195 : 510;
        r["minor"] = pick(3);
      }
      rules.push_back(r);
    }
    linux_["resources"] = {{"devices", rules}};
    spec["linux"] = linux_;
    if (pick(2)) {
      spec["hooks"] = OciSpec::object();
      if (pick(2))
        spec["hooks"][one_of(stages)] = OciSpec::array();
      if (pick(4) == 0)
        spec["hooks"][one_of(stages)] = {{{"path", "/p"}}};
    }

    cdi::ContainerEdits e;
    for (std::size_t i = pick(4); i > 0; --i)
      e.env.push_back(one_of(keys) + "=" + std::to_string(pick(100)) + (pick(5) ? "" : "\"quoted\" \\ value"));
    for (std::size_t i = pick(4); i > 0; --i) {
      cdi::DeviceNode d = node(one_of(paths), pick(2) ? 195 : 510, static_cast<int64_t>(pick(3)), pick(6) ? "c" : "b");
      if (pick(3) == 0)
        d.type = "p", d.major = d.minor = 0;
      if (pick(2))
        d.file_mode = 0666;
      if (pick(3) == 0)
        d.uid = static_cast<uint32_t>(pick(2));
      if (pick(3) == 0)
        d.gid = 44;
      if (pick(3) == 0)
        d.permissions = "rw";
      e.device_nodes.push_back(d);
    }
    for (std::size_t i = pick(4); i > 0; --i)
      e.mounts.push_back(mount(one_of(destinations), "/host/" + std::to_string(i), pick(2) ? std::vector<std::string>{"ro"}
                                                                                           : std::vector<std::string>{}));
    for (std::size_t i = pick(3); i > 0; --i)
      e.hooks.push_back(hook(one_of(stages), "/hook" + std::to_string(pick(2))));

    const std::string text = spec.dump(pick(2) ? -1 : 1);
    INFO(text);
    const auto expected = full_program(text, e);
    const auto got = entry(text, e);
    if (!got) {
      (expected ? handed_over : refused)++;
      continue;
    }
    REQUIRE(expected);
    REQUIRE(*got == *expected);
    ++written;
  }
  // Most are the entry's to write; the rest (an existing stage to add hooks to) the full program's.
  CHECK(written > 1200);
  CHECK(written + handed_over + refused == 2000);
}
