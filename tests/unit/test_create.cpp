// The create path (create/create.hpp) and gpuslice-runtime's command line.
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/create/create.hpp"
#include "gpuslice/create/modifiers.hpp"
#include "gpuslice/create/requests.hpp"
#include "gpuslice/runtime/command_line.hpp"
#include "gpuslice/runtime/low_level.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>

using namespace gpuslice;
using namespace gpuslice::create;
using namespace gpuslice::runtime;
using gpuslice::testing::TempDir;

namespace {
// A `run`'s create (the hook added), without the monitor: these have no limits.
std::optional<Created> prepare(const std::string &bundle, const std::string &id, const Config &config) {
  BundleCreate request{bundle, id, "", true};
  return create_bundle(request, config, kDefaultConfigPath);
}

BundleSpec spec_of(const std::string &text) { return BundleSpec::parse(text, "config.json"); }
} // namespace

namespace {
CommandLine parse(std::vector<const char *> args) {
  args.insert(args.begin(), "gpuslice-runtime");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}
} // namespace

TEST_CASE("command line: global flags, verb, bundle and id as containerd passes them", "[create]") {
  auto cl = parse({"--root", "/run/containerd/runc/k8s.io", "--log", "/run/x/log.json", "--log-format", "json",
                   "--systemd-cgroup", "create", "--bundle", "/b", "--pid-file", "/b/init.pid", "ctr-1"});
  CHECK(cl.verb == "create");
  CHECK(cl.edits_bundle());
  CHECK(cl.bundle == "/b");
  CHECK(cl.container_id == "ctr-1");
  CHECK(cl.log_path == "/run/x/log.json");
  CHECK(cl.log_format == "json");
  CHECK(cl.args.size() == 13); // passed on untouched

  auto eq = parse({"--root=/r", "--log=/l", "run", "-b=/bb", "--detach", "--console-socket", "/s", "id2"});
  CHECK(eq.verb == "run");
  CHECK(eq.bundle == "/bb");
  CHECK(eq.container_id == "id2");
  CHECK(eq.log_path == "/l");

  auto del = parse({"--root", "/r", "delete", "--force", "id3"});
  CHECK(del.verb == "delete");
  CHECK_FALSE(del.edits_bundle());
  CHECK(del.deletes());
  CHECK(del.container_id == "id3");
  CHECK(del.bundle.empty());

  // containerd's exec: a process file, the id; a command after the id is the command's
  auto ex = parse({"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "--pid-file", "/p", "-e", "A=1", "id4"});
  CHECK(ex.verb == "exec");
  CHECK(ex.process_file == "/tmp/p.json");
  CHECK(ex.container_id == "id4");
  auto ex2 = parse({"exec", "-t", "id5", "sh", "-c", "--process=/not/this"});
  CHECK(ex2.container_id == "id5");
  CHECK(ex2.process_file.empty());

  // a pid file added for the monitor goes right after the verb
  auto cr = parse({"--root", "/r", "create", "--bundle", "/b", "id6"});
  cr.add_pid_file("/s/init.pid");
  CHECK(cr.args == std::vector<std::string>{"--root", "/r", "create", "--pid-file=/s/init.pid", "--bundle", "/b", "id6"});

  CHECK(parse({"--version"}).verb.empty());
  CHECK(parse({}).verb.empty());
  // A value that looks like a verb belongs to its flag.
  CHECK(parse({"--root", "create", "state", "x"}).verb == "state");
  CHECK(parse({"create", "x"}).bundle.empty()); // runc's default: the current dir
}

TEST_CASE("requests: annotations, qualified linux.devices, env only when accepted", "[create]") {
  Config config;
  auto spec = spec_of(R"({
    "annotations": {"cdi.k8s.io/dra_claim-b": "nvidia.com/gpu=1", "cdi.k8s.io/dra_claim-a": "nvidia.com/gpu=0,nvidia.com/gpu=1",
                    "io.kubernetes.cri.container-name": "x"},
    "process": {"env": ["NVIDIA_VISIBLE_DEVICES=2,GPU-abc", "GPUSLICE_VISIBLE_DEVICES=vendor.com/x=y"]},
    "linux": {"devices": [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229}, {"path": "vendor.com/nic=eth0"}]}})");
  auto r = collect_requests(spec, config);
  CHECK(r.devices == std::vector<std::string>{"nvidia.com/gpu=0", "nvidia.com/gpu=1", "vendor.com/nic=eth0"});
  CHECK(spec.document()["linux"]["devices"].size() == 2); // read, not changed
  spec.apply({});                                          // the CDI edits drop the names
  CHECK(spec.document()["linux"]["devices"].size() == 1);

  config.accept_env_requests = true;
  CHECK(collect_requests(spec_of(R"({"process": {"env": ["NVIDIA_VISIBLE_DEVICES=2,GPU-abc"]}})"), config).devices ==
        std::vector<std::string>{"nvidia.com/gpu=2", "nvidia.com/gpu=GPU-abc"});
  CHECK(collect_requests(spec_of(R"({"process": {"env": ["NVIDIA_VISIBLE_DEVICES=0", "GPUSLICE_VISIBLE_DEVICES=vendor.com/x=y"]}})"),
                         config).devices == std::vector<std::string>{"vendor.com/x=y"});

  CHECK_THROWS_WITH(collect_requests(spec_of(R"({"annotations": {"cdi.k8s.io/p": "not-a-device"}})"), config),
                    Catch::Contains("annotation \"cdi.k8s.io/p\""));
  CHECK_THROWS_WITH(collect_requests(spec_of(R"({"process": {"env": ["NVIDIA_VISIBLE_DEVICES=a b"]}})"), config),
                    Catch::Contains("visible devices \"a b\""));
  CHECK_THROWS_WITH(collect_requests(spec_of(R"({"linux": {"devices": [{"path": 7}]}})"), config),
                    Catch::Contains("linux.devices[0].path"));
}

TEST_CASE("env values: all, none, void, lists", "[create]") {
  CHECK(devices_from_env_value("all", "nvidia.com/gpu") == std::vector<std::string>{"nvidia.com/gpu=all"});
  CHECK(devices_from_env_value("none", "nvidia.com/gpu").empty());
  CHECK(devices_from_env_value("void", "nvidia.com/gpu").empty());
  CHECK(devices_from_env_value("", "nvidia.com/gpu").empty());
  CHECK(devices_from_env_value("0,,1", "k.io/g") == std::vector<std::string>{"k.io/g=0", "k.io/g=1"});
  CHECK(devices_from_env_value("a.com/b=c,3", "k.io/g") == std::vector<std::string>{"a.com/b=c", "k.io/g=3"});
}

TEST_CASE("hooks are added once, with an explicit environment", "[create]") {
  Config config;
  config.hook_path = "/usr/bin/gpuslice-hook";
  auto spec = spec_of(R"({"process": {"env": ["LD_PRELOAD=/evil.so"]}, "hooks": {"createRuntime": [{"path": "/other"}]}})");
  Plan plan;
  const Facts facts;
  hooks_modifier()->modify(spec, plan, facts, context_of(config, "/tmp/test.toml", "c1", "/b", HookMode::none));
  CHECK(spec.document()["hooks"]["createRuntime"].size() == 1); // `create` gets none
  const Context ctx = context_of(config, "/tmp/test.toml", "c1", "/b", HookMode::add);
  hooks_modifier()->modify(spec, plan, facts, ctx);
  hooks_modifier()->modify(spec, plan, facts, ctx);
  const auto &oci = spec.document();
  REQUIRE(oci["hooks"]["createRuntime"].size() == 2);
  CHECK_FALSE(oci["hooks"].contains("poststop")); // delete removes the state itself
  const auto &h = oci["hooks"]["createRuntime"][1];
  CHECK(h["path"] == "/usr/bin/gpuslice-hook");
  CHECK(h["args"] == cdi::OciSpec::parse(R"(["gpuslice-hook", "createRuntime"])"));
  CHECK(h["env"] == cdi::OciSpec::parse(R"(["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "GPUSLICE_CONFIG=/tmp/test.toml"])"));
  hooks_modifier()->modify(spec, plan, facts, context_of(config, kDefaultConfigPath, "c1", "/b", HookMode::add));
  CHECK(spec.document()["hooks"]["createRuntime"].size() == 2); // the same hook and stage: once, whatever the config
}

namespace {
// A spec dir with device v.com/gpu=0 (env G=0) and a state dir, in `t`.
Config one_device_config(TempDir &t) {
  t.write("cdi/gpu.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n  - name: \"0\"\n    containerEdits:\n      env: [G=0]\n");
  Config config;
  config.spec_dirs = {t / "cdi"};
  config.state_dir = t / "state";
  return config;
}
} // namespace

TEST_CASE("create_bundle for create: no hook; runc's pid file in the state dir unless one was given", "[create]") {
  TempDir t;
  const Config config = one_device_config(t);
  const std::string requested = R"({"process": {"env": []}, "annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}})";
  t.write("b1/config.json", requested);
  BundleCreate request{t / "b1", "c1", "", false};
  const auto created = create_bundle(request, config, kDefaultConfigPath);
  REQUIRE(created);
  CHECK(request.pid_file == t / "state/containers/c1/init.pid");
  CHECK_FALSE(cdi::OciSpec::parse(fs::read_file(t / "b1/config.json")).contains("hooks"));
  // the record: this process its creator, the init the pid file's, the CDI env for exec
  const state::Record record = state::read_record(created->dir.fd.get(), created->dir.path);
  CHECK(record.creator == state::process_id(static_cast<int>(::getpid())));
  CHECK(record.init_pid_file == request.pid_file);
  CHECK(record.cdi_env == std::vector<std::string>{"G=0"});
  CHECK(record.status == state::Status::created);
  CHECK_FALSE(record.has_monitor());

  t.write("b2/config.json", requested);
  BundleCreate given{t / "b2", "c2", "/run/x/init.pid", false};
  CHECK(create_bundle(given, config, kDefaultConfigPath));
  CHECK(given.pid_file == "/run/x/init.pid");

  t.write("b3/config.json", R"({"process": {"env": []}})");
  BundleCreate nothing{t / "b3", "c3", "", false};
  CHECK_FALSE(create_bundle(nothing, config, kDefaultConfigPath));
  CHECK(nothing.pid_file.empty()); // runc's arguments stay untouched
}

TEST_CASE("create_bundle: nothing requested leaves config.json alone; failures leave it unchanged", "[create]") {
  TempDir t;
  const Config config = one_device_config(t);
  const std::string plain = R"({"process": {"env": []}, "annotations": {"other": "x"}})";
  t.write("b1/config.json", plain);
  ::chmod((t / "b1/config.json").c_str(), 0600);
  struct stat before {};
  ::stat((t / "b1/config.json").c_str(), &before);
  CHECK_FALSE(prepare(t / "b1", "c1", config));
  struct stat after {};
  ::stat((t / "b1/config.json").c_str(), &after);
  CHECK(before.st_ino == after.st_ino); // not even replaced

  t.write("b2/config.json", R"({"process": {"env": []}, "annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}})");
  ::chmod((t / "b2/config.json").c_str(), 0600);
  auto edit = prepare(t / "b2", "c2", config);
  REQUIRE(edit);
  CHECK(edit->devices == std::vector<std::string>{"v.com/gpu=0"});
  auto written = cdi::OciSpec::parse(fs::read_file(t / "b2/config.json"));
  CHECK(written["process"]["env"] == cdi::OciSpec::parse(R"(["G=0"])"));
  CHECK(written["hooks"]["createRuntime"].size() == 1);
  struct stat st {};
  ::stat((t / "b2/config.json").c_str(), &st);
  CHECK((st.st_mode & 07777) == 0600);

  const std::string unknown = R"({"annotations": {"cdi.k8s.io/x": "v.com/gpu=9"}})";
  t.write("b3/config.json", unknown);
  CHECK_THROWS_WITH(prepare(t / "b3", "c3", config), Catch::Contains("\"v.com/gpu=9\"") && Catch::Contains(t / "cdi"));
  CHECK(fs::read_file(t / "b3/config.json") == unknown);
  CHECK_THROWS_WITH(prepare(t / "missing", "c4", config), Catch::Contains("config.json"));
}

TEST_CASE("find_runtime: absolute paths, PATH search, clear error", "[create]") {
  Config config;
  config.runtimes = {"/nonexistent/runc", "/bin/sh"};
  CHECK(find_runtime(config) == "/bin/sh");
  config.runtimes = {"definitely-not-a-runtime", "/nonexistent/crun"};
  CHECK_THROWS_WITH(find_runtime(config), Catch::Contains("\"definitely-not-a-runtime\", \"/nonexistent/crun\"") &&
                                              Catch::Contains("install runc or crun"));
}

TEST_CASE("runtime log lines are what containerd's shim parses", "[create]") {
  TempDir t;
  write_runtime_log(t / "log.json", "json", "cannot create \"x\": \"quoted\"\nline");
  write_runtime_log(t / "log.txt", "text", "boom");
  auto line = fs::read_file(t / "log.json");
  auto j = nlohmann::json::parse(line);
  CHECK(j["level"] == "error");
  CHECK(j["msg"] == "cannot create \"x\": \"quoted\"\nline");
  CHECK(j["time"].get<std::string>().size() >= 20);
  CHECK(line.back() == '\n');
  CHECK_THAT(fs::read_file(t / "log.txt"), Catch::Contains("level=error msg=\"boom\""));
  write_runtime_log("", "json", "ignored"); // no --log: nothing to do
}

TEST_CASE("bundle spec: typed accessors name the JSON path of what is wrong", "[create][spec]") {
  BundleSpec ok(cdi::OciSpec::parse(R"({"root": {"path": "rootfs", "readonly": true}, "annotations": {"a": "1", "n": 2},
                                        "process": {"env": ["A=1", 3]}})"));
  CHECK(ok.root_path() == "rootfs");
  CHECK(ok.root_readonly());
  CHECK(ok.annotations() == std::map<std::string, std::string>{{"a", "1"}});
  CHECK(ok.process_env() == std::vector<std::string>{"A=1"});
  CHECK_THROWS_WITH(BundleSpec(cdi::OciSpec::parse(R"({"root": {"path": 5}})")).root_path(), Catch::Contains("root.path is not a string"));
  CHECK_THROWS_WITH(BundleSpec(cdi::OciSpec::parse(R"({})")).root_path(), Catch::Contains("no root.path"));
  CHECK_THROWS_WITH(BundleSpec(cdi::OciSpec::parse(R"({"root": {"readonly": "yes"}})")).root_readonly(),
                    Catch::Contains("root.readonly is not a boolean"));
  CHECK_THROWS_WITH(BundleSpec(cdi::OciSpec::parse(R"({"annotations": []})")).annotations(), Catch::Contains("annotations"));
}

TEST_CASE("bundle spec: linux.seccomp is written back as its very text, checked as the rest", "[create][spec]") {
  const std::string seccomp = R"({"defaultAction" : "SCMP_ACT_ERRNO","syscalls":[{"names":["read","wr\"ite"],)"
                              R"("action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":1e3,"op":"SCMP_CMP_EQ"}]}],"x":1})";
  const std::string text = R"({"root":{"path":"rootfs"},"linux": {"namespaces":[{"type":"pid"}],"seccomp": )" +
                           seccomp + R"( ,"sysctl":{"a":"b"}},"process":{"env":["A=1"]}})";
  BundleSpec spec = BundleSpec::parse(text, "config.json");
  cdi::ContainerEdits edits;
  edits.env = {"B=2"};
  spec.apply(edits); // an edit elsewhere
  const std::string out = spec.text();
  CHECK(out.find(seccomp) != std::string::npos); // the bytes, not a dump of them (1e3 stays 1e3)
  auto expected = cdi::OciSpec::parse(text);
  expected["process"]["env"].push_back("B=2");
  CHECK(cdi::OciSpec::parse(out) == expected);
  CHECK(spec.process_env() == std::vector<std::string>{"A=1", "B=2"});

  // Checked as any member: a key twice, nesting past the bound, bad JSON.
  auto with = [](const std::string &value) { return R"({"linux":{"seccomp":)" + value + "}}"; };
  CHECK_THROWS_WITH(BundleSpec::parse(with(R"({"a":{"b":1,"b":2}})"), "c"), Catch::Contains("the key \"b\" twice"));
  CHECK_THROWS_WITH(BundleSpec::parse(with(R"({"a":[{"b":1,"b":2}]})"), "c"), Catch::Contains("twice"));
  CHECK_THROWS_WITH(BundleSpec::parse(with("{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}"), "c"),
                    Catch::Contains("nested more than"));
  CHECK_THROWS_WITH(BundleSpec::parse(with(R"({"a":tru})"), "c"), Catch::Contains("invalid JSON"));
  CHECK_THROWS_WITH(BundleSpec::parse(with(R"({"a":1})") + "x", "c"), Catch::Contains("invalid JSON"));

  // Built as any member where the text walk does not find it plainly:
  // an escaped key, a value that is no object; and an edit's value wins.
  for (const std::string &other : {std::string(R"({"\u006cinux":{"seccomp":{"a":1}}})"), with("null"), with("[1]"),
                                   std::string(R"({"linux":{"s\u0065ccomp":{"a":1}}})")}) {
    BundleSpec built = BundleSpec::parse(other, "c");
    CHECK(cdi::OciSpec::parse(built.text()) == cdi::OciSpec::parse(other));
  }
  // A member before linux that holds its name, in a string and as a key.
  const std::string decoy = R"({"annotations":{"linux":"{\"seccomp\":{}}"},"x":{"linux":{"seccomp":{"c":3}}},)"
                            R"("linux":{"seccomp":{"d":4}}})";
  BundleSpec real = BundleSpec::parse(decoy, "c");
  CHECK(cdi::OciSpec::parse(real.text()) == cdi::OciSpec::parse(decoy));
  CHECK(real.document()["x"]["linux"]["seccomp"]["c"] == 3); // built: not linux's
}

TEST_CASE("commit: every side effect or none", "[create][spec]") {
  TempDir t;
  Config config;
  config.state_dir = t / "state";
  const std::string original = R"({"root": {"path": "rootfs"}})";
  t.write("b/config.json", original);
  BundleSpec spec = BundleSpec::load(t / "b/config.json");
  Facts facts;
  auto save = [&](const state::ContainerDir &) { spec.save(t / "b/config.json"); };
  // A plan with a file twice: the commit fails half-way.
  Plan conflicting;
  conflicting.files = {{"limits", "a"}, {"limits", "b"}};
  CHECK_THROWS_WITH(commit(conflicting, facts, context_of(config, kDefaultConfigPath, "c1", t / "b", HookMode::none),
                           {}, save),
                    Catch::Contains("cannot write"));
  CHECK(::access((t / "state/containers/c1").c_str(), F_OK) != 0); // rolled back
  CHECK(fs::read_file(t / "b/config.json") == original);
  // Its finish failing: rolled back too.
  Plan plan;
  plan.record.cdi_env = {"A=1"};
  CHECK_THROWS_WITH(commit(plan, facts, context_of(config, kDefaultConfigPath, "c3", t / "b", HookMode::none), {},
                           [](const state::ContainerDir &) { throw Error("the finish failed"); }),
                    Catch::Contains("the finish failed"));
  CHECK(::access((t / "state/containers/c3").c_str(), F_OK) != 0);

  const Context ok = context_of(config, kDefaultConfigPath, "c2", t / "b", HookMode::add);
  hooks_modifier()->modify(spec, plan, facts, ok);
  commit(plan, facts, ok, {}, save);
  CHECK(state::parse_record(fs::read_file(t / "state/containers/c2/state.json"), "c2").cdi_env ==
        std::vector<std::string>{"A=1"});
  CHECK(fs::read_file(t / "b/config.json").find("gpuslice-hook") != std::string::npos);
}
