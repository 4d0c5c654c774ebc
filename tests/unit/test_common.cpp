#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/common/toml_text.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

using namespace gpuslice;

TEST_CASE("error context is prepended at each layer", "[common]") {
  try {
    with_context("cannot inject nvidia.com/gpu=0", [] {
      with_context("device node " + quote("/dev/nvidia0"), [] { throw system_error("lstat", ENOENT); });
    });
    FAIL("no exception");
  } catch (const Error &e) {
    CHECK(std::string(e.what()) == "cannot inject nvidia.com/gpu=0: device node \"/dev/nvidia0\": lstat: no such file or directory");
    CHECK(e.error_number() == ENOENT);
  }
}

TEST_CASE("log: a level keeps what is at it or above, off keeps nothing", "[common]") {
  log::Options o;
  o.level = "info";
  CHECK(log::keeps(o, "info"));
  CHECK(log::keeps(o, "warn"));
  CHECK_FALSE(log::keeps(o, "debug"));
  o.level = "warn";
  CHECK_FALSE(log::keeps(o, "info"));
  CHECK(log::keeps(o, "error"));
  o.level = "off";
  CHECK_FALSE(log::keeps(o, "critical"));
  CHECK_FALSE(log::keeps(o, "info"));
}

TEST_CASE("log: utc_timestamp is gmtime's date and time, milliseconds cut", "[common]") {
  const std::time_t leap_years[] = {0,          68169599,   68169600,   951782399,  951782400,  951868800,
                                    1078012800, 4107542399, 4107542400, 4107628800, 1796545626, 253402300799};
  for (std::time_t seconds : leap_years) {
    std::tm tm{};
    REQUIRE(::gmtime_r(&seconds, &tm));
    char expected[128];
    std::snprintf(expected, sizeof expected, "%04d-%02d-%02dT%02d:%02d:%02d.999Z", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    CHECK(log::utc_timestamp({seconds, 999999999}) == expected);
  }
  // every day of a 400-year cycle, at one second before midnight
  for (std::time_t day = -1; day < 146097 + 1; day += 1) {
    const std::time_t seconds = 946684800 + day * 86400 + 86399;
    std::tm tm{};
    REQUIRE(::gmtime_r(&seconds, &tm));
    char expected[128];
    std::snprintf(expected, sizeof expected, "%04d-%02d-%02dT23:59:59.000Z", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday);
    if (log::utc_timestamp({seconds, 0}) != expected)
      FAIL(seconds << ": " << log::utc_timestamp({seconds, 0}) << " != " << expected);
  }
  CHECK(log::utc_timestamp({1796545626, 5000000}) == "2026-12-06T08:27:06.005Z");
}

TEST_CASE("log: write_info_line writes the line setup's logger writes, or nothing", "[common]") {
  gpuslice::testing::TempDir t;
  log::Options o;
  o.level = "info";
  o.directory = t / "log"; // made by either
  const std::string message = "container c1: injected vendor.example/gpu=0,vendor.example/gpu=1";
  log::setup("gpuslice-test", o);
  log::line("info", message);
  log::close();
  REQUIRE(log::write_info_line("gpuslice-test", o, message));
  const auto text = fs::read_file(t / "log/gpuslice-test.log", 4096);
  const auto newline = text.find('\n');
  REQUIRE(newline != std::string::npos);
  const std::string by_spdlog = text.substr(0, newline), ours = text.substr(newline + 1);
  REQUIRE(!ours.empty());
  CHECK(ours.back() == '\n');
  CHECK(ours.find('\n') == ours.size() - 1);
  // "YYYY-MM-DDTHH:MM:SS.mmmZ ", then the same, and UTC times a moment apart.
  constexpr std::size_t kStamp = 25;
  REQUIRE(by_spdlog.size() > kStamp);
  REQUIRE(ours.size() > kStamp);
  CHECK(ours.substr(kStamp, ours.size() - kStamp - 1) == by_spdlog.substr(kStamp));
  CHECK(by_spdlog.substr(kStamp) == "gpuslice-test[" + std::to_string(::getpid()) + "] info: " + message);
  auto utc = [](const std::string &line) {
    std::tm tm{};
    const char *end = ::strptime(line.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    REQUIRE(end == line.c_str() + 19);
    CHECK(line[19] == '.');
    CHECK(std::all_of(line.begin() + 20, line.begin() + 23, [](char c) { return c >= '0' && c <= '9'; }));
    CHECK(line.substr(23, 2) == "Z ");
    return ::timegm(&tm);
  };
  const std::time_t a = utc(by_spdlog), b = utc(ours);
  CHECK(b >= a);
  CHECK(b - a <= 60);
  CHECK(std::abs(b - std::time(nullptr)) <= 60);

  // Not to a file, or no file to be had: false, for spdlog to say it.
  log::Options elsewhere = o;
  elsewhere.target = "stderr";
  CHECK_FALSE(log::write_info_line("gpuslice-test", elsewhere, message));
  elsewhere = o;
  elsewhere.directory = t.write("not-a-dir", "x");
  CHECK_FALSE(log::write_info_line("gpuslice-test", elsewhere, message));
  CHECK(fs::read_file(t / "log/gpuslice-test.log", 4096) == text);
}

TEST_CASE("quoted escapes control characters", "[common]") {
  CHECK(quote("a\"b\n") == "\"a\\\"b\\x0a\"");
}

TEST_CASE("clean_path and depth", "[common]") {
  struct Row {
    const char *in, *out;
    std::size_t depth;
  };
  for (auto r : {Row{"/", "/", 1}, Row{"/a/", "/a", 1}, Row{"//a//b/./c/..", "/a/b", 2}, Row{"/../x", "/x", 1},
                 Row{"a/../..", "..", 0}, Row{"", ".", 0}}) {
    CAPTURE(r.in);
    CHECK(fs::clean_path(r.in) == r.out);
    CHECK(fs::path_depth(fs::clean_path(r.in)) == r.depth);
  }
}

TEST_CASE("read_fd: a file of the size stat tells, and one of no size (a pipe), each bounded", "[common]") {
  char dir[] = "/tmp/gpuslice-test-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string path = std::string(dir) + "/f";
  std::string text;
  for (int i = 0; text.size() < 10000; ++i)
    text += std::to_string(i) + ",";
  fs::write_file_atomic(path, text, 0600);
  CHECK(fs::read_file(path) == text);
  CHECK(fs::read_file(path, text.size()) == text);
  CHECK_THROWS_WITH(fs::read_file(path, text.size() - 1), Catch::Contains("is larger than"));

  // A pipe: fstat tells no size, so it is read in chunks until its end.
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const std::string piped = text + text; // more than one chunk, less than the pipe holds
  REQUIRE(::write(p[1], piped.data(), piped.size()) == static_cast<ssize_t>(piped.size()));
  ::close(p[1]);
  CHECK(fs::read_fd(p[0], "pipe") == piped);
  ::close(p[0]);

  REQUIRE(::pipe(p) == 0);
  REQUIRE(::write(p[1], piped.data(), piped.size()) == static_cast<ssize_t>(piped.size()));
  ::close(p[1]);
  CHECK_THROWS_WITH(fs::read_fd(p[0], "pipe", 5000), Catch::Contains("pipe is larger than 5000 bytes"));
  ::close(p[0]);

  // The bound exactly: max_size bytes are read, one more is too many.
  for (const std::size_t size : {std::size_t{5000}, std::size_t{5001}, std::size_t{300}, std::size_t{4096}}) {
    INFO(size);
    REQUIRE(::pipe(p) == 0);
    REQUIRE(::write(p[1], piped.data(), size) == static_cast<ssize_t>(size));
    ::close(p[1]);
    if (size <= 5000)
      CHECK(fs::read_fd(p[0], "pipe", 5000) == piped.substr(0, size));
    else
      CHECK_THROWS_WITH(fs::read_fd(p[0], "pipe", 5000), Catch::Contains("pipe is larger than 5000 bytes"));
    ::close(p[0]);
  }
  REQUIRE(::pipe(p) == 0);
  ::close(p[1]);
  CHECK(fs::read_fd(p[0], "pipe", 0).empty()); // nothing, with nothing allowed
  ::close(p[0]);

  // With the caller's fstat: a file of that size is read whole, and bounded;
  // a stat that tells no size (as /proc's do) reads it in chunks all the same.
  UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  REQUIRE(::fstat(f.get(), &st) == 0);
  CHECK(fs::read_stat_fd(f.get(), st, "f") == text);
  REQUIRE(::lseek(f.get(), 0, SEEK_SET) == 0);
  CHECK_THROWS_WITH(fs::read_stat_fd(f.get(), st, "f", text.size() - 1), Catch::Contains("f is larger than"));
  REQUIRE(::lseek(f.get(), 0, SEEK_SET) == 0);
  CHECK(fs::read_stat_fd(f.get(), {}, "f") == text);

  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST_CASE("unescape_mount_field undoes the kernel's octal escapes, and only those", "[common]") {
  CHECK(unescape_mount_field("/run/a\\040b") == "/run/a b");
  CHECK(unescape_mount_field("/x\\011y\\012z\\134") == "/x\ty\nz\\");
  CHECK(unescape_mount_field("/plain") == "/plain");
  CHECK(unescape_mount_field("/a\\08b") == "/a\\08b");  // 8 is not octal
  CHECK(unescape_mount_field("/a\\04") == "/a\\04");    // cut short
  CHECK(unescape_mount_field("\\") == "\\");
  CHECK(unescape_mount_field("") == "");
}

TEST_CASE("write_file_atomic replaces content and keeps the mode", "[common]") {
  char dir[] = "/tmp/gpuslice-test-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  std::string path = std::string(dir) + "/f";
  fs::write_file_atomic(path, "one", 0600);
  fs::write_file_atomic(path, "two");
  CHECK(fs::read_file(path) == "two");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK_THROWS_WITH(fs::write_file_atomic(std::string(dir) + "/missing/f", "x"), Catch::Contains("cannot create"));
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST_CASE("create_file_at: a new file with exactly its mode, never an existing one nor through a link", "[common]") {
  char dir[] = "/tmp/gpuslice-test-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  UniqueFd dir_fd(::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dir_fd);
  const mode_t old_umask = ::umask(0077);
  const UniqueFd made = fs::create_file_at(dir_fd.get(), "f", "text", 0444, "/shown");
  ::umask(old_umask);
  CHECK(made);
  CHECK(fs::read_file(std::string(dir) + "/f") == "text");
  struct stat st {};
  REQUIRE(::stat((std::string(dir) + "/f").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0444); // the umask took nothing
  CHECK_THROWS_WITH(fs::create_file_at(dir_fd.get(), "f", "again", 0600, "/shown"), Catch::Contains("\"/shown/f\""));
  CHECK(fs::read_file(std::string(dir) + "/f") == "text");
  REQUIRE(::symlinkat("target", dir_fd.get(), "link") == 0);
  CHECK_THROWS(fs::create_file_at(dir_fd.get(), "link", "x", 0600, dir));
  CHECK_FALSE(std::filesystem::exists(std::string(dir) + "/target"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("prune_oldest: past the cap the oldest go, down to three quarters; dot names stay but old temporaries",
          "[common]") {
  char dir[] = "/tmp/gpuslice-test-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  UniqueFd dir_fd(::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dir_fd);
  const time_t now = ::time(nullptr);
  auto make = [&](const std::string &name, time_t mtime) {
    fs::write_file_atomic(std::string(dir) + "/" + name, name, 0600);
    const timespec times[2] = {{mtime, 0}, {mtime, 0}};
    REQUIRE(::utimensat(dir_fd.get(), name.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
  };
  auto names = [&] {
    std::set<std::string> out;
    for (const auto &e : std::filesystem::directory_iterator(dir))
      out.insert(e.path().filename().string());
    return out;
  };
  // Made newest first: the order of the mtimes, not of the names or of the
  // writes, decides.
  for (int i = 9; i >= 0; --i)
    make("e" + std::to_string(i), now - 1000 + i);
  make(".marker", now - 5000);
  make(".new-old", now - 61);
  make(".new-young", now - 10);

  fs::prune_oldest(dir_fd.get(), 10, ".new-"); // at the cap: the entries stay
  CHECK(names() == std::set<std::string>{"e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", ".marker",
                                         ".new-young"});
  make("e10", now - 1);
  fs::prune_oldest(dir_fd.get(), 10);
  CHECK(names() == std::set<std::string>{"e4", "e5", "e6", "e7", "e8", "e9", "e10", ".marker", ".new-young"});
  fs::prune_oldest(-1, 1); // a bad fd: nothing, no throw
  std::filesystem::remove_all(dir);
}

TEST_CASE("list_dir: every name but . and .., from any dir fd, wherever its offset is", "[common]") {
  char dir[] = "/tmp/gpuslice-test-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  for (const char *name : {"a", ".b", "c"})
    fs::write_file_atomic(std::string(dir) + "/" + name, name, 0600);
  auto sorted = [](std::optional<std::vector<std::string>> names) {
    REQUIRE(names);
    std::sort(names->begin(), names->end());
    return *names;
  };
  const std::vector<std::string> all{".b", "a", "c"};
  UniqueFd dir_fd(::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dir_fd);
  CHECK(sorted(fs::list_dir(dir_fd.get())) == all);
  // the caller's own fd read to its end: the listing has its own offset
  char buf[4096];
  while (::syscall(SYS_getdents64, dir_fd.get(), buf, sizeof buf) > 0) {
  }
  CHECK(sorted(fs::list_dir(dir_fd.get())) == all);
  UniqueFd path_fd(::open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC));
  CHECK(sorted(fs::list_dir(path_fd.get())) == all);
  CHECK_FALSE(fs::list_dir(-1));
  std::filesystem::remove_all(dir);
}

TEST_CASE("config: defaults, keys and unknown keys", "[common][config]") {
  Config d = parse_config("", "empty");
  CHECK(d.spec_dirs == std::vector<std::string>{"/etc/cdi", "/var/run/cdi"});
  CHECK(d.accept_env_requests == false);
  Config c = parse_config("[cdi]\nspec-dirs = [\"/a\"]\n[runtime]\naccept-env-requests = true\n[log]\nlevel = \"debug\"\n", "x");
  CHECK(c.spec_dirs == std::vector<std::string>{"/a"});
  CHECK(c.accept_env_requests);
  CHECK(c.log.level == "debug");
  CHECK_THROWS_WITH(parse_config("[cdi]\nspec_dirs = []\n", "f.toml"), Catch::Contains("unknown key \"cdi.spec_dirs\"") && Catch::Contains("f.toml"));
  CHECK_THROWS_WITH(parse_config("[log]\nlevel = \"loud\"\n", "f.toml"), Catch::Contains("loud"));
  CHECK_THROWS_WITH(parse_config("[runtime\n", "f.toml"), Catch::Contains("f.toml"));
}

TEST_CASE("config: monitor interval and action, admission cap, selinux mode", "[common][config]") {
  CHECK(parse_config("[monitor]\ninterval = \"200ms\"\n", "x").monitor_interval_ms == 200);
  CHECK(parse_config("[monitor]\ninterval = \"2.5s\"\n", "x").monitor_interval_ms == 2500);
  for (const char *bad : {"5m", "1", "0s", "5ms", "2h", "ms", ""})
    CHECK_THROWS_WITH(parse_config(std::string("[monitor]\ninterval = \"") + bad + "\"\n", "x"),
                      Catch::Contains("monitor.interval") && Catch::Contains("is not a duration from 10ms to 3600s"));
  CHECK(parse_config("[monitor]\naction = \"freeze\"\n", "x").monitor_action == "freeze");
  CHECK_THROWS_WITH(parse_config("[monitor]\naction = \"explode\"\n", "x"),
                    Catch::Contains("monitor.action \"explode\" is not one of log, kill, freeze"));
  CHECK(parse_config("[admission]\nmax-containers-per-gpu = 0\n", "x").max_containers_per_gpu == 0);
  CHECK(parse_config("[admission]\nallow-memory-overcommit = true\n", "x").allow_memory_overcommit);
  CHECK_THROWS_WITH(parse_config("[admission]\nallow-memory-overcommit = 1\n", "x"),
                    Catch::Contains("admission.allow-memory-overcommit"));
  CHECK_THROWS_WITH(parse_config("[admission]\nmax-containers-per-gpu = -1\n", "x"),
                    Catch::Contains("must be a whole number from 0"));
  CHECK_THROWS_WITH(parse_config("[admission]\nmax-containers-per-gpu = \"20\"\n", "x"),
                    Catch::Contains("admission.max-containers-per-gpu"));
  CHECK_THROWS_WITH(parse_config("[selinux]\nlabel = \"enforcing\"\n", "x"),
                    Catch::Contains("selinux.label \"enforcing\" is not one of auto, on, off"));
}

TEST_CASE("docs/config.md documents every key with its real default", "[common][config]") {
  const std::string doc = fs::read_file(GPUSLICE_SOURCE_DIR "/docs/config.md");
  const auto start = doc.find("```toml\n");
  REQUIRE(start != std::string::npos);
  const auto end = doc.find("```", start + 8);
  REQUIRE(end != std::string::npos);
  const Config documented = parse_config(doc.substr(start + 8, end - start - 8), "docs/config.md");
  const Config defaults;
  CHECK(documented.spec_dirs == defaults.spec_dirs);
  CHECK(documented.annotation_prefixes == defaults.annotation_prefixes);
  CHECK(documented.runtimes == defaults.runtimes);
  CHECK(documented.accept_env_requests == defaults.accept_env_requests);
  CHECK(documented.default_kind == defaults.default_kind);
  // The doc shows the Debian package's paths (prefix /usr, multiarch
  // libdir); a build's defaults are its own install dirs.
  CHECK(documented.hook_path == "/usr/bin/gpuslice-hook");
  CHECK(defaults.hook_path == installed::kHookPath);
  CHECK(documented.state_dir == defaults.state_dir);
  CHECK(documented.interposer_path == "/usr/lib/x86_64-linux-gnu/gpuslice/libgpuslice-cuda.so");
  CHECK(defaults.interposer_path == installed::kInterposerPath);
  CHECK(documented.accept_gpushare_env == defaults.accept_gpushare_env);
  CHECK(documented.shim_path == defaults.shim_path);
  CHECK(documented.max_containers_per_gpu == defaults.max_containers_per_gpu);
  CHECK(documented.allow_memory_overcommit == defaults.allow_memory_overcommit);
  CHECK(documented.monitor_interval_ms == defaults.monitor_interval_ms);
  CHECK(documented.monitor_action == defaults.monitor_action);
  CHECK(documented.monitor_memory_tolerance == defaults.monitor_memory_tolerance);
  CHECK(documented.monitor_nvml_path == defaults.monitor_nvml_path);
  CHECK(documented.selinux_label == defaults.selinux_label);
  CHECK(documented.selinux_shared_file_label == defaults.selinux_shared_file_label);
  CHECK(documented.log.level == defaults.log.level);
  CHECK(documented.log.target == defaults.log.target);
  CHECK(documented.log.directory == defaults.log.directory);
  const auto keys = config_keys();
  CHECK(documented.from_file == std::set<std::string>(keys.begin(), keys.end()));
}

namespace {

// Every key of the config, each set to a value that is not its default.
const std::vector<std::pair<std::string, std::string>> &every_key() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"cdi", "spec-dirs = [\"/x/cdi\", \"/y/cdi\"]"},
      {"cdi", "annotation-prefixes = [\"a.example/\", \"b.example/\"]"},
      {"runtime", "runtimes = [\"crun\"]"},
      {"runtime", "accept-env-requests = true"},
      {"runtime", "default-kind = \"x.example/gpu\""},
      {"runtime", "hook-path = \"/opt/hook\""},
      {"runtime", "state-dir = \"/run/other\""},
      {"runtime", "interposer-path = \"/opt/libi.so\""},
      {"runtime", "shim-path = \"/opt/shim\""},
      {"runtime", "accept-gpushare-env = true"},
      {"monitor", "interval = \"250ms\""},
      {"monitor", "action = \"kill\""},
      {"monitor", "memory-tolerance = \"64MiB\""},
      {"monitor", "nvml-path = \"/opt/libnvml.so\""},
      {"admission", "max-containers-per-gpu = 3"},
      {"admission", "allow-memory-overcommit = true"},
      {"log", "level = \"debug\""},
      {"log", "target = \"stderr\""},
      {"log", "directory = \"/var/log/x\""},
      {"selinux", "label = \"on\""},
      {"selinux", "shared-file-label = \"system_u:object_r:x_t:s0\""},
  };
  return keys;
}

// The config text of every_key(), but for the key at `skip`.
std::string every_key_but(std::size_t skip) {
  std::map<std::string, std::string> tables;
  for (std::size_t i = 0; i < every_key().size(); ++i)
    if (i != skip)
      tables[every_key()[i].first] += every_key()[i].second + "\n";
  std::string text;
  for (const auto &[table, body] : tables)
    text += "[" + table + "]\n" + body;
  return text;
}

} // namespace

TEST_CASE("config: every key sets its own field", "[common][config]") {
  const Config all = parse_config(every_key_but(std::string::npos), "every key");
  const auto keys = config_keys();
  REQUIRE(all.from_file == std::set<std::string>(keys.begin(), keys.end()));
  // Each key's value is not its default: a key that set no field, or
  // another key's, leaves the config unchanged without it.
  for (std::size_t i = 0; i < every_key().size(); ++i) {
    INFO(every_key()[i].second);
    Config without = parse_config(every_key_but(i), "every key but one");
    without.from_file = all.from_file;
    CHECK(without != all);
  }
}

TEST_CASE("the installed config file: every key commented out, each one the documented value", "[common][config]") {
  const std::string text = fs::read_file(GPUSLICE_CONFIG_FILE);
  const Config installed_config = parse_config(text, "config.toml");
  CHECK(installed_config.from_file.empty()); // the compiled-in defaults apply
  // Uncommented, it is the doc's block: every key there, with its value.
  std::string uncommented;
  std::size_t keys = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(at, end - at);
    if (line.size() > 1 && line[0] == '#' && line[1] >= 'a' && line[1] <= 'z') {
      line.erase(0, 1);
      ++keys;
    }
    uncommented += line + "\n";
    at = end + 1;
  }
  const Config documented = parse_config(uncommented, "config.toml, uncommented");
  CHECK(documented.from_file.size() == keys);
  CHECK(keys >= 12);
  CHECK(documented.hook_path == "/usr/bin/gpuslice-hook");
  CHECK(documented.spec_dirs == Config{}.spec_dirs);
}

TEST_CASE("every valid TOML parses: French, Portuguese, Chinese, emoji in comments, strings and keys", "[common][config]") {
  // Before: the characters toml++ 3.3 cannot test for white space were
  // refused anywhere, `# réglages` failing every container's create.
  const std::string fr = "# Configuration générale du nœud : réglages\n"
                         "[cdi]\n"
                         "spec-dirs = [\"/etc/cdi\", \"/srv/données/cdi\"] # répertoires\n"
                         "[runtime]\n"
                         "hook-path = \"/opt/outils/gpuslice-hook\" # crochet «OCI»\n";
  const Config c = parse_config(fr, "fr.toml");
  CHECK(c.spec_dirs == std::vector<std::string>{"/etc/cdi", "/srv/données/cdi"});
  CHECK(c.hook_path == "/opt/outils/gpuslice-hook");
  const std::string pt = "# configuração do nó: não altere à mão\n[log]\nlevel = \"info\" # nível\n"
                         "directory = \"/var/log/ação\"\n";
  CHECK(parse_config(pt, "pt.toml").log.directory == "/var/log/ação");
  const std::string zh = "# 配置文件 ⻆⻇ 〄 ﭑ\n[runtime]\nstate-dir = \"/run/状态\" # 😀 ✓\n";
  CHECK(parse_config(zh, "zh.toml").state_dir == "/run/状态");
  // Keys and strings with those characters come back as written.
  const auto t = parse_toml("\"clé é\" = \"à la fin Ž ⱞ ﬦ\"\n[\"ταβλή\"]\n\"κ\" = 1\n", "k.toml");
  CHECK(t["clé é"].value<std::string>() == "à la fin Ž ⱞ ﬦ");
  CHECK(t["ταβλή"]["κ"].value<int64_t>() == 1);
  // Errors still name the line and show the text's own characters.
  CHECK_THROWS_WITH(parse_config("[cdi]\nré = 1\n", "f"), Catch::Contains("line 2"));
  CHECK_THROWS_WITH(parse_toml("x = \"é\nsuite\"\n", "f"), Catch::Contains("line 1"));
  // The inputs the fuzzer found to reach toml++'s unreachable(): plain parse errors now.
  for (const char *bad : {"\xef\xb3\xbfimp\"]\n", "vers= -9x99-pci\"\xef\xbb\xb7im]\n", "v = 3\n{\"\"\"insBB\xc4\x93ugs\n",
                          "\xef\xac\xbb)i =\x15\x01\x0ey"})
    CHECK_THROWS_AS(parse_toml(bad, "f"), Error);
  // Every edge of the unsafe ranges, in a string and in a comment.
  const auto utf8 = encode_utf8;
  for (uint32_t cp : {0xA0u, 0xA1u, 0x499u, 0x49Au, 0x2C5Du, 0x2C5Eu, 0x2FFFu, 0x3000u, 0x3001u, 0x3057u, 0x3058u,
                      0xFB25u, 0xFB26u, 0xFEFEu, 0xFEFFu}) {
    CAPTURE(cp);
    const auto parsed = parse_toml("a = \"x" + utf8(cp) + "y\" # " + utf8(cp) + "\n", "f");
    CHECK(parsed["a"].value<std::string>() == "x" + utf8(cp) + "y");
  }
  // A leading BOM is fine.
  CHECK(parse_config("\xef\xbb\xbf# \xe4\xb8\xad\n[runtime]\nhook-path = \"/\xe2\x9c\x93\xf0\x9f\x98\x80\"\n", "f").hook_path ==
        "/\xe2\x9c\x93\xf0\x9f\x98\x80");
}

TEST_CASE("split keeps or skips empty parts", "[common]") {
  using V = std::vector<std::string>;
  CHECK(split("a,,b", ',', EmptyParts::keep) == V{"a", "", "b"});
  CHECK(split("a,,b,", ',', EmptyParts::skip) == V{"a", "b"});
  CHECK(split("", ',', EmptyParts::keep) == V{""});
  CHECK(split("", ',', EmptyParts::skip).empty());
  CHECK(split("/usr/bin::/bin", ':', EmptyParts::skip) == V{"/usr/bin", "/bin"});
}

TEST_CASE("c_strings points at each string in order, then ends in nullptr", "[common]") {
  const std::vector<std::string> strings{"/usr/sbin/runc", "", "state"};
  const auto c = c_strings(strings);
  REQUIRE(c.size() == 4);
  for (std::size_t i = 0; i < strings.size(); ++i)
    CHECK(c[i] == strings[i].c_str()); // the strings themselves, not copies
  CHECK(c[3] == nullptr);
  CHECK(c_strings({}) == std::vector<char *>{nullptr});
}

TEST_CASE("trim_space takes white space off both ends only", "[common]") {
  CHECK(trim_space(" \t a b \r\n") == "a b");
  CHECK(trim_space("  \n").empty());
  CHECK(trim_space("x") == "x");
}
