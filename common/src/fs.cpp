#include "gpuslice/common/fs.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <tuple>
#include <vector>

namespace gpuslice::fs {

namespace {
using Fd = UniqueFd;
// What follows a file's name in its temporaries: ".gpuslice-tmp.<pid>.<random>".
constexpr const char *kTempMarker = ".gpuslice-tmp.";
} // namespace

std::string read_file(const std::string &path, std::size_t max_size) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: a tty
  // must not become ours. Neither changes how a regular file reads.
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (f.fd < 0)
    throw system_error("cannot open " + quote(path));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw system_error("cannot stat " + quote(path));
  if (!S_ISREG(st.st_mode))
    throw Error(quote(path) + " is not a regular file");
  return read_stat_fd(f.fd, st, quote(path), max_size);
}

std::string read_fd(int fd, const std::string &shown, std::size_t max_size) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    st.st_size = 0; // read as a file whose size stat does not tell
  return read_stat_fd(fd, st, shown, max_size);
}

std::string read_stat_fd(int fd, const struct stat &st, const std::string &shown, std::size_t max_size) {
  auto too_large = [&] { return Error(shown + " is larger than " + std::to_string(max_size) + " bytes"); };
  auto read_some = [&](char *into, std::size_t n) {
    for (;;) {
      const ssize_t got = ::read(fd, into, n);
      if (got >= 0)
        return static_cast<std::size_t>(got);
      if (errno != EINTR)
        throw system_error("cannot read " + shown);
    }
  };
  // A file whose size stat tells is read straight into the string: no copy,
  // and no large buffer on the stack, whose pages below the ones in use
  // are each a fresh page to fault in (the runtime reads several small
  // files in a process that has just started, on a container's critical
  // path).
  std::string out;
  if (st.st_size > 0) {
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size > max_size)
      throw too_large();
    out.resize(size);
    std::size_t have = 0;
    while (have < size) {
      const std::size_t got = read_some(out.data() + have, size - have);
      if (got == 0) { // it shrank
        out.resize(have);
        return out;
      }
      have += got;
    }
    // End of file, or did it grow? (One byte: a probe into the string would
    // grow it, and with it the heap, by a chunk.)
    char extra = 0;
    if (read_some(&extra, 1) == 0)
      return out;
    out.push_back(extra);
    if (out.size() > max_size)
      throw too_large();
  }
  // The rest: a file that grew, or one whose size stat does not tell
  // (/proc), into the string: first into what it holds already, then in
  // chunks that double, and never more than max_size + 1 bytes (enough to
  // tell it is too large). resize zeroes what it adds: a short file read
  // with a large max would take fresh heap to find its end if every read
  // asked for a new chunk.
  std::size_t chunk = 4096;
  for (;;) {
    const std::size_t have = out.size();
    std::size_t n = out.capacity() - have;
    if (n < 512) {
      n = chunk;
      chunk = std::min<std::size_t>(chunk * 2, std::size_t{1} << 20);
    }
    if (max_size - have < n) // have <= max_size here
      n = max_size - have + 1;
    out.resize(have + n);
    const std::size_t got = read_some(out.data() + have, n);
    out.resize(have + got);
    if (got == 0)
      return out;
    if (out.size() > max_size)
      throw too_large();
  }
}

void write_file_atomic(const std::string &path, std::string_view data, mode_t mode, Durability durability) {
  if (mode == static_cast<mode_t>(-1)) {
    struct stat st {};
    mode = ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  }
  // getrandom: nothing of <random> needed for a name; O_EXCL below makes a
  // collision an error anyway, never an overwrite.
  unsigned int nonce = 0;
  (void)!::getrandom(&nonce, sizeof nonce, GRND_NONBLOCK);
  std::string tmp = path + kTempMarker + std::to_string(::getpid()) + "." + std::to_string(nonce);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
  if (fd < 0)
    throw system_error("cannot create " + quote(tmp));
  auto fail = [&](const char *what) {
    Error e = system_error(std::string(what) + " " + quote(tmp));
    ::close(fd);
    ::unlink(tmp.c_str());
    throw e;
  };
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail("cannot write");
    }
    off += static_cast<std::size_t>(n);
  }
  // The umask may have narrowed the mode given to open().
  if (::fchmod(fd, mode & 07777) != 0)
    fail("cannot chmod");
  if (durability == Durability::synced && ::fsync(fd) != 0)
    fail("cannot sync");
  if (::close(fd) != 0) {
    Error e = system_error("cannot close " + quote(tmp));
    ::unlink(tmp.c_str());
    throw e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = system_error("cannot rename " + quote(tmp) + " to " + quote(path));
    ::unlink(tmp.c_str());
    throw e;
  }
}

std::optional<std::vector<std::string>> list_dir(int dir_fd) {
  // its own open file: a dup would share the caller's offset (and an O_PATH
  // fd cannot be listed); fdopendir takes it, closedir closes it
  const int list_fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
  if (!d) {
    if (list_fd >= 0)
      ::close(list_fd);
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (const dirent *e = ::readdir(d))
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..")
      names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
}

void make_dir(const std::string &path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    throw system_error("cannot make " + quote(path));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(quote(path) + " is not a directory");
}

void remove_stale_temporaries(const std::string &path) {
  const std::string dir = dirname(path);
  const std::string prefix = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1) + kTempMarker;
  const UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const auto names = dir_fd ? list_dir(dir_fd.get()) : std::nullopt;
  for (const std::string_view name : names.value_or(std::vector<std::string>{})) {
    if (name.substr(0, prefix.size()) != prefix)
      continue;
    const std::string_view rest = name.substr(prefix.size());
    long pid = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec != std::errc() || pid <= 0 || p == rest.data() + rest.size() || *p != '.')
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      ::unlinkat(dir_fd.get(), std::string(name).c_str(), 0);
  }
}

UniqueFd create_file_at(int dir_fd, const std::string &name, std::string_view text, mode_t mode,
                        const std::string &shown) {
  UniqueFd f(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!f || ::write(f.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fchmod(f.get(), mode) != 0) // the umask aside
    throw system_error("cannot write " + quote(shown + "/" + name));
  return f;
}

void prune_oldest(int dir, std::size_t max_entries, std::string_view stale_prefix) {
  const auto names = list_dir(dir);
  if (!names)
    return;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  struct Entry {
    timespec mtime;
    std::string name;
  };
  std::vector<Entry> entries;
  struct stat st {};
  for (const std::string &name : *names) {
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (!name.starts_with('.'))
      entries.push_back({st.st_mtim, name});
    else if (!stale_prefix.empty() && name.starts_with(stale_prefix) && now.tv_sec - st.st_mtim.tv_sec >= 60)
      ::unlinkat(dir, name.c_str(), 0);
  }
  if (entries.size() <= max_entries)
    return;
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec) < std::tie(b.mtime.tv_sec, b.mtime.tv_nsec);
  });
  for (std::size_t k = 0; k < entries.size() - max_entries * 3 / 4; ++k)
    ::unlinkat(dir, entries[k].name.c_str(), 0);
}

bool is_absolute(std::string_view path) { return !path.empty() && path.front() == '/'; }

std::string absolute(const std::string &path) {
  if (is_absolute(path))
    return clean_path(path);
  char cwd[4096];
  if (!::getcwd(cwd, sizeof cwd))
    throw system_error("cannot get the current directory");
  return clean_path(std::string(cwd) + "/" + path);
}

std::string clean_path(std::string_view path) {
  const bool abs = is_absolute(path);
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i <= path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos)
      j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (part.empty() || part == ".") {
    } else if (part == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else if (!abs)
        parts.push_back(part);
    } else {
      parts.push_back(part);
    }
    i = j + 1;
  }
  // Returned, not assigned: g++ 12 -O2 warns (-Wrestrict, a false positive,
  // GCC PR 105329) on assigning "." to the string built below.
  if (!abs && parts.empty())
    return ".";
  std::string out = abs ? "/" : "";
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (k)
      out += '/';
    out += parts[k];
  }
  return out;
}

std::size_t path_depth(std::string_view cleaned) {
  std::size_t n = 0;
  for (char c : cleaned)
    n += c == '/';
  return n;
}

std::string dirname(std::string_view path) {
  auto pos = path.rfind('/');
  if (pos == std::string_view::npos)
    return ".";
  if (pos == 0)
    return "/";
  return std::string(path.substr(0, pos));
}

} // namespace gpuslice::fs
