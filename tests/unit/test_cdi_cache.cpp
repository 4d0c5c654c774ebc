#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/cdi/spec_cache.hpp"
#include "gpuslice/common/fs.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>

using namespace gpuslice;
using namespace gpuslice::cdi;
using gpuslice::testing::TempDir;

namespace {

// Every field of every struct set, none to its default: a field that
// encode/decode forgot comes back as its default and the spec differs.
Spec every_field_set() {
  ContainerEdits e;
  e.env = {"A=1", "B=2"};
  e.device_nodes = {{"/dev/x", "/dev/y", "c", 195, 7, 0640u, "rw", 1000u, 44u}};
  e.net_devices = {{"eth9", "net0"}};
  e.hooks = {{"createContainer", "/bin/hook", {"hook", "-v"}, {"H=1"}, int64_t{5}}};
  e.mounts = {{"/host/lib", "/lib/x", {"ro", "bind"}, "bind"}};
  e.intel_rdt = IntelRdt{"clos", "L3:0=f", "MB:0=50", {"L2:0=1"}, true, true, true};
  e.additional_gids = {44, 107};
  Spec s;
  s.version = "1.1.0";
  s.kind = "vendor.com/gpu";
  s.annotations = {{"a.com/x", "1"}, {"b.com/y", "2"}};
  s.devices = {{"0", {{"c.com/z", "3"}}, e}, {"1", {}, {}}};
  s.edits = e;
  s.edits.env = {"SPEC=1"};
  return s;
}

std::string spec_text(const std::string &env) {
  return R"({"cdiVersion": "0.6.0", "kind": "v.com/gpu", "devices": [{"name": "0", "containerEdits": {"env": [")" + env +
         R"("], "deviceNodes": [{"path": "/dev/null"}]}}]})";
}

// The files in the cache dir but its marker of the last look at their number.
std::size_t entries(const std::string &dir) {
  std::size_t n = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    n += e.path().filename() != ".pruned";
  return n;
}

const Device &only_device(const Registry &r) {
  REQUIRE(r.specs().size() == 1);
  REQUIRE(r.specs()[0]->devices.size() == 1);
  return r.specs()[0]->devices[0];
}

} // namespace

TEST_CASE("spec cache: a spec with every field set comes back the same", "[cdi][cache]") {
  const Spec s = every_field_set();
  const std::string bytes = encode_spec(s);
  const auto back = decode_spec(bytes);
  REQUIRE(back);
  CHECK(*back == s);

  // Each field matters: a spec that differs in one field encodes otherwise.
  Spec other = s;
  other.devices[0].edits.device_nodes[0].gid = 45u;
  CHECK(encode_spec(other) != bytes);
}

TEST_CASE("spec cache: every spec the parser reads comes back the same", "[cdi][cache]") {
  const char *texts[] = {
      R"({"cdiVersion": "0.3.0", "kind": "a.com/b", "devices": [{"name": "x", "containerEdits": {"env": ["E=1"]}}]})",
      "cdiVersion: 0.6.0\nkind: v.com/gpu\nannotations: {k.com/a: b}\ndevices:\n- name: \"0\"\n  containerEdits:\n"
      "    deviceNodes: [{path: /dev/nvidia0, major: 195, minor: 0, fileMode: 438, uid: 0, gid: 0}]\n"
      "containerEdits:\n  mounts: [{hostPath: /l, containerPath: /l, options: [ro]}]\n"
      "  hooks: [{hookName: createContainer, path: /h, timeout: 3}]\n",
  };
  for (const char *text : texts) {
    const Spec s = parse_spec(text);
    const auto back = decode_spec(encode_spec(s));
    REQUIRE(back);
    CHECK(*back == s);
  }
}

TEST_CASE("spec cache: bytes that are not exactly one spec are refused", "[cdi][cache]") {
  const std::string bytes = encode_spec(every_field_set());
  for (std::size_t n = 0; n < bytes.size(); ++n)
    CHECK_FALSE(decode_spec(bytes.substr(0, n)));
  CHECK_FALSE(decode_spec(bytes + '\0'));
  // Any byte changed decodes to some spec or to none, reading nothing
  // beyond the bytes (the sanitizer build checks that).
  std::size_t refused = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string changed = bytes;
    changed[i] = static_cast<char>(0xff);
    refused += !decode_spec(changed);
  }
  CHECK(refused > 0);
  // A length beyond what is left is refused, not allocated.
  CHECK_FALSE(decode_spec(std::string("\xff\xff\xff\x7f", 4) + std::string(64, 'x')));
  // A bool is 0 or 1: the last byte of a spec whose last field is a bool.
  Spec s;
  s.edits.intel_rdt = IntelRdt{};
  std::string b = encode_spec(s);
  REQUIRE(decode_spec(b));
  b.replace(b.size() - 5, 1, "\2"); // enable_mbm, then the empty additional_gids (4 bytes)
  CHECK_FALSE(decode_spec(b));
}

TEST_CASE("spec cache: this binary has a build id, which keys the cache", "[cdi][cache]") {
  CHECK(own_build_id().size() >= 16);
  CHECK(own_build_id().find_first_not_of("0123456789abcdef") == std::string::npos);
  TempDir t;
  SpecCache none(t / "cache", "");
  none.store("text", every_field_set());
  CHECK_FALSE(std::filesystem::exists(t / "cache"));
}

TEST_CASE("spec cache: a load stores what it parsed and the next load reads it", "[cdi][cache]") {
  TempDir t;
  const std::string text = spec_text("FROM=file");
  t.write("specs/a.json", text);
  const std::string dir = t / "cache";
  SpecCache cache(dir, "build-a");
  {
    Registry r({t / "specs"}, ChangeDetection::none);
    r.use_cache(&cache);
    r.reload();
    CHECK(r.errors().empty());
    CHECK(only_device(r).edits.env == std::vector<std::string>{"FROM=file"});
  }
  const std::string entry = dir + "/" + cache.entry_name(text);
  REQUIRE(std::filesystem::exists(entry));
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::stat(entry.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(cache.find(text));
  CHECK(cache.find(text)->kind == "v.com/gpu");

  // The next load reads the entry, not the file: an entry for the same text
  // that says otherwise is what it gets.
  Spec doctored = parse_spec(text);
  doctored.devices[0].edits.env = {"FROM=cache"};
  cache.store(text, doctored);
  Registry r({t / "specs"}, ChangeDetection::none);
  r.use_cache(&cache);
  r.reload();
  CHECK(only_device(r).edits.env == std::vector<std::string>{"FROM=cache"});
  CHECK(r.specs()[0]->path == t / "specs/a.json");

  SECTION("another binary's entry is a miss, and each keeps its own") {
    SpecCache other(dir, "build-b");
    CHECK(other.entry_name(text) != cache.entry_name(text));
    CHECK_FALSE(other.find(text));
    // under the other's name too: the build id in the entry is compared
    std::filesystem::copy_file(entry, dir + "/" + other.entry_name(text));
    CHECK_FALSE(other.find(text));
    other.store(text, parse_spec(text));
    REQUIRE(other.find(text));
    CHECK(other.find(text)->devices[0].edits.env == std::vector<std::string>{"FROM=file"});
    REQUIRE(cache.find(text));
    CHECK(cache.find(text)->devices[0].edits.env == std::vector<std::string>{"FROM=cache"});
  }
  SECTION("a changed file is parsed again") {
    t.write("specs/a.json", spec_text("FROM=edited"));
    r.reload();
    CHECK(only_device(r).edits.env == std::vector<std::string>{"FROM=edited"});
    CHECK(entries(dir) == 2);
  }
  SECTION("an entry others may write is a miss") {
    ::chmod(entry.c_str(), 0620);
    CHECK_FALSE(cache.find(text));
  }
  SECTION("a link is a miss") {
    std::filesystem::rename(entry, dir + "/elsewhere");
    std::filesystem::create_symlink(dir + "/elsewhere", entry);
    CHECK_FALSE(cache.find(text));
  }
  SECTION("a directory others may write is not used") {
    ::chmod(dir.c_str(), 0770);
    SpecCache reopened(dir, "build-a");
    CHECK_FALSE(reopened.find(text));
    reopened.store(text, doctored);
    CHECK(entries(dir) == 1);
  }
  SECTION("a damaged entry is a miss, and the load parses and stores again") {
    std::string bytes = fs::read_file(entry);
    bytes.resize(bytes.size() - 3);
    fs::write_file_atomic(entry, bytes, 0600);
    CHECK_FALSE(cache.find(text));
    r.reload();
    CHECK(r.errors().empty());
    CHECK(only_device(r).edits.env == std::vector<std::string>{"FROM=file"});
    REQUIRE(cache.find(text));
    CHECK(cache.find(text)->devices[0].edits.env == std::vector<std::string>{"FROM=file"});
  }
}

TEST_CASE("spec cache: a spec that does not validate is not stored", "[cdi][cache]") {
  TempDir t;
  t.write("specs/a.json",
          R"({"cdiVersion": "0.6.0", "kind": "v.com/gpu", "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "dev/null"}]}}]})");
  SpecCache cache(t / "cache", "build-a");
  Registry r({t / "specs"}, ChangeDetection::none);
  r.use_cache(&cache);
  r.reload();
  CHECK_FALSE(r.errors().empty());
  CHECK(r.specs().empty());
  CHECK((!std::filesystem::exists(t / "cache") || entries(t / "cache") == 0));
}

TEST_CASE("spec cache: past kMaxEntries the oldest go, looked for at most once a minute", "[cdi][cache]") {
  TempDir t;
  const std::string dir = t / "cache";
  SpecCache cache(dir, "build-a");
  const Spec s = parse_spec(spec_text("A=1"));
  auto set_mtime = [](const std::string &path, time_t when) {
    const timespec times[2] = {{when, 0}, {when, 0}};
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
  };
  const time_t now = ::time(nullptr);
  const std::size_t n = SpecCache::kMaxEntries + 10;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string text = spec_text("A=" + std::to_string(i));
    cache.store(text, s);
    set_mtime(dir + "/" + cache.entry_name(text), now - 100000 + static_cast<time_t>(i));
  }
  t.write("cache/.new-1-2", "a killed writer's");
  set_mtime(dir + "/.new-1-2", now - 120);
  // The first store looked (and found one entry); the others did not.
  CHECK(entries(dir) == n + 1);

  set_mtime(dir + "/.pruned", now - 120);
  cache.store(spec_text("last"), s);
  CHECK(entries(dir) == SpecCache::kMaxEntries * 3 / 4);
  CHECK_FALSE(std::filesystem::exists(dir + "/.new-1-2"));
  CHECK(cache.find(spec_text("last")));
  CHECK(cache.find(spec_text("A=" + std::to_string(n - 1))));
  CHECK_FALSE(cache.find(spec_text("A=0")));
  CHECK_FALSE(cache.find(spec_text("A=" + std::to_string(n - SpecCache::kMaxEntries * 3 / 4))));
}
