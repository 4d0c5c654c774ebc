#include "gpuslice/common/rootfs.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

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

std::vector<std::string> components(const std::string &path) { return split(path, '/', EmptyParts::skip); }

// The walk: a stack of directory fds from the root down, so ".." pops (never
// above the root) and a symlink's target is pushed back onto the components
// still to resolve. Every descriptor it opens is owned by the stack. With
// `make_dirs`, a missing component is made a directory (0755) where the
// walk finds it missing, a link's target included, as the kernel would
// resolve the link from inside the root.
int walk(int root_fd, const std::string &path, int flags, bool make_dirs = false) {
  std::vector<std::string> todo = components(path);
  std::reverse(todo.begin(), todo.end());
  std::vector<UniqueFd> stack; // below the root
  auto current = [&] { return stack.empty() ? root_fd : stack.back().get(); };
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    const bool last = todo.empty();
    if (name == ".")
      continue;
    if (name == "..") {
      if (!stack.empty())
        stack.pop_back();
      if (last)
        return ::openat(current(), ".", flags | O_CLOEXEC);
      continue;
    }
    struct stat st {};
    if (::fstatat(current(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (!make_dirs || errno != ENOENT)
        return -1;
      if (::mkdirat(current(), name.c_str(), 0755) != 0 && errno != EEXIST)
        return -1;
      if (::fstatat(current(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    }
    if (S_ISLNK(st.st_mode) && !(last && (flags & O_NOFOLLOW))) {
      if (++links > kMaxSymlinks) {
        errno = ELOOP;
        return -1;
      }
      std::vector<char> buf(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096) + 1);
      ssize_t n = ::readlinkat(current(), name.c_str(), buf.data(), buf.size());
      if (n < 0 || static_cast<std::size_t>(n) >= buf.size()) {
        if (n >= 0)
          errno = ENAMETOOLONG;
        return -1;
      }
      const std::string target(buf.data(), static_cast<std::size_t>(n));
      if (!target.empty() && target[0] == '/')
        stack.clear(); // absolute: from the root again
      auto parts = components(target);
      for (auto it = parts.rbegin(); it != parts.rend(); ++it)
        todo.push_back(*it);
      continue;
    }
    if (last)
      return ::openat(current(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
    UniqueFd next(::openat(current(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next)
      return -1;
    stack.push_back(std::move(next));
  }
  // An empty path (or "/"): the root itself.
  return ::openat(current(), ".", flags | O_CLOEXEC);
}

} // namespace

int open_in_root(int root_fd, const std::string &path, int flags, Resolver resolver) {
  if (resolver == Resolver::automatic) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    // EAGAIN: a rename or mount anywhere on the system while a ".." was
    // being resolved (the kernel cannot then vouch that it stayed inside);
    // retried, then left to the walk, which does not depend on that.
    for (int attempt = 0; attempt < 8; ++attempt) {
      long fd = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof how);
      if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != EINVAL && errno != EAGAIN))
        return static_cast<int>(fd);
      if (errno != EAGAIN)
        break;
    }
    // ENOSYS: kernel before 5.6; EPERM: a seccomp filter refusing openat2.
  }
  return walk(root_fd, path, flags);
}

std::optional<UniqueFd> open_regular_in_root(const std::string &rootfs, const std::string &path, Resolver resolver) {
  UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.fd < 0)
    throw system_error("cannot open rootfs " + quote(rootfs));
  const std::string shown = quote(path) + " in rootfs " + quote(rootfs);
  // O_PATH first: the image decides what the path is, and opening a device
  // node or a FIFO for reading can act (or block) before its type is known.
  UniqueFd where(open_in_root(root.fd, path, O_PATH, resolver));
  if (where.fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return std::nullopt;
    throw system_error("cannot open " + shown);
  }
  struct stat st {};
  if (::fstat(where.fd, &st) != 0)
    throw system_error("cannot stat " + shown);
  if (!S_ISREG(st.st_mode))
    throw Error(shown + " is not a regular file");
  // Reopening the very inode the O_PATH descriptor holds, not the path again.
  UniqueFd f(::open(("/proc/self/fd/" + std::to_string(where.fd)).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (f.fd < 0)
    throw system_error("cannot open " + shown);
  return f;
}

std::optional<std::string> read_file_in_root(const std::string &rootfs, const std::string &path, std::size_t max_size,
                                             Resolver resolver) {
  std::optional<UniqueFd> f = open_regular_in_root(rootfs, path, resolver);
  if (!f)
    return std::nullopt;
  return fs::read_fd(f->fd, quote(path) + " in rootfs " + quote(rootfs), max_size);
}

namespace {

std::string basename_of(const std::string &cleaned) { return cleaned.substr(cleaned.rfind('/') + 1); }

std::string in_root_shown(const std::string &path, const std::string &shown_root) {
  return quote(path) + " in rootfs " + quote(shown_root);
}

} // namespace

UniqueFd make_dirs_in_root(int root_fd, const std::string &path, const std::string &shown_root) {
  UniqueFd dir(walk(root_fd, path, O_PATH | O_DIRECTORY, true));
  if (!dir)
    throw system_error("cannot make directory " + in_root_shown(path, shown_root));
  return dir;
}

namespace {

UniqueFd make_mount_target_at(int root_fd, const std::string &path, TargetKind kind, const std::string &shown_root,
                              int links) {
  const std::string cleaned = fs::clean_path("/" + path);
  if (cleaned == "/")
    throw Error("cannot mount onto the root of rootfs " + quote(shown_root));
  const UniqueFd parent = make_dirs_in_root(root_fd, fs::dirname(cleaned), shown_root);
  const std::string name = basename_of(cleaned);
  // The mount point is a link (dangling or not): made where it leads,
  // inside the root, as the container would see it.
  char target_buf[4096];
  const ssize_t n = ::readlinkat(parent.get(), name.c_str(), target_buf, sizeof target_buf);
  if (n > 0 && static_cast<std::size_t>(n) < sizeof target_buf) {
    if (links >= kMaxSymlinks)
      throw Error(in_root_shown(cleaned, shown_root) + ": too many levels of symbolic links");
    const std::string target(target_buf, static_cast<std::size_t>(n));
    return make_mount_target_at(root_fd, target[0] == '/' ? target : fs::dirname(cleaned) + "/" + target, kind,
                                shown_root, links + 1);
  }
  if (kind == TargetKind::directory) {
    if (::mkdirat(parent.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
      throw system_error("cannot make directory " + in_root_shown(cleaned, shown_root));
  } else {
    const int made = ::openat(parent.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (made < 0 && errno != EEXIST)
      throw system_error("cannot make file " + in_root_shown(cleaned, shown_root));
    if (made >= 0)
      ::close(made);
  }
  UniqueFd target(open_in_root(root_fd, cleaned, O_PATH));
  if (!target)
    throw system_error("cannot open " + in_root_shown(cleaned, shown_root));
  struct stat st {};
  if (::fstat(target.get(), &st) != 0)
    throw system_error("cannot stat " + in_root_shown(cleaned, shown_root));
  if (S_ISDIR(st.st_mode) != (kind == TargetKind::directory))
    throw Error(in_root_shown(cleaned, shown_root) + (kind == TargetKind::directory ? " is not a directory"
                                                                                     : " is a directory"));
  return target;
}

} // namespace

UniqueFd make_mount_target(int root_fd, const std::string &path, TargetKind kind, const std::string &shown_root) {
  return make_mount_target_at(root_fd, path, kind, shown_root, 0);
}

PathKind kind_in_root(const std::string &rootfs, const std::string &path) {
  UniqueFd cur(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur)
    throw system_error("cannot open rootfs " + quote(rootfs));
  const auto parts = components(path);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == "." || parts[i] == "..")
      throw Error("path " + quote(path) + " is not clean");
    struct stat st {};
    if (::fstatat(cur.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT)
        return PathKind::missing;
      throw system_error("cannot look at " + quote(path) + " in rootfs " + quote(rootfs));
    }
    if (S_ISLNK(st.st_mode))
      return PathKind::symlink;
    if (i + 1 == parts.size())
      return S_ISDIR(st.st_mode) ? PathKind::directory : S_ISREG(st.st_mode) ? PathKind::regular : PathKind::other;
    if (!S_ISDIR(st.st_mode))
      return PathKind::other;
    cur = UniqueFd(::openat(cur.get(), parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!cur)
      throw system_error("cannot open " + quote(path) + " in rootfs " + quote(rootfs));
  }
  return PathKind::directory; // "/": the root itself
}

} // namespace gpuslice::rootfs
