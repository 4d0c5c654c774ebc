// gather_facts (create.hpp): every read of the host a create makes besides
// config.json, before any modifier runs.
#include "gpuslice/create/create.hpp"

#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/cdi/spec_cache.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include <unistd.h>

#include <chrono>
#include <set>

namespace gpuslice::create {

namespace {

// How often a create looks for stale state dirs (a create killed half-way,
// a container whose delete never came): each costs a little memory and,
// with limits, a place on a GPU until then (admission collects before it
// refuses).
constexpr std::chrono::seconds kStaleCollectionInterval{60};

// The registry's devices for `requests`: the edits, which device node is
// which host path, and each device's env.
void resolve(const Requests &requests, const Config &config, Facts &facts) {
  // Only the specs of the kinds asked for: a node's other specs (some of
  // them large) are not parsed on every create.
  std::set<std::string> kinds;
  for (const auto &name : requests.devices)
    kinds.insert(name.substr(0, name.find('=')));
  cdi::Registry registry(config.spec_dirs, cdi::ChangeDetection::none);
  // Root's cache of parsed specs, keyed on each spec's whole text: a node's
  // driver spec is not parsed again on every create (spec_cache.hpp).
  std::optional<cdi::SpecCache> cache;
  if (::geteuid() == 0)
    registry.use_cache(&cache.emplace(cdi::kDefaultSpecCacheDir));
  registry.reload(kinds);
  for (const auto &e : registry.errors())
    facts.warnings.push_back("CDI spec " + e.path + ": " + e.message);
  facts.edits = cdi::collect_edits(registry, requests.devices);
  for (const auto &node : facts.edits.device_nodes) {
    const std::string host = node.host_path.empty() ? node.path : node.host_path;
    facts.host_nodes[node.path] = host;
    Facts::HostDevice device;
    try {
      device.node = cdi::lstat_host_node(host);
    } catch (const Error &e) {
      device.error = e.message();
    }
    facts.host_devices.emplace(host, std::move(device));
  }
  for (const auto &name : requests.devices) {
    const cdi::ResolvedDevice *d = registry.find(name); // collect_edits resolved every one
    ClaimedEnv c{name, d->spec->edits.env};
    c.env.insert(c.env.end(), d->device->edits.env.begin(), d->device->edits.env.end());
    facts.claimed.push_back(std::move(c));
  }
}

AdmissionFacts admission_facts(const sharing::Limits &limits, const Config &config) {
  AdmissionFacts a;
  a.load = load_per_gpu(config.state_dir);
  if (!config.allow_memory_overcommit)
    a.gpus = node_gpu_memory(config, gpus_of(limits));
  return a;
}

} // namespace

Facts gather_facts(const BundleSpec &spec, const Context &ctx, selinux::System &system) {
  Facts facts;
  const Config &config = ctx.config;
  facts.requests = collect_requests(spec, config);
  if (facts.requests.empty()) {
    refuse_limits_not_claimed(spec.process_env());
    return facts;
  }
  if (!state::is_safe_container_id(ctx.container_id))
    throw Error("container id " + quote(ctx.container_id) + " is not a safe path component");
  resolve(facts.requests, config, facts);
  facts.limits = container_limits(facts.claimed, spec.process_env(), config);
  if (!facts.limits)
    refuse_limits_not_claimed(spec.process_env());
  const auto label = spec.mount_label();
  facts.selinux_kernel = selinux::parse_mode(config.selinux_label) != selinux::Mode::off && label && !label->empty() &&
                         system.enabled();
  // What no runtime knows any more (a create killed half-way, a container
  // whose delete never came) is collected now and then, not on every
  // create; with limits, under the lock, where it frees places.
  if (!facts.limits) {
    state::collect_stale_now_and_then(config.state_dir, kStaleCollectionInterval);
    return facts;
  }
  const std::string root = spec.root_path();
  facts.rootfs = fs::absolute(fs::is_absolute(root) ? root : ctx.bundle_dir + "/" + root);
  facts.image = read_image(facts.rootfs);
  // A container with limits takes its place on its GPUs under the lock,
  // held until its own limits file is in place (admission.hpp).
  facts.admission_lock = state::lock_containers(config.state_dir);
  state::collect_stale_now_and_then(config.state_dir, kStaleCollectionInterval);
  facts.admission = admission_facts(*facts.limits, config);
  std::vector<std::string> ignored;
  try {
    check_admission(*facts.limits, *facts.admission, config, ignored);
  } catch (const Error &) {
    // stale dirs that hold places on a GPU go before a refusal is final
    if (!state::collect_stale(config.state_dir).empty())
      facts.admission = admission_facts(*facts.limits, config);
  }
  return facts;
}

} // namespace gpuslice::create
