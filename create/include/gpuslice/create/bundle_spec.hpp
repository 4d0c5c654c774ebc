// A bundle's config.json as the create path sees it: the whole document,
// every field kept in its order for runc, read and changed only through
// this class's typed accessors (the create path's one reader of
// config.json). The document is someone else's (the engine's), so reading
// it is bounded and every accessor validates: a field of an unexpected type
// is an Error naming its JSON path, never a nlohmann exception.
#pragma once

#include "gpuslice/cdi/apply.hpp"

#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace gpuslice::create {

// A mount as the spec lists it (mounts[]).
struct OciMount {
  std::string destination, type, source;
  std::vector<std::string> options;
};

// A hook as the spec lists it (hooks.STAGE[]).
struct OciHook {
  std::string path;
  std::vector<std::string> args, env;
  int timeout = 0; // seconds; 0: none
};

class BundleSpec {
public:
  // Reads and parses `path` (at most 16 MiB, nesting bounded). Throws Error.
  static BundleSpec load(const std::string &path);
  // The same for `text`, read from `path` already.
  static BundleSpec parse(const std::string &text, const std::string &path);
  explicit BundleSpec(cdi::OciSpec doc);

  // root.path (required); root.readonly (false when absent).
  std::string root_path() const;
  bool root_readonly() const;
  // annotations: the string-valued ones (the runtime spec allows no other).
  std::map<std::string, std::string> annotations() const;
  // process.env: its string entries.
  std::vector<std::string> process_env() const;
  // linux.mountLabel and process.selinuxLabel (nullopt: absent).
  std::optional<std::string> mount_label() const;
  std::optional<std::string> process_label() const;
  // The paths of linux.devices entries that are qualified CDI names (not
  // device nodes: requests, cdi/names.hpp), in order; a path that is not a
  // string is an Error.
  std::vector<std::string> cdi_device_names() const;
  // The linux.devices entries that are device nodes (an absolute path, a
  // type and numbers), in order; an entry whose members have the wrong
  // type is an Error.
  std::vector<cdi::DeviceNode> device_nodes() const;
  // Whether a mount's destination (cleaned) is `destination`, or lies in `dir`.
  bool mounts_at(std::string_view destination) const;
  bool mounts_under(std::string_view dir) const;

  // The CDI edits applied (cdi/apply.hpp's order); the linux.devices
  // entries that named CDI devices dropped.
  void apply(const cdi::ContainerEdits &edits, const cdi::HostNodeLookup &lookup = cdi::lstat_host_node);
  void add_mount(const OciMount &m);
  // Before every mount the spec has (and in this order).
  void add_mounts_first(const std::vector<OciMount> &mounts);
  // The mounts whose destination and source are exactly one of `pairs`
  // removed; how many.
  std::size_t remove_mounts(const std::vector<std::pair<std::string, std::string>> &pairs);
  // At `stage`, unless a hook of the same path and arguments is there.
  void add_hook(const std::string &stage, const OciHook &hook);

  // The whole document, read-only: what gpuslice-hook compares before and
  // after the create path's edits.
  const cdi::OciSpec &document() const { return doc_; }

  // The document as config.json's text.
  std::string text() const;
  // config.json replaced atomically, with the mode of the file it replaces.
  void save(const std::string &path) const;

private:
  cdi::OciSpec doc_;
  // A parsed linux.seccomp object stays text (bundle_spec.cpp): in doc_ it
  // is the string seccomp_placeholder_ until text() puts it back.
  std::string seccomp_placeholder_, seccomp_text_;
};


} // namespace gpuslice::create
