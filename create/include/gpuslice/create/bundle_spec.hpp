// A bundle's config.json as the create path sees it: the whole document,
// every field kept in its order for runc, with typed accessors for what
// gpuslice reads. The document is someone else's (the engine's), so reading
// it is bounded and every accessor validates: a field of an unexpected type
// is an Error naming its JSON path, never a nlohmann exception.
#pragma once

#include "gpuslice/cdi/apply.hpp"

#include <map>
#include <string>
#include <vector>

namespace gpuslice::create {

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

  // The document itself, for the edits (cdi::apply_edits works on it).
  cdi::OciSpec &json() { return doc_; }
  const cdi::OciSpec &json() const { return doc_; }

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

// process.env of an OCI spec: its string entries (none when absent).
std::vector<std::string> process_env(const cdi::OciSpec &doc);

} // namespace gpuslice::create
