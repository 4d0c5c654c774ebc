#include "gpuslice/sharing/activity.hpp"

#include "gpuslice/common/error.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <vector>

namespace gpuslice::sharing {

namespace {

bool entry_lock(int fd, unsigned i, short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = GS_ACTIVITY_LOCK_BASE + i;
  fl.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

void write_entry(int fd, unsigned i, const gs_activity_entry &e) {
  // The owner last: a reader that sees it sees the GPU it is for.
  const off_t base = static_cast<off_t>(i * sizeof(gs_activity_entry));
  const uint64_t rest[3] = {e.uuid_lo, e.uuid_hi, e.busy_until};
  bool ok = ::pwrite(fd, rest, sizeof rest, base + static_cast<off_t>(offsetof(gs_activity_entry, uuid_lo))) ==
                static_cast<ssize_t>(sizeof rest) &&
            ::pwrite(fd, &e.owner, 8, base) == 8;
  (void)ok; // a table that cannot be written makes neighbours think we are idle: they burst, nothing breaks
}

} // namespace

UniqueFd open_activity_table(const std::string &path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644));
  if (!fd)
    throw system_error("cannot open the activity table " + quote(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw system_error("cannot stat the activity table " + quote(path));
  if (!S_ISREG(st.st_mode))
    throw Error("activity table " + quote(path) + " is not a regular file");
  if (st.st_size == 0) {
    // New (or created by a racing monitor that has not sized it yet): sizing
    // twice to the same size is harmless.
    if (::ftruncate(fd.get(), static_cast<off_t>(GS_ACTIVITY_SIZE)) != 0)
      throw system_error("cannot size the activity table " + quote(path));
  } else if (static_cast<uint64_t>(st.st_size) != GS_ACTIVITY_SIZE) {
    throw Error("activity table " + quote(path) + " has " + std::to_string(st.st_size) + " bytes, not " +
                std::to_string(GS_ACTIVITY_SIZE));
  }
  if ((st.st_mode & 022) != 0 && ::fchmod(fd.get(), 0644) != 0)
    throw system_error("cannot make the activity table " + quote(path) + " writable by its owner only");
  return fd;
}

ActivityPublisher::~ActivityPublisher() { clear(); }

bool ActivityPublisher::publish(uint64_t uuid_lo, uint64_t uuid_hi, uint64_t until) {
  const int fd = table_.get();
  auto it = entries_.find({uuid_lo, uuid_hi});
  if (it == entries_.end()) {
    for (unsigned i = 0; i < GS_ACTIVITY_ENTRIES; i++) {
      bool ours = false;
      for (const auto &[key, index] : entries_)
        ours = ours || index == i;
      if (ours || !entry_lock(fd, i, F_WRLCK))
        continue;
      it = entries_.emplace(std::pair{uuid_lo, uuid_hi}, i).first;
      break;
    }
    if (it == entries_.end())
      return false;
  }
  write_entry(fd, it->second, {owner_, uuid_lo, uuid_hi, until});
  return true;
}

void ActivityPublisher::clear() {
  for (const auto &[key, index] : entries_) {
    write_entry(table_.get(), index, {0, 0, 0, 0});
    entry_lock(table_.get(), index, F_UNLCK);
  }
  entries_.clear();
}

UniqueFd ActivityPublisher::release() {
  clear();
  return std::move(table_);
}

} // namespace gpuslice::sharing
