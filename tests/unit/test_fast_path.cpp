// gpuslice-runtime's fast path (shim/fast_path/): its C decisions agree with
// the full program's C++ ones, and it reads exactly the records the full
// program writes, nothing else.
#include "gpuslice/common/fs.hpp"
#include "gpuslice/shim/bundle.hpp"
#include "gpuslice/shim/command_line.hpp"
#include "gpuslice/shim/exec_env.hpp"
#include "gpuslice/shim/fast_path_record.hpp"
#include "gpuslice/shim/monitor_start.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "../../shim/fast_path/fast_path.h"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <set>

using namespace gpuslice;
using namespace gpuslice::shim;

namespace {

FastPathFacts sample_facts() {
  FastPathFacts f;
  f.config_path = "/etc/gpuslice/config.toml";
  f.config_text = "[runtime]\nruntimes = [\"runc\"]\n";
  f.path_env = "/usr/sbin:/usr/bin";
  f.runtime = "/usr/sbin/runc";
  f.runtime_dev_major = 259;
  f.runtime_dev_minor = 2;
  f.runtime_ino = 1234567;
  f.state_dir = "/run/gpuslice/";
  return f;
}

struct Parsed {
  std::string buf; // the record parsed in place: r points into it
  gpuslice_fp_record r{};
  int rc = -1;
};

Parsed parse_record(const std::string &bytes) {
  Parsed p;
  p.buf = bytes;
  p.rc = gpuslice_fp_parse_record(p.buf.data(), p.buf.size(), &p.r);
  return p;
}

bool matches(const gpuslice_fp_record &r, const std::string &config_path, const std::optional<std::string> &config,
             const char *path_env) {
  return gpuslice_fp_record_matches(&r, config_path.c_str(), config ? config->data() : nullptr,
                                    config ? config->size() : 0, path_env) != 0;
}

} // namespace

TEST_CASE("fast path: finds the verb where the full parser does", "[fast-path]") {
  const std::vector<std::vector<const char *>> lines = {
      {"--root", "/run/containerd/runc/k8s.io", "--log", "/l", "--log-format", "json", "start", "c1"},
      {"--root=/r", "--systemd-cgroup", "delete", "--force", "c1"},
      {"--debug", "--rootless", "true", "state", "c1"},
      {"--criu", "create", "kill", "c1"}, // "create" is --criu's value
      {"--cgroup-manager", "systemd", "--log-level=debug", "--debug-log", "run", "ps", "c1"},
      {"--version"},
      {"--root"},
      {},
      {"", "start"},
      {"-", "state"},
  };
  for (auto line : lines) {
    line.insert(line.begin(), "gpuslice-runtime");
    const auto cl = parse_command_line(static_cast<int>(line.size()), line.data());
    const int verb = gpuslice_fp_find_verb(static_cast<int>(line.size()), const_cast<char *const *>(line.data()));
    INFO((line.size() > 1 ? line[1] : "(nothing)"));
    if (cl.verb.empty() && verb == static_cast<int>(line.size()))
      continue; // neither found one
    REQUIRE(verb < static_cast<int>(line.size()));
    CHECK(std::string(line[static_cast<std::size_t>(verb)]) == cl.verb);
    CHECK(static_cast<std::size_t>(verb) == cl.verb_index + 1);
  }
}

TEST_CASE("fast path: a verb is left to the full program whenever it does more than exec", "[fast-path]") {
  for (const char *verb : {"create", "run", "start", "state", "delete", "exec", "ps", "pause", "resume", "kill",
                           "list", "events", "update", "checkpoint", "restore", "features", "spec", "", "Start"}) {
    CommandLine cl;
    cl.verb = verb;
    const auto kind = gpuslice_fp_verb_kind(verb);
    INFO(verb);
    CHECK((kind == GPUSLICE_FP_BUNDLE) == cl.edits_bundle());
    // exec also adds the container's CDI env (exec_env.hpp)
    CHECK((kind == GPUSLICE_FP_STATEFUL) == (cl.deletes() || cl.verb == "exec"));
    CHECK((kind == GPUSLICE_FP_MONITORED) == (cl.checks_monitor() && cl.verb != "exec"));
  }
  CHECK(std::string(GPUSLICE_FP_MONITOR_ARGS) == kMonitorArgsFile);
}

TEST_CASE("fast path: the same container ids as the state dir's", "[fast-path]") {
  std::vector<std::string> ids = {"", ".", "..", ".x", "a", "A-b_c.d", "a/b", "a b", "ü", std::string(255, 'x'),
                                  std::string(256, 'x'), "x\x7f", "x.", "-x"};
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 6, '\0');
    for (auto &c : s)
      c = static_cast<char>(1 + rng() % 127);
    ids.push_back(s);
  }
  for (const auto &id : ids) {
    INFO(id);
    CHECK((gpuslice_fp_safe_container_id(id.c_str()) != 0) == state::is_safe_container_id(id));
  }
}

TEST_CASE("fast path: record names are FNV-1a 64 of the config path", "[fast-path]") {
  char name[17];
  gpuslice_fp_record_name("", name);
  CHECK(std::string(name) == "cbf29ce484222325");
  gpuslice_fp_record_name("a", name);
  CHECK(std::string(name) == "af63dc4c8601ec8c");
}

TEST_CASE("fast path: reads back the record the full program writes", "[fast-path]") {
  const auto facts = sample_facts();
  const auto record = fast_path_record(facts);
  REQUIRE(record);
  auto p = parse_record(*record);
  REQUIRE(p.rc == 0);
  CHECK(std::string(p.r.config_path) == facts.config_path);
  CHECK(std::string(p.r.runtime) == facts.runtime);
  CHECK(std::string(p.r.state_dir) == "/run/gpuslice"); // cleaned, as container_dir_exists uses it
  CHECK(std::string(p.r.path_env) == *facts.path_env);
  CHECK(p.r.runtime_dev_major == 259);
  CHECK(p.r.runtime_dev_minor == 2);
  CHECK(p.r.runtime_ino == 1234567);
  CHECK(p.r.config_absent == 0);
  CHECK(std::string(p.r.config, p.r.config_size) == *facts.config_text);

  CHECK(matches(p.r, facts.config_path, facts.config_text, "/usr/sbin:/usr/bin"));
  // Anything else the full program would read differently: no match.
  CHECK_FALSE(matches(p.r, "/etc/gpuslice/other.toml", facts.config_text, "/usr/sbin:/usr/bin"));
  CHECK_FALSE(matches(p.r, facts.config_path, *facts.config_text + " ", "/usr/sbin:/usr/bin"));
  auto changed = *facts.config_text;
  changed[3] = 'X';
  CHECK_FALSE(matches(p.r, facts.config_path, changed, "/usr/sbin:/usr/bin"));
  CHECK_FALSE(matches(p.r, facts.config_path, std::nullopt, "/usr/sbin:/usr/bin"));
  CHECK_FALSE(matches(p.r, facts.config_path, facts.config_text, "/usr/bin"));
  CHECK_FALSE(matches(p.r, facts.config_path, facts.config_text, nullptr));
}

TEST_CASE("fast path: no config file and no PATH are recorded as such", "[fast-path]") {
  auto facts = sample_facts();
  facts.config_text.reset();
  facts.path_env.reset();
  auto p = parse_record(*fast_path_record(facts));
  REQUIRE(p.rc == 0);
  CHECK(p.r.config_absent == 1);
  CHECK(p.r.path_env == nullptr);
  CHECK(matches(p.r, facts.config_path, std::nullopt, nullptr));
  CHECK_FALSE(matches(p.r, facts.config_path, std::string(), nullptr)); // an empty file is not no file
  CHECK_FALSE(matches(p.r, facts.config_path, std::nullopt, ""));      // nor an empty PATH no PATH

  facts.path_env = "";
  p = parse_record(*fast_path_record(facts));
  REQUIRE(p.rc == 0);
  CHECK(matches(p.r, facts.config_path, std::nullopt, ""));
  CHECK_FALSE(matches(p.r, facts.config_path, std::nullopt, nullptr));
}

TEST_CASE("fast path: no record for what it could not compare or use", "[fast-path]") {
  const std::vector<std::pair<const char *, void (*)(FastPathFacts &)>> unusable = {
      {"relative state dir", [](FastPathFacts &f) { f.state_dir = "run/gpuslice"; }},
      {"relative runtime", [](FastPathFacts &f) { f.runtime = "runc"; }},
      {"relative config path", [](FastPathFacts &f) { f.config_path = "config.toml"; }},
      {"a newline in PATH", [](FastPathFacts &f) { f.path_env = "/bin\nruntime /tmp/evil"; }},
      {"a newline in the state dir", [](FastPathFacts &f) { f.state_dir = "/run/a\nb"; }},
      {"a config too large", [](FastPathFacts &f) { f.config_text = std::string(GPUSLICE_FAST_PATH_MAX_CONFIG + 1, '#'); }},
  };
  for (const auto &[what, change] : unusable) {
    auto f = sample_facts();
    change(f);
    INFO(what);
    CHECK_FALSE(fast_path_record(f));
  }
  auto f = sample_facts();
  f.config_text = std::string(GPUSLICE_FAST_PATH_MAX_CONFIG, '#');
  CHECK(fast_path_record(f));
}

TEST_CASE("fast path: any record not exactly as written is refused", "[fast-path]") {
  const std::string good = *fast_path_record(sample_facts());
  REQUIRE(parse_record(good).rc == 0);
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("cut at " << n);
    CHECK(parse_record(good.substr(0, n)).rc == -1);
  }
  CHECK(parse_record(good + "x").rc == -1);
  const auto replaced = [&](const std::string &from, const std::string &to) {
    std::string s = good;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  CHECK(parse_record(replaced("fast path 1", "fast path 2")).rc == -1);
  CHECK(parse_record(replaced("runtime-id 259 ", "runtime-id 0259 ")).rc == -1);
  CHECK(parse_record(replaced("runtime-id 259 ", "runtime-id -259 ")).rc == -1);
  CHECK(parse_record(replaced("runtime-id 259 2 ", "runtime-id 259  2 ")).rc == -1);
  CHECK(parse_record(replaced("1234567", "18446744073709551616")).rc == -1); // 2^64
  CHECK(parse_record(replaced("1234567", "18446744073709551615")).rc == 0);
  CHECK(parse_record(replaced("runtime /usr", "runtime usr")).rc == -1);
  CHECK(parse_record(replaced("state-dir /", "state-dir ")).rc == -1);
  CHECK(parse_record(replaced("config /", "config ")).rc == -1);
  CHECK(parse_record(replaced("PATH=", "PATH ")).rc == -1);
  CHECK(parse_record(replaced("config-bytes 30", "config-bytes 29")).rc == -1);
  CHECK(parse_record(replaced("config-bytes 30", "config-bytes absent")).rc == -1);
  std::mt19937 rng(11);
  for (int i = 0; i < 5000; ++i) { // never a crash or a read past the end
    std::string s = good;
    for (int k = 0; k < 3; ++k)
      s[rng() % s.size()] = static_cast<char>(rng() % 256);
    s.resize(rng() % (s.size() + 1));
    (void)parse_record(s);
  }
}

TEST_CASE("fast path: a delete's plain state files are all a container without limits has", "[fast-path]") {
  testing::TempDir tmp;
  const std::string state_dir = tmp.path() + "/state";
  state::record_init(state_dir, "plain", static_cast<int>(::getpid()));
  const std::string dir = state_dir + "/containers/plain";
  for (const char *name : {kCdiEnvFile, kInitPidFile})
    fs::write_file_atomic(dir + "/" + name, "x", 0444, fs::Durability::atomic);
  std::set<std::string> names;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    names.insert(e.path().filename().string());
  CHECK(names.size() == 5);
  for (const auto &name : names) {
    INFO(name);
    CHECK(gpuslice_fp_plain_state_file(name.c_str()));
  }
  std::set<std::string> listed;
  for (const char *f = gpuslice_fp_plain_state_files(); *f; f += std::strlen(f) + 1)
    listed.insert(f);
  CHECK(listed == names);
  // what a container with limits or a monitor has besides: the full program's
  for (const char *name : {kMonitorArgsFile, kRegionIdFile, kLabelsFile, state::kMonitorRecord, "limits", "", ".",
                           "init.tmp", ".init.tmp", "format/"})
    CHECK_FALSE(gpuslice_fp_plain_state_file(name));
  CHECK(std::string(GPUSLICE_FP_INIT_RECORD) == state::kInitRecord);
  CHECK(std::string(GPUSLICE_FP_MONITOR_RECORD) == state::kMonitorRecord);
}

TEST_CASE("fast path: reads the init and monitor records as the state dir does", "[fast-path]") {
  auto c_parse = [](const std::string &text) -> std::optional<state::ProcessId> {
    unsigned long long pid = 0, start = 0;
    if (gpuslice_fp_parse_process_record(text.data(), text.size(), &pid, &start) != 0)
      return std::nullopt;
    return state::ProcessId{static_cast<int>(pid), start};
  };
  for (const state::ProcessId p : {state::ProcessId{1, 0}, state::ProcessId{4194304, 123456789},
                                   state::ProcessId{2147483647, ~0ull}}) {
    const std::string text = state::to_text(p) + "\n"; // as record_init writes it
    CHECK(c_parse(text) == p);
  }
  // refused: what state::parse_process_id refuses, and anything not written
  // exactly so (the full program then decides)
  for (const std::string &bad : std::vector<std::string>{"", "\n", "0 5\n", "-1 5\n", "1 5", "1  5\n", " 1 5\n", "1 5\n\n", "1 5 6\n",
                                "01 5\n", "2147483648 5\n", "1 18446744073709551616\n", "1 x\n", std::string("1 5\0\n", 5)})
    CHECK_FALSE(c_parse(bad));
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    std::string text = state::to_text({static_cast<int>(rng() % 100000 + 1), rng()}) + "\n";
    text[rng() % text.size()] = static_cast<char>(rng() % 256);
    const auto c = c_parse(text);
    if (c) { // whatever the C side takes, the C++ side reads the same
      std::string_view v(text);
      v.remove_suffix(1);
      CHECK(state::parse_process_id(v) == c);
    }
  }
}

TEST_CASE("fast path: reads /proc/PID/stat as the state dir does", "[fast-path]") {
  const std::string self = fs::read_file("/proc/self/stat", 4096);
  unsigned long long start = 0;
  REQUIRE(gpuslice_fp_proc_stat_start(self.data(), self.size(), &start) == 1);
  CHECK(state::process_id(static_cast<int>(::getpid()))->start_time == start);
  const std::string tail = " 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1 1\n";
  const std::string stat = "42 (odd) (name) S" + tail;
  CHECK(gpuslice_fp_proc_stat_start(stat.data(), stat.size(), &start) == 1);
  CHECK(start == 987654);
  for (const char *ended : {"42 (z) Z", "42 (x) X"}) {
    const std::string s = ended + tail;
    CHECK(gpuslice_fp_proc_stat_start(s.data(), s.size(), &start) == 0);
  }
  for (const std::string &bad : {std::string(""), std::string("42 no paren S") + tail, std::string("42 (short) S 1 2\n"),
                                std::string("42 (n) S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98x 1\n")})
    CHECK(gpuslice_fp_proc_stat_start(bad.data(), bad.size(), &start) == -1);
}
