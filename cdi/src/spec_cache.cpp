// spec_cache.hpp says what an entry is and why it may be trusted; the
// encoding is common/byte_codec.hpp's, private to one build (the build id is
// in every entry), so it needs no versioning beyond kMagic.
#include "gpuslice/cdi/spec_cache.hpp"

#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/common/byte_codec.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <random>
#include <utility>
#include <vector>

namespace gpuslice::cdi {

// Each struct's fields, in one list that both directions walk. A field
// added to spec.hpp goes here too: the round-trip test of a spec with
// every field set fails until it does.
template <class Io> void fields(Io &io, DeviceNode &n) {
  io(n.path), io(n.host_path), io(n.type), io(n.major), io(n.minor), io(n.file_mode), io(n.permissions), io(n.uid),
      io(n.gid);
}
template <class Io> void fields(Io &io, Mount &m) { io(m.host_path), io(m.container_path), io(m.options), io(m.type); }
template <class Io> void fields(Io &io, Hook &h) { io(h.hook_name), io(h.path), io(h.args), io(h.env), io(h.timeout); }
template <class Io> void fields(Io &io, IntelRdt &r) {
  io(r.clos_id), io(r.l3_cache_schema), io(r.mem_bw_schema), io(r.schemata), io(r.enable_monitoring), io(r.enable_cmt),
      io(r.enable_mbm);
}
template <class Io> void fields(Io &io, NetDevice &d) { io(d.host_interface_name), io(d.name); }
template <class Io> void fields(Io &io, ContainerEdits &e) {
  io(e.env), io(e.device_nodes), io(e.net_devices), io(e.hooks), io(e.mounts), io(e.intel_rdt), io(e.additional_gids);
}
template <class Io> void fields(Io &io, Device &d) { io(d.name), io(d.annotations), io(d.edits); }
template <class Io> void fields(Io &io, Spec &s) { io(s.version), io(s.kind), io(s.annotations), io(s.devices), io(s.edits); }

namespace {

constexpr std::string_view kMagic = "gpuslice-cdi-cache 1\n";
constexpr const char *kPrunedMarker = ".pruned";

using bytes::Reader;
using bytes::Writer;

// An entry: the magic, the build id, the spec's text, the spec.
std::string entry_bytes(const std::string &build_id, std::string_view text, const Spec &spec) {
  Writer w;
  w.out = kMagic;
  w(build_id);
  w(std::string(text));
  w.encode(spec);
  return w.out;
}

// An entry is at most this large: the text, and its spec encoded (a few
// bytes of length per string, at most a few times the text).
constexpr std::size_t kMaxEntrySize = 5 * kMaxSpecSize;

bool private_to_us(const struct stat &st) { return st.st_uid == ::geteuid() && (st.st_mode & 022) == 0; }

} // namespace

std::string encode_spec(const Spec &spec) {
  Writer w;
  w.encode(spec);
  return w.out;
}

std::optional<Spec> decode_spec(std::string_view bytes) { return Reader(bytes).decode_rest<Spec>(); }

std::string SpecCache::entry_name(std::string_view text) const {
  // Only a name: a lookup compares the build id and the whole text. The
  // build id is in it so that two builds (an upgrade's old and new, an A/B
  // benchmark's) keep an entry each instead of replacing each other's.
  uint64_t h = 0x9e3779b97f4a7c15ull ^ text.size();
  for (const std::string_view bytes : {std::string_view(build_id_), text}) {
    std::size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, bytes.data() + i, 8);
      h = (h ^ w) * 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    for (; i < bytes.size(); ++i)
      h = (h ^ static_cast<uint8_t>(bytes[i])) * 0xc4ceb9fe1a85ec53ull;
  }
  h ^= h >> 29;
  char name[17];
  static constexpr char hex[] = "0123456789abcdef";
  for (int k = 15; k >= 0; --k, h >>= 4)
    name[k] = hex[h & 15];
  name[16] = '\0';
  return name;
}

SpecCache::SpecCache(std::string dir, std::string build_id) : dir_(std::move(dir)), build_id_(std::move(build_id)) {}

SpecCache::~SpecCache() {
  if (dir_fd_ >= 0)
    ::close(dir_fd_);
}

int SpecCache::open_dir(bool create) const {
  std::lock_guard lock(mutex_);
  if (dir_fd_ >= 0 || build_id_.empty())
    return dir_fd_;
  if (create) {
    ::mkdir(fs::dirname(dir_).c_str(), 0700);
    ::mkdir(dir_.c_str(), 0700);
  }
  UniqueFd fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !private_to_us(st))
    return -1;
  dir_fd_ = fd.release();
  return dir_fd_;
}

std::optional<Spec> SpecCache::find(std::string_view text) const {
  const int dir = open_dir(false);
  if (dir < 0)
    return std::nullopt;
  const std::string name = entry_name(text);
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !private_to_us(st) ||
      static_cast<std::size_t>(st.st_size) > kMaxEntrySize)
    return std::nullopt;
  std::string bytes;
  try {
    bytes = fs::read_stat_fd(fd.get(), st, name, kMaxEntrySize);
  } catch (const Error &) {
    return std::nullopt;
  }
  std::string_view in = bytes;
  if (in.substr(0, kMagic.size()) != kMagic)
    return std::nullopt;
  Reader r(in.substr(kMagic.size()));
  if (r.view() != build_id_ || r.view() != text || !r.ok())
    return std::nullopt;
  return r.decode_rest<Spec>();
}

void SpecCache::store(std::string_view text, const Spec &spec) const {
  const int dir = open_dir(true);
  if (dir < 0)
    return;
  const std::string bytes = entry_bytes(build_id_, text, spec);
  if (bytes.size() > kMaxEntrySize)
    return;
  const std::string name = entry_name(text);
  const std::string temp = ".new-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  {
    UniqueFd fd(::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd)
      return;
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        ::unlinkat(dir, temp.c_str(), 0);
        return;
      }
      done += static_cast<std::size_t>(n);
    }
  }
  // rename only, no fsync: an entry does not outlive the boot (/run)
  if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
    ::unlinkat(dir, temp.c_str(), 0);
    return;
  }
  prune_now_and_then(dir);
}

void SpecCache::prune_now_and_then(int dir) const {
  // At most once a minute (a marker's mtime), so that a node's creates do
  // not each list a directory of a thousand entries.
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  struct stat st {};
  if (::fstatat(dir, kPrunedMarker, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
    const auto age = static_cast<long long>(now.tv_sec) - static_cast<long long>(st.st_mtim.tv_sec);
    if (age >= -2 && age < 60) // a second or two ahead is a tick; more, a clock set back
      return;
  }
  if (UniqueFd marker{::openat(dir, kPrunedMarker, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600)})
    (void)::futimens(marker.get(), nullptr);

  // A writer's temporary (".new-") a minute old was left by a killed one.
  fs::prune_oldest(dir, kMaxEntries, ".new-");
}

} // namespace gpuslice::cdi
