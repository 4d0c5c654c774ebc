// Small string helpers shared by the parsers of comma lists, PATH and paths.
#pragma once

#include "gpuslice/common/default_path.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice {

enum class EmptyParts { keep, skip };

// "a,,b" split on ',' -> {"a", "", "b"} (keep) or {"a", "b"} (skip); "" -> {""} or {}.
std::vector<std::string> split(std::string_view text, char separator, EmptyParts empty);

// One UTF-8 character of `text` at byte `i`: its code point and length.
// Invalid UTF-8 (a stray or truncated byte, an overlong form, a surrogate,
// past U+10FFFF) is one byte long and not valid.
struct Utf8Char {
  uint32_t cp = 0;
  std::size_t len = 1;
  bool valid = false;
};
Utf8Char decode_utf8(std::string_view text, std::size_t i);
// The UTF-8 bytes of code point `cp` (<= U+10FFFF).
std::string encode_utf8(uint32_t cp);

// The PATH of a process that has none of its own (hooks, runtime lookup).
inline constexpr const char *kDefaultPath = GS_DEFAULT_PATH;

// "KEY=VALUE" entries (a process env, CDI edits' env): the key of an entry,
// whether an entry sets `key`, and the value the last entry for `key` sets.
std::string_view env_key(std::string_view entry);
bool env_sets(std::string_view entry, std::string_view key);
std::optional<std::string> env_value(const std::vector<std::string> &env, std::string_view key);

// `text` without the white space (isspace) at either end.
std::string trim_space(std::string_view text);

// The pid a pid file holds, as runc and crun write it: decimal digits,
// perhaps spaces or newlines after them; above 0 and an int, else nullopt.
std::optional<int> parse_pid_text(std::string_view text);

// The items with `separator` between them.
std::string join(const std::vector<std::string> &items, std::string_view separator);

// A field of /proc/PID/mounts or mountinfo (a mount point, a source) with
// the kernel's octal escapes undone (\040 for a space, \012 for a newline).
std::string unescape_mount_field(std::string_view field);

// The argv or envp an exec takes: pointers to `strings` (which must outlive
// it), then nullptr. The exec functions' char *const[] never writes to them.
std::vector<char *> c_strings(const std::vector<std::string> &strings);

} // namespace gpuslice
