// gpuslice-runtime's front (runtime/front/front.h): its C decisions agree
// with the full program's C++ ones, and it reads exactly the records the full
// program writes, nothing else.
#include "gpuslice/common/build_id.h"
#include "gpuslice/common/build_id.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/runtime/command_line.hpp"
#include "gpuslice/runtime/front_record.hpp"
#include "gpuslice/create/requests.hpp"
#include "gpuslice/runtime/low_level.hpp"
#include "gpuslice/create/container_limits.hpp"

#include "../../runtime/front/command_line.h"
#include "../../runtime/front/front.h"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <elf.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <set>

using namespace gpuslice;
using namespace gpuslice::create;
using namespace gpuslice::runtime;

namespace {

struct Argv {
  std::vector<std::string> args;
  std::vector<char *> ptrs;
  explicit Argv(std::vector<std::string> a) : args(std::move(a)) {
    args.insert(args.begin(), "gpuslice-runtime");
    for (auto &s : args)
      ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(args.size()); }
};

gs_call read_call(const Argv &a) {
  gs_call call;
  gs_read_call(a.argc(), a.ptrs.data(), &call);
  return call;
}

const std::string kConfigPath = "/etc/gpuslice/config.toml";

struct Parsed {
  std::string buf; // the record parsed in place: r points into it
  gs_front_record r{};
  int rc = -1;
};

Parsed parse_record(const std::string &bytes) {
  Parsed p;
  p.buf = bytes;
  p.rc = gs_front_parse_record(p.buf.data(), p.buf.size(), &p.r);
  return p;
}

std::string sample_record(const Config &config = Config{},
                          const std::optional<std::string> &text = std::string("[log]\nlevel = \"warn\"\n")) {
  const auto r = front_record("0123abcd", kConfigPath, text, config);
  REQUIRE(r);
  return *r;
}

bool matches(const gs_front_record &r, const std::string &config_path, const std::optional<std::string> &config,
             const char *build_id = "0123abcd") {
  return gs_front_record_matches(&r, build_id, config_path.c_str(), config ? config->data() : nullptr,
                                 config ? config->size() : 0) != 0;
}

} // namespace

TEST_CASE("front: reads runc's command line: the verb, the container id, the flags gpuslice needs", "[front]") {
  struct Case {
    std::vector<std::string> args;
    std::string verb = {}, id = {}, bundle = {}, pid_file = {}, process = {}, log = {}, log_format = {};
    bool doubt = false;
  };
  const std::vector<Case> cases = {
      {{"--root", "/run/r", "--log", "/l", "--log-format", "json", "start", "c1"}, "start", "c1", "", "", "", "/l", "json"},
      {{"--root=/r", "--systemd-cgroup", "delete", "--force", "c1"}, "delete", "c1"},
      {{"--debug", "--rootless", "true", "state", "c1"}, "state", "c1"},
      {{"--criu", "create", "kill", "c1"}, "kill", ""}, // "create" is --criu's value; kill is plain
      {{"--cgroup-manager", "systemd", "--log-level=debug", "--debug-log", "x", "ps", "-f", "json", "c1"}, "ps", "c1"},
      {{"create", "--bundle", "/b", "--pid-file", "/p", "c1"}, "create", "c1", "/b", "/p"},
      {{"create", "-b=/a", "--bundle", "/b", "--preserve-fds", "2", "--no-new-keyring", "c1"}, "create", "c1", "/b"},
      {{"create", "--bundle=/b", "--console-socket=/s", "--no-pivot", "c1"}, "create", "c1", "/b"},
      {{"run", "-d", "--bundle", "/b", "--keep", "--no-subreaper", "c1"}, "run", "c1", "/b"},
      {{"create", "c1", "--bundle", "/b"}, "create", "c1", "/b"},
      {{"create", "--bundle=", "c1"}, "create", "c1"},
      {{"exec", "--process", "/p.json", "--tty", "c1", "sh", "-c", "x"}, "exec", "c1", "", "", "/p.json"},
      {{"exec", "-e", "A=1", "-p", "/p.json", "-d", "c1"}, "exec", "c1", "", "", "/p.json"},
      {{"delete", "--", "c1"}, "delete", "c1"},
      {{"--log-format=text", "pause", "c1"}, "pause", "c1", "", "", "", "", "text"},
      // Go's flag syntax, runc's: one dash or two alike, "=value" or the next argument
      {{"-root", "/r", "-log", "/l", "-log-format=json", "create", "-bundle", "/b", "-pid-file", "/p", "c1"},
       "create", "c1", "/b", "/p", "", "/l", "json"},
      {{"-root=/r", "create", "-bundle=/b", "--b", "/c", "-console-socket", "/s", "c1"}, "create", "c1", "/c"},
      {{"create", "--b=/b", "-no-pivot", "--detach=true", "-d=false", "-keep=1", "c1"}, "create", "c1", "/b"},
      {{"create", "-bundle", "-b", "c1"}, "create", "c1", "-b"}, // a value may start with '-'
      {{"run", "c1", "-bundle", "/b"}, "run", "c1", "/b"},
      {{"exec", "-process=/p.json", "-t", "c1", "sh"}, "exec", "c1", "", "", "/p.json"},
      {{"-debug", "-systemd-cgroup", "delete", "-force", "c1"}, "delete", "c1"},
      {{"ps", "-format", "json", "c1"}, "ps", "c1"},
      // what it cannot be sure of: doubt
      {{"--version"}, "", "", "", "", "", "", "", false},
      {{"--unknown", "start", "c1"}, "start", "c1", "", "", "", "", "", true},
      {{"create", "--config", "/other.json", "c1"}, "create", "c1", "", "", "", "", "", true}, // crun's
      {{"create", "--detach=maybe", "c1"}, "create", "c1", "", "", "", "", "", true}, // no bool to Go
      {{"create", "---bundle", "/b", "c1"}, "create", "c1", "", "", "", "", "", true},  // bad flag syntax to Go
      {{"create", "-=/b", "c1"}, "create", "c1", "", "", "", "", "", true},
      {{"create", "-bundlex", "/b", "c1"}, "create", "c1", "", "", "", "", "", true},
      {{"create", "c1", "-bundle"}, "create", "c1", "", "", "", "", "", true},
      {{"-root", "create", "c1"}, "c1", "", "", "", "", "", "", false}, // "create" is -root's value
      {{"create", "c1", "c2"}, "create", "c2", "", "", "", "", "", true},
      {{"create", "--bundle", "/b"}, "create", "", "/b", "", "", "", "", true},
      {{"create", "c1", "--bundle"}, "create", "c1", "", "", "", "", "", true},
      {{"delete", "-x", "c1"}, "delete", "c1", "", "", "", "", "", true},
      {{"start"}, "start", "", "", "", "", "", "", true},
      {{"delete", "--", "c1", "c2"}, "delete", "c1", "", "", "", "", "", true},
  };
  for (const auto &c : cases) {
    Argv a(c.args);
    const auto call = read_call(a);
    const auto cl = parse_command_line(a.argc(), a.ptrs.data());
    INFO(a.args[1] << " ... (" << a.argc() << " args)");
    CHECK((call.verb < a.argc() ? a.args[static_cast<std::size_t>(call.verb)] : std::string()) == c.verb);
    CHECK(cl.verb == c.verb);
    CHECK(cl.container_id == c.id);
    CHECK(cl.bundle == c.bundle);
    CHECK(cl.pid_file == c.pid_file);
    CHECK(cl.process_file == c.process);
    CHECK(cl.log_path == c.log);
    CHECK(cl.log_format == c.log_format);
    CHECK((call.doubt != 0) == c.doubt);
  }
}

TEST_CASE("front: a verb's kind is what the full program does for it", "[front]") {
  for (const char *verb : {"create", "run", "start", "state", "delete", "exec", "ps", "pause", "resume", "kill",
                           "list", "events", "update", "checkpoint", "restore", "features", "spec", "Start"}) {
    Argv a({verb, "c1"});
    const auto call = read_call(a);
    const auto cl = parse_command_line(a.argc(), a.ptrs.data());
    INFO(verb);
    CHECK((call.kind == GS_VERB_BUNDLE) == cl.edits_bundle());
    CHECK((call.kind == GS_VERB_CONTAINER) == (cl.deletes() || cl.verb == "exec"));
    CHECK((call.kind == GS_VERB_MONITORED) == (cl.checks_monitor() && cl.verb != "exec"));
  }
}

TEST_CASE("front: reads back the record the full program writes", "[front]") {
  Config config;
  config.state_dir = "/run/gpuslice/";
  config.runtimes = {"crun", "/usr/local/bin/runc"};
  const std::optional<std::string> text = std::string("[log]\nlevel = \"warn\"\n");
  auto p = parse_record(sample_record(config, text));
  REQUIRE(p.rc == 0);
  CHECK(std::string(p.r.writer) == "0123abcd");
  CHECK(std::string(p.r.config_path) == kConfigPath);
  CHECK(std::string(p.r.state_dir) == "/run/gpuslice"); // cleaned, as the state dir's paths are made
  REQUIRE(p.r.runtimes == 2);
  CHECK(std::string(p.r.runtime[0]) == "crun");
  CHECK(std::string(p.r.runtime[1]) == "/usr/local/bin/runc");
  const auto triggers = create_triggers(config);
  REQUIRE(p.r.triggers == static_cast<int>(triggers.size()));
  for (std::size_t i = 0; i < triggers.size(); ++i)
    CHECK(std::string(p.r.trigger[i]) == triggers[i]);
  CHECK(p.r.config_absent == 0);
  CHECK(std::string(p.r.config, p.r.config_size) == *text);

  CHECK(matches(p.r, kConfigPath, text));
  // Another build's record (an upgrade's old or new binary), or a binary
  // without a build id: no match, whatever else matches.
  CHECK_FALSE(matches(p.r, kConfigPath, text, "0123abce"));
  CHECK_FALSE(matches(p.r, kConfigPath, text, "0123abcd0"));
  CHECK_FALSE(matches(p.r, kConfigPath, text, ""));
  CHECK_FALSE(matches(p.r, kConfigPath, text, nullptr));
  // Any other config, byte for byte: no match.
  CHECK_FALSE(matches(p.r, "/etc/gpuslice/other.toml", text));
  CHECK_FALSE(matches(p.r, kConfigPath, *text + " "));
  auto changed = *text;
  changed[3] = 'X';
  CHECK_FALSE(matches(p.r, kConfigPath, changed));
  CHECK_FALSE(matches(p.r, kConfigPath, std::nullopt));

  // No config file: recorded as such, and an empty file is not that.
  p = parse_record(sample_record(Config{}, std::nullopt));
  REQUIRE(p.rc == 0);
  CHECK(p.r.config_absent == 1);
  CHECK(matches(p.r, kConfigPath, std::nullopt));
  CHECK_FALSE(matches(p.r, kConfigPath, std::string()));
}

TEST_CASE("front: no record for what it could not compare or use", "[front]") {
  const std::vector<std::pair<const char *, void (*)(Config &)>> unusable = {
      {"a relative state dir", [](Config &c) { c.state_dir = "run/gpuslice"; }},
      {"a newline in the state dir", [](Config &c) { c.state_dir = "/run/a\nb"; }},
      {"a newline in a runtime", [](Config &c) { c.runtimes = {"runc\n/tmp/evil"}; }},
      {"an empty runtime", [](Config &c) { c.runtimes = {""}; }},
      {"too many runtimes", [](Config &c) { c.runtimes.assign(GS_FRONT_MAX_LIST + 1, "runc"); }},
      {"too many triggers", [](Config &c) { c.annotation_prefixes.assign(GS_FRONT_MAX_LIST, "x/"); }},
      {"a newline in a trigger", [](Config &c) { c.annotation_prefixes = {"cdi.k8s.io/\nx"}; }},
  };
  const std::optional<std::string> text = std::string("# a config\n");
  for (const auto &[what, change] : unusable) {
    Config c;
    change(c);
    INFO(what);
    CHECK_FALSE(front_record("0123abcd", kConfigPath, text, c));
  }
  CHECK_FALSE(front_record("", kConfigPath, text, Config{}));
  CHECK_FALSE(front_record("0123abcd", "config.toml", text, Config{}));
  CHECK_FALSE(front_record("0123abcd", kConfigPath, std::string(GS_FRONT_MAX_CONFIG + 1, '#'), Config{}));
  const auto largest = front_record("0123abcd", kConfigPath, std::string(GS_FRONT_MAX_CONFIG, '#'), Config{});
  REQUIRE(largest);
  CHECK(largest->size() <= GS_FRONT_MAX_RECORD);
  CHECK(parse_record(*largest).rc == 0);
}

TEST_CASE("front: any record not exactly as written is refused", "[front]") {
  const std::string record = sample_record();
  REQUIRE(parse_record(record).rc == 0);
  for (std::size_t n = 0; n < record.size(); ++n) {
    INFO("cut at " << n);
    CHECK(parse_record(record.substr(0, n)).rc != 0);
  }
  CHECK(parse_record(record + "x").rc != 0);
  // Any byte of the lines changed: refused, or read as something that does
  // not match (another writer, path, list or config).
  const std::size_t config_at = record.find("config-bytes ");
  int refused = 0;
  for (std::size_t i = 0; i < config_at; ++i) {
    std::string b = record;
    b[i] = b[i] == '\n' ? 'x' : '\n';
    const auto p = parse_record(b);
    INFO("byte " << i);
    if (p.rc != 0) {
      ++refused;
      continue;
    }
    const auto triggers = create_triggers(Config{});
    bool same_lists = p.r.runtimes == 2 && std::string(p.r.runtime[0]) == "runc" &&
                      std::string(p.r.runtime[1]) == "crun" && std::string(p.r.state_dir) == "/run/gpuslice" &&
                      p.r.triggers == static_cast<int>(triggers.size());
    for (int t = 0; same_lists && t < p.r.triggers; ++t)
      same_lists = p.r.trigger[t] == triggers[static_cast<std::size_t>(t)];
    CHECK_FALSE((matches(p.r, kConfigPath, std::string("[log]\nlevel = \"warn\"\n")) && same_lists));
  }
  CHECK(refused > static_cast<int>(config_at) / 2);
}

namespace {

// Whether the front would take a create of `spec_text` (its bytes) under
// `config`'s record.
bool front_takes(const std::string &spec_text, const Config &config) {
  auto p = parse_record(sample_record(config));
  REQUIRE(p.rc == 0);
  return gs_front_spec_may_request(spec_text.data(), spec_text.size(), &p.r) == 0;
}

// Whether the full program would do nothing but exec the runtime for it.
bool full_program_only_execs(const std::string &spec_text, const Config &config) {
  try {
    const auto spec = create::BundleSpec::parse(spec_text, "config.json");
    if (!create::collect_requests(spec, config).empty())
      return false;
    create::refuse_limits_not_claimed(spec.process_env());
    return true;
  } catch (const std::exception &) {
    return false; // a refusal is more than an exec
  }
}

} // namespace

TEST_CASE("front: a spec it takes at create has no request, as the full program reads it", "[front]") {
  Config plain;
  Config custom;
  custom.annotation_prefixes = {"cdi.k8s.io/", "example.com/gpus."};
  custom.accept_env_requests = true;
  const std::string base =
      R"({"ociVersion":"1.0.2","process":{"args":["sh","-c","echo a=b && ls /x"],"env":["PATH=/bin","A=1"]},)"
      R"("root":{"path":"rootfs"},"annotations":{"io.kubernetes.cri.sandbox-name":"p"},)"
      R"("linux":{"devices":[{"path":"/dev/fuse","type":"c","major":10,"minor":229}],)"
      R"("resources":{"devices":[{"allow":false,"access":"rwm"}]}}})";
  for (const Config *c : {&plain, &custom}) {
    REQUIRE(full_program_only_execs(base, *c));
    CHECK(front_takes(base, *c)); // the common case is the front's
  }
  // each of these is more than an exec for the full program, or could be:
  // the front leaves all of them to it
  const auto with = [&](const std::string &from, const std::string &to) {
    std::string s = base;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  const std::vector<std::string> requests = {
      with(R"("io.kubernetes.cri.sandbox-name":"p")", R"("cdi.k8s.io/claim":"nvidia.com/gpu=0")"),
      with(R"("io.kubernetes.cri.sandbox-name":"p")", R"("cdi.k8s.io\/claim":"nvidia.com/gpu=0")"),
      with(R"("io.kubernetes.cri.sandbox-name":"p")", R"("cdi.k8s.io\u002fclaim":"nvidia.com/gpu=0")"),
      with(R"("io.kubernetes.cri.sandbox-name":"p")", R"("\u0063di.k8s.io/claim":"nvidia.com/gpu=0")"),
      with(R"("A=1")", R"("GPUSLICE_MEMORY_LIMIT=1Gi")"),
      with(R"("A=1")", R"("GPUSLICE_COMPUTE_LIMIT=50")"),
      with(R"("A=1")", R"("GPUSLICE_MEMORY_\u004cIMIT=1Gi")"),
      with(R"({"path":"/dev/fuse")", R"({"path":"nvidia.com/gpu=0")"),
      with(R"({"path":"/dev/fuse")", R"({"path" : "nvidia.com/gpu=all")"),
      with(R"({"path":"/dev/fuse")", R"({"path":"nvidia.com\/gpu=0")"),
      with(R"("A=1")", std::string("\"A=\0\"", 5)),
  };
  for (const auto &spec : requests) {
    INFO(spec);
    CHECK_FALSE(front_takes(spec, plain));
  }
  // requests only under the custom config
  const std::vector<std::string> custom_requests = {
      with(R"("io.kubernetes.cri.sandbox-name":"p")", R"("example.com/gpus.a":"nvidia.com/gpu=0")"),
      with(R"("A=1")", R"("NVIDIA_VISIBLE_DEVICES=0")"),
      with(R"("A=1")", R"("GPUSLICE_VISIBLE_DEVICES=all")"),
  };
  for (const auto &spec : custom_requests) {
    INFO(spec);
    CHECK_FALSE(front_takes(spec, custom));
    CHECK(front_takes(spec, plain) == full_program_only_execs(spec, plain));
  }
  // and in random specs, whatever the front takes the full program would
  // only exec (the converse need not hold: doubt goes to the full program)
  const std::vector<std::string> keys = {"cdi.k8s.io/x", "cdi.k8s.io", "example.com/gpus.y", "io.x/y", "path", "a\\/b"};
  const std::vector<std::string> values = {"nvidia.com/gpu=0", "GPU-1", "/dev/null", "x=y", "rootfs", "a\\u002fb",
                                           "GPUSLICE_MEMORY_LIMIT=1", "NVIDIA_VISIBLE_DEVICES=all", "\\\"path\\\""};
  std::mt19937 rng(3);
  int taken = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string ann, env, devs;
    std::set<std::string> taken_keys; // a key twice the full program refuses (runc reads the last)
    for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k)
      if (const std::string &key = keys[rng() % keys.size()]; taken_keys.insert(key).second)
        ann += std::string(ann.empty() ? "" : ",") + "\"" + key + "\":\"" + values[rng() % values.size()] + "\"";
    for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k)
      env += ",\"" + values[rng() % values.size()] + "\"";
    for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k)
      devs += std::string(devs.empty() ? "" : ",") + "{\"path\":\"" + values[rng() % values.size()] + "\"}";
    const std::string spec = R"({"process":{"args":["true"],"env":["PATH=/bin")" + env + R"(]},"root":{"path":"rootfs"},)" +
                             R"("annotations":{)" + ann + R"(},"linux":{"devices":[)" + devs + "]}}";
    for (const Config *c : {&plain, &custom}) {
      INFO(spec);
      if (front_takes(spec, *c)) {
        ++taken;
        CHECK(full_program_only_execs(spec, *c));
      }
    }
  }
  CHECK(taken > 100); // the property was tested on specs the front takes
}

TEST_CASE("front: looks for the runtime where the full program does, in the same order", "[front]") {
  const std::set<std::string> there = {"/usr/local/bin/runc", "/usr/bin/runc", "/usr/bin/crun", "/opt/rt/crun"};
  auto usable = [](const char *path, void *ctx) {
    return static_cast<const std::set<std::string> *>(ctx)->count(path) ? 1 : 0;
  };
  auto find = [&](std::vector<const char *> names, const char *path_env) {
    char out[64];
    return gs_find_runtime(names.data(), static_cast<int>(names.size()), path_env, out, sizeof out, usable,
                           const_cast<std::set<std::string> *>(&there)) == 0
               ? std::string(out)
               : std::string("(none)");
  };
  CHECK(find({"runc", "crun"}, nullptr) == "/usr/local/bin/runc"); // the default PATH
  CHECK(find({"runc", "crun"}, "") == "/usr/local/bin/runc");
  CHECK(find({"crun", "runc"}, "/usr/sbin:/usr/bin/:/usr/local/bin") == "/usr/bin/crun");
  CHECK(find({"runc"}, "bin:./usr/bin:/usr/bin") == "/usr/bin/runc"); // relative entries skipped
  CHECK(find({"/opt/rt/crun", "runc"}, "/usr/bin") == "/opt/rt/crun");
  CHECK(find({"/opt/rt/runc", "runc"}, "/usr/bin") == "/usr/bin/runc");
  CHECK(find({"youki"}, "/usr/bin") == "(none)");
  CHECK(find({"runc"}, "::/usr/bin::") == "/usr/bin/runc");
  CHECK(find({"runc"}, ("/" + std::string(70, 'x') + ":/usr/bin").c_str()) == "/usr/bin/runc"); // too long: next
  CHECK(find({}, "/usr/bin") == "(none)");

  // The full program finds the same file; never itself (gpuslice-runtime
  // installed as the runtime's name, or a link to it).
  gpuslice::testing::TempDir t;
  const std::string self = t.path() + "/gpuslice-test-rt";
  REQUIRE(::symlink(std::filesystem::read_symlink("/proc/self/exe").c_str(), self.c_str()) == 0);
  const std::string path_was = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (t.path() + ":/bin:/usr/bin").c_str(), 1);
  Config config;
  config.runtimes = {"gpuslice-test-rt", "true"};
  CHECK(find_runtime(config) == "/bin/true");
  std::filesystem::remove(self);
  std::filesystem::copy_file("/bin/true", self);
  CHECK(find_runtime(config) == self); // another program: taken
  config.runtimes = {"gpuslice-no-such-runtime"};
  CHECK_THROWS_WITH(find_runtime(config), Catch::Contains("no low-level runtime found") &&
                                              Catch::Contains("gpuslice-no-such-runtime"));
  ::setenv("PATH", path_was.c_str(), 1);
}

TEST_CASE("front: a record is written once, replaced when stale, and only root's is trusted", "[front][root]") {
  REQUIRE(::geteuid() == 0); // records are root's
  gpuslice::testing::TempDir t;
  const std::string dir = t.path() + "/records";
  const std::string config_path = t.path() + "/gpuslice.toml";
  const std::optional<std::string> text = std::string("[runtime]\nruntimes = [\"/bin/true\"]\n");
  const Config config = parse_config(*text, config_path);
  char name[17];
  gs_front_digest(config_path.data(), config_path.size(), name);
  const std::string file = dir + "/" + name;

  save_front_record(config_path, text, config, dir);
  const std::string record = fs::read_file(file);
  CHECK(record == *front_record(own_build_id(), config_path, text, config));
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  const auto written = st.st_ino;
  save_front_record(config_path, text, config, dir); // the same: left as it is
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK(st.st_ino == written);
  fs::write_file_atomic(file, "stale", 0600);
  save_front_record(config_path, text, config, dir);
  CHECK(fs::read_file(file) == record);

  // A dir another user could write: left alone, and the front would not read it.
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  std::filesystem::remove(file);
  save_front_record(config_path, text, config, dir);
  CHECK_FALSE(std::filesystem::exists(file));
}

TEST_CASE("front: records past kMaxFrontRecords (one per config path) are pruned, the one saved stays",
          "[front][root]") {
  REQUIRE(::geteuid() == 0);
  gpuslice::testing::TempDir t;
  const std::string dir = t.path() + "/records";
  auto save = [&](int i) {
    const std::string config_path = t.path() + "/config-" + std::to_string(i) + ".toml";
    save_front_record(config_path, std::nullopt, Config{}, dir);
    char name[17];
    gs_front_digest(config_path.data(), config_path.size(), name);
    return dir + "/" + name;
  };
  auto count = [&] { return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), {})); };
  // Older by a second each (a coarse clock would give a quick loop's writes one mtime).
  const time_t now = ::time(nullptr);
  for (int i = 0; i < static_cast<int>(kMaxFrontRecords); ++i) {
    const timespec times[2] = {{now - 1000 + i, 0}, {now - 1000 + i, 0}};
    REQUIRE(::utimensat(AT_FDCWD, save(i).c_str(), times, 0) == 0);
  }
  CHECK(count() == kMaxFrontRecords);
  const std::string last = save(static_cast<int>(kMaxFrontRecords));
  CHECK(count() == kMaxFrontRecords * 3 / 4);
  CHECK(std::filesystem::exists(last));
}

TEST_CASE("front: record names are FNV-1a 64 of the config path", "[front]") {
  char name[17];
  gs_front_digest("", 0, name);
  CHECK(std::string(name) == "cbf29ce484222325");
  gs_front_digest("a", 1, name);
  CHECK(std::string(name) == "af63dc4c8601ec8c");
}

TEST_CASE("build id: read from a program's own headers, as the front reads it", "[front]") {
  // This very binary's program headers: the id readelf shows.
  const auto *phdr = reinterpret_cast<const Elf64_Phdr *>(::getauxval(AT_PHDR));
  char hex[2 * GS_MAX_BUILD_ID + 1];
  const std::size_t n = gs_build_id(phdr, ::getauxval(AT_PHNUM), hex);
  REQUIRE(n >= 16);
  CHECK(std::string(hex) == own_build_id());

  // Made-up notes: the GNU build id among others, a truncated one, none.
  struct Notes {
    Elf64_Phdr phdr[3];
    alignas(4) unsigned char bytes[96];
  } notes{};
  std::size_t at = 0;
  auto note = [&](const char *name, std::uint32_t namesz, std::uint32_t type, std::vector<unsigned char> desc) {
    const Elf64_Nhdr h{namesz, static_cast<std::uint32_t>(desc.size()), type};
    std::memcpy(notes.bytes + at, &h, sizeof h);
    at += sizeof h;
    std::memcpy(notes.bytes + at, name, namesz);
    at += (namesz + 3) & ~3u;
    std::memcpy(notes.bytes + at, desc.data(), desc.size());
    at += (desc.size() + 3) & ~3u;
  };
  note("GNU", 4, NT_GNU_ABI_TAG, {0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0});
  note("XYZ", 4, NT_GNU_BUILD_ID, {1, 2});
  note("GNU", 4, NT_GNU_BUILD_ID, {0xde, 0xad, 0x0b, 0xef});
  // Loaded at a bias, as a PIE is: its PT_PHDR says where.
  const unsigned long bias = reinterpret_cast<unsigned long>(notes.bytes) - 0x1000;
  notes.phdr[0].p_type = PT_PHDR;
  notes.phdr[0].p_vaddr = reinterpret_cast<unsigned long>(notes.phdr) - bias;
  notes.phdr[1].p_type = PT_LOAD;
  notes.phdr[2].p_type = PT_NOTE;
  notes.phdr[2].p_vaddr = 0x1000;
  notes.phdr[2].p_memsz = at;
  CHECK(gs_build_id(notes.phdr, 3, hex) == 8);
  CHECK(std::string(hex) == "dead0bef");
  notes.phdr[2].p_memsz = at - 1; // its descriptor cut short: not read past
  CHECK(gs_build_id(notes.phdr, 3, hex) == 0);
  CHECK(std::string(hex).empty());
  CHECK(gs_build_id(notes.phdr, 2, hex) == 0); // no note segment
}
