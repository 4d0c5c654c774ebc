#include "gpuslice/shim/create_plan.hpp"

#include "../fast_path/create_plan.h"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <map>

namespace gpuslice::shim {

namespace {

// Written by the entry as is: a JSON string of it needs no escape, and it
// holds no tab (the plan's separator).
bool plain(const std::string &s) {
  try {
    return cdi::OciSpec(s).dump() == "\"" + s + "\"";
  } catch (const nlohmann::json::exception &) {
    return false; // not UTF-8
  }
}

// One field of a line: no tab, no newline (JSON text has neither raw).
bool field(const std::string &s) {
  return s.find_first_of("\t\n") == std::string::npos && s.find('\0') == std::string::npos;
}

std::optional<std::string> json_text(const cdi::OciSpec &value) {
  try {
    return value.dump();
  } catch (const nlohmann::json::exception &) {
    return std::nullopt; // not UTF-8: the full program's save would refuse it too
  }
}

std::string number(long long v) { return std::to_string(v); }

// A time of a file, racy when as late as two seconds before now.
bool racy(const struct timespec &t, const struct timespec &now) { return t.tv_sec + 2 > now.tv_sec; }

std::string line(std::initializer_list<std::string> fields) {
  std::string out;
  for (const auto &f : fields)
    out += (out.empty() ? "" : "\t") + f;
  return out + "\n";
}

} // namespace

std::optional<std::string> create_plan_text(const CreatePlanFacts &facts, const CreatePlanContext &context,
                                            const cdi::HostNodeLookup &lookup, const struct timespec &now) {
  const cdi::ContainerEdits &e = facts.edits;
  if (!e.net_devices.empty() || e.intel_rdt || !e.additional_gids.empty() || facts.devices.empty())
    return std::nullopt;
  for (const auto &s : {context.writer, context.config_path, facts.devices, context.log_file, facts.cdi_env})
    if (!field(s))
      return std::nullopt;
  char digest[17] = "none";
  if (context.config_text)
    gpuslice_fp_digest(context.config_text->data(), context.config_text->size(), digest);
  std::string text = GPUSLICE_FP_PLAN_MAGIC;
  text += line({"writer", context.writer}) + line({"config", context.config_path}) +
          line({"config-digest", digest}) + line({"devices", facts.devices});
  if (facts.prefixes.size() > GPUSLICE_FP_PLAN_MAX_PREFIXES)
    return std::nullopt;
  for (const auto &p : facts.prefixes) {
    if (!field(p))
      return std::nullopt;
    text += line({"prefix", p});
  }

  // What the registry read: the dirs, and every spec file in them.
  std::size_t files = 0;
  if (facts.spec_dirs.size() > GPUSLICE_FP_PLAN_MAX_SPEC_DIRS)
    return std::nullopt;
  for (const auto &dir : facts.spec_dirs) {
    struct stat st {};
    if (!field(dir))
      return std::nullopt;
    if (::stat(dir.c_str(), &st) != 0) {
      if (errno != ENOENT)
        return std::nullopt;
      text += line({"spec-dir", dir, "1", "0", "0", "0", "0", "0"});
      continue;
    }
    if (racy(st.st_mtim, now))
      return std::nullopt;
    text += line({"spec-dir", dir, "0", number(major(st.st_dev)), number(minor(st.st_dev)), number(st.st_ino),
                  number(st.st_mtim.tv_sec), number(st.st_mtim.tv_nsec)});
    std::vector<cdi::SpecError> errors;
    for (const auto &name : cdi::list_spec_files(dir, &errors)) {
      const std::string path = dir + "/" + name;
      if (::stat(path.c_str(), &st) != 0 || racy(st.st_mtim, now) || racy(st.st_ctim, now) || !field(path) ||
          ++files > GPUSLICE_FP_PLAN_MAX_SPEC_FILES)
        return std::nullopt;
      text += line({"spec-file", path, number(major(st.st_dev)), number(minor(st.st_dev)), number(st.st_ino),
                    number(st.st_size), number(st.st_mtim.tv_sec), number(st.st_mtim.tv_nsec),
                    number(st.st_ctim.tv_sec), number(st.st_ctim.tv_nsec)});
    }
    if (!errors.empty())
      return std::nullopt;
  }

  // The device nodes completed as apply_edits completes them, each host
  // node looked at recorded: the entry looks again and compares.
  std::map<std::string, std::optional<cdi::HostNode>> looked_at;
  const cdi::HostNodeLookup recording = [&](const std::string &path) {
    try {
      cdi::HostNode n = lookup(path);
      looked_at[path] = n;
      return n;
    } catch (const Error &) {
      looked_at[path] = std::nullopt;
      throw;
    }
  };
  std::vector<cdi::DeviceNode> nodes;
  try {
    for (const auto &d : e.device_nodes)
      nodes.push_back(cdi::complete_device_node(d, recording));
  } catch (const Error &) {
    return std::nullopt; // the create fails on it: nothing to plan
  }
  if (looked_at.size() > GPUSLICE_FP_PLAN_MAX_HOST_NODES)
    return std::nullopt;
  for (const auto &[path, node] : looked_at) {
    if (!field(path))
      return std::nullopt;
    if (!node || node->type.size() != 1)
      text += line({"host-node", path, "-", "0", "0", "0"});
    else
      text += line({"host-node", path, node->type, number(node->major), number(node->minor), number(node->mode)});
  }

  text += line({"log", context.log_file});
  text += line({"cdi-env", facts.cdi_env});
  if (e.env.size() > GPUSLICE_FP_PLAN_MAX_ENV || nodes.size() > GPUSLICE_FP_PLAN_MAX_DEVICES ||
      e.mounts.size() > GPUSLICE_FP_PLAN_MAX_MOUNTS || e.hooks.size() > GPUSLICE_FP_PLAN_MAX_HOOKS)
    return std::nullopt;
  for (const auto &entry : e.env) {
    const std::string key(env_key(entry));
    const auto json = json_text(entry);
    if (!plain(key) || !json)
      return std::nullopt;
    text += line({"env", key, *json});
  }
  for (const auto &d : nodes) {
    const std::string access = d.permissions.empty() ? "rwm" : d.permissions;
    if (!plain(d.path) || !plain(access) || (d.type != "b" && d.type != "c" && d.type != "p" && d.type != "u") ||
        d.major < 0 || d.minor < 0)
      return std::nullopt;
    text += line({"device", d.path, d.type, number(d.major), number(d.minor), d.file_mode ? number(*d.file_mode) : "-1",
                  d.uid ? number(*d.uid) : "-1", d.gid ? number(*d.gid) : "-1", access});
  }
  for (const auto &m : e.mounts) {
    const auto json = json_text(cdi::mount_object(m));
    if (!plain(m.container_path) || !json)
      return std::nullopt;
    text += line({"mount", m.container_path, *json});
  }
  for (const auto &h : e.hooks) {
    const auto json = json_text(cdi::hook_object(h));
    if (!plain(h.hook_name) || !json)
      return std::nullopt;
    text += line({"hook", h.hook_name, *json});
  }
  text += "end\n";
  if (text.size() > GPUSLICE_FP_PLAN_MAX)
    return std::nullopt;
  return text;
}

std::string create_plan_name(const std::string &config_path, const std::string &devices) {
  const std::string key = config_path + "\n" + devices;
  char digest[17];
  gpuslice_fp_digest(key.data(), key.size(), digest);
  return std::string(GPUSLICE_FP_PLAN_PREFIX) + digest;
}

void save_create_plan(const std::string &config_path, const std::string &devices, const std::string &text,
                      const std::string &dir) {
  if (::geteuid() != 0)
    return;
  // As the fast path's records: a dir and file of root's that no one else
  // can write, or none.
  ::mkdir(fs::dirname(dir).c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!dir_fd || ::fstat(dir_fd.get(), &st) != 0 || st.st_uid != 0 || (st.st_mode & 022) != 0)
    return;
  const std::string path = dir + "/" + create_plan_name(config_path, devices);
  try {
    if (fs::read_file(path, text.size()) == text)
      return; // the entry handed this create over for another reason
  } catch (const Error &) {
  }
  try {
    fs::write_file_atomic(path, text, 0600, fs::Durability::atomic);
  } catch (const Error &) {
    return;
  }
  fs::prune_oldest(dir_fd.get(), kMaxCreatePlans);
}

} // namespace gpuslice::shim
