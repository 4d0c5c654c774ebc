// packaging/common/oci-hooks.d/gpuslice.json is read by podman and CRI-O
// (oci-hooks(5)); a typo there fails silently (the hook just never runs), so
// its fields are checked here. The explicit env matters: without it the hook
// may inherit an environment that came from the image (CVE-2025-23266).
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/install_paths.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <regex>

TEST_CASE("oci-hooks.d file: version, hook, when and stages", "[packaging]") {
  // as configured for this build (packaging/CMakeLists.txt)
  const std::string path = GPUSLICE_OCI_HOOKS_FILE;
  nlohmann::json j = nlohmann::json::parse(gpuslice::fs::read_file(path));

  CHECK(j.at("version") == "1.0.0");
  const auto &hook = j.at("hook");
  CHECK(hook.at("path") == gpuslice::installed::kHookPath);
  CHECK(hook.at("args") == nlohmann::json::array({"gpuslice-hook", "prestart"}));
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

  const auto &when = j.at("when");
  CHECK_FALSE(when.contains("always"));
  const auto &annotations = when.at("annotations");
  REQUIRE(annotations.size() == 1);
  const std::string key_pattern = annotations.begin().key();
  const std::string value_pattern = annotations.begin().value().get<std::string>();
  CHECK(key_pattern == "^cdi\\.k8s\\.io/.*");
  CHECK(value_pattern == ".*");
  // The key pattern selects CDI annotations and nothing else.
  std::regex key_re(key_pattern, std::regex::extended);
  CHECK(std::regex_search("cdi.k8s.io/claim-gpu", key_re));
  CHECK_FALSE(std::regex_search("cdixk8s.io/claim", key_re));
  CHECK_FALSE(std::regex_search("example.com/cdi.k8s.io/x", key_re));

  CHECK(j.at("stages") == nlohmann::json::array({"prestart"}));
}
