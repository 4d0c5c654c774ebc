// Input: a bundle's config.json. What gpuslice-runtime does to it before any
// side effect: parse (bounded), collect the device requests (annotations,
// qualified linux.devices, env when accepted), read limits from env, add
// its hooks and the sharing mounts, serialise. Anything but gpuslice::Error
// escaping is a crash: the runtime would die with SIGABRT and say nothing.
#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/create/bundle.hpp"
#include "gpuslice/create/requests.hpp"
#include "gpuslice/create/container_limits.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  using namespace gpuslice;
  try {
    auto oci = parse_json<cdi::OciSpec>(std::string_view(reinterpret_cast<const char *>(data), size));
    if (!oci.is_object())
      return 0;
    Config config;
    config.accept_env_requests = true;
    config.accept_gpushare_env = true;
    const auto requests = create::collect_requests(oci, config);
    std::vector<create::ClaimedEnv> claimed;
    for (const auto &d : requests.devices) // a request's name stands in for a device's env
      claimed.push_back({d, {"GPUSLICE_MEMORY_LIMIT=" + d.substr(d.find('=') + 1), "GPUSLICE_GPU_UUID=GPU-" + d}});
    try {
      (void)create::container_limits(claimed, oci, config);
    } catch (const Error &) {
    }
    create::add_gpuslice_hooks(oci, config, "/etc/gpuslice/other.toml");
    create::SharingFiles files;
    files.burst = size % 2 == 0;
    create::add_sharing_mounts(oci, files, "/run/gpuslice/containers/c", "/rootfs", config);
    (void)oci.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } catch (const Error &) {
  }
  return 0;
}
