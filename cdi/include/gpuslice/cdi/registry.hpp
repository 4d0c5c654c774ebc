// The registry over CDI spec directories. Directories are given in priority
// order: a device defined in a later directory overrides the same device in an
// earlier one. Two specs of the same priority that both define a device make
// that device unusable, and both files are reported.
//
// A long-lived process keeps one Registry and calls refresh() before each
// resolution: with nothing changed that costs one non-blocking read of an
// inotify descriptor (or, where inotify is unavailable, one stat per spec
// file), never a re-parse.
#pragma once

#include "gpuslice/cdi/spec.hpp"
#include "gpuslice/common/config.hpp"

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuslice::cdi {

class SpecCache;

struct SpecError {
  std::string path;
  std::string message;
};

// A device as the registry resolved it: the device and the spec it came from.
struct ResolvedDevice {
  std::string qualified_name;
  const Spec *spec = nullptr;
  const Device *device = nullptr;
};

// How refresh() notices changes: inotify where available (stamps otherwise),
// always stamps (for tests of that path, and file systems without inotify),
// or never (a one-shot process such as gpuslice-runtime: loading once must not
// pay for watching or for stat()ing every spec a second time).
enum class ChangeDetection { automatic, stamps, none };

// The names of the spec files a load of `dir` reads (.json, .yaml; not a
// directory), sorted; none for a missing directory, an error in `errors`
// for one that cannot be read.
std::vector<std::string> list_spec_files(const std::string &dir, std::vector<SpecError> *errors = nullptr);

class Registry {
public:
  explicit Registry(std::vector<std::string> spec_dirs = {kDefaultSpecDirs.begin(), kDefaultSpecDirs.end()},
                    ChangeDetection detection = ChangeDetection::automatic);
  ~Registry();
  Registry(const Registry &) = delete;
  Registry &operator=(const Registry &) = delete;

  // Reloads if anything in the spec dirs changed since the last load (or if
  // nothing was loaded yet). Returns true when it reloaded.
  bool refresh();

  // Loads unconditionally.
  void reload();
  // Loads only what may define devices of `kinds` (a container's create,
  // which needs a few): a file whose kind plain_spec_kind reads and is
  // another is neither parsed nor reported. What does load resolves exactly
  // as a full load would, conflicts included (they are within one kind).
  void reload(const std::set<std::string> &kinds);

  // Loads from now on look each spec up in `cache` (which must outlive
  // them) before parsing it, and store what they parse; nullptr: none.
  void use_cache(const SpecCache *cache) { cache_ = cache; }

  const std::vector<std::string> &spec_dirs() const { return dirs_; }
  // Files that failed to load and device conflicts, in the order found.
  const std::vector<SpecError> &errors() const { return errors_; }
  // Specs that loaded, in priority then name order.
  const std::vector<std::unique_ptr<Spec>> &specs() const { return specs_; }

  // nullptr when unknown.
  const ResolvedDevice *find(std::string_view qualified_name) const;
  // Qualified names of every usable device, sorted.
  std::vector<std::string> device_names() const;

private:
  struct Watch;
  bool changed();
  void load(const std::set<std::string> *kinds);

  std::vector<std::string> dirs_;
  std::vector<std::unique_ptr<Spec>> specs_;
  std::vector<SpecError> errors_;
  std::unordered_map<std::string, ResolvedDevice> devices_;
  std::unique_ptr<Watch> watch_;
  const SpecCache *cache_ = nullptr;
  bool loaded_ = false;

public:
  // Whether refresh() uses inotify (false: stamps); for tests and diagnostics.
  bool uses_inotify() const;
};

} // namespace gpuslice::cdi
