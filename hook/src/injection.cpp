#include "gpuslice/hook/injection.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"

#include <linux/mount.h>

#include <algorithm>

namespace gpuslice::hook {

namespace {

const cdi::OciSpec &member_or_empty(const cdi::OciSpec &doc, std::initializer_list<const char *> keys) {
  static const cdi::OciSpec kNone;
  const cdi::OciSpec *at = &doc;
  for (const char *key : keys) {
    if (!at->is_object())
      return kNone;
    auto it = at->find(key);
    if (it == at->end())
      return kNone;
    at = &*it;
  }
  return *at;
}

// Entries of `after`'s array that `before`'s array does not hold as they are.
std::vector<const cdi::OciSpec *> added(const cdi::OciSpec &before, const cdi::OciSpec &after) {
  std::vector<const cdi::OciSpec *> out;
  if (!after.is_array())
    return out;
  for (const auto &entry : after)
    if (!before.is_array() || std::find(before.begin(), before.end(), entry) == before.end())
      out.push_back(&entry);
  return out;
}

std::string required(const cdi::OciSpec &o, const char *key, const std::string &where) {
  auto v = string_member(o, key, where);
  if (!v)
    throw Error(where + " is missing");
  return *v;
}

std::string optional_string(const cdi::OciSpec &o, const char *key, const std::string &where, std::string fallback) {
  return string_member(o, key, where).value_or(std::move(fallback));
}

int64_t integer(const cdi::OciSpec &o, const char *key, int64_t fallback, const std::string &where) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null())
    return fallback;
  if (!it->is_number_integer())
    throw Error(where + "." + key + " is not an integer");
  return it->get<int64_t>();
}

NodeToMake node_of(const cdi::OciSpec &d) {
  const std::string where = "linux.devices[]";
  NodeToMake n;
  n.path = fs::clean_path(required(d, "path", where + ".path"));
  if (!fs::is_absolute(n.path) || n.path == "/")
    throw Error("device node path " + quote(n.path) + " is not an absolute file path");
  const std::string type = required(d, "type", where + ".type");
  if (type != "c" && type != "u" && type != "b" && type != "p")
    throw Error("device node " + quote(n.path) + " has type " + quote(type) + ": not c, u, b or p");
  n.type = type == "u" ? 'c' : type[0];
  n.major = integer(d, "major", 0, where);
  n.minor = integer(d, "minor", 0, where);
  n.mode = static_cast<uint32_t>(integer(d, "fileMode", 0666, where)) & 07777;
  n.uid = static_cast<uint32_t>(integer(d, "uid", 0, where));
  n.gid = static_cast<uint32_t>(integer(d, "gid", 0, where));
  return n;
}

BindToMake bind_of(const cdi::OciSpec &m, const std::string &rootfs) {
  BindToMake b;
  b.destination = fs::clean_path(required(m, "destination", "mounts[].destination"));
  b.source = required(m, "source", "mounts[].source");
  const std::string shown = "mount at " + quote(b.destination);
  if (!fs::is_absolute(b.destination))
    throw Error(shown + ": the destination is not absolute");
  const std::string type = optional_string(m, "type", "mounts[].type", "");
  bool bind = type == "bind" || type == "rbind";
  b.recursive = type == "rbind";
  for (const auto &o : member_or_empty(m, {"options"})) {
    if (!o.is_string())
      throw Error(shown + ": an option is not a string");
    const auto &opt = o.get_ref<const std::string &>();
    if (opt == "bind")
      bind = true;
    else if (opt == "rbind")
      bind = b.recursive = true;
    else if (opt == "ro" || opt == "rdonly")
      b.attributes |= MOUNT_ATTR_RDONLY;
    else if (opt == "nosuid")
      b.attributes |= MOUNT_ATTR_NOSUID;
    else if (opt == "nodev")
      b.attributes |= MOUNT_ATTR_NODEV;
    else if (opt == "noexec")
      b.attributes |= MOUNT_ATTR_NOEXEC;
    // The defaults of a bind, and propagation: a mount made in the
    // container's namespace propagates nowhere the engine did not set up.
    else if (opt != "rw" && opt != "suid" && opt != "dev" && opt != "exec" && opt != "private" &&
             opt != "rprivate" && opt != "slave" && opt != "rslave" && opt != "relatime" && opt != "noatime" &&
             opt != "nodiratime" && opt != "strictatime")
      throw Error(shown + ": option " + quote(opt) + " is not one gpuslice-hook can apply");
  }
  if (!bind)
    throw Error(shown + ": a mount of type " + quote(type) +
                " cannot be made by gpuslice-hook (only bind mounts); use gpuslice-runtime");
  if (!fs::is_absolute(b.source))
    throw Error(shown + ": source " + quote(b.source) + " is not absolute");
  const std::string cleaned = fs::clean_path(b.source);
  if (cleaned == rootfs || cleaned.starts_with(rootfs + "/")) {
    b.in_rootfs = true;
    b.recursive = true; // keeps what the engine mounted inside it
    b.source = cleaned == rootfs ? std::string("/") : cleaned.substr(rootfs.size());
  }
  return b;
}

DeviceRule rule_of(const cdi::OciSpec &r) {
  const std::string where = "linux.resources.devices[]";
  DeviceRule rule;
  const std::string type = optional_string(r, "type", where + ".type", "a");
  if (type != "a" && type != "c" && type != "b")
    throw Error(where + ".type " + quote(type) + " is not a, c or b");
  rule.type = type[0];
  rule.major = integer(r, "major", -1, where);
  rule.minor = integer(r, "minor", -1, where);
  rule.access = optional_string(r, "access", where + ".access", "rwm");
  if (rule.access.empty() || rule.access.find_first_not_of("rwm") != std::string::npos)
    throw Error(where + ".access " + quote(rule.access) + " is not made of r, w and m");
  return rule;
}

std::vector<std::string> strings_of(const cdi::OciSpec &list, const std::string &where) {
  std::vector<std::string> out;
  if (list.is_null())
    return out;
  if (!list.is_array())
    throw Error(where + " is not an array");
  for (const auto &s : list) {
    if (!s.is_string())
      throw Error(where + " holds a non-string");
    out.push_back(s.get<std::string>());
  }
  return out;
}

} // namespace

Injection plan_injection(const cdi::OciSpec &before, const cdi::OciSpec &after, const std::string &rootfs_path,
                         const std::map<std::string, std::string> &host_nodes) {
  const std::string rootfs = fs::clean_path(rootfs_path);
  Injection inj;
  for (const auto *d : added(member_or_empty(before, {"linux", "devices"}), member_or_empty(after, {"linux", "devices"}))) {
    NodeToMake n = node_of(*d);
    auto host = host_nodes.find(n.path);
    n.host_path = host != host_nodes.end() ? host->second : n.path;
    inj.nodes.push_back(std::move(n));
  }
  for (const auto *m : added(member_or_empty(before, {"mounts"}), member_or_empty(after, {"mounts"})))
    inj.mounts.push_back(bind_of(*m, rootfs));
  for (const auto *r : added(member_or_empty(before, {"linux", "resources", "devices"}),
                             member_or_empty(after, {"linux", "resources", "devices"}))) {
    DeviceRule rule = rule_of(*r);
    if (!bool_member(*r, "allow", "linux.resources.devices[].allow").value_or(false))
      throw Error("the CDI edits deny devices (" + std::string(1, rule.type) + " " + std::to_string(rule.major) +
                  ":" + std::to_string(rule.minor) + "), which gpuslice-hook does not do; use gpuslice-runtime");
    inj.rules.push_back(std::move(rule));
  }
  // Stages that have run by the time the engine runs prestart, in their
  // order; createContainer runs here too, from the host, as runc runs it
  // before pivot_root. What runs later cannot be taken on by a hook that
  // has exited: a spec with such hooks is refused.
  for (const char *stage : {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}) {
    const std::string where = std::string("hooks.") + stage;
    for (const auto *h : added(member_or_empty(before, {"hooks", stage}), member_or_empty(after, {"hooks", stage}))) {
      HookToRun run{stage, required(*h, "path", where + "[].path"), strings_of(member_or_empty(*h, {"args"}), where + "[].args"),
                    strings_of(member_or_empty(*h, {"env"}), where + "[].env"),
                    static_cast<int>(integer(*h, "timeout", 0, where + "[]"))};
      if (std::string_view(stage) == "startContainer" || std::string_view(stage) == "poststart" ||
          std::string_view(stage) == "poststop")
        throw Error("the CDI edits add a " + std::string(stage) + " hook (" + quote(run.path) +
                    "), which gpuslice-hook cannot run at its stage; use gpuslice-runtime");
      inj.hooks.push_back(std::move(run));
    }
  }
  for (const auto *e : added(member_or_empty(before, {"process", "env"}), member_or_empty(after, {"process", "env"})))
    if (e->is_string())
      inj.env.push_back(e->get<std::string>());
  return inj;
}

} // namespace gpuslice::hook
