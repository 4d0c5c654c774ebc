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
#include <cstdio>

namespace gpuslice::state {

namespace {

constexpr const char *kCreator = kCreatorRecord;
constexpr const char *kInit = kInitRecord;
constexpr const char *kFormat = "format";
constexpr std::string_view kFormatPrefix = "gpuslice-state ";
constexpr std::string_view kTempPrefix = ".new-";
// What fstat says of a file of /proc: no size (so read_stat_fd reads in
// chunks), and not asked (one system call less).
const struct stat kSizeUntold {};

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
  UniqueFd containers = open_dir_at(dir.get(), "containers");
  if (!containers && errno == ENOENT)
    containers = open_or_make_dir(dir.get(), "containers", cleaned);
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

// Container dir `id`, which must be there (nothing is created). Throws Error.
ContainerDir open_existing(const std::string &state_dir, const std::string &id) {
  check_id(id);
  const std::string path = fs::clean_path(state_dir) + "/containers/" + id;
  UniqueFd containers = open_containers(state_dir, false);
  UniqueFd dir = containers ? open_dir_at(containers.get(), id) : UniqueFd();
  if (!dir)
    throw system_error("cannot open " + quote(path));
  return {path, std::move(dir)};
}

std::string format(const ProcessId &p) { return to_text(p) + "\n"; }

std::optional<ProcessId> read_record(int dir_fd, const char *name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd)
    return std::nullopt;
  char buf[64];
  ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n <= 0)
    return std::nullopt;
  std::string_view text(buf, static_cast<std::size_t>(n));
  if (text.back() == '\n') // as format writes it
    text.remove_suffix(1);
  return parse_process_id(text);
}

// `name` of `dir_fd` replaced by a file holding `text`: a reader sees the
// old text or the new, never a part.
void write_text(int dir_fd, const char *name, const std::string &text, const std::string &shown) {
  const std::string tmp = std::string(".") + name + ".tmp";
  UniqueFd fd(::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw system_error("cannot write " + quote(shown + "/" + name));
  fd.reset();
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, name) != 0)
    throw system_error("cannot write " + quote(shown + "/" + name));
}

// "gpuslice-state N\n", N > 0.
std::optional<int> parse_format_record(std::string_view text) {
  if (text.size() <= kFormatPrefix.size() + 1 || text.substr(0, kFormatPrefix.size()) != kFormatPrefix ||
      text.back() != '\n')
    return std::nullopt;
  const auto digits = text.substr(kFormatPrefix.size(), text.size() - kFormatPrefix.size() - 1);
  int number = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (ec != std::errc() || end != digits.data() + digits.size() || number <= 0)
    return std::nullopt;
  return number;
}

void write_record(int dir_fd, const char *name, const ProcessId &p, const std::string &shown) {
  write_text(dir_fd, name, format(p), shown);
}

// Whether the process the pid file of `init-pid-file` names runs and
// started no earlier than `creator`: the init that the creator's runtime
// started. No record, no pid file (the runtime failed before writing it)
// or one that holds no pid: not.
bool init_of_pid_file_runs(int dir_fd, const ProcessId &creator) {
  UniqueFd f(::openat(dir_fd, kInitPidFileRecord, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!f)
    return false;
  char path[PATH_MAX + 1];
  const ssize_t n = ::read(f.get(), path, sizeof path);
  if (n < 2 || n > PATH_MAX || path[0] != '/' || path[n - 1] != '\n' ||
      std::memchr(path, '\0', static_cast<std::size_t>(n)) || std::memchr(path, '\n', static_cast<std::size_t>(n - 1)))
    return false;
  path[n - 1] = '\0';
  // No exception for a file that is missing (a create that failed): the
  // first throw in a static binary costs milliseconds (process_id).
  const UniqueFd pid_file(::open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!pid_file || ::fstat(pid_file.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return false;
  char text[65];
  const ssize_t got = ::read(pid_file.get(), text, sizeof text);
  const auto pid = got > 0 && got < static_cast<ssize_t>(sizeof text)
                       ? parse_pid_text(std::string_view(text, static_cast<std::size_t>(got)))
                       : std::nullopt;
  const auto init = pid ? process_id(*pid) : std::nullopt;
  return init && init->start_time >= creator.start_time;
}

// Live: its init (once recorded), else its creator, still runs, else the
// init its pid file names (kInitPidFileRecord). A directory without either
// record is some other program's: left alone.
bool is_live(int dir_fd) {
  if (auto init = read_record(dir_fd, kInit))
    return process_alive(*init);
  if (auto creator = read_record(dir_fd, kCreator))
    return process_alive(*creator) || init_of_pid_file_runs(dir_fd, *creator);
  return true;
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

int read_state_format(int dir_fd, const std::string &shown) {
  UniqueFd fd(::openat(dir_fd, kFormat, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT)
      return 1; // written before the record existed: format 1's layout
    throw system_error("cannot open " + quote(shown + "/" + kFormat));
  }
  char buf[64];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  const auto number = parse_format_record(std::string_view(buf, n > 0 ? static_cast<std::size_t>(n) : 0));
  if (!number)
    throw Error(quote(shown + "/" + kFormat) + " is not \"" + std::string(kFormatPrefix) + "N\"");
  if (*number > kStateFormat)
    throw Error("state " + quote(shown) + " has format " + std::to_string(*number) +
                ", written by a newer gpuslice; this one reads formats up to " + std::to_string(kStateFormat) +
                " (downgraded under running containers? stop them or reinstall the newer version)");
  return *number;
}

std::optional<ProcessId> process_id(int pid) {
  if (pid <= 0)
    return std::nullopt;
  // This process's own, asked for by each record it writes of itself
  // (~10 us a read of /proc on a small VM): read once. A forked child has
  // another pid, so it reads its own.
  static std::optional<ProcessId> self;
  const bool is_self = pid == static_cast<int>(::getpid());
  if (is_self && self && self->pid == pid)
    return self;
  // No exception for a process that is gone, the usual answer (delete,
  // stale collection): the first throw in a static binary costs
  // milliseconds of unwinder set-up.
  const UniqueFd f(::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
  if (!f)
    return std::nullopt;
  std::string stat;
  try {
    stat = fs::read_stat_fd(f.get(), kSizeUntold, "/proc/PID/stat", 4096);
  } catch (const Error &) {
    return std::nullopt;
  }
  // "PID (COMM) STATE PPID ...": COMM may hold anything, ')' included, so
  // fields are counted from the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos)
    return std::nullopt;
  std::vector<std::string> fields = split(std::string_view(stat).substr(close + 1), ' ', EmptyParts::skip);
  // fields[0] is field 3 (state); the start time is field 22.
  if (fields.size() < 20 || fields[0] == "Z" || fields[0] == "X")
    return std::nullopt; // a zombie has ended
  ProcessId p{pid, 0};
  std::from_chars(fields[19].data(), fields[19].data() + fields[19].size(), p.start_time);
  if (is_self)
    self = p;
  return p;
}

std::string to_text(const ProcessId &p) { return std::to_string(p.pid) + " " + std::to_string(p.start_time); }

std::optional<ProcessId> parse_process_id(std::string_view text) {
  const auto space = text.find(' ');
  if (space == std::string_view::npos)
    return std::nullopt;
  ProcessId p;
  const std::string_view pid = text.substr(0, space), start = text.substr(space + 1);
  auto [pe, pec] = std::from_chars(pid.data(), pid.data() + pid.size(), p.pid);
  auto [se, sec] = std::from_chars(start.data(), start.data() + start.size(), p.start_time);
  if (pec != std::errc() || pe != pid.data() + pid.size() || p.pid <= 0 || sec != std::errc() ||
      se != start.data() + start.size())
    return std::nullopt;
  return p;
}

bool process_alive(const ProcessId &p) {
  auto now = process_id(p.pid);
  return now && now->start_time == p.start_time;
}

ContainerDir create_container_dir(const std::string &state_dir, const std::string &id) {
  check_id(id);
  UniqueFd containers = open_containers(state_dir, true);
  const std::string path = fs::clean_path(state_dir) + "/containers/" + id;
  for (bool waited = false;; waited = true) {
    UniqueFd existing = open_dir_at(containers.get(), id);
    if (!existing) {
      if (errno != ENOENT)
        throw system_error("cannot open " + quote(path));
      break;
    }
    if (!is_live(existing.get())) {
      remove_judged_dir(containers.get(), id, existing.get(), path); // another's now: the rename below says so
      break;
    }
    // A create of a container with limits still deciding (no init yet)
    // holds the dir's lock until its runtime has said yes or no (shim's
    // init recorder): waited for once, so that a create retried at once
    // after a failed one is not refused. (One without limits holds none:
    // its dir is stale as soon as its runtime has exited without a pid file.)
    if (waited || read_record(existing.get(), kInit))
      throw Error("container id " + quote(id) + " is already in use (state " + quote(path) +
                  "): a second container cannot take it over");
    (void)locked(std::move(existing), path);
  }
  const auto me = process_id(static_cast<int>(::getpid()));
  if (!me)
    throw Error("cannot read this process's start time from /proc");
  const std::string temp = std::string(kTempPrefix) + std::to_string(me->pid) + "-" + id;
  remove_dir_at(containers.get(), temp, path); // our own leftover (pid reuse)
  UniqueFd dir = open_or_make_dir(containers.get(), temp, path);
  secure(dir.get(), path);
  try {
    // Written in place: no one reads a temporary before it is renamed.
    fs::create_file_at(dir.get(), kFormat, std::string(kFormatPrefix) + std::to_string(kStateFormat) + "\n", 0600, path);
    fs::create_file_at(dir.get(), kCreator, format(*me), 0600, path);
    if (::syscall(SYS_renameat2, containers.get(), temp.c_str(), containers.get(), id.c_str(), RENAME_NOREPLACE) != 0)
      throw errno == EEXIST ? Error("container id " + quote(id) + " is already in use (state " + quote(path) + ")")
                            : system_error("cannot create " + quote(path));
  } catch (...) {
    remove_dir_at(containers.get(), temp, path);
    throw;
  }
  return {path, std::move(dir)};
}

void hand_over_creation(const ContainerDir &dir, const ProcessId &from, const ProcessId &to) {
  if (read_record(dir.fd.get(), kCreator) != from)
    throw Error("container dir " + quote(dir.path) + " was not created by process " + std::to_string(from.pid));
  write_record(dir.fd.get(), kCreator, to, dir.path);
}

ContainerDir record_init(const std::string &state_dir, const std::string &id, int init_pid) {
  check_id(id);
  const std::string path = fs::clean_path(state_dir) + "/containers/" + id;
  UniqueFd containers = open_containers(state_dir, true);
  UniqueFd dir = open_dir_at(containers.get(), id);
  if (!dir) {
    if (errno != ENOENT)
      throw system_error("cannot open " + quote(path));
    ContainerDir created = create_container_dir(state_dir, id);
    dir = std::move(created.fd);
  }
  read_state_format(dir.get(), path);
  const auto init = process_id(init_pid);
  if (!init)
    throw Error("container " + quote(id) + ": init process " + std::to_string(init_pid) + " is not running");
  if (auto recorded = read_record(dir.get(), kInit); recorded && !(*recorded == *init) && process_alive(*recorded))
    throw Error("container id " + quote(id) + " is already in use by init process " + std::to_string(recorded->pid));
  write_record(dir.get(), kInit, *init, path);
  return {path, std::move(dir)};
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
    if (dir && read_record(dir.get(), kCreator) == created_by)
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
  if (is_live(dir.get()))
    return false;
  remove_judged_dir(containers.get(), id, dir.get(), fs::clean_path(state_dir) + "/containers/" + id);
  return true;
}

UniqueFd lock_containers(const std::string &state_dir) {
  return locked(open_containers(state_dir, true), fs::clean_path(state_dir) + "/containers");
}

UniqueFd lock_container_dir(const std::string &state_dir, const std::string &id) {
  ContainerDir dir = open_existing(state_dir, id);
  return locked(std::move(dir.fd), dir.path);
}

void lock_container_dir(const ContainerDir &dir) { lock_exclusive(dir.fd.get(), dir.path); }

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
      if (!dir || is_live(dir.get()))
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
  const std::string marker = fs::clean_path(state_dir) + "/" + kStaleCollectedRecord;
  // The system call, not the vDSO's clock_gettime: a create asks the time
  // nowhere else, and the vDSO's first call faults in its data page (which
  // cannot be mapped in beforehand) and a page of its code, ~20 us on a VM
  // against ~1 us for the call.
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

std::optional<ProcessId> read_process_record(int dir_fd, const char *name) { return read_record(dir_fd, name); }

std::optional<std::string> read_state_file(int dir_fd, const char *name) {
  constexpr std::size_t kMaxStateFile = 64 * 1024;
  // O_NONBLOCK: a FIFO planted there must not hang the reader
  UniqueFd f(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!f)
    return std::nullopt;
  return fs::read_fd(f.get(), name, kMaxStateFile);
}

void write_process_record(int dir_fd, const char *name, const ProcessId &p, const std::string &shown) {
  write_record(dir_fd, name, p, shown);
}

} // namespace gpuslice::state
