#include "gpuslice/hook/in_container.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/rootfs.hpp"
#include "gpuslice/shim/loop.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace gpuslice::hook {

namespace {

UniqueFd clone_tree(int dir_fd, const char *path, bool recursive, const std::string &shown) {
  unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0u);
  if (!*path)
    flags |= AT_EMPTY_PATH;
  UniqueFd tree(static_cast<int>(::syscall(SYS_open_tree, dir_fd, path, flags)));
  if (!tree)
    throw system_error("cannot clone " + shown + " for a bind mount");
  return tree;
}

void set_attributes(int tree, const BindToMake &b, const std::string &shown) {
  if (!b.attributes)
    return;
  mount_attr attr{};
  attr.attr_set = b.attributes;
  const unsigned flags = AT_EMPTY_PATH | (b.recursive ? AT_RECURSIVE : 0u);
  if (::syscall(SYS_mount_setattr, tree, "", flags, &attr, sizeof attr) != 0)
    throw system_error("cannot make the mount of " + shown + " read-only/nosuid/nodev/noexec as asked");
}

bool is_directory(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

mode_t node_type(const NodeToMake &n) { return n.type == 'b' ? S_IFBLK : n.type == 'p' ? S_IFIFO : S_IFCHR; }

dev_t node_number(const NodeToMake &n) {
  return n.type == 'p' ? 0 : makedev(static_cast<unsigned>(n.major), static_cast<unsigned>(n.minor));
}

void move_onto(int tree, int target, const std::string &shown) {
  if (::syscall(SYS_move_mount, tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
    throw system_error("cannot mount onto " + shown);
}

void make_node(int root, const NodeToMake &n, const std::string &rootfs) {
  const std::string shown = "device node " + quote(n.path);
  const UniqueFd parent = rootfs::make_dirs_in_root(root, fs::dirname(n.path), rootfs);
  const std::string name = n.path.substr(n.path.rfind('/') + 1);
  const mode_t type = node_type(n);
  const dev_t dev = node_number(n);
  if (::mknodat(parent.get(), name.c_str(), type | n.mode, dev) != 0) {
    if (errno != EEXIST)
      throw system_error("cannot make " + shown);
    // Made already (the engine's own CDI, or this hook run twice): only
    // the very node will do.
    struct stat st {};
    if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      throw system_error("cannot look at " + shown);
    if ((st.st_mode & S_IFMT) != type || (n.type != 'p' && st.st_rdev != dev))
      throw Error(shown + " exists in the container and is not the device");
    return;
  }
  if (::fchownat(parent.get(), name.c_str(), n.uid, n.gid, AT_SYMLINK_NOFOLLOW) != 0)
    throw system_error("cannot set the owner of " + shown);
}

// In a user namespace a node made in the container could not be opened
// (its filesystem belongs to that namespace, which the kernel marks
// nodev): the host's node is bound instead, as runc does. Only the very
// device will do.
UniqueFd host_node_tree(const NodeToMake &n) {
  const std::string &host = n.host_path.empty() ? n.path : n.host_path;
  const std::string shown = "device node " + quote(host) + " on the host";
  struct stat st {};
  if (::lstat(host.c_str(), &st) != 0)
    throw system_error("cannot bind " + shown + " into a container in a user namespace");
  if ((st.st_mode & S_IFMT) != node_type(n) || (n.type != 'p' && st.st_rdev != node_number(n)))
    throw Error("cannot bind " + shown + " into a container in a user namespace: it is not that device");
  return clone_tree(AT_FDCWD, host.c_str(), false, quote(host));
}

// What the host's root cannot make in a filesystem of the container's user
// namespace (its /dev: EOVERFLOW, host root being nobody there) is made by
// a child as the container's root, inside that namespace.
void make_target_as_container_root(int init_pidfd, int root, const std::string &path, const std::string &rootfs) {
  const pid_t child = ::fork();
  if (child < 0)
    throw system_error("cannot fork");
  if (child == 0) {
    const bool made = ::setns(init_pidfd, CLONE_NEWUSER) == 0 && ::setresgid(0, 0, 0) == 0 &&
                      ::setresuid(0, 0, 0) == 0 && [&] {
                        try {
                          rootfs::make_mount_target(root, path, rootfs::TargetKind::file, rootfs);
                          return true;
                        } catch (const std::exception &) {
                          return false;
                        }
                      }();
    ::_exit(made ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("cannot make " + quote(path) + " in rootfs " + quote(rootfs) + " as the container's root");
}

bool same_namespace(const std::string &a, const std::string &b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0)
    throw system_error("cannot compare namespaces " + quote(a) + " and " + quote(b));
  return sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

// Everything the child does; the parent only waits.
void inject(int ns_fd, const std::string &rootfs, const Injection &inj, bool bind_nodes) {
  // ns_fd: a pidfd of the container's init, for its mount (and user) namespace
  ::umask(0);
  std::vector<UniqueFd> node_trees;
  if (bind_nodes)
    for (const auto &n : inj.nodes)
      node_trees.push_back(host_node_tree(n));
  // Host sources first, while this process still sees the host.
  std::vector<UniqueFd> trees(inj.mounts.size());
  for (std::size_t i = 0; i < inj.mounts.size(); ++i) {
    const auto &b = inj.mounts[i];
    if (b.in_rootfs)
      continue;
    const std::string shown = quote(b.source);
    trees[i] = clone_tree(AT_FDCWD, b.source.c_str(), b.recursive, shown);
    set_attributes(trees[i].get(), b, shown);
  }
  if (::setns(ns_fd, CLONE_NEWNS) != 0)
    throw system_error("cannot enter the container's mount namespace");
  if (::chdir("/") != 0)
    throw system_error("cannot change to / in the container's mount namespace");
  const UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root)
    throw system_error("cannot open rootfs " + quote(rootfs) + " in the container's mount namespace");
  for (std::size_t i = 0; i < inj.mounts.size(); ++i) {
    const auto &b = inj.mounts[i];
    const std::string shown = quote(b.destination);
    with_context("mount at " + shown, [&] {
      if (b.in_rootfs) { // the container's own directory, as its namespace has it
        const UniqueFd source(rootfs::open_in_root(root.get(), b.source, O_PATH));
        if (!source)
          throw system_error("cannot open " + quote(b.source) + " in rootfs " + quote(rootfs));
        trees[i] = clone_tree(source.get(), "", true, quote(b.source) + " of the container");
        set_attributes(trees[i].get(), b, quote(b.source));
      }
      const auto kind = is_directory(trees[i].get()) ? rootfs::TargetKind::directory : rootfs::TargetKind::file;
      const UniqueFd target = rootfs::make_mount_target(root.get(), b.destination, kind, rootfs);
      move_onto(trees[i].get(), target.get(), shown);
    });
  }
  for (std::size_t i = 0; i < inj.nodes.size(); ++i) {
    if (!bind_nodes) {
      make_node(root.get(), inj.nodes[i], rootfs);
      continue;
    }
    const std::string shown = "device node " + quote(inj.nodes[i].path);
    const UniqueFd target = with_context(shown, [&] {
      try {
        return rootfs::make_mount_target(root.get(), inj.nodes[i].path, rootfs::TargetKind::file, rootfs);
      } catch (const Error &e) {
        if (e.error_number() != EOVERFLOW)
          throw;
      }
      make_target_as_container_root(ns_fd, root.get(), inj.nodes[i].path, rootfs);
      return rootfs::make_mount_target(root.get(), inj.nodes[i].path, rootfs::TargetKind::file, rootfs);
    });
    move_onto(node_trees[i].get(), target.get(), shown);
  }
}

// Reads what the child wrote (its error message), bounded.
std::string read_message(int fd) {
  std::string out;
  char buf[1024];
  ssize_t n;
  while (out.size() < 16384 && (n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

} // namespace

void inject_in_container(int init_pid, const std::string &rootfs, const Injection &injection) {
  if (injection.mounts.empty() && injection.nodes.empty())
    return;
  // The init's namespace by a pidfd: no /proc path that could name another
  // process by the time it is opened.
  const UniqueFd pidfd = with_context("the container's init", [&] { return shim::open_pidfd(init_pid); });
  const bool bind_nodes =
      !same_namespace("/proc/" + std::to_string(init_pid) + "/ns/user", "/proc/self/ns/user");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw system_error("cannot make a pipe");
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  const pid_t child = ::fork();
  if (child < 0)
    throw system_error("cannot fork");
  if (child == 0) {
    read_end.reset();
    int status = 0;
    try {
      inject(pidfd.get(), rootfs, injection, bind_nodes);
    } catch (const std::exception &e) {
      const std::string message = e.what();
      [[maybe_unused]] ssize_t n = ::write(write_end.get(), message.data(), message.size());
      status = 1;
    }
    ::_exit(status);
  }
  write_end.reset();
  const std::string message = read_message(read_end.get());
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return;
  throw Error(message.empty() ? "the child injecting into the container ended with status " + std::to_string(status)
                              : message);
}

} // namespace gpuslice::hook
