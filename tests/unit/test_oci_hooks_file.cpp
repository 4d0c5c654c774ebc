// packaging/common/oci-hooks.d/gpuslice{,-poststop}.json are read by podman
// and CRI-O (oci-hooks(5)); a typo there fails silently (the hook just never
// runs), so their fields are checked here. The explicit env matters: without
// it the hook may inherit an environment that came from the image
// (CVE-2025-23266). They apply to every container: the hook must see a
// device that the engine's own CDI applied (podman --device), whose
// container carries no annotation, to refuse it unlimited rather than let
// it run without its limit; a container that asks for nothing costs one
// short exec.
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/install_paths.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>


namespace {

void check_hooks_file(const std::string &path, const std::string &stage) {
  CAPTURE(path);
  nlohmann::json j = nlohmann::json::parse(gpuslice::fs::read_file(path));
  CHECK(j.at("version") == "1.0.0");
  const auto &hook = j.at("hook");
  CHECK(hook.at("path") == gpuslice::installed::kHookPath);
  CHECK(hook.at("args") == nlohmann::json::array({"gpuslice-hook", stage}));
  REQUIRE(hook.at("env").is_array());
  bool has_path = false;
  for (const auto &e : hook.at("env")) {
    std::string entry = e.get<std::string>();
    CHECK(entry.find('=') != std::string::npos);
    CHECK_FALSE(entry.starts_with("LD_"));
    has_path = has_path || entry.starts_with("PATH=");
  }
  CHECK(has_path);
  CHECK(hook.at("timeout").get<int>() > 0);
  CHECK(j.at("when") == nlohmann::json{{"always", true}});
  CHECK(j.at("stages") == nlohmann::json::array({stage}));
}

} // namespace

TEST_CASE("oci-hooks.d files: version, hook, when and stages", "[packaging]") {
  // as configured for this build (packaging/CMakeLists.txt)
  check_hooks_file(GPUSLICE_OCI_HOOKS_FILE, "prestart");
  check_hooks_file(GPUSLICE_OCI_POSTSTOP_HOOKS_FILE, "poststop");
}
