// `gpuslice configure containerd` on sample configs of each containerd config
// version (tests/data/containerd): what it writes, that it keeps the user's
// lines and imports, that it is idempotent, that --remove gives the original
// bytes back, and that planning (--dry-run) writes nothing.
#include "containerd_config.hpp"
#include "toml_text_edit.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include <catch2/catch.hpp>
#include <toml++/toml.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>

using namespace gpuslice;
namespace ctd = gpuslice::containerd;
namespace text = gpuslice::containerd::text;

namespace {

const std::string kData = std::string(GPUSLICE_SOURCE_DIR) + "/tests/data/containerd/";

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gpuslice-ctd-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string &name) const { return path + "/" + name; }
};

// Every regular file under dir, path -> content: to prove nothing changed.
std::map<std::string, std::string> snapshot(const std::string &dir) {
  std::map<std::string, std::string> files;
  for (auto &entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file())
      files[entry.path().string()] = fs::read_file(entry.path().string());
  return files;
}

bool exists(const std::string &path) { return ::access(path.c_str(), F_OK) == 0; }

ctd::ConfigureOptions options_for(const TempDir &dir) {
  ctd::ConfigureOptions o;
  o.config_path = dir / "config.toml";
  return o;
}

std::string configure(const ctd::ConfigureOptions &o) {
  ctd::Plan plan = ctd::plan_configure(o);
  ctd::apply(plan);
  return ctd::describe(plan, false);
}

void unconfigure(const ctd::ConfigureOptions &o) { ctd::apply(ctd::plan_remove(o)); }

const toml::table &handler_in(const toml::table &file, const std::string &plugin_key,
                              const std::string &name = "gpuslice") {
  const toml::table *h = file["plugins"][plugin_key]["containerd"]["runtimes"][name].as_table();
  REQUIRE(h);
  return *h;
}

void check_handler(const toml::table &handler, bool systemd_cgroup) {
  CHECK(handler["runtime_type"].value<std::string>() == "io.containerd.runc.v2");
  CHECK(handler["options"]["BinaryName"].value<std::string>() == gpuslice::installed::kRuntimePath);
  CHECK(handler["options"]["SystemdCgroup"].value<bool>() ==
        (systemd_cgroup ? std::optional<bool>(true) : std::nullopt));
  const toml::array *a = handler["container_annotations"].as_array();
  REQUIRE(a);
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].value<std::string>() == "cdi.k8s.io/*");
  CHECK((*a)[1].value<std::string>() == "gpuslice.io/*");
  // Pod annotations are written by the pod's author: never a device request.
  CHECK_FALSE(handler.contains("pod_annotations"));
}

// What gpuslice before 0.2 wrote: the handler also passed pod annotations.
std::string with_old_pod_annotations(const std::string &text) {
  const std::string anchor = "container_annotations = [";
  const auto pos = text.find(anchor);
  REQUIRE(pos != std::string::npos);
  const auto line_start = text.rfind('\n', pos) + 1;
  const std::string indent = text.substr(line_start, pos - line_start);
  return text.substr(0, line_start) + indent + "pod_annotations = [ 'cdi.k8s.io/*', 'gpuslice.io/*' ]\n" +
         text.substr(line_start);
}

// Configure, check idempotence, remove, and check the original bytes are back.
void round_trip(const ctd::ConfigureOptions &o, const std::string &original) {
  ctd::Plan again = ctd::plan_configure(o);
  CHECK(again.changes.empty());
  unconfigure(o);
  CHECK(fs::read_file(o.config_path) == original);
  CHECK_FALSE(exists(ctd::default_drop_in_path(o.config_path)));
  CHECK_FALSE(exists(o.config_path + ".gpuslice.bak"));
  CHECK(ctd::plan_remove(o).changes.empty());
}

} // namespace

TEST_CASE("configure run again removes the pod_annotations an older version wrote", "[containerd]") {
  for (const std::string &sample : {std::string("v2-systemd.toml"), std::string("v1.toml")}) {
    CAPTURE(sample);
    TempDir dir;
    const std::string original = fs::read_file(kData + sample);
    fs::write_file_atomic(dir / "config.toml", original);
    auto o = options_for(dir);
    configure(o);
    const bool v1 = sample == "v1.toml";
    const std::string written = v1 ? o.config_path : ctd::default_drop_in_path(o.config_path);
    fs::write_file_atomic(written, with_old_pod_annotations(fs::read_file(written)));
    REQUIRE(text::parse(fs::read_file(written), written)["plugins"][v1 ? "cri" : "io.containerd.grpc.v1.cri"]
                ["containerd"]["runtimes"]["gpuslice"]["pod_annotations"]);
    ctd::Plan again = ctd::plan_configure(o);
    CHECK_FALSE(again.changes.empty());
    ctd::apply(again);
    check_handler(handler_in(text::parse(fs::read_file(written), written), v1 ? "cri" : "io.containerd.grpc.v1.cri"),
                  true);
    round_trip(o, original);
  }
}

TEST_CASE("containerd config versions and plugin keys", "[containerd]") {
  CHECK(ctd::config_version_of(fs::read_file(kData + "v1.toml"), "v1") == 1);
  CHECK(ctd::config_version_of(fs::read_file(kData + "v2-systemd.toml"), "v2") == 2);
  CHECK(ctd::config_version_of(fs::read_file(kData + "v3.toml"), "v3") == 3);
  CHECK_THROWS_WITH(ctd::config_version_of("version = 4\n", "x.toml"), Catch::Contains("versions 1, 2 and 3"));
  CHECK(ctd::runtime_plugin_key(1) == "cri");
  CHECK(ctd::runtime_plugin_key(2) == "io.containerd.grpc.v1.cri");
  CHECK(ctd::runtime_plugin_key(3) == "io.containerd.cri.v1.runtime");
  CHECK(ctd::default_drop_in_path("/etc/containerd/config.toml") == "/etc/containerd/conf.d/99-gpuslice.toml");
}

TEST_CASE("version 2 with SystemdCgroup: drop-in carries the whole CRI table", "[containerd]") {
  TempDir dir;
  std::string original = fs::read_file(kData + "v2-systemd.toml");
  fs::write_file_atomic(dir / "config.toml", original, 0640);
  auto o = options_for(dir);
  configure(o);

  std::string drop_in_path = dir / "conf.d/99-gpuslice.toml";
  toml::table drop_in = text::parse(fs::read_file(drop_in_path), drop_in_path);
  CHECK(drop_in["version"].value<int>() == 2);
  check_handler(handler_in(drop_in, "io.containerd.grpc.v1.cri"), true);
  // The user's CRI settings travel with it, since the drop-in's table replaces
  // the main file's in containerd before 2.1.
  const auto cri = drop_in["plugins"]["io.containerd.grpc.v1.cri"];
  CHECK(cri["sandbox_image"].value<std::string>() == "registry.example/pause:3.9");
  CHECK(cri["max_container_log_line_size"].value<int>() == 16384);
  CHECK(cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"].value<bool>() == true);
  CHECK(cri["containerd"]["default_runtime_name"].value<std::string>() == "runc");
  CHECK(cri["registry"]["mirrors"]["docker.io"]["endpoint"][0].value<std::string>() == "https://mirror.example");
  // runc's own BinaryName is not copied to the gpuslice handler.
  CHECK(handler_in(drop_in, "io.containerd.grpc.v1.cri")["options"]["BinaryName"].value<std::string>() ==
        gpuslice::installed::kRuntimePath);

  std::string main_text = fs::read_file(o.config_path);
  toml::table main_table = text::parse(main_text, o.config_path);
  REQUIRE(main_table["imports"].as_array());
  CHECK(main_table["imports"][0].value<std::string>() == drop_in_path);
  CHECK(text::strip_gpuslice_edits(main_text, "x") == original);
  CHECK(fs::read_file(o.config_path + ".gpuslice.bak") == original);
  struct stat st {};
  REQUIRE(::stat(o.config_path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);

  round_trip(o, original);
}

TEST_CASE("version 1: marked block in the main file, default runtime replaced and restored", "[containerd]") {
  TempDir dir;
  std::string original = fs::read_file(kData + "v1.toml");
  fs::write_file_atomic(dir / "config.toml", original);
  auto o = options_for(dir);
  o.set_as_default = true;
  configure(o);

  std::string main_text = fs::read_file(o.config_path);
  toml::table t = text::parse(main_text, o.config_path);
  CHECK_FALSE(t.contains("imports"));
  CHECK_FALSE(exists(dir / "conf.d/99-gpuslice.toml"));
  check_handler(handler_in(t, "cri"), true);
  CHECK(t["plugins"]["cri"]["containerd"]["default_runtime_name"].value<std::string>() == "gpuslice");
  CHECK(t["plugins"]["cri"]["sandbox_image"].value<std::string>() == "registry.example/pause:3.6");
  CHECK(t["plugins"]["cri"]["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"].value<bool>() == true);
  // The original lines are still there, in order, apart from the replaced value.
  CHECK(main_text.find("oom_score = -999\n\n[grpc]") != std::string::npos);

  round_trip(o, original);
}

TEST_CASE("version 1 without runtimes keeps containerd's default runc handler", "[containerd]") {
  TempDir dir;
  std::string original =
      "[plugins.cri]\n  sandbox_image = \"p:1\"\n[plugins.cri.containerd]\n  snapshotter = \"native\"";
  fs::write_file_atomic(dir / "config.toml", original); // no final newline on purpose
  auto o = options_for(dir);
  o.set_as_default = true;
  configure(o);
  toml::table t = text::parse(fs::read_file(o.config_path), o.config_path);
  check_handler(handler_in(t, "cri"), false);
  CHECK(t["plugins"]["cri"]["containerd"]["runtimes"]["runc"]["runtime_type"].value<std::string>() ==
        "io.containerd.runc.v2");
  CHECK(t["plugins"]["cri"]["containerd"]["default_runtime_name"].value<std::string>() == "gpuslice");
  CHECK(t["plugins"]["cri"]["containerd"]["snapshotter"].value<std::string>() == "native");
  round_trip(o, original);
}

TEST_CASE("version 1 refuses a gpuslice handler it did not write", "[containerd]") {
  TempDir dir;
  fs::write_file_atomic(dir / "config.toml", "[plugins.cri.containerd.runtimes.gpuslice]\n  runtime_type = \"x\"\n");
  CHECK_THROWS_WITH(ctd::plan_configure(options_for(dir)),
                    Catch::Contains("already defined") && Catch::Contains("--handler-name"));
}

TEST_CASE("version 3: plugin io.containerd.cri.v1.runtime, drop-in of version 3", "[containerd]") {
  TempDir dir;
  std::string original = fs::read_file(kData + "v3.toml");
  fs::write_file_atomic(dir / "config.toml", original);
  auto o = options_for(dir);
  o.set_as_default = true;
  configure(o);
  std::string drop_in_path = dir / "conf.d/99-gpuslice.toml";
  toml::table drop_in = text::parse(fs::read_file(drop_in_path), drop_in_path);
  CHECK(drop_in["version"].value<int>() == 3);
  check_handler(handler_in(drop_in, "io.containerd.cri.v1.runtime"), true);
  const auto runtime = drop_in["plugins"]["io.containerd.cri.v1.runtime"];
  CHECK(runtime["enable_cdi"].value<bool>() == true);
  CHECK(runtime["containerd"]["default_runtime_name"].value<std::string>() == "gpuslice");
  // The images plugin is another table: left in the main file only.
  CHECK_FALSE(drop_in["plugins"]["io.containerd.cri.v1.images"]);
  round_trip(o, original);
}

TEST_CASE("existing imports and custom runtimes are kept", "[containerd]") {
  TempDir dir;
  std::filesystem::copy(kData + "imports-custom", dir.path, std::filesystem::copy_options::recursive);
  std::string original = fs::read_file(dir / "config.toml");
  auto o = options_for(dir);
  std::string out = configure(o);
  CHECK_THAT(out, Catch::Contains("SystemdCgroup"));

  std::string main_text = fs::read_file(o.config_path);
  toml::table t = text::parse(main_text, o.config_path);
  const toml::array *imports = t["imports"].as_array();
  REQUIRE(imports);
  REQUIRE(imports->size() == 3);
  CHECK((*imports)[0].value<std::string>() == "extra/*.toml");
  CHECK((*imports)[1].value<std::string>() == "local.toml");
  CHECK((*imports)[2].value<std::string>() == dir / "conf.d/99-gpuslice.toml");
  CHECK(main_text.find("\"extra/*.toml\", # site settings\n") != std::string::npos);

  std::string drop_in_path = dir / "conf.d/99-gpuslice.toml";
  toml::table drop_in = text::parse(fs::read_file(drop_in_path), drop_in_path);
  const auto containerd_table = drop_in["plugins"]["io.containerd.grpc.v1.cri"]["containerd"];
  CHECK(containerd_table["default_runtime_name"].value<std::string>() == "crun");
  CHECK(containerd_table["runtimes"]["kata"]["runtime_type"].value<std::string>() == "io.containerd.kata.v2");
  CHECK(containerd_table["runtimes"]["kata"]["privileged_without_host_devices"].value<bool>() == true);
  CHECK(containerd_table["runtimes"]["crun"]["options"]["BinaryName"].value<std::string>() == "/usr/bin/crun");
  // No runc handler in this config: the default crun (a runc v2 handler) is the source of options, and
  // no runc appears that the user did not have.
  CHECK_FALSE(containerd_table["runtimes"]["runc"]);
  check_handler(handler_in(drop_in, "io.containerd.grpc.v1.cri"), true);

  round_trip(o, original);
  CHECK(fs::read_file(dir / "extra/10-metrics.toml").find("[metrics]") != std::string::npos);
}

TEST_CASE("an import that sets the CRI table before the drop-in is what the drop-in copies", "[containerd]") {
  TempDir dir;
  ::mkdir((dir / "conf.d").c_str(), 0755);
  std::string original = "version = 2\nimports = [\"conf.d/*.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  "
                         "sandbox_image = \"main:1\"\n";
  fs::write_file_atomic(dir / "config.toml", original);
  fs::write_file_atomic(dir / "conf.d/10-site.toml",
                        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"site:2\"\n");
  auto o = options_for(dir);
  ctd::Plan plan = ctd::plan_configure(o);
  // The glob already loads conf.d/99-gpuslice.toml, after 10-site.toml: no edit of the main file.
  REQUIRE(plan.changes.size() == 1);
  CHECK(plan.changes[0].path == dir / "conf.d/99-gpuslice.toml");
  toml::table drop_in = text::parse(plan.changes[0].content, "drop-in");
  CHECK(drop_in["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"].value<std::string>() == "site:2");
  // containerd's default runc handler would be hidden by the handler's runtimes table: it is spelled out.
  CHECK(drop_in["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"]["runtime_type"]
            .value<std::string>() == "io.containerd.runc.v2");

  // A file loaded after the drop-in that sets the table would replace the handler.
  fs::write_file_atomic(dir / "conf.d/zz-late.toml", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  x = 1\n");
  CHECK_THROWS_WITH(ctd::plan_configure(o), Catch::Contains("zz-late.toml") && Catch::Contains("--drop-in"));
}

TEST_CASE("dry run plans everything and writes nothing", "[containerd]") {
  TempDir dir;
  fs::write_file_atomic(dir / "config.toml", fs::read_file(kData + "v2-systemd.toml"));
  auto before = snapshot(dir.path);
  auto o = options_for(dir);
  ctd::Plan plan = ctd::plan_configure(o);
  CHECK(plan.changes.size() == 3); // drop-in, backup, main
  std::string text_out = ctd::describe(plan, true);
  CHECK_THAT(text_out, Catch::Contains("would write drop-in") && Catch::Contains("BinaryName"));
  CHECK(snapshot(dir.path) == before);
  CHECK_FALSE(exists(dir / "conf.d"));
}

TEST_CASE("missing config file: a minimal version 2 file that --remove deletes", "[containerd]") {
  TempDir dir;
  auto o = options_for(dir);
  configure(o);
  toml::table t = text::parse(fs::read_file(o.config_path), o.config_path);
  CHECK(t["version"].value<int>() == 2);
  CHECK(t["imports"][0].value<std::string>() == dir / "conf.d/99-gpuslice.toml");
  CHECK_FALSE(exists(o.config_path + ".gpuslice.bak"));
  toml::table drop_in = text::parse(fs::read_file(dir / "conf.d/99-gpuslice.toml"), "drop-in");
  check_handler(handler_in(drop_in, "io.containerd.grpc.v1.cri"), false);
  CHECK(ctd::plan_configure(o).changes.empty());
  unconfigure(o);
  CHECK_FALSE(exists(o.config_path));
  CHECK_FALSE(exists(dir / "conf.d/99-gpuslice.toml"));
}

TEST_CASE("minimal version 2 file: imports key added after version, backup written once", "[containerd]") {
  TempDir dir;
  std::string original = fs::read_file(kData + "v2-minimal.toml");
  fs::write_file_atomic(dir / "config.toml", original);
  auto o = options_for(dir);
  configure(o);
  std::string main_text = fs::read_file(o.config_path);
  CHECK(main_text.starts_with("version = 2\n# gpuslice: begin"));
  // A second run with another option rewrites the drop-in only; the backup stays the original.
  fs::write_file_atomic(o.config_path + ".gpuslice.bak", "sentinel");
  o.set_as_default = true;
  ctd::Plan plan = ctd::plan_configure(o);
  REQUIRE(plan.changes.size() == 1);
  ctd::apply(plan);
  CHECK(fs::read_file(o.config_path + ".gpuslice.bak") == "sentinel");
  fs::write_file_atomic(o.config_path + ".gpuslice.bak", original);
  round_trip(o, original);
}

TEST_CASE("a drop-in gpuslice did not write is neither overwritten nor removed", "[containerd]") {
  TempDir dir;
  fs::write_file_atomic(dir / "config.toml", "version = 2\n");
  ::mkdir((dir / "conf.d").c_str(), 0755);
  fs::write_file_atomic(dir / "conf.d/99-gpuslice.toml", "# mine\nversion = 2\n");
  auto o = options_for(dir);
  CHECK_THROWS_WITH(ctd::plan_configure(o),
                    Catch::Contains("refusing to overwrite") && Catch::Contains("99-gpuslice.toml"));
  ctd::Plan plan = ctd::plan_remove(o);
  CHECK(plan.changes.empty());
  CHECK_THAT(ctd::describe(plan, false), Catch::Contains("gpuslice did not write it"));
}

TEST_CASE("custom handler name, runtime path and drop-in path", "[containerd]") {
  TempDir dir;
  std::string original = fs::read_file(kData + "v2-systemd.toml");
  fs::write_file_atomic(dir / "config.toml", original);
  auto o = options_for(dir);
  o.handler_name = "gpu-shared";
  o.runtime_path = "/opt/gpuslice/bin/gpuslice-runtime";
  o.drop_in_path = dir / "other.toml";
  configure(o);
  toml::table drop_in = text::parse(fs::read_file(dir / "other.toml"), "drop-in");
  CHECK(handler_in(drop_in, "io.containerd.grpc.v1.cri", "gpu-shared")["options"]["BinaryName"].value<std::string>() ==
        "/opt/gpuslice/bin/gpuslice-runtime");
  unconfigure(o);
  CHECK(fs::read_file(o.config_path) == original);
  CHECK_FALSE(exists(dir / "other.toml"));

  o.handler_name = "bad name";
  CHECK_THROWS_WITH(ctd::plan_configure(o), Catch::Contains("handler name"));
  o.handler_name = "ok";
  o.runtime_path = "relative/runtime";
  CHECK_THROWS_WITH(ctd::plan_configure(o), Catch::Contains("must be absolute"));
}

TEST_CASE("imports edits: empty array, single line, trailing comma, no final newline", "[containerd][text]") {
  for (std::string original :
       {std::string("version = 2\nimports = []\n"),
        std::string("version = 2\nimports = [\"/a.toml\"] # keep\n[x]\ny = 1"),
        std::string("version = 2\nimports = [\n  \"/a.toml\",\n  \"/b.toml\", # b\n]\n"), std::string("version = 2"),
        std::string("\xEF\xBB\xBFversion = 2\n[x]\n"), std::string("\xEF\xBB\xBFimports = [\"/a.toml\"]\r\n[x]\r\n"),
        std::string("version = 2\nimports = [\"/\u6570\u636e/\u2713.toml\"] # \u4e2d\u6587 \U0001F600\n")}) {
    CAPTURE(original);
    toml::table parsed = text::parse(original, "x");
    std::string edited = text::add_import(original, parsed, "/d/99-gpuslice.toml");
    toml::table t = text::parse(edited, "edited");
    const toml::array *imports = t["imports"].as_array();
    REQUIRE(imports);
    CHECK(imports->back().value<std::string>() == "/d/99-gpuslice.toml");
    CHECK(imports->size() == (parsed["imports"].as_array() ? parsed["imports"].as_array()->size() : 0) + 1);
    CHECK(text::has_gpuslice_edits(edited));
    CHECK(text::strip_gpuslice_edits(edited, "edited") == original);
  }
  CHECK_THROWS_WITH(text::quote_plain("a\"b"), Catch::Contains("quote"));
  CHECK_THROWS_WITH(text::parse("x = [", "bad.toml"), Catch::Contains("\"bad.toml\"") && Catch::Contains("line 1"));
  // French in a comment is fine (toml++ 3.3's unsafe characters are handled).
  CHECK(text::parse("version = 2 # \u00e7a\n", "fr.toml")["version"].value<int64_t>() == 2);
}

TEST_CASE("a main config that is a symlink stays one; its target is edited", "[containerd]") {
  TempDir dir;
  std::string original = fs::read_file(kData + "v2-systemd.toml");
  fs::write_file_atomic(dir / "managed.toml", original);
  REQUIRE(::symlink("managed.toml", (dir / "config.toml").c_str()) == 0);
  auto o = options_for(dir);
  configure(o);
  struct stat st {};
  REQUIRE(::lstat((dir / "config.toml").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(fs::read_file(dir / "managed.toml").find("# gpuslice: ") != std::string::npos);
  round_trip(o, original);
  REQUIRE(::lstat((dir / "config.toml").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
}

TEST_CASE("malformed config files are reported with their path", "[containerd]") {
  TempDir dir;
  fs::write_file_atomic(dir / "config.toml", "version = 2\n[plugins\n");
  CHECK_THROWS_WITH(ctd::plan_configure(options_for(dir)),
                    Catch::StartsWith("cannot configure containerd: cannot parse \"" + (dir / "config.toml")));
  fs::write_file_atomic(dir / "config.toml", "version = 2\nimports = [\"missing.toml\"]\n");
  CHECK_THROWS_WITH(ctd::plan_configure(options_for(dir)), Catch::Contains("missing.toml"));
}

TEST_CASE("a config that disables the CRI plugin (Docker's) gets a note", "[containerd]") {
  TempDir dir;
  std::string original = "disabled_plugins = [\"cri\"]\n";
  fs::write_file_atomic(dir / "config.toml", original);
  auto o = options_for(dir);
  CHECK_THAT(configure(o), Catch::Contains("CRI plugin is disabled") && Catch::Contains("\"cri\""));
  round_trip(o, original);
}

TEST_CASE("a failed write names the change and the file", "[containerd]") {
  TempDir dir;
  fs::write_file_atomic(dir / "config.toml", "version = 2\n");
  fs::write_file_atomic(dir / "conf.d", "a file where the drop-in directory should be");
  auto o = options_for(dir);
  ctd::Plan plan = ctd::plan_configure(o);
  CHECK_THROWS_WITH(ctd::apply(plan), Catch::StartsWith("cannot write drop-in \"" + (dir / "conf.d/99-gpuslice.toml")));
  // Nothing was imported: the main file is untouched.
  CHECK(fs::read_file(dir / "config.toml") == "version = 2\n");
}
