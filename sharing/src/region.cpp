// Host side of the usage region. Creation writes a fresh header into a memfd
// and seals it; reading goes through pread into a private copy and validates
// it, because the tenant writes the region. Reclaiming takes each used
// slot's OFD lock: it is free only when the process that claimed the slot is
// dead.
#include "gpuslice/sharing/region.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

namespace gpuslice::sharing {

namespace {

bool header_valid(const gs_region &r) {
  return r.magic == GS_REGION_MAGIC && r.version == GS_REGION_VERSION && r.header_size == sizeof(gs_region) &&
         r.size == GS_REGION_SIZE && r.ndevices == GS_MAX_DEVICES && r.nslots == GS_MAX_SLOTS;
}

// The header's fields, as the region's first bytes: all of it that is not
// zero in a fresh region.
using HeaderFields = std::array<unsigned char, offsetof(gs_region, reserved)>;

template <typename T> void put_field(HeaderFields &bytes, std::size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

HeaderFields fresh_header() {
  HeaderFields bytes{};
  put_field(bytes, offsetof(gs_region, magic), static_cast<uint64_t>(GS_REGION_MAGIC));
  put_field(bytes, offsetof(gs_region, version), static_cast<uint32_t>(GS_REGION_VERSION));
  put_field(bytes, offsetof(gs_region, header_size), static_cast<uint32_t>(sizeof(gs_region)));
  put_field(bytes, offsetof(gs_region, size), static_cast<uint64_t>(GS_REGION_SIZE));
  put_field(bytes, offsetof(gs_region, ndevices), static_cast<uint32_t>(GS_MAX_DEVICES));
  put_field(bytes, offsetof(gs_region, nslots), static_cast<uint32_t>(GS_MAX_SLOTS));
  return bytes;
}

void read_all(int fd, void *buf, std::size_t len) {
  std::size_t got = 0;
  while (got < len) {
    ssize_t n = ::pread(fd, static_cast<char *>(buf) + got, len - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw system_error("cannot read the region");
    if (n == 0)
      throw Error("the region is truncated");
    got += static_cast<std::size_t>(n);
  }
}

void write_all(int fd, const void *buf, std::size_t len) {
  std::size_t put = 0;
  while (put < len) {
    ssize_t n = ::pwrite(fd, static_cast<const char *>(buf) + put, len - put, static_cast<off_t>(put));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw system_error("cannot write the region");
    put += static_cast<std::size_t>(n);
  }
}

std::unique_ptr<gs_region> read_valid(int fd) {
  auto r = std::make_unique<gs_region>();
  read_all(fd, r.get(), sizeof(gs_region));
  if (!header_valid(*r))
    throw Error("the region has no valid header");
  return r;
}

bool slot_in_use(const gs_region &r, unsigned slot) {
  for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
    if (r.used[d][slot] != 0)
      return true;
  return false;
}

} // namespace

UniqueFd create_region() {
  UniqueFd fd(::memfd_create("gpuslice-region", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd)
    throw system_error("cannot create the region (memfd_create)");
  if (::ftruncate(fd.get(), static_cast<off_t>(GS_REGION_SIZE)) != 0)
    throw system_error("cannot size the region");
  // Sized, the memfd reads as zeros: only the header's fields are written,
  // not a zeroed copy of the whole region (fresh heap, and as many of the
  // memfd's pages, in every create with limits).
  const HeaderFields header = fresh_header();
  write_all(fd.get(), header.data(), header.size());
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    throw system_error("cannot seal the region");
  return fd;
}

RegionUsage read_region(int fd) {
  auto r = read_valid(fd);
  RegionUsage out;
  for (unsigned s = 0; s < GS_MAX_SLOTS; s++)
    out.slots_in_use += slot_in_use(*r, s);
  const uint64_t mask = (uint64_t(1) << GS_USED_BITS) - 1;
  for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
    const gs_region_device &dev = r->devices[d];
    if (dev.uuid_lo == 0)
      continue;
    DeviceUsage u;
    std::memcpy(u.uuid.data(), &dev.uuid_lo, 8);
    std::memcpy(u.uuid.data() + 8, &dev.uuid_hi, 8);
    u.uuid_lo = dev.uuid_lo;
    u.uuid_hi = dev.uuid_hi;
    u.busy_until = dev.busy_until;
    for (unsigned s = 0; s < GS_MAX_SLOTS; s++)
      u.used += r->used[d][s] & mask; // the interposer's sum: cannot wrap
    out.devices.push_back(u);
  }
  return out;
}

unsigned reclaim_dead_slots(int fd) {
  auto r = read_valid(fd);
  unsigned n = 0;
  for (unsigned s = 0; s < GS_MAX_SLOTS; s++) {
    if (!slot_in_use(*r, s))
      continue;
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = GS_SLOT_LOCK_BASE + s;
    fl.l_len = 1;
    if (::fcntl(fd, F_OFD_SETLK, &fl) != 0)
      continue; // alive
    bool cleared = true;
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
      const uint64_t zero = 0;
      const off_t off = static_cast<off_t>(offsetof(gs_region, used) + (d * GS_MAX_SLOTS + s) * sizeof(uint64_t));
      cleared = ::pwrite(fd, &zero, sizeof zero, off) == static_cast<ssize_t>(sizeof zero) && cleared;
    }
    n += cleared;
    fl.l_type = F_UNLCK;
    ::fcntl(fd, F_OFD_SETLK, &fl);
  }
  return n;
}

uint64_t container_id(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw system_error("cannot stat the region");
  return GS_CONTAINER_ID(st.st_dev, st.st_ino);
}

RegionId region_id(int region_fd) {
  struct stat st {};
  if (::fstat(region_fd, &st) != 0)
    throw system_error("cannot stat the region");
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

std::string to_text(const RegionId &id) { return std::to_string(id.dev) + " " + std::to_string(id.ino); }

std::optional<RegionId> parse_region_id(std::string_view text) {
  RegionId id;
  const char *end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, id.dev);
  if (ec != std::errc() || p == end || *p != ' ')
    return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, id.ino);
  if (ec2 != std::errc() || q != end || id.ino == 0)
    return std::nullopt;
  return id;
}

namespace {

// The region `id` as `pid` maps it, opened (its /proc/PID/map_files entry),
// or empty.
UniqueFd open_mapped_region(int pid, const RegionId &id) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/map_files";
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd)
    return UniqueFd();
  UniqueFd found;
  for (const std::string &name : fs::list_dir(dir_fd.get()).value_or(std::vector<std::string>{})) {
    // stat follows the entry to the mapped file: its inode, no opening
    struct stat st {};
    if (::fstatat(dir_fd.get(), name.c_str(), &st, 0) != 0 || static_cast<uint64_t>(st.st_dev) != id.dev ||
        static_cast<uint64_t>(st.st_ino) != id.ino)
      continue;
    found.reset(::openat(dir_fd.get(), name.c_str(), O_RDWR | O_CLOEXEC));
    // the same inode, checked again on what was opened (the mapping may
    // have changed in between)
    if (found && region_id(found.get()) == id)
      break;
    found.reset();
  }
  return found;
}

} // namespace

UniqueFd recover_region(const std::vector<int> &pids, const RegionId &id) {
  for (int pid : pids)
    if (UniqueFd found = open_mapped_region(pid, id))
      return found;
  return UniqueFd();
}

std::vector<int> processes_mapping(const std::vector<int> &pids, const RegionId &id) {
  std::vector<int> mapping;
  for (int pid : pids)
    if (open_mapped_region(pid, id))
      mapping.push_back(pid);
  return mapping;
}

std::string uuid_text(const std::array<uint8_t, 16> &uuid) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (std::size_t i = 0; i < uuid.size(); i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out += '-';
    out += hex[uuid[i] >> 4];
    out += hex[uuid[i] & 15];
  }
  return out;
}

} // namespace gpuslice::sharing
