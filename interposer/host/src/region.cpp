// Host side of the usage region. Creation writes a fresh header; reading goes
// through read(2) into a private copy and validates it, because the file is
// writable by the tenant (who could also truncate it under a mapping).
// Reclaiming takes each used slot's OFD lock: it is free only when the
// process that claimed the slot is dead.
#include "gpuslice/sharing/region.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>

namespace gpuslice::sharing {

namespace {

using Fd = UniqueFd;

bool header_valid(const gs_region &r) {
  return r.magic == GS_REGION_MAGIC && r.version == GS_REGION_VERSION && r.header_size == sizeof(gs_region) &&
         r.ndevices == GS_MAX_DEVICES && r.nslots == GS_MAX_SLOTS && r.slot_size == sizeof(gs_region_slot);
}

void init_header(gs_region &r) {
  std::memset(&r, 0, sizeof r);
  r.magic = GS_REGION_MAGIC;
  r.version = GS_REGION_VERSION;
  r.header_size = sizeof(gs_region);
  r.size = GS_REGION_SIZE;
  r.ndevices = GS_MAX_DEVICES;
  r.nslots = GS_MAX_SLOTS;
  r.slot_size = sizeof(gs_region_slot);
}

void read_all(int fd, void *buf, std::size_t len, const std::string &path) {
  std::size_t got = 0;
  while (got < len) {
    ssize_t n = ::pread(fd, static_cast<char *>(buf) + got, len - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw system_error("cannot read region " + gpuslice::quote(path));
    if (n == 0)
      throw Error("region " + gpuslice::quote(path) + " is truncated");
    got += static_cast<std::size_t>(n);
  }
}

void write_all(int fd, const void *buf, std::size_t len, const std::string &path) {
  std::size_t put = 0;
  while (put < len) {
    ssize_t n = ::pwrite(fd, static_cast<const char *>(buf) + put, len - put, static_cast<off_t>(put));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw system_error("cannot write region " + gpuslice::quote(path));
    put += static_cast<std::size_t>(n);
  }
}

void create_zeroed(const std::string &path, uint64_t size, const char *what, void (*fill)(void *)) {
  Fd f(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (f.fd < 0)
    throw system_error(std::string("cannot create ") + what + " " + gpuslice::quote(path));
  ::fchmod(f.fd, 0666); // whatever the umask: every user in the container maps it
  if (::ftruncate(f.fd, static_cast<off_t>(size)) != 0)
    throw system_error(std::string("cannot size ") + what + " " + gpuslice::quote(path));
  if (fill) {
    auto buf = std::make_unique<unsigned char[]>(size);
    fill(buf.get());
    write_all(f.fd, buf.get(), size, path);
  }
}

} // namespace

void create_region(const std::string &path) {
  create_zeroed(path, GS_REGION_SIZE, "region", [](void *p) { init_header(*static_cast<gs_region *>(p)); });
}

void create_activity_file(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) >= GS_ACTIVITY_SIZE)
    return;
  create_zeroed(path, GS_ACTIVITY_SIZE, "activity file", nullptr);
}

RegionUsage read_region(const std::string &path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (f.fd < 0)
    throw system_error("cannot open region " + gpuslice::quote(path));
  auto r = std::make_unique<gs_region>();
  read_all(f.fd, r.get(), sizeof(gs_region), path);
  if (!header_valid(*r))
    throw Error("region " + gpuslice::quote(path) + " has no valid header");
  RegionUsage out;
  uint32_t hw = r->slots_hw > GS_MAX_SLOTS ? GS_MAX_SLOTS : r->slots_hw;
  for (uint32_t s = 0; s < hw; s++) {
    bool any = false;
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
      any |= r->slots[s].used[d] != 0;
    out.slots_in_use += any;
  }
  for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
    if (r->devices[d].uuid_lo == 0)
      continue;
    DeviceUsage u;
    std::memcpy(u.uuid.data(), &r->devices[d].uuid_lo, 8);
    std::memcpy(u.uuid.data() + 8, &r->devices[d].uuid_hi, 8);
    for (uint32_t s = 0; s < hw; s++) {
      uint64_t v = r->slots[s].used[d];
      u.used = u.used + v < u.used ? UINT64_MAX : u.used + v;
    }
    out.devices.push_back(u);
  }
  return out;
}

unsigned reclaim_dead_slots(const std::string &path) {
  Fd f(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (f.fd < 0)
    throw system_error("cannot open region " + gpuslice::quote(path));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < GS_REGION_SIZE)
    throw Error("region " + gpuslice::quote(path) + " is truncated");
  auto r = std::make_unique<gs_region>();
  read_all(f.fd, r.get(), sizeof(gs_region), path);
  if (!header_valid(*r))
    throw Error("region " + gpuslice::quote(path) + " has no valid header");
  unsigned n = 0;
  uint32_t hw = r->slots_hw > GS_MAX_SLOTS ? GS_MAX_SLOTS : r->slots_hw;
  for (uint32_t s = 0; s < hw; s++) {
    bool any = false;
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
      any |= r->slots[s].used[d] != 0;
    if (!any)
      continue;
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = GS_SLOT_LOCK_BASE + s;
    fl.l_len = 1;
    if (::fcntl(f.fd, F_OFD_SETLK, &fl) != 0)
      continue; // alive
    uint64_t zero[GS_MAX_DEVICES] = {};
    off_t off = static_cast<off_t>(offsetof(gs_region, slots) + s * sizeof(gs_region_slot) +
                                   offsetof(gs_region_slot, used));
    if (::pwrite(f.fd, zero, sizeof zero, off) == static_cast<ssize_t>(sizeof zero))
      n++;
    fl.l_type = F_UNLCK;
    ::fcntl(f.fd, F_OFD_SETLK, &fl);
  }
  return n;
}

} // namespace gpuslice::sharing
