#include "gpuslice/common/error.hpp"
#include "gpuslice/hook/state.hpp"
#include "gpuslice/hook/state_dir.hpp"

#include "tempdir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

using namespace gpuslice;
using namespace gpuslice::hook;
using gpuslice::testing::TempDir;

TEST_CASE("hook state: fields validated as hostile input", "[hook]") {
  auto s = parse_state(R"({"ociVersion": "1.0.2", "id": "abc-1_2.3", "status": "creating", "pid": 42, "bundle": "/run/b", "annotations": {}})");
  CHECK(s.id == "abc-1_2.3");
  CHECK(s.pid == 42);
  for (const char *bad : {R"({"id": "../etc"})", R"({"id": "a/b"})", R"({"id": ".."})", R"({"id": ""})", R"({"status": "x"})",
                          R"({"id": 5})", R"({"id": "x", "pid": -1})", R"({"id": "x", "bundle": "rel"})", "[]", "not json"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_state(bad), Error);
  }
  CHECK_FALSE(is_safe_container_id(std::string(256, 'a')));
}

TEST_CASE("hook state dir: created 0700, idempotent, removed without following links", "[hook]") {
  TempDir t;
  const std::string state = t / "run/gpuslice";
  const std::string dir = create_container_dir(state, "c1");
  CHECK(dir == state + "/containers/c1");
  CHECK(create_container_dir(state, "c1") == dir); // again: fine
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);

  // Contents (a region file, a nested dir) go with it; a symlink inside is
  // removed, not followed.
  t.write("outside/keep", "keep");
  t.write("run/gpuslice/containers/c1/region", "x");
  t.write("run/gpuslice/containers/c1/sub/file", "y");
  REQUIRE(::symlink((t / "outside").c_str(), (dir + "/link").c_str()) == 0);
  remove_container_dir(state, "c1");
  CHECK(::access(dir.c_str(), F_OK) != 0);
  CHECK(fs::read_file(t / "outside/keep") == "keep");
  remove_container_dir(state, "c1"); // again: fine
  remove_container_dir(t / "never", "c1");

  // A symlink in place of the container dir is refused, its target untouched.
  REQUIRE(::symlink((t / "outside").c_str(), (state + "/containers/c2").c_str()) == 0);
  CHECK_THROWS_AS(create_container_dir(state, "c2"), Error);
  CHECK_THROWS_AS(remove_container_dir(state, "c2"), Error);
  CHECK(fs::read_file(t / "outside/keep") == "keep");
  CHECK_THROWS_AS(create_container_dir(state, "../x"), Error);
  CHECK_THROWS_AS(create_container_dir("relative", "x"), Error);
}
