#include "gpuslice/cdi/validate.hpp"

#include "gpuslice/cdi/names.hpp"
#include "gpuslice/cdi/version.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

namespace gpuslice::cdi {

namespace {

constexpr std::array<std::string_view, 6> kHookStages{"prestart", "createRuntime", "createContainer",
                                                     "startContainer", "poststart", "poststop"};

struct Problems {
  std::vector<std::string> list;
  void add(const std::string &field, const std::string &reason) { list.push_back(field + ": " + reason); }
};

std::string idx(const std::string &at, const char *field, std::size_t i) {
  return at + "." + field + "[" + std::to_string(i) + "]";
}

void check_env(Problems &p, const std::vector<std::string> &env, const std::string &at) {
  for (std::size_t i = 0; i < env.size(); ++i) {
    const auto eq = env[i].find('=');
    if (eq == std::string::npos)
      p.add(at + "[" + std::to_string(i) + "]", "env entry " + quote(env[i]) + " is not KEY=VALUE");
    else if (eq == 0)
      p.add(at + "[" + std::to_string(i) + "]", "env entry " + quote(env[i]) + " has an empty key");
  }
}

void check_absolute(Problems &p, const std::string &field, const std::string &path, const char *what) {
  if (path.empty())
    p.add(field, std::string("empty ") + what);
  else if (!fs::is_absolute(path))
    p.add(field, std::string(what) + " " + quote(path) + " must be absolute");
}

// A bind mount's source is a host path; other mount types (tmpfs, proc...)
// take a free-form source.
bool is_bind(const Mount &m) {
  return m.type.empty() || m.type == "bind" ||
         std::any_of(m.options.begin(), m.options.end(), [](const std::string &o) { return o == "bind" || o == "rbind"; });
}

// Linux interface names: IFNAMSIZ-1 bytes, no '/', no white space.
std::string check_interface_name(const std::string &n) {
  if (n.empty())
    return "empty interface name";
  if (n.size() > 15)
    return "interface name " + quote(n) + " is longer than 15 characters";
  if (n == "." || n == "..")
    return "interface name " + quote(n) + " is not allowed";
  for (char c : n)
    if (c == '/' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0')
      return "interface name " + quote(n) + " has an invalid character";
  return {};
}

// Kubernetes-style annotation keys: [prefix/]name, name <= 63 characters,
// alphanumeric at both ends, [-._A-Za-z0-9] inside.
std::string check_annotation_key(const std::string &key) {
  std::string_view name = key;
  if (const auto slash = key.rfind('/'); slash != std::string::npos) {
    std::string_view prefix(key.data(), slash);
    if (prefix.empty() || prefix.size() > 253)
      return "annotation key " + quote(key) + " has an invalid prefix";
    for (char c : prefix)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
        return "annotation key " + quote(key) + " has an invalid prefix";
    name = std::string_view(key).substr(slash + 1);
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back()))
    return "annotation key " + quote(key) + " is not a valid name";
  for (char c : name)
    if (!alnum(c) && c != '-' && c != '_' && c != '.')
      return "annotation key " + quote(key) + " is not a valid name";
  return {};
}

// Keys are only warned about (annotation_warnings): the reference library
// checks them lowercased and engines use specs whatever their keys; only
// the size is an error.
void check_annotations(Problems &p, const Annotations &a, const std::string &at) {
  std::size_t total = 0;
  for (const auto &[k, v] : a)
    total += k.size() + v.size();
  if (total > 256 * 1024)
    p.add(at + "annotations", "annotations are larger than 256 KiB");
}

void check_edits(Problems &p, const ContainerEdits &e, const std::string &at) {
  check_env(p, e.env, at + ".env");
  for (std::size_t i = 0; i < e.device_nodes.size(); ++i) {
    const auto &d = e.device_nodes[i];
    const auto f = idx(at, "deviceNodes", i);
    check_absolute(p, f + ".path", d.path, "device path");
    if (!d.host_path.empty() && !fs::is_absolute(d.host_path))
      p.add(f + ".hostPath", "host path " + quote(d.host_path) + " must be absolute");
    if (!(d.type.empty() || d.type == "b" || d.type == "c" || d.type == "u" || d.type == "p"))
      p.add(f + ".type", "invalid device type " + quote(d.type) + " (want b, c, u or p)");
    for (char c : d.permissions)
      if (c != 'r' && c != 'w' && c != 'm') {
        p.add(f + ".permissions", "invalid permissions " + quote(d.permissions) + " (only r, w, m)");
        break;
      }
    if (d.major < 0 || d.minor < 0)
      p.add(f, "negative major or minor");
  }
  std::set<std::string> hosts, names;
  for (std::size_t i = 0; i < e.net_devices.size(); ++i) {
    const auto &n = e.net_devices[i];
    const auto f = idx(at, "netDevices", i);
    if (auto r = check_interface_name(n.host_interface_name); !r.empty())
      p.add(f + ".hostInterfaceName", r);
    else if (!hosts.insert(n.host_interface_name).second)
      p.add(f + ".hostInterfaceName", "duplicate host interface " + quote(n.host_interface_name));
    if (auto r = check_interface_name(n.name); !r.empty())
      p.add(f + ".name", r);
    else if (!names.insert(n.name).second)
      p.add(f + ".name", "duplicate interface name " + quote(n.name));
  }
  for (std::size_t i = 0; i < e.hooks.size(); ++i) {
    const auto &h = e.hooks[i];
    const auto f = idx(at, "hooks", i);
    if (std::find(kHookStages.begin(), kHookStages.end(), h.hook_name) == kHookStages.end())
      p.add(f + ".hookName", "invalid hook name " + quote(h.hook_name) +
                                 " (want prestart, createRuntime, createContainer, startContainer, poststart or poststop)");
    check_absolute(p, f + ".path", h.path, "hook path");
    check_env(p, h.env, f + ".env");
    if (h.timeout && *h.timeout <= 0)
      p.add(f + ".timeout", "timeout must be positive");
  }
  for (std::size_t i = 0; i < e.mounts.size(); ++i) {
    const auto &m = e.mounts[i];
    const auto f = idx(at, "mounts", i);
    if (is_bind(m))
      check_absolute(p, f + ".hostPath", m.host_path, "host path");
    else if (m.host_path.empty())
      p.add(f + ".hostPath", "empty mount source");
    check_absolute(p, f + ".containerPath", m.container_path, "container path");
  }
  if (e.intel_rdt) {
    const auto &c = e.intel_rdt->clos_id;
    // "/" is runtime-spec 1.3's name for the default (root) CLOS.
    if (c != "/" && (c == "." || c == ".." || c.find_first_of("/\n") != std::string::npos))
      p.add(at + ".intelRdt.closID", "invalid closID " + quote(c));
  }
}

} // namespace


std::vector<std::string> validate_spec(const Spec &spec) {
  Problems p;
  const auto version = parse_version(spec.version);
  if (spec.version.empty())
    p.add("cdiVersion", "missing");
  else if (!version)
    p.add("cdiVersion", "unsupported version " + quote(spec.version) + " (supported: 0.3.0 to " + kCurrentVersion.str() + ")");
  if (spec.kind.empty())
    p.add("kind", "missing");
  else if (auto r = check_kind(spec.kind); !r.empty())
    p.add("kind", r);
  check_annotations(p, spec.annotations, "");
  check_edits(p, spec.edits, "containerEdits");

  if (version) {
    for (const auto &r : requirements_above(spec, *version))
      p.add(r.field, "needs cdiVersion " + r.needs.str() + " (spec has " + version->str() + ")");
    if (*version >= Version{1, 0, 0} && spec.devices.empty())
      p.add("devices", "a spec of cdiVersion 1.0.0 or later must define at least one device");
    auto removed = [&](const ContainerEdits &e, const std::string &at) {
      if (e.intel_rdt && (e.intel_rdt->enable_cmt || e.intel_rdt->enable_mbm) && *version >= Version{1, 1, 0})
        p.add(at + ".intelRdt", "enableCMT and enableMBM were removed in cdiVersion 1.1.0; use enableMonitoring");
    };
    removed(spec.edits, "containerEdits");
    for (std::size_t i = 0; i < spec.devices.size(); ++i)
      removed(spec.devices[i].edits, "devices[" + std::to_string(i) + "].containerEdits");
  }

  std::set<std::string> seen;
  for (std::size_t i = 0; i < spec.devices.size(); ++i) {
    const auto &d = spec.devices[i];
    const std::string at = "devices[" + std::to_string(i) + "]";
    if (auto r = check_device_name(d.name); !r.empty())
      p.add(at + ".name", r);
    else if (!seen.insert(d.name).second)
      p.add(at + ".name", "duplicate device name " + quote(d.name));
    check_annotations(p, d.annotations, at + ".");
    if (d.edits.empty())
      p.add(at + ".containerEdits", "a device must have at least one edit");
    check_edits(p, d.edits, at + ".containerEdits");
  }
  return std::move(p.list);
}

std::vector<std::string> annotation_warnings(const Spec &spec) {
  std::vector<std::string> out;
  auto check = [&](const Annotations &a, const std::string &at) {
    for (const auto &[k, v] : a) {
      std::string lower = k;
      for (char &c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (auto r = check_annotation_key(lower); !r.empty())
        out.push_back(at + "annotations: " + r + " (not Kubernetes-style; the spec is still used)");
    }
  };
  check(spec.annotations, "");
  for (std::size_t i = 0; i < spec.devices.size(); ++i)
    check(spec.devices[i].annotations, "devices[" + std::to_string(i) + "].");
  return out;
}

} // namespace gpuslice::cdi
