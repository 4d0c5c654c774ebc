#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/cdi/version.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include <catch2/catch.hpp>

using namespace gpuslice;
using namespace gpuslice::cdi;

namespace {
std::string joined(const std::vector<std::string> &v) {
  std::string out;
  for (const auto &s : v)
    out += s + "\n";
  return out;
}
// A minimal valid device: one env edit.
const char *kDev = R"({"name": "0", "containerEdits": {"env": ["A=1"]}})";

std::string spec_json(const std::string &version, const std::string &extra_device_edits = "",
                      const std::string &top_extra = "") {
  return R"({"cdiVersion": ")" + version + R"(", "kind": "vendor.com/gpu", )" + top_extra +
         R"("devices": [{"name": "gpu0", "containerEdits": {"env": ["A=1"])" + extra_device_edits + "}}]}";
}
} // namespace

TEST_CASE("versions: released ones parse, with or without v", "[cdi][version]") {
  for (const char *v : {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0", "v0.6.0", "v1.1.0"}) {
    CAPTURE(v);
    CHECK(parse_version(v).has_value());
  }
  for (const char *v : {"", "0.2.0", "1.2.0", "1.0", "1.0.0.0", "v", "01.0.0x", "0.3.0 ", "vv1.0.0"}) {
    CAPTURE(v);
    CHECK_FALSE(parse_version(v).has_value());
  }
}

TEST_CASE("versions: a field newer than the spec's cdiVersion is rejected with the version it needs", "[cdi][version]") {
  struct Row {
    std::string spec;
    std::string needs; // empty: valid
  };
  const std::vector<Row> rows{
      {spec_json("0.3.0", R"(, "deviceNodes": [{"path": "/dev/x", "hostPath": "/dev/null"}])"), "hostPath: needs cdiVersion 0.5.0"},
      {spec_json("0.5.0", R"(, "deviceNodes": [{"path": "/dev/x", "hostPath": "/dev/null"}])"), ""},
      {spec_json("0.3.0", R"(, "mounts": [{"hostPath": "/a", "containerPath": "/b", "type": "bind"}])"), "type: needs cdiVersion 0.4.0"},
      {spec_json("0.4.0", R"(, "mounts": [{"hostPath": "/a", "containerPath": "/b", "type": "bind"}])"), ""},
      {spec_json("0.5.0", "", R"("annotations": {"a": "b"}, )"), "annotations: needs cdiVersion 0.6.0"},
      {spec_json("0.6.0", "", R"("annotations": {"a": "b"}, )"), ""},
      {spec_json("0.6.0", R"(, "intelRdt": {"closID": "c"})"), "intelRdt: needs cdiVersion 0.7.0"},
      {spec_json("0.7.0", R"(, "intelRdt": {"closID": "c", "enableCMT": true})"), ""},
      {spec_json("0.6.0", R"(, "additionalGids": [5])"), "additionalGids: needs cdiVersion 0.7.0"},
      {spec_json("0.7.0", R"(, "additionalGids": [5])"), ""},
      {spec_json("1.0.0", R"(, "netDevices": [{"hostInterfaceName": "eth0", "name": "n0"}])"), "netDevices: needs cdiVersion 1.1.0"},
      {spec_json("1.1.0", R"(, "netDevices": [{"hostInterfaceName": "eth0", "name": "n0"}])"), ""},
      {spec_json("1.0.0", R"(, "intelRdt": {"schemata": ["L3:0=f"]})"), "schemata: needs cdiVersion 1.1.0"},
      {spec_json("1.0.0", R"(, "intelRdt": {"enableMonitoring": true})"), "enableMonitoring: needs cdiVersion 1.1.0"},
      {spec_json("1.1.0", R"(, "intelRdt": {"enableCMT": true})"), "removed in cdiVersion 1.1.0"},
      {R"({"cdiVersion": "0.4.0", "kind": "v.com/gpu", "devices": [{"name": "0", "containerEdits": {"env": ["A=1"]}}]})", "needs cdiVersion 0.5.0"},
      {R"({"cdiVersion": "0.5.0", "kind": "v.com/gpu", "devices": [{"name": "0", "containerEdits": {"env": ["A=1"]}}]})", ""},
      {R"({"cdiVersion": "0.5.0", "kind": "v.com/g.pu", "devices": [)" + std::string(kDev) + "]}", "needs cdiVersion 0.6.0"},
      {R"({"cdiVersion": "0.6.0", "kind": "v.com/g.pu", "devices": [)" + std::string(kDev) + "]}", ""},
      {R"({"cdiVersion": "1.0.0", "kind": "v.com/gpu", "devices": []})", "at least one device"},
      {R"({"cdiVersion": "0.8.0", "kind": "v.com/gpu", "devices": []})", ""},
      {R"({"cdiVersion": "2.0.0", "kind": "v.com/gpu", "devices": [)" + std::string(kDev) + "]}", "unsupported version"},
  };
  for (const auto &r : rows) {
    CAPTURE(r.spec);
    const auto problems = validate_spec(parse_spec(r.spec));
    if (r.needs.empty())
      CHECK(problems.empty());
    else
      CHECK_THAT(joined(problems), Catch::Contains(r.needs));
  }
}

TEST_CASE("minimum_version is the highest requirement", "[cdi][version]") {
  CHECK(minimum_version(parse_spec(spec_json("1.1.0"))) == Version{0, 3, 0});
  CHECK(minimum_version(parse_spec(spec_json("1.1.0", R"(, "additionalGids": [1], "mounts": [{"hostPath": "/a", "containerPath": "/b", "type": "bind"}])"))) ==
        Version{0, 7, 0});
}

TEST_CASE("parsing is strict: unknown fields and wrong types name the field", "[cdi][parse]") {
  struct Row {
    std::string text, message;
  };
  const std::vector<Row> rows{
      {R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [], "extra": 1})", "unknown field \"extra\""},
      {R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [{"name": "0", "containerEdits": {"env": [], "deviceNode": []}}]})",
       "unknown field \"devices[0].containerEdits.deviceNode\""},
      {R"({"cdiVersion": "0.7.0", "kind": "a/b", "devices": [{"name": "0", "containerEdits": {"additionalGIDs": [1]}}]})",
       "unknown field \"devices[0].containerEdits.additionalGIDs\""},
      {R"({"cdiVersion": "0.6.0", "kind": "a/b", "containerEdits": [], "devices": []})", "\"containerEdits\" must be an object"},
      {R"({"cdiVersion": 0.6, "kind": "a/b", "devices": []})", "\"cdiVersion\" must be a string"},
      {R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/d", "major": "x"}]}}]})",
       "\"devices[0].containerEdits.deviceNodes[0].major\" must be an integer"},
      {R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/d", "uid": -1}]}}]})",
       "uid\" must be an integer in range"},
      {R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [{"name": "0", "containerEdits": {"env": "A=1"}}]})", "must be a list of strings"},
      {R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [}})", "invalid JSON"},
      {"cdiVersion: 0.6.0\nkind: a/b\nkind: c/d\ndevices: []\n", "duplicate field \"kind\""},
      {"cdiVersion: 0.6.0\nkind: a/b\ndevices:\n  - name: 0\n    containerEdits:\n      bogus: 1\n", "unknown field \"devices[0].containerEdits.bogus\""},
      {"cdiVersion: [\n", "invalid YAML at line"},
      {"- a\n- b\n", "mapping"},
  };
  for (const auto &r : rows) {
    CAPTURE(r.text);
    CHECK_THROWS_WITH(parse_spec(r.text), Catch::Contains(r.message));
  }
}

TEST_CASE("YAML and JSON of the same spec decode identically", "[cdi][parse]") {
  const std::string yaml = R"(cdiVersion: "0.7.0"
kind: vendor.com/gpu
devices:
  - name: 0
    containerEdits:
      deviceNodes:
        - path: /dev/gpu0
          type: c
          major: 195
          minor: 0x1
          fileMode: 0666
          uid: 1000
      additionalGids: [44, 0o10]
      intelRdt: {closID: c, enableCMT: yes}
      hooks:
        - hookName: createContainer
          path: /bin/hook
          timeout: 5
)";
  const std::string json = R"({"cdiVersion": "0.7.0", "kind": "vendor.com/gpu", "devices": [{"name": "0", "containerEdits": {
    "deviceNodes": [{"path": "/dev/gpu0", "type": "c", "major": 195, "minor": 1, "fileMode": 438, "uid": 1000}],
    "additionalGids": [44, 8], "intelRdt": {"closID": "c", "enableCMT": true},
    "hooks": [{"hookName": "createContainer", "path": "/bin/hook", "timeout": 5}]}}]})";
  for (const auto &text : {yaml, json}) {
    const Spec s = parse_spec(text);
    REQUIRE(s.devices.size() == 1);
    const auto &d = s.devices[0];
    CHECK(d.name == "0");
    REQUIRE(d.edits.device_nodes.size() == 1);
    CHECK(d.edits.device_nodes[0].major == 195);
    CHECK(d.edits.device_nodes[0].minor == 1);
    CHECK(d.edits.device_nodes[0].file_mode == 0666u);
    CHECK(d.edits.device_nodes[0].uid == 1000u);
    CHECK_FALSE(d.edits.device_nodes[0].gid.has_value());
    CHECK(d.edits.additional_gids == std::vector<uint32_t>{44, 8});
    REQUIRE(d.edits.intel_rdt);
    CHECK(d.edits.intel_rdt->enable_cmt);
    REQUIRE(d.edits.hooks.size() == 1);
    CHECK(d.edits.hooks[0].timeout == 5);
    CHECK(validate_spec(s).empty());
  }
  // A JSON spec is accepted whatever the file is called: content decides.
  CHECK(parse_spec("  \n{\"cdiVersion\": \"0.3.0\", \"kind\": \"a/b\"}").kind == "a/b");
  // 64-bit major numbers survive.
  CHECK(parse_spec(R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [{"name": "x", "containerEdits": {"deviceNodes": [{"path": "/d", "major": 4294967296}]}}]})")
            .devices[0]
            .edits.device_nodes[0]
            .major == 4294967296LL);
}

TEST_CASE("validation reports every problem with its field", "[cdi][validate]") {
  const std::string text = R"({"cdiVersion": "0.7.0", "kind": "9bad/gpu", "devices": [
    {"name": "ok", "containerEdits": {
      "env": ["=x", "NOEQUALS", "GOOD="],
      "deviceNodes": [{"path": "dev/rel", "type": "x", "permissions": "rwx"}, {"path": "/dev/a", "hostPath": "rel"}],
      "hooks": [{"hookName": "preStart", "path": "hook"}, {"hookName": "poststop", "path": "/bin/h", "env": ["X"], "timeout": 0}],
      "mounts": [{"hostPath": "", "containerPath": "/x"}, {"hostPath": "rel", "containerPath": "rel"},
                 {"hostPath": "tmpfs", "containerPath": "/tmp", "type": "tmpfs"}],
      "intelRdt": {"closID": "../x"}}},
    {"name": "ok", "containerEdits": {"env": ["A=1"]}},
    {"name": "-bad", "containerEdits": {"env": ["A=1"]}},
    {"name": "empty"}]})";
  const std::string all = joined(validate_spec(parse_spec(text)));
  for (const char *expected : {
           "kind: kind \"9bad/gpu\": vendor \"9bad\" must start with a letter",
           "devices[0].containerEdits.env[0]: env entry \"=x\" has an empty key",
           "devices[0].containerEdits.env[1]: env entry \"NOEQUALS\" is not KEY=VALUE",
           "deviceNodes[0].path: device path \"dev/rel\" must be absolute",
           "deviceNodes[0].type: invalid device type \"x\"",
           "deviceNodes[0].permissions: invalid permissions \"rwx\"",
           "deviceNodes[1].hostPath: host path \"rel\" must be absolute",
           "hooks[0].hookName: invalid hook name \"preStart\"",
           "hooks[0].path: hook path \"hook\" must be absolute",
           "hooks[1].env[0]: env entry \"X\" is not KEY=VALUE",
           "hooks[1].timeout: timeout must be positive",
           "mounts[0].hostPath: empty host path",
           "mounts[1].hostPath: host path \"rel\" must be absolute",
           "mounts[1].containerPath: container path \"rel\" must be absolute",
           "intelRdt.closID: invalid closID",
           "devices[1].name: duplicate device name \"ok\"",
           "devices[2].name: device name \"-bad\" must start with a letter or digit",
           "devices[3].containerEdits: a device must have at least one edit",
       }) {
    CHECK_THAT(all, Catch::Contains(expected));
  }
  CHECK_THAT(all, !Catch::Contains("GOOD"));
  CHECK_THAT(all, !Catch::Contains("mounts[2]")); // tmpfs takes a free-form source
}

TEST_CASE("net devices must be unique and valid interface names", "[cdi][validate]") {
  const std::string text = R"({"cdiVersion": "1.1.0", "kind": "a/b", "devices": [{"name": "n", "containerEdits": {"netDevices": [
    {"hostInterfaceName": "eth0", "name": "n0"}, {"hostInterfaceName": "eth0", "name": "n1"},
    {"hostInterfaceName": "eth1", "name": "n0"}, {"hostInterfaceName": "", "name": "n2"},
    {"hostInterfaceName": "eth3", "name": "a-very-long-interface"}]}}]})";
  const std::string all = joined(validate_spec(parse_spec(text)));
  CHECK_THAT(all, Catch::Contains("netDevices[1].hostInterfaceName: duplicate host interface \"eth0\""));
  CHECK_THAT(all, Catch::Contains("netDevices[2].name: duplicate interface name \"n0\""));
  CHECK_THAT(all, Catch::Contains("netDevices[3].hostInterfaceName: empty interface name"));
  CHECK_THAT(all, Catch::Contains("netDevices[4].name: interface name \"a-very-long-interface\" is longer than 15"));
}

TEST_CASE("a one-character vendor or class is valid and does not crash", "[cdi][validate]") {
  CHECK(validate_spec(parse_spec(R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [{"name": "c", "containerEdits": {"env": ["A=1"]}}]})")).empty());
}

TEST_CASE("deeply nested input is refused before it reaches the YAML parser", "[cdi][parse]") {
  CHECK_THROWS_WITH(parse_spec("a: " + std::string(10000, '[')), Catch::Contains("nested too deeply"));
  CHECK_THROWS_WITH(parse_spec("{\"a\": " + std::string(10000, '{')), Catch::Contains("nested too deeply"));
  std::string block;
  for (int i = 0; i < 300; ++i)
    block += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  CHECK_THROWS_WITH(parse_spec(block), Catch::Contains("nested too deeply"));
  // Quotes and comments do not hide brackets from the check.
  CHECK_THROWS_WITH(parse_spec("a: don't " + std::string(10000, '[')), Catch::Contains("nested too deeply"));
  CHECK_THROWS_WITH(parse_spec("# it's\na: " + std::string(10000, '[')), Catch::Contains("nested too deeply"));
  // Brackets inside quoted strings are not nesting.
  CHECK(parse_spec("cdiVersion: '0.6.0'\nkind: \"a/b\"\ndevices: [{name: x, containerEdits: {env: [\"A=" + std::string(100, '[') +
                   "\"]}}]\n")
            .devices.size() == 1);
}

TEST_CASE("YAML strings must be valid UTF-8", "[cdi][parse]") {
  CHECK_THROWS_WITH(parse_spec("cdiVersion: 0.6.0\nkind: a/b\ndevices:\n  - name: x\n    containerEdits:\n      env: [\"A=\xff\"]\n"),
                    Catch::Contains("UTF-8"));
  CHECK_THROWS_WITH(parse_spec("cdiVersion: 0.6.0\n\xc0\xaf: 1\n"), Catch::Contains("UTF-8"));
  CHECK(parse_spec("cdiVersion: 0.6.0\nkind: a/b\ndevices:\n  - name: x\n    containerEdits:\n      env: [\"A=\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]\n")
            .devices[0]
            .edits.env[0] == "A=\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST_CASE("a JSON number too large for any integer is a parse error, not a crash", "[cdi][parse]") {
  CHECK_THROWS_WITH(parse_spec(R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [{"name": "x", "containerEdits": {"additionalGids": [4477000756e456014]}}]})"),
                    Catch::Contains("invalid JSON"));
}

TEST_CASE("compatible with the reference library v1.1.0: closID \"/\", any annotation key, no duplicate JSON keys",
          "[cdi][validate]") {
  const auto rdt = parse_spec(R"({"cdiVersion": "0.7.0", "kind": "v.com/gpu", "devices": [
      {"name": "0", "containerEdits": {"intelRdt": {"closID": "/"}}}]})");
  CHECK(validate_spec(rdt).empty()); // runtime-spec 1.3: the default CLOS

  const auto keys = parse_spec(R"({"cdiVersion": "0.6.0", "kind": "v.com/gpu",
      "annotations": {"Example.COM/Model": "x", "not a key!": "y"},
      "devices": [{"name": "0", "annotations": {"_odd": "z"}, "containerEdits": {"env": ["A=1"]}}]})");
  CHECK(validate_spec(keys).empty()); // used, like the reference and every engine does
  const std::string warnings = joined(annotation_warnings(keys));
  CHECK_THAT(warnings, Catch::Contains("\"not a key!\"") && Catch::Contains("devices[0].annotations"));
  CHECK_THAT(warnings, !Catch::Contains("Example.COM")); // upper case is fine, as in the reference

  // JSON now refuses a duplicate key, as YAML always did.
  CHECK_THROWS_WITH(parse_spec(R"({"cdiVersion": "0.6.0", "kind": "a/b", "kind": "c/d", "devices": []})"),
                    Catch::Contains("the key \"kind\" twice in one object"));
  CHECK_THROWS_WITH(parse_spec(R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [
      {"name": "0", "containerEdits": {"env": ["A=1"], "env": ["B=2"]}}]})"), Catch::Contains("the key \"env\" twice in one object"));
  // the same key in two objects is fine
  CHECK_NOTHROW(parse_spec(R"({"cdiVersion": "0.6.0", "kind": "a/b", "devices": [
      {"name": "0", "containerEdits": {"env": ["A=1"]}}, {"name": "1", "containerEdits": {"env": ["A=1"]}}]})"));
}

TEST_CASE("plain_spec_kind: a top-level kind the text states plainly", "[cdi][parse]") {
  using K = std::optional<std::string>;
  // JSON: only the top-level member counts; nested values are skipped whole.
  CHECK(plain_spec_kind(spec_json("0.6.0")) == K("vendor.com/gpu"));
  CHECK(plain_spec_kind(R"( {"devices": [{"kind": "x.com/y", "s": "}]\"{"}], "kind": "a.b/c_d-1"} )") ==
        K("a.b/c_d-1"));
  CHECK(plain_spec_kind(R"({"cdiVersion": "0.6.0", "devices": [{"kind": "x.com/y"}]})") == std::nullopt);
  // JSON the reader is unsure of: unknown, never a guess.
  for (const char *text : {
           R"({"ki\u006ed": "a.com/b", "kind": "x.com/y"})", // an escaped key may be "kind"
           R"({"kind": "a.com/b", "kind": "x.com/y"})",       // twice
           R"({"kind": "a.com\/b"})",                          // an escape in the value
           R"({"kind": 7})",
           R"({"kind": "a.com/b"} trailing)",
           R"({"kind": "a.com/b")",
           R"({"kind": "a.com/b" "x": 1})",
           R"({"kind": "a b/c"})",
           "[]",
       }) {
    CAPTURE(text);
    CHECK(plain_spec_kind(text) == std::nullopt);
  }

  // YAML: a plain `kind: value` key at column 0, as generators write it.
  CHECK(plain_spec_kind("# c\n---\ncdiVersion: 0.6.0\nkind: nvidia.com/gpu # the driver's\ndevices: []\n") ==
        K("nvidia.com/gpu"));
  CHECK(plain_spec_kind("kind: \"a.com/b\"\r\ndevices:\r\n  - kind: x.com/y\r\n") == K("a.com/b"));
  CHECK(plain_spec_kind("kind : 'a.com/b'\n") == K("a.com/b"));
  // Sequences at their key's indentation, as nvidia-ctk writes them.
  CHECK(plain_spec_kind("---\ncdiVersion: 0.5.0\ncontainerEdits:\n  env:\n  - A=1\ndevices:\n- containerEdits:\n"
                        "    deviceNodes:\n    - path: /dev/nvidia0\n  name: \"0\"\n-\n  name: \"1\"\nkind: nvidia.com/gpu\n") ==
        K("nvidia.com/gpu"));
  CHECK(plain_spec_kind("devices:\n  - name: x\n    kind: x.com/y\n") == std::nullopt);
  for (const char *text : {
           "\"kind\": a.com/b\nkind: x.com/y\n",     // a quoted key at column 0
           "? kind\n: a.com/b\n",                    // a complex key
           "&a kind: a.com/b\n",                     // an anchor
           "!!str kind: a.com/b\n",                  // a tag
           "kind: a.com/b\nkind: x.com/y\n",         // twice
           "kind: a.com/\n  b\n",                    // a value continued on the next line
           "kind:\n  a.com/b\n",                     // a value on the next line
           "kind:a.com/b\n",                         // not a key: no space after the colon
           "kind: a.com/b#c\n",                      // '#' inside the value
           "kind: a.com/b\n---\nkind: x.com/y\n",    // a second document
           "x: \"a\nkind: a.com/b\n\"\n",            // inside a quoted scalar
           "- kind: a.com/b\n",                      // a sequence
           "  kind: a.com/b\n",                      // an indented mapping
           "%YAML 1.2\n---\nkind: a.com/b\n",        // a directive
           "\xef\xbb\xbfkind: a.com/b\n",            // a byte-order mark
       }) {
    CAPTURE(text);
    CHECK(plain_spec_kind(text) == std::nullopt);
  }
}

TEST_CASE("plain_spec_kind never contradicts the parse of a valid spec", "[cdi][parse]") {
  // The seed specs of the fuzzers and the examples: the fuzz target checks
  // the same on every input it makes.
  std::vector<std::string> texts = {
      spec_json("0.6.0"), spec_json("0.8.0", "", R"("annotations": {"kind": "x"}, )"),
      // As nvidia-ctk writes it: sequences at their key's indentation.
      "---\ncdiVersion: 0.5.0\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n"
      "  mounts:\n  - containerPath: /usr/bin/nvidia-smi\n    hostPath: /usr/bin/nvidia-smi\n    options:\n    - ro\n    - bind\n"
      "devices:\n- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n  name: \"0\"\n- containerEdits:\n"
      "    deviceNodes:\n    - path: /dev/nvidia1\n  name: all\nkind: nvidia.com/gpu\n"};
  for (const char *path : {"tests/fuzz/corpus/spec/gpu.yaml", "tests/fuzz/corpus/spec/full.json",
                           "tests/fuzz/corpus/spec/nic.json", "tests/fuzz/corpus/spec/v110.yaml",
                           "tests/fuzz/corpus/spec/nvidia-ctk.yaml",
                           "examples/cdi/example-gpu.yaml", "examples/cdi/example-nic.json"})
    texts.push_back(fs::read_file(std::string(GPUSLICE_SOURCE_DIR) + "/" + path, kMaxSpecSize));
  for (const auto &text : texts) {
    CAPTURE(text);
    const auto kind = plain_spec_kind(text);
    const Spec spec = parse_spec(text);
    REQUIRE(validate_spec(spec).empty());
    CHECK(kind == spec.kind);
  }
}
