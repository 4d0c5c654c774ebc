// The monitor's status file (gpuslice-shim, read by gpuslice inspect): its
// text comes partly from a pod annotation, so it must stay one valid JSON
// object whatever the annotation holds.
#include "gpuslice/shim/enforcer.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gpuslice::shim;

namespace {
nlohmann::json status_of(const std::string &container_id, const std::string &pod) {
  EnforcerSetup setup;
  setup.container_id = container_id;
  setup.pod = pod;
  Enforcer enforcer(std::move(setup), std::unique_ptr<Nvml>());
  return nlohmann::json::parse(enforcer.status_json()); // throws on anything not JSON
}
} // namespace

TEST_CASE("monitor status: a pod name with quotes, backslashes and control characters stays JSON", "[monitor]") {
  const std::string pod = "ns/a\"b\\c\nd\te\x01\x1f\x7f, \"killed\": 99}";
  const auto status = status_of("c1", pod);
  CHECK(status["pod"] == pod); // read back exactly: nothing injected
  CHECK(status["killed"] == 0);
  CHECK(status["container"] == "c1");
  CHECK(status_of("c1", "ns/caf\xc3\xa9")["pod"] == "ns/caf\xc3\xa9"); // UTF-8 as is
}

TEST_CASE("monitor status: bytes that are not UTF-8 are replaced, not let through", "[monitor]") {
  const auto status = status_of("c1", std::string("ns/\xff\xfe-\xc3") + "x");
  CHECK(status["pod"] == "ns/\xef\xbf\xbd\xef\xbf\xbd-\xef\xbf\xbdx"); // U+FFFD each
  CHECK_FALSE(status_of("c2", "").contains("pod"));
}

TEST_CASE("monitor: NVML is loaded at the first check, once, not as the monitor starts", "[monitor]") {
  int loads = 0;
  Enforcer enforcer(EnforcerSetup{}, [&]() -> std::unique_ptr<Nvml> {
    ++loads;
    return nullptr; // as when the library is missing: the interposer alone
  });
  CHECK(loads == 0); // the container's start is not competing with it
  enforcer.check(-1);
  CHECK(loads == 1);
  enforcer.check(-1);
  CHECK(loads == 1); // a library that failed is not tried every interval
  CHECK(nlohmann::json::parse(enforcer.status_json())["nvml"] == false);
}
