// Text-level edits of a user's containerd config.toml.
//
// Why text and not a TOML round trip: the main config file belongs to the
// user (comments, ordering, formatting, keys we do not understand). Parsing it
// and serialising it again would rewrite every line. So every change gpuslice
// makes there is a small splice of text, located with the source positions
// toml++ reports, and marked with a `# gpuslice:` comment that says what was
// done. `strip_gpuslice_edits` reads those marks back and undoes exactly those
// splices, which is what `--remove` and the idempotent re-run rely on.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

namespace gpuslice::containerd::text {

// Parses TOML text, turning toml++'s parse error into gpuslice::Error naming
// `source_name` and the line.
toml::table parse(std::string_view text, std::string_view source_name);

// Byte offset in `text` of a toml++ source position (1-based line, 1-based
// column counted in code points).
std::size_t offset_of(std::string_view text, const toml::source_position &pos);

// A TOML basic string for a value that has no quote, backslash or control
// character (checked; throws otherwise).
std::string quote_plain(std::string_view value);

// Inserts `body` (complete lines) as a marked block after the last top-level
// key/value pair, i.e. before the first table header, or at the start when
// there is none. `created_file` marks the block as the whole file gpuslice
// created, so that undoing it deletes the file.
std::string insert_top_level_block(std::string_view text, const toml::table &parsed, std::string_view body,
                                   bool created_file = false);

// Appends `body` (complete lines) as a marked block at the end of the file.
std::string append_block(std::string_view text, std::string_view body);

// Inserts `body` (complete lines) as a marked block right after line
// `line_number` (1-based).
std::string insert_block_after_line(std::string_view text, std::size_t line_number, std::string_view body);

// Adds `entry` to the top-level `imports` array: appended after its last
// element with a marker line above the key when the key exists, or as a new
// marked `imports = [...]` key when it does not.
std::string add_import(std::string_view text, const toml::table &parsed, std::string_view entry);

// Replaces the text of the value `node` (a value parsed from `text`) by
// `new_value_text`, with a marker above `key_line` that keeps the old text.
std::string replace_value(std::string_view text, const toml::node &node, std::size_t key_line,
                          std::string_view key_name, std::string_view new_value_text);

// Undoes every marked edit above; text without marks comes back unchanged.
// `created_file` is set when the text was a file gpuslice created (the result
// is then empty and the caller should delete the file).
std::string strip_gpuslice_edits(std::string_view text, std::string_view source_name, bool *created_file = nullptr);

// True when the text carries any gpuslice mark.
bool has_gpuslice_edits(std::string_view text);

} // namespace gpuslice::containerd::text
