// Reading files of a container's root filesystem from the host, as root,
// without letting the image reach outside it: every path is resolved as if
// the rootfs were "/", its symlinks (absolute or relative, "..") included.
// openat2(RESOLVE_IN_ROOT) where the kernel has it (5.6+), otherwise an
// equivalent walk one component at a time with O_NOFOLLOW.
#pragma once

#include "gpuslice/common/fd.hpp"

#include <cstddef>
#include <optional>
#include <string>

namespace gpuslice::rootfs {

enum class Resolver { automatic, walk };

// An fd (O_CLOEXEC) for `path` inside the directory `root_fd`; -1 with errno
// set on failure. `flags` are open(2) flags; O_NOFOLLOW applies to the last
// component as usual.
int open_in_root(int root_fd, const std::string &path, int flags, Resolver resolver = Resolver::automatic);

// A read-only fd of the regular file `path` inside `rootfs`, or nullopt
// when it does not exist. Throws Error when it is not a regular file (never
// opened for reading then: a FIFO or a device could act) or cannot be opened.
std::optional<UniqueFd> open_regular_in_root(const std::string &rootfs, const std::string &path,
                                             Resolver resolver = Resolver::automatic);

// The content of a regular file `path` inside `rootfs`, or nullopt when it
// does not exist. Throws Error when it is not a regular file, is larger than
// max_size, or cannot be read.
std::optional<std::string> read_file_in_root(const std::string &rootfs, const std::string &path, std::size_t max_size,
                                             Resolver resolver = Resolver::automatic);

// What `path` is inside `rootfs`, every component looked at without
// following it: the first symbolic link on the way (the path's own last
// component included) makes it `symlink`, a missing component `missing`.
// For destinations gpuslice adds: a link there would be resolved by runc one
// way and by the kernel another, so no link on the way is accepted.
// Making what gpuslice-hook mounts onto, inside a container's root, from
// inside its mount namespace: each path resolved by open_in_root (never
// leaving the root, whatever the image's links), missing components made
// with mkdirat on the parent's descriptor, and the result an O_PATH
// descriptor to mount onto, never a path string resolved again later.
// `shown_root` names the root in errors. Throw Error.

// The directory `path`, made (0755) with its parents where missing.
UniqueFd make_dirs_in_root(int root_fd, const std::string &path, const std::string &shown_root);

// A mount point for a directory or for anything else (made as an empty
// 0644 file), with its parents; an existing one of the other kind is an
// error naming it.
enum class TargetKind { directory, file };
UniqueFd make_mount_target(int root_fd, const std::string &path, TargetKind kind, const std::string &shown_root);

enum class PathKind { missing, directory, regular, symlink, other };
PathKind kind_in_root(const std::string &rootfs, const std::string &path);

} // namespace gpuslice::rootfs
