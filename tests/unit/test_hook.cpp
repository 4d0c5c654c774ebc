#include "gpuslice/common/error.hpp"
#include "gpuslice/hook/state.hpp"
#include "gpuslice/state/container_dir.hpp"

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
  CHECK_FALSE(state::is_safe_container_id(std::string(256, 'a')));
}

