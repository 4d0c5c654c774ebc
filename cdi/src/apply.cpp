// Container edits applied to an OCI runtime spec, in the order and with the
// semantics of the CDI reference library: an env entry replaces in place the
// last entry of its key (KEY=... or a bare KEY), the one runc gives the
// process when a key stands twice.
//
// One difference: applying the same edits again changes nothing. containerd
// 1.7+ (enable_cdi), CRI-O and podman apply CDI themselves before
// gpuslice-runtime sees the spec, and the reference appends hooks and cgroup
// rules every time: a spec's hook would run twice (NVIDIA's ldcache and
// symlink hooks are not idempotent) and the rules double. So a hook equal to
// one the spec already had is not added again, nor a cgroup rule that an
// equal later-standing rule already grants. Everything else already replaces
// by key (env name, device path, mount destination, net device, gid).
#include "gpuslice/cdi/apply.hpp"

#include "gpuslice/cdi/names.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <set>

namespace gpuslice::cdi {

namespace {

// The object at obj[key], created when absent; an Error when present but not
// an object (a malformed config.json must not be silently rewritten).
OciSpec &object_at(OciSpec &obj, const char *key, const char *path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    obj[key] = OciSpec::object();
    return obj[key];
  }
  if (!it->is_object())
    throw Error(std::string("OCI spec: ") + path + " is not an object");
  return *it;
}

OciSpec &array_at(OciSpec &obj, const char *key, const char *path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    obj[key] = OciSpec::array();
    return obj[key];
  }
  if (!it->is_array())
    throw Error(std::string("OCI spec: ") + path + " is not an array");
  return *it;
}

std::optional<uint32_t> process_id(const OciSpec &oci, const char *which) {
  auto p = oci.find("process");
  if (p == oci.end() || !p->is_object())
    return std::nullopt;
  auto u = p->find("user");
  if (u == p->end() || !u->is_object())
    return std::nullopt;
  auto v = u->find(which);
  if (v == u->end() || !v->is_number_unsigned())
    return std::nullopt;
  auto id = v->get<uint64_t>();
  if (id == 0 || id > UINT32_MAX)
    return std::nullopt;
  return static_cast<uint32_t>(id);
}

void apply_env(OciSpec &oci, const std::vector<std::string> &env) {
  if (env.empty())
    return;
  OciSpec &list = array_at(object_at(oci, "process", "process"), "env", "process.env");
  for (const auto &entry : env) {
    const std::string_view key = env_key(entry);
    auto same_key = [&](const OciSpec &e) { return e.is_string() && env_key(e.get_ref<const std::string &>()) == key; };
    auto last = std::find_if(list.rbegin(), list.rend(), same_key);
    if (last != list.rend())
      *last = entry;
    else
      list.push_back(entry);
  }
}

// Fills type, major/minor and mode from the host node when the spec left them
// out, as the reference does: a node is complete with a type and a non-zero
// major (or type p). A complete node still takes the host node's mode when
// the spec gave none (the reference since 1.1.0: runc would make it 0666),
// and needs no host node. Throws Error when the host node it needs is
// missing or of another type.
DeviceNode complete_device_node(const DeviceNode &in, const HostNodeLookup &lookup) {
  DeviceNode d = in;
  if (d.host_path.empty())
    d.host_path = d.path;
  if (!d.type.empty() && (d.major != 0 || d.type == "p")) {
    if (!d.file_mode) {
      try {
        if (const HostNode host = lookup(d.host_path); host.type == d.type)
          d.file_mode = host.mode;
      } catch (const Error &) {
        // none there: the spec said all a runtime needs
      }
    }
    return d;
  }
  const HostNode host = with_context("device node " + quote(d.path), [&] { return lookup(d.host_path); });
  if (d.type.empty())
    d.type = host.type;
  else if (d.type != host.type)
    throw Error("device node " + quote(d.path) + ": type " + quote(d.type) + " does not match host node " +
                quote(d.host_path) + " of type " + quote(host.type));
  if (!d.file_mode)
    d.file_mode = host.mode;
  if (d.type == "p") {
    d.major = d.minor = 0;
  } else if (d.major == 0) {
    d.major = host.major;
    d.minor = host.minor;
  }
  return d;
}

OciSpec mount_object(const Mount &m) {
  OciSpec om = OciSpec::object();
  om["destination"] = m.container_path;
  if (!m.type.empty())
    om["type"] = m.type;
  om["source"] = m.host_path;
  if (!m.options.empty())
    om["options"] = m.options;
  return om;
}

OciSpec hook_object(const Hook &h) {
  OciSpec oh = OciSpec::object();
  oh["path"] = h.path;
  if (!h.args.empty())
    oh["args"] = h.args;
  if (!h.env.empty())
    oh["env"] = h.env;
  if (h.timeout)
    oh["timeout"] = *h.timeout;
  return oh;
}


// The same field in both, a missing one equal to `absent` (Go's omitempty
// leaves out what gpuslice writes as empty, and the reverse).
bool same_member(const OciSpec &a, const OciSpec &b, const char *key, const OciSpec &absent) {
  auto ia = a.find(key), ib = b.find(key);
  const OciSpec &va = ia == a.end() || ia->is_null() ? absent : *ia;
  const OciSpec &vb = ib == b.end() || ib->is_null() ? absent : *ib;
  return va == vb;
}

// A cgroup rule equal to `rule` stands after the last deny rule: adding it
// again would change nothing.
bool already_allowed(const OciSpec &rules, const OciSpec &rule) {
  for (auto it = rules.rbegin(); it != rules.rend(); ++it) {
    if (!it->is_object())
      continue;
    const auto allow = it->find("allow");
    if (allow != it->end() && allow->is_boolean() && !allow->get<bool>())
      return false;
    static constexpr const char *kFields[] = {"allow", "type", "major", "minor", "access"};
    if (std::all_of(std::begin(kFields), std::end(kFields),
                    [&](const char *k) { return same_member(*it, rule, k, nullptr); }))
      return true;
  }
  return false;
}

void apply_device_nodes(OciSpec &oci, const std::vector<DeviceNode> &nodes) {
  if (nodes.empty())
    return;
  const auto uid = process_id(oci, "uid");
  const auto gid = process_id(oci, "gid");
  OciSpec &linux_ = object_at(oci, "linux", "linux");
  for (const auto &d : nodes) {
    OciSpec dev = OciSpec::object();
    dev["path"] = d.path;
    dev["type"] = d.type;
    dev["major"] = d.major;
    dev["minor"] = d.minor;
    if (d.file_mode)
      dev["fileMode"] = *d.file_mode;
    if (d.uid || uid)
      dev["uid"] = d.uid ? *d.uid : *uid;
    if (d.gid || gid)
      dev["gid"] = d.gid ? *d.gid : *gid;
    OciSpec &devices = array_at(linux_, "devices", "linux.devices");
    for (auto it = devices.begin(); it != devices.end(); ++it) {
      const auto where = "linux.devices[" + std::to_string(it - devices.begin()) + "].path";
      if (string_member(*it, "path", where) == d.path) {
        devices.erase(it);
        break;
      }
    }
    devices.push_back(std::move(dev));
    if (d.type == "b" || d.type == "c") {
      OciSpec rule = OciSpec::object();
      rule["allow"] = true;
      rule["type"] = d.type;
      rule["major"] = d.major;
      rule["minor"] = d.minor;
      rule["access"] = d.permissions.empty() ? "rwm" : d.permissions;
      OciSpec &rules = array_at(object_at(linux_, "resources", "linux.resources"), "devices", "linux.resources.devices");
      if (!already_allowed(rules, rule))
        rules.push_back(std::move(rule));
    }
  }
}

void apply_net_devices(OciSpec &oci, const std::vector<NetDevice> &nets) {
  if (nets.empty())
    return;
  OciSpec &map = object_at(object_at(oci, "linux", "linux"), "netDevices", "linux.netDevices");
  for (const auto &n : nets)
    map[n.host_interface_name] = OciSpec{{"name", n.name}};
}

std::string cleaned_destination(const OciSpec &m) {
  if (!m.is_object())
    return {};
  auto it = m.find("destination");
  return it != m.end() && it->is_string() ? fs::clean_path(it->get_ref<const std::string &>()) : std::string();
}

void apply_mounts(OciSpec &oci, const std::vector<Mount> &mounts) {
  if (mounts.empty())
    return;
  OciSpec &list = array_at(oci, "mounts", "mounts");
  for (const auto &m : mounts) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      const auto where = "mounts[" + std::to_string(it - list.begin()) + "].destination";
      if (string_member(*it, "destination", where) == m.container_path) {
        list.erase(it);
        break;
      }
    }
    list.push_back(mount_object(m));
  }
  // Parents before children: stable sort by the depth of the destination.
  std::vector<std::pair<std::size_t, OciSpec>> keyed;
  keyed.reserve(list.size());
  for (auto &m : list)
    keyed.emplace_back(fs::path_depth(cleaned_destination(m)), std::move(m));
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  OciSpec sorted = OciSpec::array();
  for (auto &[depth, m] : keyed)
    sorted.push_back(std::move(m));
  list = std::move(sorted);
}

bool had_hook(const OciSpec &stages, const std::string &stage, const OciSpec &hook) {
  const auto it = stages.find(stage);
  if (it == stages.end() || !it->is_array())
    return false;
  const OciSpec none = OciSpec::array();
  return std::any_of(it->begin(), it->end(), [&](const OciSpec &h) {
    return h.is_object() && same_member(h, hook, "path", nullptr) && same_member(h, hook, "args", none) &&
           same_member(h, hook, "env", none) && same_member(h, hook, "timeout", nullptr);
  });
}

void apply_hooks(OciSpec &oci, const std::vector<Hook> &hooks) {
  if (hooks.empty())
    return;
  OciSpec &stages = object_at(oci, "hooks", "hooks");
  const OciSpec before = stages; // a spec listing a hook twice still gets it twice
  for (const auto &h : hooks) {
    OciSpec oh = hook_object(h);
    const std::string where = "hooks." + h.hook_name;
    OciSpec &stage = array_at(stages, h.hook_name.c_str(), where.c_str());
    if (!had_hook(before, h.hook_name, oh))
      stage.push_back(std::move(oh));
  }
}

void apply_intel_rdt(OciSpec &oci, const std::optional<IntelRdt> &rdt) {
  if (!rdt)
    return;
  OciSpec r = OciSpec::object();
  if (!rdt->clos_id.empty())
    r["closID"] = rdt->clos_id;
  if (!rdt->l3_cache_schema.empty())
    r["l3CacheSchema"] = rdt->l3_cache_schema;
  if (!rdt->mem_bw_schema.empty())
    r["memBwSchema"] = rdt->mem_bw_schema;
  if (!rdt->schemata.empty())
    r["schemata"] = rdt->schemata;
  if (rdt->enable_monitoring)
    r["enableMonitoring"] = true;
  if (rdt->enable_cmt)
    r["enableCMT"] = true;
  if (rdt->enable_mbm)
    r["enableMBM"] = true;
  object_at(oci, "linux", "linux")["intelRdt"] = std::move(r);
}

void apply_additional_gids(OciSpec &oci, const std::vector<uint32_t> &gids) {
  if (gids.empty())
    return;
  OciSpec &list = array_at(object_at(object_at(oci, "process", "process"), "user", "process.user"), "additionalGids",
                           "process.user.additionalGids");
  for (uint32_t g : gids) {
    if (g == 0)
      continue;
    if (std::none_of(list.begin(), list.end(), [&](const OciSpec &e) { return e.is_number() && e.get<uint64_t>() == g; }))
      list.push_back(g);
  }
}

} // namespace

HostNode lstat_host_node(const std::string &host_path) {
  struct stat st {};
  if (::lstat(host_path.c_str(), &st) != 0)
    throw system_error("lstat " + quote(host_path));
  HostNode n;
  if (S_ISBLK(st.st_mode))
    n.type = "b";
  else if (S_ISCHR(st.st_mode))
    n.type = "c";
  else if (S_ISFIFO(st.st_mode))
    n.type = "p";
  else
    throw Error("host path " + quote(host_path) + " is not a device node");
  n.major = major(st.st_rdev);
  n.minor = minor(st.st_rdev);
  n.mode = st.st_mode & 07777;
  return n;
}

void apply_edits(OciSpec &oci, const ContainerEdits &edits, const HostNodeLookup &lookup) {
  if (!oci.is_object())
    throw Error("OCI spec is not a JSON object");
  // Complete the nodes before touching anything: the lookups can fail.
  std::vector<DeviceNode> nodes;
  nodes.reserve(edits.device_nodes.size());
  for (const auto &d : edits.device_nodes)
    nodes.push_back(complete_device_node(d, lookup));
  apply_env(oci, edits.env);
  apply_device_nodes(oci, nodes);
  apply_net_devices(oci, edits.net_devices);
  apply_mounts(oci, edits.mounts);
  apply_hooks(oci, edits.hooks);
  apply_intel_rdt(oci, edits.intel_rdt);
  apply_additional_gids(oci, edits.additional_gids);
}

ContainerEdits collect_edits(const Registry &registry, const std::vector<std::string> &devices) {
  std::vector<const ResolvedDevice *> resolved;
  std::vector<std::string> unresolved;
  std::set<std::string> requested;
  for (const auto &name : devices) {
    if (!requested.insert(name).second)
      continue;
    if (const auto *r = registry.find(name))
      resolved.push_back(r);
    else
      unresolved.push_back(name);
  }
  if (!unresolved.empty()) {
    std::string names;
    for (const auto &n : unresolved)
      names += (names.empty() ? "" : ", ") + quote(n);
    std::string msg = "unresolvable CDI device" + std::string(unresolved.size() > 1 ? "s " : " ") + names +
                      " (spec dirs searched: " + join(registry.spec_dirs(), ", ") + ")";
    if (!registry.errors().empty()) {
      std::set<std::string> bad;
      for (const auto &e : registry.errors())
        bad.insert(e.path);
      std::string files;
      for (const auto &b : bad)
        files += (files.empty() ? "" : ", ") + quote(b);
      msg += "; specs with errors: " + files;
    }
    throw Error(msg);
  }
  ContainerEdits merged;
  std::set<const Spec *> seen_specs;
  for (const auto *r : resolved) {
    if (seen_specs.insert(r->spec).second)
      merged.append(r->spec->edits);
    merged.append(r->device->edits);
  }
  return merged;
}

void inject_devices(const Registry &registry, OciSpec &oci, const std::vector<std::string> &devices,
                    const HostNodeLookup &lookup) {
  const ContainerEdits edits = collect_edits(registry, devices);
  OciSpec edited = oci;
  apply_edits(edited, edits, lookup);
  oci = std::move(edited);
}

} // namespace gpuslice::cdi
