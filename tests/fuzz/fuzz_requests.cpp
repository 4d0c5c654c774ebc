// Input: a bundle's config.json. What gpuslice-runtime does to it before any
// side effect: the typed spec parsed (bounded), the device requests read
// (annotations, qualified linux.devices, env when accepted), the limits,
// then every modifier of the create path over facts made up here (each
// request a claimed device whose env carries a limit), and the spec written
// back. Anything but gpuslice::Error escaping is a crash: the runtime would
// die with SIGABRT and say nothing.
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/create/container_limits.hpp"
#include "gpuslice/create/create.hpp"
#include "gpuslice/create/requests.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

// The modifiers never touch the host: a System that is never asked.
class NoSelinux : public gpuslice::selinux::System {
public:
  bool enabled() override { return false; }
  void set_fd_label(int, const std::string &) override {}
  void set_link_label(const std::string &, const std::string &) override {}
  void set_socket_create_label(const std::string &) override {}
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  using namespace gpuslice;
  try {
    auto spec = create::BundleSpec::parse(std::string(reinterpret_cast<const char *>(data), size), "config.json");
    Config config;
    config.accept_env_requests = true;
    config.accept_gpushare_env = true;
    create::Facts facts;
    facts.requests = create::collect_requests(spec, config);
    for (const auto &d : facts.requests.devices) // a request's name stands in for a device's env
      facts.claimed.push_back({d, {"GPUSLICE_MEMORY_LIMIT=" + d.substr(d.find('=') + 1), "GPUSLICE_GPU_UUID=GPU-" + d}});
    facts.limits = create::container_limits(facts.claimed, spec.process_env(), config);
    if (facts.limits) {
      facts.rootfs = "/rootfs";
      facts.image.emplace();
      facts.image->glibc_versions = {"GLIBC_2.17"};
      facts.admission.emplace();
    }
    const auto ctx = create::context_of(config, "/etc/gpuslice/other.toml", "c", "/bundle",
                                        size % 2 == 0 ? create::HookMode::add : create::HookMode::none);
    NoSelinux selinux;
    (void)create::plan_create(spec, facts, ctx, selinux);
    (void)spec.text();
  } catch (const Error &) {
  }
  return 0;
}
