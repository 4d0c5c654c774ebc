// A cache of parsed and validated specs, kept by the process that parsed
// them (gpuslice-runtime, as root, under /run) for the next ones.
//
// Why: every GPU create parses the spec of the kind it asks for, and a
// node's driver spec (nvidia-ctk's: a device per GPU, the driver's
// libraries as mounts) is tens of KiB of YAML: hundreds of microseconds
// per create, each time for the same bytes.
//
// What is trusted: an entry is the exact text of a spec, the build id of
// the binary that parsed it, and what that parse and validate_spec made of
// it. A lookup compares the whole text and the build id, so the cache can
// only hand back what this very binary made of these very bytes; the
// entry's name (a hash of the build id and the text) only finds it. The
// directory and its files must be this user's and writable by no one
// else, as the runtime front's record must: whoever could write there could
// hand the runtime any device. Anything else (another owner, a link, a stray byte) is a
// miss, and the spec is parsed as if there were no cache.
#pragma once

#include "gpuslice/cdi/spec.hpp"
#include "gpuslice/common/build_id.hpp"

#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace gpuslice::cdi {

inline constexpr const char *kDefaultSpecCacheDir = "/run/gpuslice/cdi-cache";

// A spec's fields (not its path or priority) as bytes, and back: nullopt
// when the bytes are not exactly one encoded spec.
std::string encode_spec(const Spec &spec);
std::optional<Spec> decode_spec(std::string_view bytes);

class SpecCache {
public:
  // About this many entries are kept (a node's spec files: a DRA driver
  // writes one per claim, and a create loads all of its kind). A store
  // that finds more, which it looks for at most once a minute, removes the
  // oldest down to three quarters.
  static constexpr std::size_t kMaxEntries = 1024;

  explicit SpecCache(std::string dir, std::string build_id = own_build_id());
  ~SpecCache();
  SpecCache(const SpecCache &) = delete;
  SpecCache &operator=(const SpecCache &) = delete;

  // What this binary made of `text` when it last parsed it (path and
  // priority unset); nullopt on a miss.
  std::optional<Spec> find(std::string_view text) const;
  // Records a spec that parsed from `text` and validated. Best effort and
  // silent: a failure costs the next create a parse, nothing else.
  void store(std::string_view text, const Spec &spec) const;

  const std::string &dir() const { return dir_; }
  // The entry's file name for `text` (and this build).
  std::string entry_name(std::string_view text) const;

private:
  int open_dir(bool create) const;
  void prune_now_and_then(int dir) const;

  std::string dir_;
  std::string build_id_;
  mutable std::mutex mutex_;
  mutable int dir_fd_ = -1;
};

} // namespace gpuslice::cdi
