#include "gpuslice/state/container_dir.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstring>
#include <ctime>

namespace gpuslice::state {

namespace {

constexpr std::string_view kTempPrefix = ".new-";

void check_id(const std::string &id) {
  if (!is_safe_container_id(id))
    throw Error("container id " + quote(id) + " is not a safe path component");
}

UniqueFd open_dir_at(int parent, const std::string &name) {
  return UniqueFd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// Opens (creating when missing) directory `name` under `parent` without
// following a symlink; a directory that is not root's 0700 is made so.
UniqueFd open_or_make_dir(int parent, const std::string &name, const std::string &shown) {
  if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST)
    throw system_error("cannot create " + quote(shown));
  UniqueFd fd = open_dir_at(parent, name);
  if (!fd)
    throw system_error("cannot open " + quote(shown));
  return fd;
}

void secure(int fd, const std::string &shown) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw system_error("cannot stat " + quote(shown));
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    if (::fchown(fd, ::geteuid(), ::getegid()) != 0 || ::fchmod(fd, 0700) != 0)
      throw system_error("cannot secure " + quote(shown));
}

// The state dir, made with its parents where missing. Usually all there:
// one call that follows no symlink anywhere, as the walk's O_NOFOLLOW at
// each component refuses them. The walk makes what is missing, and serves
// a kernel without openat2 (before 5.6) or a seccomp filter that refuses it.
UniqueFd open_or_make_state_dir(const std::string &state) {
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS;
  if (UniqueFd dir(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, state.c_str(), &how, sizeof how))); dir)
    return dir;
  UniqueFd cur(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::string prefix;
  for (const auto &part : split(state, '/', EmptyParts::skip)) {
    prefix += "/" + part;
    cur = open_or_make_dir(cur.get(), part, prefix);
  }
  return cur;
}

// <state_dir>/containers, created with its parents (the state dir itself is
// root's configuration).
UniqueFd open_containers(const std::string &state_dir, bool create) {
  if (!fs::is_absolute(state_dir))
    throw Error("state dir " + quote(state_dir) + " is not absolute");
  const std::string cleaned = fs::clean_path(state_dir) + "/containers";
  if (!create) {
    UniqueFd fd(::open(cleaned.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd && errno != ENOENT)
      throw system_error("cannot open " + quote(cleaned));
    return fd;
  }
  const std::string state = fs::dirname(cleaned);
  UniqueFd dir = open_or_make_state_dir(state);
  if (state != "/") // never chmod the root directory
    secure(dir.get(), state); // the state dir: root's alone, whoever made it
  UniqueFd containers = open_dir_at(dir.get(), GS_STATE_CONTAINERS);
  if (!containers && errno == ENOENT)
    containers = open_or_make_dir(dir.get(), GS_STATE_CONTAINERS, cleaned);
  if (!containers)
    throw system_error("cannot open " + quote(cleaned));
  secure(containers.get(), cleaned);
  return containers;
}

// Locks directory `dir_fd` (flock, exclusive; waits); `path` names it in errors.
void lock_exclusive(int dir_fd, const std::string &path) {
  int rc;
  while ((rc = ::flock(dir_fd, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (rc != 0)
    throw system_error("cannot lock " + quote(path));
}

// `dir`, locked.
UniqueFd locked(UniqueFd dir, const std::string &path) {
  lock_exclusive(dir.get(), path);
  return dir;
}

// Whether the process that `pid_file` names runs and started no earlier
// than `creator`: the init that the creator's runtime started. No pid file
// (the runtime failed before writing it) or one that holds no pid: not.
bool init_of_pid_file_runs(const std::string &pid_file, const ProcessId &creator) {
  // No exception for a file that is missing (a create that failed): the
  // first throw in a static binary sets up the unwinder.
  const UniqueFd f(::open(pid_file.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!f || ::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return false;
  char text[65];
  const ssize_t got = ::read(f.get(), text, sizeof text);
  const auto pid = got > 0 && got < static_cast<ssize_t>(sizeof text)
                       ? parse_pid_text(std::string_view(text, static_cast<std::size_t>(got)))
                       : std::nullopt;
  const auto init = pid ? process_id(*pid) : std::nullopt;
  return init && init->start_time >= creator.start_time;
}

// Whether the dir open as `dir_fd` is live; one whose record cannot be
// read is (left alone, never taken for stale).
bool dir_is_live(int dir_fd, const std::string &shown) {
  try {
    return is_live(read_record(dir_fd, shown));
  } catch (const Error &) {
    return true;
  }
}

void remove_dir_at(int parent, const std::string &name, const std::string &shown) {
  UniqueFd dir = open_dir_at(parent, name);
  if (!dir) {
    if (errno == ENOENT)
      return;
    throw system_error("cannot open " + quote(shown));
  }
  remove_contents(dir.get(), shown);
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    throw system_error("cannot remove " + quote(shown));
}

// A temporary of create_container_dir: ".new-<pid>-<id>".
std::optional<int> temp_owner(std::string_view name) {
  if (name.substr(0, kTempPrefix.size()) != kTempPrefix)
    return std::nullopt;
  name.remove_prefix(kTempPrefix.size());
  int pid = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || p == name.data() + name.size() || *p != '-')
    return std::nullopt;
  return pid;
}

} // namespace

// Removing by name what was judged through an fd would remove whatever
// lies at the name by then: between a collection's is_live and its removal,
// a create of the same id may have removed the stale dir itself and renamed
// its new one into place, and a second create may do the same to the first.
// So the contents go through the fd that was judged, and the name only as
// an empty directory: a create's dir is never empty there (its records are
// written before the rename).
void remove_judged_dir(int parent, const std::string &name, int judged, const std::string &shown) {
  remove_contents(judged, shown);
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT && errno != ENOTEMPTY &&
      errno != EEXIST)
    throw system_error("cannot remove " + quote(shown));
}

bool is_safe_container_id(std::string_view id) {
  if (id.empty() || id.size() > 255 || id == "." || id == ".." || id.front() == '.')
    return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                    c == '-';
    if (!ok)
      return false;
  }
  return true;
}

std::string container_dir_path(const std::string &state_dir, const std::string &id) {
  return fs::clean_path(state_dir) + "/" + GS_STATE_CONTAINERS + "/" + id;
}

bool is_live(const Record &record) {
  if (record.init)
    return process_alive(*record.init);
  if (record.creator)
    return process_alive(*record.creator) ||
           (!record.init_pid_file.empty() && init_of_pid_file_runs(record.init_pid_file, *record.creator));
  return true;
}

ContainerDir create_container_dir(const std::string &state_dir, const std::string &id, Record record) {
  check_id(id);
  UniqueFd containers = open_containers(state_dir, true);
  const std::string path = container_dir_path(state_dir, id);
  for (bool waited = false;; waited = true) {
    UniqueFd existing = open_dir_at(containers.get(), id);
    if (!existing) {
      if (errno != ENOENT)
        throw system_error("cannot open " + quote(path));
      break;
    }
    std::optional<Record> theirs;
    try {
      theirs = read_record(existing.get(), path);
    } catch (const Error &) {
      // unreadable: live, and refused below
    }
    if (theirs && !is_live(*theirs)) {
      remove_judged_dir(containers.get(), id, existing.get(), path); // another's now: the rename below says so
      break;
    }
    // A create of a container with limits still deciding (no init yet)
    // holds the dir's lock until its runtime has said yes or no (the init
    // recorder): waited for once, so that a create retried at once after
    // a failed one is not refused. (One without limits holds none: its dir
    // is stale as soon as its runtime has exited without a pid file.)
    if (waited || !theirs || theirs->init)
      throw Error("container id " + quote(id) + " is already in use (state " + quote(path) +
                  "): a second container cannot take it over; if it is left from a create that was killed, "
                  "delete it (the runtime's delete --force " + id + ") and create it again");
    lock_exclusive(existing.get(), path);
  }
  const auto me = process_id(static_cast<int>(::getpid()));
  if (!me)
    throw Error("cannot read this process's start time from /proc");
  record.creator = *me;
  const std::string temp = std::string(kTempPrefix) + std::to_string(me->pid) + "-" + id;
  remove_dir_at(containers.get(), temp, path); // our own leftover (pid reuse)
  UniqueFd dir = open_or_make_dir(containers.get(), temp, path);
  secure(dir.get(), path);
  try {
    // Written in place: no one reads a temporary before it is renamed.
    write_record(dir.get(), record, path);
    if (::syscall(SYS_renameat2, containers.get(), temp.c_str(), containers.get(), id.c_str(), RENAME_NOREPLACE) != 0)
      throw errno == EEXIST ? Error("container id " + quote(id) + " is already in use (state " + quote(path) + ")")
                            : system_error("cannot create " + quote(path));
  } catch (...) {
    remove_dir_at(containers.get(), temp, path);
    throw;
  }
  return {path, std::move(dir)};
}

std::optional<ContainerDir> open_container_dir(const std::string &state_dir, const std::string &id) {
  check_id(id);
  const std::string path = container_dir_path(state_dir, id);
  UniqueFd containers = open_containers(state_dir, false);
  if (!containers)
    return std::nullopt;
  UniqueFd dir = open_dir_at(containers.get(), id);
  if (!dir) {
    if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
      return std::nullopt;
    throw system_error("cannot open " + quote(path));
  }
  return ContainerDir{path, std::move(dir)};
}

void lock(const ContainerDir &dir) { lock_exclusive(dir.fd.get(), dir.path); }

Record update_record(const ContainerDir &dir, const std::function<void(Record &)> &change) {
  lock(dir);
  Record r = read_record(dir.fd.get(), dir.path);
  change(r);
  write_record(dir.fd.get(), r, dir.path);
  r.format = kStateFormat;
  return r;
}

void hand_over_creation(const ContainerDir &dir, const ProcessId &from, const ProcessId &to) {
  update_record(dir, [&](Record &r) {
    if (r.creator != from)
      throw Error("container dir " + quote(dir.path) + " was not created by process " + std::to_string(from.pid));
    r.creator = to;
  });
}

void record_init(const ContainerDir &dir, const std::string &id, int init_pid) {
  const auto init = process_id(init_pid);
  if (!init)
    throw Error("container " + quote(id) + ": init process " + std::to_string(init_pid) + " is not running");
  update_record(dir, [&](Record &r) {
    if (r.init && !(*r.init == *init) && process_alive(*r.init))
      throw Error("container id " + quote(id) + " is already in use by init process " + std::to_string(r.init->pid));
    r.init = *init;
    r.status = Status::running;
  });
}

bool container_dir_exists(const std::string &state_dir, const std::string &id) {
  if (!is_safe_container_id(id) || !fs::is_absolute(state_dir))
    return false;
  struct stat st {};
  return ::lstat((fs::clean_path(state_dir) + "/containers/" + id).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void remove_container_dir(const std::string &state_dir, const std::string &id,
                          const std::optional<ProcessId> &created_by) {
  check_id(id);
  UniqueFd containers = open_containers(state_dir, false);
  if (!containers)
    return;
  const std::string path = fs::clean_path(state_dir) + "/containers/" + id;
  if (created_by) {
    UniqueFd dir = open_dir_at(containers.get(), id);
    if (!dir)
      return;
    std::optional<ProcessId> creator;
    try {
      creator = read_record(dir.get(), path).creator;
    } catch (const Error &) {
      return; // not this process's record
    }
    if (creator == created_by)
      remove_judged_dir(containers.get(), id, dir.get(), path);
    return;
  }
  remove_dir_at(containers.get(), id, path);
}

bool remove_if_stale(const std::string &state_dir, const std::string &id) {
  check_id(id);
  UniqueFd containers = open_containers(state_dir, false);
  if (!containers)
    return true;
  UniqueFd dir = open_dir_at(containers.get(), id);
  if (!dir)
    return errno == ENOENT;
  if (dir_is_live(dir.get(), container_dir_path(state_dir, id)))
    return false;
  remove_judged_dir(containers.get(), id, dir.get(), fs::clean_path(state_dir) + "/containers/" + id);
  return true;
}

UniqueFd lock_containers(const std::string &state_dir) {
  return locked(open_containers(state_dir, true), fs::clean_path(state_dir) + "/containers");
}

std::vector<NamedDir> open_container_dirs(const std::string &state_dir) {
  std::vector<NamedDir> dirs;
  UniqueFd containers = open_containers(state_dir, false);
  if (!containers)
    return dirs;
  auto names = fs::list_dir(containers.get());
  if (!names) // admission counts from this list: none is not "nothing there"
    throw system_error("cannot read " + quote(fs::clean_path(state_dir) + "/containers"));
  for (auto &name : *names) {
    if (temp_owner(name) || !is_safe_container_id(name))
      continue;
    if (UniqueFd dir = open_dir_at(containers.get(), name))
      dirs.push_back({std::move(name), std::move(dir)});
  }
  return dirs;
}

std::vector<std::string> collect_stale(const std::string &state_dir) {
  std::vector<std::string> removed;
  UniqueFd containers = open_containers(state_dir, false);
  if (!containers)
    return removed;
  const std::vector<std::string> names = fs::list_dir(containers.get()).value_or(std::vector<std::string>{});
  const std::string base = fs::clean_path(state_dir) + "/containers/";
  for (const auto &name : names) {
    try {
      if (auto pid = temp_owner(name)) {
        if (!process_id(*pid)) // its creator died before renaming it into place
          remove_dir_at(containers.get(), name, base + name);
        continue;
      }
      if (!is_safe_container_id(name))
        continue;
      UniqueFd dir = open_dir_at(containers.get(), name);
      if (!dir || dir_is_live(dir.get(), base + name))
        continue;
      remove_judged_dir(containers.get(), name, dir.get(), base + name);
      removed.push_back(name);
    } catch (const Error &) {
      // one unreadable entry must not stop the others (nor the create)
    }
  }
  return removed;
}

std::vector<std::string> collect_stale_now_and_then(const std::string &state_dir, std::chrono::seconds interval) {
  if (!fs::is_absolute(state_dir))
    throw Error("state dir " + quote(state_dir) + " is not absolute");
  const std::string marker = fs::clean_path(state_dir) + "/" + kStaleCollected;
  // The system call, not the vDSO's clock_gettime: a create asks the time
  // nowhere else, and the vDSO's first call faults in its data page (which
  // cannot be mapped in beforehand) and a page of its code, dearer than
  // the call.
  timespec now{};
  ::syscall(SYS_clock_gettime, CLOCK_REALTIME, &now);
  struct stat st {};
  if (::lstat(marker.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    // A file's time and the clock may disagree by a tick: a marker a second
    // or two ahead is fresh; one further ahead means the clock was set back.
    const auto age = static_cast<long long>(now.tv_sec) - static_cast<long long>(st.st_mtim.tv_sec);
    if (age >= -2 && age < interval.count())
      return {};
  }
  // Touched before the look: creates that come meanwhile do not all look.
  // Only a file of this user's that no other name shares (the state dir is
  // made root's only later, by the create).
  if (UniqueFd f{::open(marker.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600)};
      f && ::fstat(f.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == ::geteuid())
    (void)::futimens(f.get(), nullptr);
  return collect_stale(state_dir);
}

void remove_contents(int dir_fd, const std::string &shown) {
  const auto names = fs::list_dir(dir_fd);
  if (!names)
    throw system_error("cannot read " + quote(shown));
  for (const auto &name : *names) {
    if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT)
      continue;
    if (errno != EISDIR)
      throw system_error("cannot remove " + quote(shown + "/" + name));
    remove_dir_at(dir_fd, name, shown + "/" + name);
  }
}

std::optional<std::string> read_state_file(int dir_fd, const char *name) {
  constexpr std::size_t kMaxStateFile = 64 * 1024;
  // O_NONBLOCK: a FIFO planted there must not hang the reader
  UniqueFd f(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!f)
    return std::nullopt;
  return fs::read_fd(f.get(), name, kMaxStateFile);
}

} // namespace gpuslice::state
