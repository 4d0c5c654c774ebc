#include "gpuslice/common/rootfs.hpp"

#include "gpuslice/common/error.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace gpuslice::rootfs {

namespace {

constexpr int kMaxSymlinks = 40;

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { reset(); }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  void reset(int f = -1) {
    if (fd >= 0)
      ::close(fd);
    fd = f;
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

std::vector<std::string> split(const std::string &path) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i <= path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos)
      j = path.size();
    if (j > i)
      parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

// The walk: a stack of directory fds from the root down, so ".." pops (never
// above the root) and a symlink's target is pushed back onto the components
// still to resolve.
int walk(int root_fd, const std::string &path, int flags) {
  std::vector<std::string> todo = split(path);
  std::reverse(todo.begin(), todo.end());
  std::vector<int> stack; // owned fds below root
  auto cleanup = [&] {
    for (int f : stack)
      ::close(f);
  };
  auto current = [&] { return stack.empty() ? root_fd : stack.back(); };
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    const bool last = todo.empty();
    if (name == ".")
      continue;
    if (name == "..") {
      if (!stack.empty()) {
        ::close(stack.back());
        stack.pop_back();
      }
      if (last) {
        int fd = ::openat(current(), ".", flags | O_CLOEXEC);
        int err = errno;
        cleanup();
        errno = err;
        return fd;
      }
      continue;
    }
    struct stat st {};
    if (::fstatat(current(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      int err = errno;
      cleanup();
      errno = err;
      return -1;
    }
    if (S_ISLNK(st.st_mode) && !(last && (flags & O_NOFOLLOW))) {
      if (++links > kMaxSymlinks) {
        cleanup();
        errno = ELOOP;
        return -1;
      }
      std::vector<char> buf(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096) + 1);
      ssize_t n = ::readlinkat(current(), name.c_str(), buf.data(), buf.size());
      if (n < 0 || static_cast<std::size_t>(n) >= buf.size()) {
        int err = n < 0 ? errno : ENAMETOOLONG;
        cleanup();
        errno = err;
        return -1;
      }
      const std::string target(buf.data(), static_cast<std::size_t>(n));
      if (!target.empty() && target[0] == '/') {
        for (int f : stack)
          ::close(f);
        stack.clear();
      }
      auto parts = split(target);
      for (auto it = parts.rbegin(); it != parts.rend(); ++it)
        todo.push_back(*it);
      continue;
    }
    if (last) {
      int fd = ::openat(current(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
      int err = errno;
      cleanup();
      errno = err;
      return fd;
    }
    int fd = ::openat(current(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      cleanup();
      errno = err;
      return -1;
    }
    stack.push_back(fd);
  }
  // An empty path (or "/"): the root itself.
  int fd = ::openat(current(), ".", flags | O_CLOEXEC);
  int err = errno;
  cleanup();
  errno = err;
  return fd;
}

} // namespace

int open_in_root(int root_fd, const std::string &path, int flags, Resolver resolver) {
  if (resolver == Resolver::automatic) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    long fd = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != EINVAL))
      return static_cast<int>(fd);
    // ENOSYS: kernel before 5.6; EPERM: a seccomp filter refusing openat2.
  }
  return walk(root_fd, path, flags);
}

std::optional<std::string> read_file_in_root(const std::string &rootfs, const std::string &path, std::size_t max_size,
                                             Resolver resolver) {
  Fd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.fd < 0)
    throw system_error("cannot open rootfs " + quote(rootfs));
  Fd f(open_in_root(root.fd, path, O_RDONLY | O_NONBLOCK, resolver));
  if (f.fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return std::nullopt;
    throw system_error("cannot open " + quote(path) + " in rootfs " + quote(rootfs));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw system_error("cannot stat " + quote(path) + " in rootfs " + quote(rootfs));
  if (!S_ISREG(st.st_mode))
    throw Error(quote(path) + " in rootfs " + quote(rootfs) + " is not a regular file");
  if (static_cast<std::size_t>(st.st_size) > max_size)
    throw Error(quote(path) + " in rootfs " + quote(rootfs) + " is larger than " + std::to_string(max_size) + " bytes");
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw system_error("cannot read " + quote(path) + " in rootfs " + quote(rootfs));
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_size)
      throw Error(quote(path) + " in rootfs " + quote(rootfs) + " is larger than " + std::to_string(max_size) + " bytes");
  }
  return out;
}

} // namespace gpuslice::rootfs
