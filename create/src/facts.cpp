// gather_facts (create.hpp): every read of the host a create makes besides
// config.json, before any modifier runs.
#include "gpuslice/create/create.hpp"

#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/cdi/spec_cache.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace gpuslice::create {

namespace {

// How often a create looks for stale state dirs (a create killed half-way,
// a container whose delete never came): each costs a little memory and,
// with limits, a place on a GPU until then (admission collects before it
// refuses).
constexpr std::chrono::seconds kStaleCollectionInterval{60};

// The registry of `config`'s spec dirs, loaded for `kinds` (every kind when
// empty), with root's cache of parsed specs.
struct LoadedRegistry {
  cdi::Registry registry;
  std::optional<cdi::SpecCache> cache;
  LoadedRegistry(const Config &config, const std::set<std::string> &kinds, Facts &facts)
      : registry(config.spec_dirs, cdi::ChangeDetection::none) {
    // keyed on each spec's whole text: a node's driver spec is not parsed
    // again on every create (spec_cache.hpp)
    if (::geteuid() == 0)
      registry.use_cache(&cache.emplace(cdi::kDefaultSpecCacheDir));
    if (kinds.empty())
      registry.reload();
    else
      registry.reload(kinds);
    for (const auto &e : registry.errors())
      facts.warnings.push_back("CDI spec " + e.path + ": " + e.message);
  }
};

// The registry's devices for `requests`: the edits, which device node is
// which host path, and each device's env.
void resolve(const Requests &requests, const Config &config, Facts &facts) {
  // Only the specs of the kinds asked for: a node's other specs (some of
  // them large) are not parsed on every create.
  std::set<std::string> kinds;
  for (const auto &name : requests.devices)
    kinds.insert(name.substr(0, name.find('=')));
  LoadedRegistry loaded(config, kinds, facts);
  const cdi::Registry &registry = loaded.registry;
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

bool sets_a_limit(const std::vector<std::string> &env) {
  return std::any_of(std::begin(kLimitEnvVars), std::end(kLimitEnvVars),
                     [&](const char *key) { return env_value(env, key).has_value(); });
}

// A device's env as its edits leave it: the spec's, then the device's own,
// a later entry of a name replacing an earlier one; by name.
std::map<std::string, std::string> effective_env(const cdi::ResolvedDevice &d) {
  std::map<std::string, std::string> out;
  for (const auto *env : {&d.spec->edits.env, &d.device->edits.env})
    for (const auto &entry : *env)
      out[entry.substr(0, entry.find('='))] = entry;
  return out;
}

// Whether config.json's linux.devices has each of the device's nodes, with
// the numbers its spec gives or, where it gives none, the host node's.
bool has_nodes_of(const cdi::ResolvedDevice &d, const std::vector<cdi::DeviceNode> &present) {
  std::vector<const cdi::DeviceNode *> nodes;
  for (const auto *edits : {&d.spec->edits, &d.device->edits})
    for (const auto &n : edits->device_nodes)
      nodes.push_back(&n);
  if (nodes.empty())
    return false; // nothing but env, which the pod's author can write
  for (const auto *n : nodes) {
    cdi::HostNode expected{n->type, n->major, n->minor, 0};
    if (n->type.empty() || (n->major == 0 && n->minor == 0)) { // what the engine took from the host
      try {
        const auto host = cdi::lstat_host_node(n->host_path.empty() ? n->path : n->host_path);
        expected = {n->type.empty() ? host.type : n->type, host.major, host.minor, 0};
      } catch (const Error &) {
        return false;
      }
    }
    const bool found = std::any_of(present.begin(), present.end(), [&](const cdi::DeviceNode &p) {
      return p.path == n->path && p.type == expected.type && p.major == expected.major && p.minor == expected.minor;
    });
    if (!found)
      return false;
  }
  return true;
}

// config.json sets a limit that no requested device gives: the limited
// devices the engine applied, which it did from a spec of root's (the CRI
// CDIDevices field: containerd 1.7+, CRI-O). Such a device set each of its
// GPUSLICE_ variables in config.json's env, with the same values, and each
// of its device nodes in linux.devices; every limit the env sets is one of
// them. The env alone proves nothing: the pod's author writes it. Devices
// with the same GPUSLICE_ variables (the slices of one GPU) are one limit,
// not a sum. None: refused (refuse_limits_not_claimed); several limits
// that cannot be told apart: refused.
void find_applied(const BundleSpec &spec, const Config &config, Facts &facts) {
  const auto env = spec.process_env();
  const std::set<std::string> present(env.begin(), env.end());
  const auto nodes = spec.device_nodes();
  LoadedRegistry loaded(config, {}, facts);
  std::map<std::vector<std::string>, std::vector<const cdi::ResolvedDevice *>> by_limits;
  for (const auto &name : loaded.registry.device_names()) {
    const cdi::ResolvedDevice *d = loaded.registry.find(name);
    const auto device_env = effective_env(*d);
    std::vector<std::string> ours;
    for (const auto &[key, entry] : device_env)
      if (key.rfind("GPUSLICE_", 0) == 0)
        ours.push_back(entry);
    const bool limited = std::any_of(std::begin(kLimitEnvVars), std::end(kLimitEnvVars),
                                     [&](const char *key) { return device_env.count(key) != 0; });
    const bool all_set = std::all_of(ours.begin(), ours.end(), [&](const std::string &e) { return present.count(e); });
    const bool covers_env = std::all_of(std::begin(kLimitEnvVars), std::end(kLimitEnvVars), [&](const char *key) {
      return !env_value(env, key) || device_env.count(key) != 0;
    });
    if (limited && all_set && covers_env && has_nodes_of(*d, nodes))
      by_limits[ours].push_back(d);
  }
  if (by_limits.empty())
    refuse_limits_not_claimed(env);
  if (by_limits.size() > 1) {
    std::string names;
    for (const auto &[limits, devices] : by_limits)
      names += (names.empty() ? "" : ", ") + quote(devices.front()->qualified_name);
    throw Error("config.json's env and device nodes match devices with different limits (" + names +
                "): cannot tell which the engine applied");
  }
  const auto &devices = by_limits.begin()->second;
  for (const auto *d : devices)
    facts.applied.push_back(d->qualified_name);
  std::vector<std::string> device_env;
  for (const auto &[key, entry] : effective_env(*devices.front()))
    device_env.push_back(entry);
  facts.claimed.push_back({devices.front()->qualified_name, std::move(device_env)});
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
  const bool limit_in_env = sets_a_limit(spec.process_env());
  if (facts.requests.empty() && !limit_in_env)
    return facts;
  if (!state::is_safe_container_id(ctx.container_id))
    throw Error("container id " + quote(ctx.container_id) + " is not a safe path component");
  if (!facts.requests.empty())
    resolve(facts.requests, config, facts);
  facts.limits = container_limits(facts.claimed, spec.process_env(), config);
  if (!facts.limits && limit_in_env) {
    find_applied(spec, config, facts);
    facts.limits = container_limits(facts.claimed, spec.process_env(), config);
  }
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
  std::vector<std::string> ignored, ignored_notes;
  try {
    check_admission(*facts.limits, *facts.admission, config, ignored, ignored_notes);
  } catch (const Error &) {
    // stale dirs that hold places on a GPU go before a refusal is final
    if (!state::collect_stale(config.state_dir).empty())
      facts.admission = admission_facts(*facts.limits, config);
  }
  return facts;
}

} // namespace gpuslice::create
