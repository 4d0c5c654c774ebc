// gpuslice-runtime's fast path (shim/fast_path/): its C decisions agree with
// the full program's C++ ones, and it reads exactly the records the full
// program writes, nothing else.
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/shim/bundle.hpp"
#include "gpuslice/shim/command_line.hpp"
#include "gpuslice/shim/exec_env.hpp"
#include "gpuslice/shim/fast_path_record.hpp"
#include "gpuslice/shim/monitor_start.hpp"
#include "gpuslice/shim/requests.hpp"
#include "gpuslice/shim/sharing.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "../../shim/fast_path/build_id.h"
#include "../../shim/fast_path/fast_path.h"
#include "../../shim/fast_path/startup_pages.h"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <elf.h>
#include <sys/auxv.h>

#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <set>

using namespace gpuslice;
using namespace gpuslice::shim;

namespace {

// /bin/true as locate_runtime finds it named absolutely.
FoundRuntime bin_true() {
  Config config;
  config.runtimes = {"/bin/true"};
  return locate_runtime(config);
}

FastPathFacts sample_facts() {
  FastPathFacts f;
  f.writer = "0123abcd";
  f.config_path = "/etc/gpuslice/config.toml";
  f.config_text = "[runtime]\nruntimes = [\"runc\"]\n";
  f.path_env = "/usr/sbin:/usr/bin";
  f.runtime.path = "/usr/sbin/runc";
  f.runtime.dev_major = 259;
  f.runtime.dev_minor = 2;
  f.runtime.ino = 1234567;
  f.runtime.searched_before = {{"/usr/local/sbin", true, 1700000000, 5}, {"/usr/local/bin", false, 0, 0}};
  f.state_dir = "/run/gpuslice/";
  f.create_triggers = std::vector<std::string>{"cdi.k8s.io/", "GPUSLICE_MEMORY_LIMIT"};
  f.config_parsed = std::string("parsed\n\0config-bytes 1\n", 24); // bytes the entry skips, lines or not
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
             const char *path_env, const char *build_id = "0123abcd") {
  return gpuslice_fp_record_matches(&r, build_id, config_path.c_str(), config ? config->data() : nullptr,
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
  CHECK(std::string(p.r.runtime) == facts.runtime.path);
  CHECK(std::string(p.r.state_dir) == "/run/gpuslice"); // cleaned, as container_dir_exists uses it
  CHECK(std::string(p.r.path_env) == *facts.path_env);
  CHECK(p.r.runtime_dev_major == 259);
  CHECK(p.r.runtime_dev_minor == 2);
  CHECK(p.r.runtime_ino == 1234567);
  REQUIRE(p.r.searched_dirs == 2);
  CHECK(std::string(p.r.searched_dir[0]) == "/usr/local/sbin");
  CHECK(p.r.searched_dir_absent[0] == 0);
  CHECK(p.r.searched_dir_sec[0] == 1700000000);
  CHECK(p.r.searched_dir_nsec[0] == 5);
  CHECK(std::string(p.r.searched_dir[1]) == "/usr/local/bin");
  CHECK(p.r.searched_dir_absent[1] == 1);
  CHECK(p.r.config_absent == 0);
  CHECK(std::string(p.r.config, p.r.config_size) == *facts.config_text);
  REQUIRE(p.r.create_triggers == 2);
  CHECK(std::string(p.r.create_trigger[0]) == "cdi.k8s.io/");
  CHECK(std::string(p.r.create_trigger[1]) == "GPUSLICE_MEMORY_LIMIT");
  REQUIRE(p.r.config_parsed != nullptr);
  CHECK(std::string(p.r.config_parsed, p.r.config_parsed_size) == *facts.config_parsed);

  CHECK(std::string(p.r.writer) == "0123abcd");
  CHECK(matches(p.r, facts.config_path, facts.config_text, "/usr/sbin:/usr/bin"));
  // Another build's record (an upgrade's old or new binary), or a binary
  // without a build id: no match, whatever else matches.
  CHECK_FALSE(matches(p.r, facts.config_path, facts.config_text, "/usr/sbin:/usr/bin", "0123abce"));
  CHECK_FALSE(matches(p.r, facts.config_path, facts.config_text, "/usr/sbin:/usr/bin", "0123abcd0"));
  CHECK_FALSE(matches(p.r, facts.config_path, facts.config_text, "/usr/sbin:/usr/bin", ""));
  CHECK_FALSE(matches(p.r, facts.config_path, facts.config_text, "/usr/sbin:/usr/bin", nullptr));
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
      {"no build id", [](FastPathFacts &f) { f.writer.clear(); }},
      {"relative state dir", [](FastPathFacts &f) { f.state_dir = "run/gpuslice"; }},
      {"a relative searched dir", [](FastPathFacts &f) { f.runtime.searched_before[0].path = "usr/bin"; }},
      {"a newline in a searched dir", [](FastPathFacts &f) { f.runtime.searched_before[0].path = "/a\nb"; }},
      {"too many searched dirs",
       [](FastPathFacts &f) { f.runtime.searched_before.resize(GPUSLICE_FP_MAX_SEARCHED_DIRS + 1, {"/d", false, 0, 0}); }},
      {"relative runtime", [](FastPathFacts &f) { f.runtime.path = "runc"; }},
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
  // triggers it could not write: a record all the same, with no create on the fast path
  const std::vector<std::pair<const char *, std::optional<std::vector<std::string>>>> no_create = {
      {"none given", std::nullopt},
      {"an empty one", std::vector<std::string>{"cdi.k8s.io/", ""}},
      {"a newline in one", std::vector<std::string>{"cdi.k8s.io/\nGPUSLICE_"}},
      {"too many", std::vector<std::string>(GPUSLICE_FP_MAX_CREATE_TRIGGERS + 1, "x")},
  };
  // The largest record the entry reads, to the byte: a parsed config that
  // would make it larger is left out, and a record larger all the same
  // (a long PATH) is none.
  f = sample_facts();
  f.config_text = std::string(GPUSLICE_FAST_PATH_MAX_CONFIG, '#');
  f.config_parsed.reset();
  const std::size_t without = fast_path_record(f)->size(); // with "config-parsed none\n"
  const std::size_t room = GPUSLICE_FAST_PATH_MAX_RECORD - (without - std::string("config-parsed none\n").size());
  const std::size_t fits = room - std::string("config-parsed 1234\n").size();
  REQUIRE(std::to_string(fits).size() == 4);
  f.config_parsed = std::string(fits, 'p');
  auto largest = fast_path_record(f);
  REQUIRE(largest);
  CHECK(largest->size() == GPUSLICE_FAST_PATH_MAX_RECORD);
  CHECK(largest->find("config-parsed " + std::to_string(fits) + "\n") != std::string::npos);
  CHECK(parse_record(*largest).r.config_parsed_size == fits);
  f.config_parsed = std::string(fits + 1, 'p');
  largest = fast_path_record(f);
  REQUIRE(largest);
  CHECK(largest->find("config-parsed none\n") != std::string::npos);
  CHECK(parse_record(*largest).rc == 0);
  f.config_parsed.reset();
  *f.path_env += std::string(GPUSLICE_FAST_PATH_MAX_RECORD + 1 - without, 'x');
  CHECK_FALSE(fast_path_record(f)); // one byte too many
  f.path_env->pop_back();
  CHECK(fast_path_record(f)->size() == GPUSLICE_FAST_PATH_MAX_RECORD);
  for (const auto &[what, triggers] : no_create) {
    INFO(what);
    f = sample_facts();
    f.create_triggers = triggers;
    const auto p = parse_record(*fast_path_record(f));
    CHECK(p.rc == 0);
    CHECK(p.r.create_triggers == -1);
  }
}

TEST_CASE("fast path: the parsed config is taken back only from this very build's snapshot", "[fast-path]") {
  const Config c = parse_config("[runtime]\nstate-dir = \"/run/x\"\n[log]\nlevel = \"warn\"\n", "x");
  const auto snapshot = config_snapshot(c, "0123abcd");
  REQUIRE(snapshot);
  CHECK(config_from_snapshot(*snapshot, "0123abcd") == c);
  CHECK_FALSE(config_from_snapshot(*snapshot, "0123abce")); // another build's
  CHECK_FALSE(config_from_snapshot(*snapshot, ""));
  CHECK_FALSE(config_snapshot(c, "")); // no build id: nothing another build could not have written
  CHECK_FALSE(config_from_snapshot(snapshot->substr(0, snapshot->size() - 1), "0123abcd"));
  CHECK_FALSE(config_from_snapshot(*snapshot + "x", "0123abcd"));
  CHECK_FALSE(config_from_snapshot("", "0123abcd"));
  // The running binary's own id by default.
  REQUIRE_FALSE(own_build_id().empty());
  CHECK(config_from_snapshot(*config_snapshot(c)) == c);
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
  CHECK(parse_record(replaced("fast path 4", "fast path 3")).rc == -1); // an older gpuslice's
  CHECK(parse_record(replaced("writer 0123abcd\n", "writer \n")).rc == -1);
  CHECK(parse_record(replaced("writer 0123abcd\n", "")).rc == -1);
  CHECK(parse_record(replaced("create-triggers 2\n", "create-triggers 3\n")).rc == -1);
  CHECK(parse_record(replaced("create-triggers 2\n", "create-triggers 02\n")).rc == -1);
  CHECK(parse_record(replaced("create-triggers 2\ncdi.k8s.io/\n", "create-triggers 2\n\n")).rc == -1);
  CHECK(parse_record(replaced("create-triggers 2\ncdi.k8s.io/\nGPUSLICE_MEMORY_LIMIT\n", "create-triggers 0\n")).rc == 0);
  CHECK(parse_record(replaced("create-triggers 2\ncdi.k8s.io/\nGPUSLICE_MEMORY_LIMIT\n", "create-triggers 17\n")).rc == -1);
  CHECK(parse_record(replaced("create-triggers 2\ncdi.k8s.io/\nGPUSLICE_MEMORY_LIMIT\n", "create-triggers none\n")).rc == 0);
  CHECK(parse_record(replaced("searched-before 2\n", "searched-before 3\n")).rc == -1);
  CHECK(parse_record(replaced("1700000000.5 /usr", "1700000000.05 /usr")).rc == -1);
  CHECK(parse_record(replaced("1700000000.5 /usr", "1700000000.5  /usr")).rc == -1);
  CHECK(parse_record(replaced("1700000000.5 /usr", "1700000000 /usr")).rc == -1);
  CHECK(parse_record(replaced("absent /usr/local/bin", "absent usr/local/bin")).rc == -1);
  CHECK(parse_record(replaced("searched-before 2\n1700000000.5 /usr/local/sbin\nabsent /usr/local/bin\n",
                              "searched-before 0\n")).rc == 0);
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
  CHECK(parse_record(replaced("config-parsed 24\n", "config-parsed 23\n")).rc == -1);
  CHECK(parse_record(replaced("config-parsed 24\n", "config-parsed 25\n")).rc == -1);
  CHECK(parse_record(replaced("config-parsed 24\n", "config-parsed 024\n")).rc == -1);
  CHECK(parse_record(replaced("config-parsed 24\n", "config-parsed 99999\n")).rc == -1);
  CHECK(parse_record(replaced("config-parsed 24\n" + *sample_facts().config_parsed, "config-parsed 0\n")).rc == -1);
  const auto none = parse_record(replaced("config-parsed 24\n" + *sample_facts().config_parsed, "config-parsed none\n"));
  CHECK(none.rc == 0);
  CHECK(none.r.config_parsed == nullptr);
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
  for (const char *name : {kCdiEnvFile, kInitPidFile, state::kInitPidFileRecord})
    fs::write_file_atomic(dir + "/" + name, "x", 0444, fs::Durability::atomic);
  std::set<std::string> names;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    names.insert(e.path().filename().string());
  CHECK(names.size() == 6);
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
  CHECK(std::string(GPUSLICE_FP_CREATOR_RECORD) == state::kCreatorRecord);
  CHECK(std::string(GPUSLICE_FP_INIT_RECORD) == state::kInitRecord);
  CHECK(std::string(GPUSLICE_FP_MONITOR_RECORD) == state::kMonitorRecord);
  CHECK(std::string(GPUSLICE_FP_INIT_PID_FILE_RECORD) == state::kInitPidFileRecord);
}

TEST_CASE("fast path: reads a pid file and its record as the state dir does", "[fast-path]") {
  auto c_pid = [](const std::string &text) -> std::optional<int> {
    unsigned long long pid = 0;
    if (gpuslice_fp_parse_pid(text.data(), text.size(), &pid) != 0)
      return std::nullopt;
    return static_cast<int>(pid);
  };
  for (const std::string &text : std::vector<std::string>{
           "1", "42\n", "42 \n", "42\n\n", "0042", "2147483647", "2147483648", "0", "", "\n", " 42", "-42", "+42",
           "4 2", "42x", "x", "99999999999999999999", std::string("4\0", 2), "42\t"}) {
    INFO(text);
    CHECK(c_pid(text) == parse_pid_text(text));
  }
  CHECK(c_pid("42 \n") == 42);
  CHECK_FALSE(c_pid("2147483648"));

  auto c_record = [](std::string text) -> std::optional<std::string> {
    if (gpuslice_fp_parse_pid_file_record(text.data(), text.size()) != 0)
      return std::nullopt;
    return std::string(text.c_str());
  };
  CHECK(c_record("/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/init.pid\n") ==
        "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/init.pid");
  CHECK(c_record("/\n") == "/");
  for (const std::string &bad : std::vector<std::string>{"", "\n", "init.pid\n", "/a", "/a\n\n", "/a\nb\n",
                                                         std::string("/a\0b\n", 5)}) {
    INFO(bad);
    CHECK_FALSE(c_record(bad));
  }
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

TEST_CASE("fast path: a create's bundle is the one the full parser finds", "[fast-path]") {
  using Args = std::vector<std::string>;
  const std::vector<std::pair<Args, std::optional<std::string>>> cases = {
      // bundle found (std::nullopt: refused, the full program reads it)
      {{"create", "c1"}, std::string()},
      {{"create", "--bundle", "/b", "c1"}, std::string("/b")},
      {{"create", "-b", "/b", "--pid-file", "/p", "c1"}, std::string("/b")},
      {{"create", "--bundle=/b", "--console-socket=/s", "--no-pivot", "c1"}, std::string("/b")},
      {{"create", "-b=/a", "--bundle", "/b", "--preserve-fds", "2", "--no-new-keyring", "c1"}, std::string("/b")},
      {{"run", "-d", "--bundle", "/b", "--keep", "--no-subreaper", "c1"}, std::string("/b")},
      {{"create", "c1", "--bundle", "/b"}, std::string("/b")},
      // an empty bundle is the current directory, for runc and the full program: never "" + "/config.json"
      {{"create", "--bundle=", "c1"}, std::string()},
      {{"create", "-b", "/b", "-b", "", "c1"}, std::string()},
      {{"create", "--config", "/other.json", "c1"}, std::nullopt}, // crun's: not known here
      {{"create", "--detach=true", "c1"}, std::nullopt},
      {{"create", "c1", "c2"}, std::nullopt},
      {{"create", "--bundle", "/b"}, std::nullopt},
      {{"create", "c1", "--bundle"}, std::nullopt},
      {{"create", "-x", "c1"}, std::nullopt},
  };
  for (const auto &[verb_args, bundle] : cases) {
    Args args{"gpuslice-runtime", "--root", "/run/runc", "--log=/l"};
    args.insert(args.end(), verb_args.begin(), verb_args.end());
    std::vector<char *> argv;
    for (auto &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    INFO(args.size() << " args, verb " << verb_args[0] << " " << (verb_args.size() > 1 ? verb_args[1] : ""));
    const int verb = gpuslice_fp_find_verb(static_cast<int>(args.size()), argv.data());
    const char *found = nullptr;
    const int rc = gpuslice_fp_create_bundle(static_cast<int>(args.size()), argv.data(), verb, &found);
    CHECK((rc == 0) == bundle.has_value());
    if (rc != 0)
      continue;
    CHECK(std::string(found ? found : "") == *bundle);
    CHECK((found == nullptr) == bundle->empty()); // the current directory as NULL, never as ""
    const auto cl = parse_command_line(static_cast<int>(args.size()), argv.data());
    CHECK(cl.bundle == *bundle); // what the full program would read
    CHECK(cl.container_id == "c1");
  }
}

namespace {

// Whether the entry would take a create of `spec_text` (its bytes) on the
// fast path under `config`'s record.
bool entry_takes(const std::string &spec_text, const Config &config) {
  auto facts = sample_facts();
  facts.create_triggers = create_triggers(config);
  auto p = parse_record(*fast_path_record(facts));
  REQUIRE(p.rc == 0);
  return gpuslice_fp_spec_may_request(spec_text.data(), spec_text.size(), &p.r) == 0;
}

// Whether the full program would do nothing but exec the runtime for it.
bool full_program_only_execs(const std::string &spec_text, const Config &config) {
  try {
    auto spec = cdi::OciSpec::parse(spec_text);
    if (!collect_requests(spec, config).empty())
      return false;
    refuse_limits_not_claimed(spec);
    return true;
  } catch (const std::exception &) {
    return false; // a refusal is more than an exec
  }
}

} // namespace

TEST_CASE("fast path: a spec it takes at create has no request, as the full program reads it", "[fast-path]") {
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
    CHECK(entry_takes(base, *c)); // the common case is the fast path's
  }
  // each of these is more than an exec for the full program, or could be:
  // the entry leaves all of them to it
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
    CHECK_FALSE(entry_takes(spec, plain));
  }
  // requests only under the custom config
  const std::vector<std::string> custom_requests = {
      with(R"("io.kubernetes.cri.sandbox-name":"p")", R"("example.com/gpus.a":"nvidia.com/gpu=0")"),
      with(R"("A=1")", R"("NVIDIA_VISIBLE_DEVICES=0")"),
      with(R"("A=1")", R"("GPUSLICE_VISIBLE_DEVICES=all")"),
  };
  for (const auto &spec : custom_requests) {
    INFO(spec);
    CHECK_FALSE(entry_takes(spec, custom));
    CHECK(entry_takes(spec, plain) == full_program_only_execs(spec, plain));
  }
  // and in random specs, whatever the entry takes the full program would
  // only exec (the converse need not hold: doubt goes to the full program)
  const std::vector<std::string> keys = {"cdi.k8s.io/x", "cdi.k8s.io", "example.com/gpus.y", "io.x/y", "path", "a\\/b"};
  const std::vector<std::string> values = {"nvidia.com/gpu=0", "GPU-1", "/dev/null", "x=y", "rootfs", "a\\u002fb",
                                           "GPUSLICE_MEMORY_LIMIT=1", "NVIDIA_VISIBLE_DEVICES=all", "\\\"path\\\""};
  std::mt19937 rng(3);
  int taken = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string ann, env, devs;
    for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k)
      ann += std::string(ann.empty() ? "" : ",") + "\"" + keys[rng() % keys.size()] + "\":\"" +
             values[rng() % values.size()] + "\"";
    for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k)
      env += ",\"" + values[rng() % values.size()] + "\"";
    for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k)
      devs += std::string(devs.empty() ? "" : ",") + "{\"path\":\"" + values[rng() % values.size()] + "\"}";
    const std::string spec = R"({"process":{"args":["true"],"env":["PATH=/bin")" + env + R"(]},"root":{"path":"rootfs"},)" +
                             R"("annotations":{)" + ann + R"(},"linux":{"devices":[)" + devs + "]}}";
    for (const Config *c : {&plain, &custom}) {
      INFO(spec);
      if (entry_takes(spec, *c)) {
        ++taken;
        CHECK(full_program_only_execs(spec, *c));
      }
    }
  }
  CHECK(taken > 100); // the property was tested on specs the entry takes
}

TEST_CASE("fast path: the record the entry handed over spares reading it again, and a stale one is replaced",
          "[fast-path][root]") {
  REQUIRE(::geteuid() == 0); // records are root's
  gpuslice::testing::TempDir t;
  const std::string dir = t.path() + "/records";
  const std::string config_path = t.path() + "/gpuslice.toml";
  const std::optional<std::string> text = std::string("[runtime]\nruntimes = [\"/bin/true\"]\n");
  const std::vector<std::string> triggers{"cdi.k8s.io/"};
  char name[17];
  gpuslice_fp_record_name(config_path.c_str(), name);
  const std::string file = dir + "/" + name;

  const auto parsed = config_snapshot(parse_config(*text, config_path));
  save_fast_path_record(config_path, text, bin_true(), "/run/gpuslice", triggers, parsed, dir);
  const std::string record = fs::read_file(file);
  CHECK(record.rfind(GPUSLICE_FAST_PATH_MAGIC, 0) == 0);
  REQUIRE(parsed);
  CHECK(record.find(*parsed) != std::string::npos);

  // Handed over as it is: nothing to do, not even a look at the dir.
  std::filesystem::remove_all(dir);
  save_fast_path_record(config_path, text, bin_true(), "/run/gpuslice", triggers, parsed, dir, record);
  CHECK_FALSE(std::filesystem::exists(dir));
  // Handed over stale (another state dir then): written again, as it is now.
  save_fast_path_record(config_path, text, bin_true(), "/run/gpuslice", triggers, parsed, dir,
                        std::string_view(record).substr(0, record.size() / 2));
  CHECK(fs::read_file(file) == record);
  // Without a hand-over it is read and compared: a different one on disk is replaced.
  fs::write_file_atomic(file, "stale", 0600);
  save_fast_path_record(config_path, text, bin_true(), "/run/gpuslice", triggers, parsed, dir);
  CHECK(fs::read_file(file) == record);
}

TEST_CASE("fast path: records past kMaxFastPathRecords (one per config path) are pruned, the one saved stays",
          "[fast-path][root]") {
  REQUIRE(::geteuid() == 0);
  gpuslice::testing::TempDir t;
  const std::string dir = t.path() + "/records";
  const std::optional<std::string> text = std::string("[runtime]\nruntimes = [\"/bin/true\"]\n");
  auto save = [&](int i) {
    const std::string config_path = t.path() + "/config-" + std::to_string(i) + ".toml";
    save_fast_path_record(config_path, text, bin_true(), "/run/gpuslice", {}, std::nullopt, dir);
    char name[17];
    gpuslice_fp_record_name(config_path.c_str(), name);
    return dir + "/" + name;
  };
  auto count = [&] {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
  };
  // Older by a second each (a coarse clock would give a quick loop's writes one mtime).
  const time_t now = ::time(nullptr);
  for (int i = 0; i < static_cast<int>(kMaxFastPathRecords); ++i) {
    const timespec times[2] = {{now - 1000 + i, 0}, {now - 1000 + i, 0}};
    REQUIRE(::utimensat(AT_FDCWD, save(i).c_str(), times, 0) == 0);
  }
  CHECK(count() == kMaxFastPathRecords);
  const std::string last = save(static_cast<int>(kMaxFastPathRecords));
  CHECK(count() == kMaxFastPathRecords * 3 / 4);
  CHECK(std::filesystem::exists(last));
}

TEST_CASE("fast path: the entry reads the build id the full program records", "[fast-path]") {
  // This very binary's program headers, as the entry reads its own: the
  // same id as own_build_id() finds through the loader.
  const auto *phdr = reinterpret_cast<const Elf64_Phdr *>(::getauxval(AT_PHDR));
  const std::size_t phnum = ::getauxval(AT_PHNUM);
  char hex[2 * GPUSLICE_FP_MAX_BUILD_ID + 1];
  const std::size_t n = gpuslice_fp_build_id(phdr, phnum, gpuslice_fp_load_bias(phdr, phnum), hex);
  REQUIRE_FALSE(own_build_id().empty());
  CHECK(n == own_build_id().size());
  CHECK(std::string(hex) == own_build_id());

  // Made-up notes: the GNU build id among others, a truncated one, none.
  struct Notes {
    Elf64_Phdr phdr[2];
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
  notes.phdr[0].p_type = PT_LOAD;
  notes.phdr[1].p_type = PT_NOTE;
  notes.phdr[1].p_vaddr = 0x1000;
  notes.phdr[1].p_memsz = at;
  const unsigned long bias = reinterpret_cast<unsigned long>(notes.bytes) - 0x1000;
  CHECK(gpuslice_fp_build_id(notes.phdr, 2, bias, hex) == 8);
  CHECK(std::string(hex) == "dead0bef");
  notes.phdr[1].p_memsz = at - 1; // its descriptor cut short: not read past
  CHECK(gpuslice_fp_build_id(notes.phdr, 2, bias, hex) == 0);
  CHECK(std::string(hex).empty());
  CHECK(gpuslice_fp_build_id(notes.phdr, 1, bias, hex) == 0); // no note segment
}
