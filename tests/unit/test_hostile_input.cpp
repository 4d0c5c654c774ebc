// What images and spec dirs can hold, read by root on the host (issue 7,
// hole 4): every input is bounded and typed before it is read or parsed.
#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/rootfs.hpp"
#include "gpuslice/runtime/low_level.hpp"

#include "create_for_tests.hpp"
#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <thread>

using namespace gpuslice;
using gpuslice::testing::TempDir;

namespace {

using gpuslice::testing::prepare;

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

void make_sparse(const std::string &path, off_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, size) == 0);
  ::close(fd);
}

} // namespace

TEST_CASE("read_file: a FIFO is refused without waiting for a writer, a huge file from its size", "[common][hostile]") {
  TempDir t;
  REQUIRE(::mkfifo((t / "fifo.json").c_str(), 0644) == 0);
  CHECK_THROWS_WITH(fs::read_file(t / "fifo.json"), Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(fs::read_file("/dev/null"), Catch::Contains("not a regular file"));
  make_sparse(t / "huge", off_t(1) << 30);
  CHECK_THROWS_WITH(fs::read_file(t / "huge", 4u << 20), Catch::Contains("larger than 4194304 bytes"));
  t.write("small", "ok");
  CHECK(fs::read_file(t / "small", 2) == "ok");
}

TEST_CASE("registry: a FIFO and a 1 GiB spec are reported, the other specs still load", "[cdi][hostile]") {
  TempDir t;
  t.write("cdi/good.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n  - name: \"0\"\n    containerEdits:\n      env: [A=1]\n");
  REQUIRE(::mkfifo((t / "cdi/blocking.json").c_str(), 0644) == 0);
  make_sparse(t / "cdi/huge.json", off_t(1) << 30);
  cdi::Registry r({t / "cdi"}, cdi::ChangeDetection::none);
  r.reload(); // before the fix: blocked forever in open() of the FIFO
  CHECK(r.device_names() == std::vector<std::string>{"v.com/gpu=0"});
  std::string errors;
  for (const auto &e : r.errors())
    errors += e.path + ": " + e.message + "\n";
  CHECK_THAT(errors, Catch::Contains("blocking.json") && Catch::Contains("not a regular file"));
  CHECK_THAT(errors, Catch::Contains("huge.json") && Catch::Contains("larger than"));
}

TEST_CASE("JSON nested 50,000 levels is refused before it is built; normal nesting passes", "[common][hostile]") {
  CHECK_THROWS_WITH(parse_json(nested(50000)), Catch::Contains("nested more than 128 levels"));
  CHECK_THROWS_WITH(parse_json(nested(kMaxJsonDepth + 1)), Catch::Contains("nested more than 128 levels"));
  CHECK(parse_json(nested(kMaxJsonDepth)).is_array());
  // brackets inside strings do not count, escaped quotes do not end them
  CHECK(parse_json(R"({"a": "[[[[\"[[[[", "b": [1]})")["b"][0] == 1);
  CHECK_THROWS_WITH(parse_json("{\"a\": }"), Catch::StartsWith("invalid JSON: "));
  CHECK_THROWS_WITH(cdi::parse_spec("{\"cdiVersion\": " + nested(50000) + "}"), Catch::Contains("nested"));
}

TEST_CASE("parse_json builds what nlohmann's parser builds, and refuses a key given twice in one object",
          "[common][hostile]") {
  std::string many = "{";
  for (int i = 0; i < 40; ++i) // past the members compared one by one
    many += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + (i < 39 ? ", " : "}");
  const std::string texts[] = {
      R"({"b": 1, "a": [1, -2, 3.5e10, 18446744073709551615, -9223372036854775808, true, false, null],
          "e": {"x": "\u00e9\ud83d\ude00", "y": {}}, "c": {}, "d": [[], {}]})",
      many, R"("top")", "42", R"([{"a": {"a": {"a": 1}}}, {"a": 2, "b": 3}])", "{\"a\": 1,}", "[1, 2", "",
      "{\"a\": 1} x", "1e400"};
  for (const auto &text : texts) {
    INFO(text);
    std::string ours, theirs;
    try {
      ours = parse_json<nlohmann::ordered_json>(text).dump();
    } catch (const Error &e) {
      ours = "error: " + e.message();
    }
    try {
      theirs = nlohmann::ordered_json::parse(text).dump();
    } catch (const nlohmann::json::exception &e) {
      theirs = "error: invalid JSON: " + json_detail::reason(e.what());
    }
    CHECK(ours == theirs);
    const auto unordered = [&]() -> std::optional<nlohmann::json> {
      try {
        return parse_json<nlohmann::json>(text);
      } catch (const Error &) {
        return std::nullopt;
      }
    }();
    CHECK(unordered.has_value() == nlohmann::json::accept(text));
    if (unordered)
      CHECK(*unordered == nlohmann::json::parse(text));
  }
  const auto doc = parse_json<nlohmann::ordered_json>(many);
  CHECK(doc.size() == 40);
  CHECK(doc.begin().key() == "k0");
  CHECK(std::next(doc.begin(), 39).key() == "k39");

  // nlohmann's parser keeps the last value of a key given twice, Go's
  // encoding/json (runc's) merges objects: refused, in small and large
  // objects (past 32 members they are found another way), at any depth,
  // for both document types
  std::string many_twice = many;
  many_twice.insert(many_twice.size() - 1, R"(, "k3": "again")");
  for (const std::string &text : {std::string(R"({"b": 1, "a": 2, "b": 3})"), many_twice,
                                 std::string(R"({"process": {"env": []}, "x": [{"p": {"a": 1, "a": {}}}]})")}) {
    INFO(text);
    CHECK_THROWS_WITH(parse_json<nlohmann::ordered_json>(text), Catch::Contains("twice in one object"));
    CHECK_THROWS_WITH(parse_json<nlohmann::json>(text), Catch::Contains("twice in one object"));
  }
  CHECK_THROWS_WITH(parse_json(many_twice), "invalid JSON: the key \"k3\" twice in one object");

  // nlohmann's parser would stop at a NUL and ignore what follows
  using namespace std::string_literals;
  CHECK_THROWS_WITH(parse_json("{\"a\": 1}\0 [[["s), "invalid JSON: a NUL byte at offset 8");
}

TEST_CASE("prepare_bundle: a deeply nested config.json is an error, not a crash", "[create][hostile]") {
  TempDir t;
  t.write("cdi/gpu.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n  - name: \"0\"\n    containerEdits:\n      env: [G=0]\n");
  Config config;
  config.spec_dirs = {t / "cdi"};
  config.state_dir = t / "state";
  const std::string deep = R"({"annotations": {"cdi.k8s.io/x": "v.com/gpu=0"}, "x": )" + nested(50000) + "}";
  t.write("b/config.json", deep);
  CHECK_THROWS_WITH(prepare(t / "b", "c", config),
                    Catch::Contains("config.json") && Catch::Contains("nested"));
  CHECK(fs::read_file(t / "b/config.json") == deep);
  ::mkdir((t / "fifo").c_str(), 0755);
  REQUIRE(::mkfifo((t / "fifo/config.json").c_str(), 0644) == 0);
  CHECK_THROWS_WITH(prepare(t / "fifo", "c", config),
                    Catch::Contains("not a regular file"));
}

TEST_CASE("messages stay bounded whatever the size of a name", "[common][hostile]") {
  const std::string huge(1 << 20, 'a');
  const std::string q = quote(huge);
  CHECK(q.size() < 2 * kMaxQuoted);
  CHECK_THAT(q, Catch::EndsWith("...\" (+" + std::to_string(huge.size() - kMaxQuoted) + " bytes)"));
  CHECK(quote("short") == "\"short\"");
  TempDir t;
  runtime::write_runtime_log(t / "log.json", "json", "cannot create: " + huge);
  CHECK(fs::read_file(t / "log.json").size() < 8192);
}

TEST_CASE("rootfs: an image file that is not regular is never opened for reading", "[common][rootfs][hostile]") {
  TempDir t;
  ::mkdir((t / "root").c_str(), 0755);
  ::mkdir((t / "root/etc").c_str(), 0755);
  const std::string fifo = t / "root/etc/ld.so.preload";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  // A writer blocks in open() until someone opens the FIFO for reading:
  // opening it (even O_NONBLOCK) on the host would release it.
  pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    int fd = ::open(fifo.c_str(), O_WRONLY);
    ::_exit(fd >= 0 ? 0 : 1);
  }
  for (auto resolver : {rootfs::Resolver::automatic, rootfs::Resolver::walk})
    CHECK_THROWS_WITH(rootfs::read_file_in_root(t / "root", "/etc/ld.so.preload", 4096, resolver),
                      Catch::Contains("not a regular file"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int status = 0;
  const pid_t done = ::waitpid(writer, &status, WNOHANG);
  ::kill(writer, SIGKILL);
  ::waitpid(writer, &status, 0);
  CHECK(done == 0); // still blocked: nobody opened the FIFO for reading
}

TEST_CASE("unexpected JSON types are errors naming the JSON path, never nlohmann exceptions", "[create][hostile]") {
  TempDir t;
  t.write("cdi/gpu.yaml", "cdiVersion: 0.6.0\nkind: v.com/gpu\ndevices:\n  - name: \"0\"\n    containerEdits:\n"
                          "      env: [G=0]\n      deviceNodes: [{path: /dev/null}]\n      mounts: [{hostPath: /tmp, containerPath: /m}]\n");
  Config config;
  config.spec_dirs = {t / "cdi"};
  config.state_dir = t / "state";
  const std::string ann = R"("annotations": {"cdi.k8s.io/x": "v.com/gpu=0"})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"linux": {"devices": [{"path": 5}]}, )" + ann + "}", "linux.devices[0].path is not a string"},
      {R"({"linux": {"devices": [{"path": "/dev/x"}, {"path": ["a"]}]}, )" + ann + "}",
       "linux.devices[1].path is not a string"},
      {R"({"mounts": [{"destination": false}], )" + ann + "}", "mounts[0].destination is not a string"},
      {R"({"hooks": {"createRuntime": [{"path": 1}]}, )" + ann + "}", "hooks.createRuntime[].path is not a string"},
  };
  int i = 0;
  for (const auto &[config_json, message] : cases) {
    CAPTURE(config_json);
    const std::string b = "b" + std::to_string(i++);
    t.write(b + "/config.json", config_json);
    try {
      prepare(t / b, "c" + std::to_string(i), config);
      FAIL("no error");
    } catch (const Error &e) {
      CHECK_THAT(e.message(), Catch::Contains(message));
    }
  }
}
