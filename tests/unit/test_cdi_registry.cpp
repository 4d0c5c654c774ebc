#include "gpuslice/cdi/registry.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

using namespace gpuslice;
using namespace gpuslice::cdi;
using gpuslice::testing::TempDir;

namespace {
std::string spec(const std::string &kind, const std::vector<std::string> &names, const std::string &env = "A=1") {
  std::string devs;
  for (const auto &n : names)
    devs += (devs.empty() ? "" : ",") + std::string(R"({"name": ")") + n + R"(", "containerEdits": {"env": [")" + env + "\"]}}";
  return R"({"cdiVersion": "0.6.0", "kind": ")" + kind + R"(", "devices": [)" + devs + "]}";
}
std::string yaml_spec(const std::string &kind, const std::string &name) {
  return "cdiVersion: 0.6.0\nkind: " + kind + "\ndevices:\n  - name: \"" + name + "\"\n    containerEdits:\n      env: [B=2]\n";
}
std::string errors_text(const Registry &r) {
  std::string out;
  for (const auto &e : r.errors())
    out += e.path + ": " + e.message + "\n";
  return out;
}
} // namespace

TEST_CASE("registry: later dirs win, missing dirs are fine", "[cdi][registry]") {
  TempDir t;
  t.write("etc/a.json", spec("v.com/gpu", {"0", "1"}, "FROM=etc"));
  t.write("run/b.yaml", yaml_spec("v.com/gpu", "1"));
  Registry r({t / "etc", t / "missing", t / "run"});
  r.reload();
  CHECK(r.errors().empty());
  CHECK(r.device_names() == std::vector<std::string>{"v.com/gpu=0", "v.com/gpu=1"});
  REQUIRE(r.find("v.com/gpu=1"));
  CHECK(r.find("v.com/gpu=1")->spec->path == t / "run/b.yaml");
  CHECK(r.find("v.com/gpu=0")->spec->path == t / "etc/a.json");
  CHECK(r.find("v.com/gpu=2") == nullptr);
}

TEST_CASE("registry: same-priority conflicts remove the device and name both files", "[cdi][registry]") {
  TempDir t;
  t.write("d/a.json", spec("v.com/gpu", {"0", "1"}));
  t.write("d/b.json", spec("v.com/gpu", {"1", "2"}));
  Registry r({t / "d"});
  r.reload();
  CHECK(r.device_names() == std::vector<std::string>{"v.com/gpu=0", "v.com/gpu=2"});
  const std::string errs = errors_text(r);
  CHECK(r.errors().size() == 2);
  CHECK_THAT(errs, Catch::Contains(t / "d/a.json" + ": conflicting device \"v.com/gpu=1\""));
  CHECK_THAT(errs, Catch::Contains(t / "d/b.json" + ": conflicting device \"v.com/gpu=1\""));
  CHECK_THAT(errs, Catch::Contains("\"" + t / "d/a.json" + "\", \"" + t / "d/b.json" + "\""));

  // A higher-priority dir resolves the conflict.
  t.write("e/c.json", spec("v.com/gpu", {"1"}, "WINNER=1"));
  Registry r2({t / "d", t / "e"});
  r2.reload();
  REQUIRE(r2.find("v.com/gpu=1"));
  CHECK(r2.find("v.com/gpu=1")->spec->path == t / "e/c.json");
}

TEST_CASE("registry: a bad spec is reported with its path and hides nothing else", "[cdi][registry]") {
  TempDir t;
  t.write("d/1-bad.json", R"({"cdiVersion": "0.6.0", "kind": "v.com/gpu", "devices": [{"name": "x", "containerEdits": {"nope": 1}}]})");
  t.write("d/2-invalid.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n  - name: -x\n    containerEdits: {env: [A=1]}\n");
  t.write("d/3-dup.json", spec("v.com/gpu", {"d", "d"}));
  t.write("d/4-good.json", spec("v.com/gpu", {"ok"}));
  t.write("d/5-notjson.json", "{ not json");
  Registry r({t / "d"});
  r.reload();
  CHECK(r.device_names() == std::vector<std::string>{"v.com/gpu=ok"});
  const std::string errs = errors_text(r);
  CHECK_THAT(errs, Catch::Contains(t / "d/1-bad.json" + ": unknown field \"devices[0].containerEdits.nope\""));
  CHECK_THAT(errs, Catch::Contains(t / "d/2-invalid.yaml" + ": devices[0].name"));
  CHECK_THAT(errs, Catch::Contains(t / "d/3-dup.json" + ": devices[1].name: duplicate device name \"d\""));
  CHECK_THAT(errs, Catch::Contains(t / "d/5-notjson.json" + ": invalid JSON"));
}

TEST_CASE("registry: only .json and .yaml, not recursive, name order", "[cdi][registry]") {
  TempDir t;
  t.write("d/a.yml", yaml_spec("v.com/gpu", "yml"));
  t.write("d/a.json.bak", spec("v.com/gpu", {"bak"}));
  t.write("d/sub/c.json", spec("v.com/gpu", {"sub"}));
  t.write("d/z.json", spec("v.com/gpu", {"z"}));
  t.write("d/b.yaml", yaml_spec("v.com/gpu", "b"));
  Registry r({t / "d"});
  r.reload();
  CHECK(r.device_names() == std::vector<std::string>{"v.com/gpu=b", "v.com/gpu=z"});
  REQUIRE(r.specs().size() == 2);
  CHECK(r.specs()[0]->path == t / "d/b.yaml");
  CHECK(r.specs()[1]->path == t / "d/z.json");
}

TEST_CASE("registry: without change detection, refresh loads once", "[cdi][registry]") {
  TempDir t;
  t.write("d/a.json", spec("v.com/gpu", {"0"}));
  Registry r({t / "d"}, ChangeDetection::none);
  CHECK(r.refresh());
  CHECK_FALSE(r.uses_inotify());
  t.write("d/a.json", spec("v.com/gpu", {"0", "1"}));
  CHECK_FALSE(r.refresh());
  CHECK(r.device_names().size() == 1);
  r.reload(); // an explicit reload still reads
  CHECK(r.device_names().size() == 2);
}

TEST_CASE("registry: refresh reloads only on change", "[cdi][registry]") {
  for (auto mode : {ChangeDetection::automatic, ChangeDetection::stamps}) {
    CAPTURE(mode == ChangeDetection::stamps);
    TempDir t;
    t.write("d/a.json", spec("v.com/gpu", {"0"}));
    Registry r({t / "d", t / "later"}, mode);
    CHECK(r.refresh()); // first load
    CHECK(r.uses_inotify() == (mode == ChangeDetection::automatic));
    CHECK_FALSE(r.refresh());
    CHECK_FALSE(r.refresh());

    // Rewrite in place with a different size: the content changed.
    t.write("d/a.json", spec("v.com/gpu", {"0", "1"}));
    CHECK(r.refresh());
    CHECK(r.device_names().size() == 2);
    CHECK_FALSE(r.refresh());

    // A dir that did not exist appears.
    t.write("later/b.json", spec("v.com/gpu", {"9"}));
    CHECK(r.refresh());
    CHECK(r.find("v.com/gpu=9"));
    CHECK_FALSE(r.refresh());

    // Removal.
    ::unlink((t / "d/a.json").c_str());
    CHECK(r.refresh());
    CHECK(r.device_names() == std::vector<std::string>{"v.com/gpu=9"});
  }
}

TEST_CASE("registry: a load for some kinds skips the specs of others, unparsed", "[cdi][registry]") {
  TempDir t;
  t.write("etc/a.json", spec("v.com/gpu", {"0", "1"}, "FROM=etc"));
  t.write("etc/b.json", spec("v.com/gpu", {"1"}));          // a conflict within the kind asked for
  t.write("etc/big.yaml", yaml_spec("other.com/nic", "0")); // another kind
  t.write("etc/broken.json", R"({"kind": "other.com/nic", "devices": [}})"); // another kind, broken
  t.write("etc/unsure.json", R"({"ki\u006ed": "v.com/gpu", "cdiVersion": "0.6.0", "devices": [{"name": "9", "containerEdits": {"env": ["A=1"]}}]})");
  t.write("run/c.yaml", yaml_spec("v.com/gpu", "2"));

  Registry full({t / "etc", t / "run"}, ChangeDetection::none);
  full.reload();
  Registry some({t / "etc", t / "run"}, ChangeDetection::none);
  some.reload(std::set<std::string>{"v.com/gpu"});

  // What a full load resolves for the kind, the same; the other kind unread.
  CHECK(some.device_names() == std::vector<std::string>{"v.com/gpu=0", "v.com/gpu=2", "v.com/gpu=9"});
  std::vector<std::string> of_kind;
  for (const auto &n : full.device_names())
    if (n.rfind("v.com/gpu=", 0) == 0)
      of_kind.push_back(n);
  CHECK(some.device_names() == of_kind);
  CHECK(some.find("v.com/gpu=0")->spec->path == full.find("v.com/gpu=0")->spec->path);
  CHECK(full.find("other.com/nic=0"));
  CHECK_FALSE(some.find("other.com/nic=0"));
  // The conflict is reported as before; the broken spec of the other kind
  // only by the full load.
  const std::string errs = errors_text(some);
  CHECK_THAT(errs, Catch::Contains("conflicting device \"v.com/gpu=1\""));
  CHECK_THAT(errs, !Catch::Contains("broken.json"));
  CHECK_THAT(errors_text(full), Catch::Contains("broken.json"));
  // The spec whose kind the reader could not be sure of was parsed.
  REQUIRE(some.find("v.com/gpu=9"));
  CHECK(some.find("v.com/gpu=9")->spec->path == t / "etc/unsure.json");
}
