// File helpers shared by every host-side binary. Writes are atomic (temporary
// file in the same directory, fsync, rename) so that a crash or a failure never
// leaves a half-written config.json or spec behind.
#pragma once

#include "gpuslice/common/fd.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <sys/types.h>
#include <vector>

namespace gpuslice::fs {

// Bound of read_file when the caller gives none: far above any config,
// spec or bundle file, far below what would hurt a node.
inline constexpr std::size_t kDefaultMaxFileSize = 64u << 20;

// Whole content of the regular file `path` (symlinks followed). Anything
// else is refused before a byte is read: a FIFO would block, a device node
// may act on open, a file over max_size is refused from its size. Throws
// Error naming the path.
std::string read_file(const std::string &path, std::size_t max_size = kDefaultMaxFileSize);

// Everything left to read from `fd`; `shown` names it in errors. More than
// max_size bytes is an error (a file someone else can write may grow).
std::string read_fd(int fd, const std::string &shown, std::size_t max_size = SIZE_MAX);
// The same, for a caller that has fstat'ed `fd` already (`st`): one system
// call less on a create's path.
std::string read_stat_fd(int fd, const struct stat &st, const std::string &shown, std::size_t max_size = SIZE_MAX);

enum class Durability {
  synced, // fsync before the rename: survives a crash (configuration files)
  atomic, // rename only: readers see old or new, never half (a bundle's config.json,
          // which does not outlive its container; fsync costs milliseconds on a disk)
};

// Replaces path atomically with data. The new file gets `mode`, or the mode of
// the file it replaces when mode is -1 (0644 when there was none).
void write_file_atomic(const std::string &path, std::string_view data, mode_t mode = static_cast<mode_t>(-1),
                       Durability durability = Durability::synced);

// A new file `name` in the directory `dir_fd`, holding `text`, with exactly
// `mode`: never one that is there already, nor through a link. Its fd, for a
// caller that labels it. Throws Error naming `shown`/`name`.
UniqueFd create_file_at(int dir_fd, const std::string &name, std::string_view text, mode_t mode,
                        const std::string &shown);

// The names in the directory `dir_fd` (an open fd, left where it is), but
// "." and ".."; nullopt when it cannot be read.
std::optional<std::vector<std::string>> list_dir(int dir_fd);

// Removes the temporaries write_file_atomic left next to `path` when its
// process was killed mid-write (their names carry the writer's pid): only
// those whose writer is gone. Errors are ignored: this is tidying.
void remove_stale_temporaries(const std::string &path);

// Makes directory `path` with `mode` when it is missing (its parent must
// be there). Throws Error when it cannot, or something else is there.
void make_dir(const std::string &path, mode_t mode);

// Keeps the directory `dir` (an open fd) of a cache to about `max_entries`
// files: past that, the oldest by mtime go, down to three quarters (an entry
// gone is made again by the next reader that misses it). Names that start
// with '.' are not entries and stay, except those that start with
// `stale_prefix` (a writer's temporary) and are a minute old: their writer
// was killed. Errors are ignored: this is tidying.
void prune_oldest(int dir, std::size_t max_entries, std::string_view stale_prefix = {});

// Lexically cleaned absolute or relative path: no "." or empty components,
// ".." resolved lexically (never above "/"), no trailing slash.
std::string clean_path(std::string_view path);

// Number of slashes in a cleaned path: the key CDI sorts mounts by
// ("/" and "/a" -> 1, "/a/b" -> 2).
std::size_t path_depth(std::string_view cleaned);

bool is_absolute(std::string_view path);

// `path` made absolute against the current directory, cleaned. Throws Error
// when the current directory cannot be had.
std::string absolute(const std::string &path);

// Directory part of a path ("/a/b" -> "/a", "b" -> ".").
std::string dirname(std::string_view path);

} // namespace gpuslice::fs
