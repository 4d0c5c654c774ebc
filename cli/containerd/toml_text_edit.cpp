// Marked text splices in a user's TOML file; see toml_text_edit.hpp for why.
// Every splice writes a `# gpuslice:` comment next to it, and
// strip_gpuslice_edits() is the exact inverse of each splice: it finds the
// comment, re-parses, and removes what the comment says was added.
#include "toml_text_edit.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/toml_text.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

namespace gpuslice::containerd::text {

namespace {

constexpr std::string_view kBegin =
    "# gpuslice: begin (added by `gpuslice configure containerd`; `--remove` takes it out)";
constexpr std::string_view kBeginAfterNewline =
    "# gpuslice: begin, after a line break gpuslice added (`gpuslice configure containerd --remove` takes both out)";
constexpr std::string_view kBeginCreated =
    "# gpuslice: begin, file created by `gpuslice configure containerd` (`--remove` deletes it)";
constexpr std::string_view kBeginPrefix = "# gpuslice: begin";
constexpr std::string_view kEnd = "# gpuslice: end";
constexpr std::string_view kImportPrefix = "# gpuslice: appended to imports below: ";
constexpr std::string_view kImportSuffix = " (`gpuslice configure containerd --remove` takes it out)";
constexpr std::string_view kReplacedPrefix = "# gpuslice: replaced the value of ";
constexpr std::string_view kReplacedWas = " below (`--remove` restores it), was: ";

// Where the TOML text starts: after a UTF-8 byte order mark, which toml++
// skips (so column 1 of line 1 is after it) and which must stay first.
std::size_t content_start(std::string_view text) { return text.starts_with("\xEF\xBB\xBF") ? 3 : 0; }

// Offsets of the first byte of every line; a final entry for text.size().
std::vector<std::size_t> line_starts(std::string_view text) {
  std::vector<std::size_t> starts{0};
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n')
      starts.push_back(i + 1);
  if (starts.back() != text.size())
    starts.push_back(text.size());
  return starts;
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}

// A located line: [start, end) without its '\n'; next is the start of the next line.
struct Line {
  std::size_t start, end, next;
  std::string_view body;
};

// The first line (from byte `from`) whose left-trimmed text starts with prefix.
bool find_line(std::string_view text, std::string_view prefix, Line &out, std::size_t from = 0) {
  std::size_t pos = std::max(from, content_start(text));
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view body = text.substr(pos, end - pos);
    if (trim_left(body).starts_with(prefix)) {
      out = {pos, end, nl == std::string_view::npos ? text.size() : nl + 1, trim_left(body)};
      return true;
    }
    pos = end + 1;
  }
  return false;
}

std::string block(std::string_view begin_marker, std::string_view body) {
  std::string out(begin_marker);
  out += '\n';
  out += body;
  if (!body.empty() && body.back() != '\n')
    out += '\n';
  out += kEnd;
  out += '\n';
  return out;
}

// Byte offset where a new line after line `line_number` (1-based; 0 = before
// the first) starts; sets needs_newline when the text's last line lacks '\n'.
std::size_t offset_after_line(std::string_view text, std::size_t line_number, bool &needs_newline) {
  needs_newline = false;
  if (line_number == 0)
    return content_start(text);
  auto starts = line_starts(text);
  // starts has one entry per line start plus text.size() when the last line has no '\n'.
  if (line_number < starts.size() && starts[line_number] <= text.size() && text[starts[line_number] - 1] == '\n')
    return starts[line_number];
  needs_newline = !text.empty() && text.back() != '\n';
  return text.size();
}

std::string insert_block_at(std::string_view text, std::size_t offset, bool needs_newline, std::string_view body,
                            std::string_view begin_marker = kBegin) {
  std::string out(text.substr(0, offset));
  if (needs_newline) {
    out += '\n';
    begin_marker = kBeginAfterNewline;
  }
  out += block(begin_marker, body);
  out += text.substr(offset);
  return out;
}

// The value node whose key starts on `line` and is named `name`, searched
// through every table of `t`.
const toml::node *find_key_on_line(const toml::table &t, std::size_t line, std::string_view name) {
  for (auto &&[key, node] : t) {
    if (key.str() == name && key.source().begin.line == line)
      return &node;
    if (auto *sub = node.as_table())
      if (auto *hit = find_key_on_line(*sub, line, name))
        return hit;
  }
  return nullptr;
}

std::string erase_range(std::string_view text, std::size_t from, std::size_t to) {
  std::string out(text.substr(0, from));
  out += text.substr(to);
  return out;
}

// Undoes one "replaced value" mark; false when there is none.
bool undo_one_replacement(std::string &text, std::string_view source_name) {
  Line marker{};
  if (!find_line(text, kReplacedPrefix, marker))
    return false;
  std::string_view rest = marker.body.substr(kReplacedPrefix.size());
  std::size_t was = rest.find(kReplacedWas);
  if (was == std::string_view::npos)
    throw Error("malformed gpuslice mark " + quote(marker.body) + ": restore the value by hand and delete that line");
  std::string key(rest.substr(0, was));
  std::string original(rest.substr(was + kReplacedWas.size()));
  std::size_t marker_line =
      static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(marker.start), '\n')) + 1;
  text = erase_range(text, marker.start, marker.next);
  toml::table parsed = parse(text, source_name);
  const toml::node *value = find_key_on_line(parsed, marker_line, key);
  if (!value)
    throw Error("gpuslice mark for " + quote(key) + " is not followed by that key: restore it by hand");
  std::size_t from = offset_of(text, value->source().begin), to = offset_of(text, value->source().end);
  text = text.substr(0, from) + original + text.substr(to);
  return true;
}

// Undoes one "appended to imports" mark; false when there is none.
bool undo_one_import(std::string &text, std::string_view source_name) {
  Line marker{};
  if (!find_line(text, kImportPrefix, marker))
    return false;
  std::string_view rest = marker.body.substr(kImportPrefix.size());
  if (rest.ends_with(kImportSuffix))
    rest.remove_suffix(kImportSuffix.size());
  // The entry was written by quote_plain: a basic string without escapes.
  if (rest.size() < 2 || rest.front() != '"' || rest.back() != '"')
    throw Error("malformed gpuslice mark " + quote(marker.body) + ": remove the entry from imports by hand");
  std::string entry(rest.substr(1, rest.size() - 2));
  text = erase_range(text, marker.start, marker.next);
  toml::table parsed = parse(text, source_name);
  const toml::array *imports = parsed["imports"].as_array();
  if (!imports)
    return true; // the user removed the key since; nothing left to undo
  std::size_t index = imports->size();
  for (std::size_t i = 0; i < imports->size(); ++i)
    if (auto s = (*imports)[i].value<std::string>(); s && *s == entry)
      index = i;
  if (index == imports->size())
    return true; // the user removed the entry since
  auto begin_of = [&](std::size_t i) { return offset_of(text, (*imports)[i].source().begin); };
  auto end_of = [&](std::size_t i) { return offset_of(text, (*imports)[i].source().end); };
  if (index > 0)
    text = erase_range(text, end_of(index - 1), end_of(index));
  else if (imports->size() > 1)
    text = erase_range(text, begin_of(0), begin_of(1));
  else
    text = erase_range(text, begin_of(0), end_of(0));
  return true;
}

// Removes one marked block; false when there is none.
bool undo_one_block(std::string &text, bool &created_file) {
  Line begin{};
  if (!find_line(text, kBeginPrefix, begin))
    return false;
  Line end{};
  if (!find_line(text, kEnd, end, begin.next))
    throw Error("gpuslice block that starts with " + quote(begin.body) + " has no " + quote(kEnd) +
                " line: remove it by hand");
  std::size_t from = begin.start;
  if (begin.body.starts_with(kBeginAfterNewline) && from > 0 && text[from - 1] == '\n')
    --from;
  if (begin.body.starts_with(kBeginCreated))
    created_file = true;
  text = erase_range(text, from, end.next);
  return true;
}

} // namespace

toml::table parse(std::string_view text, std::string_view source_name) {
  return with_context("cannot parse " + quote(source_name) + " as TOML", [&] { return parse_toml(text, source_name); });
}

std::size_t offset_of(std::string_view text, const toml::source_position &pos) {
  auto starts = line_starts(text);
  if (pos.line == 0 || pos.line > starts.size())
    return text.size();
  std::size_t offset = pos.line == 1 ? content_start(text) : starts[pos.line - 1];
  // Columns count code points: skip UTF-8 continuation bytes.
  for (toml::source_index column = 1; column < pos.column && offset < text.size();) {
    ++offset;
    while (offset < text.size() && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80)
      ++offset;
    ++column;
  }
  return offset;
}

std::string quote_plain(std::string_view value) {
  for (char c : value)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw Error(quote(value) + " contains a quote, a backslash or a control character, which gpuslice does not write "
                                 "into containerd's config");
  // Appended, not `"\"" + std::string(value)`: g++ 12 -O2 warns on that
  // (-Wrestrict, a false positive, GCC PR 105329).
  std::string out;
  out.reserve(value.size() + 2);
  out += '"';
  out += value;
  out += '"';
  return out;
}

std::string insert_top_level_block(std::string_view text, const toml::table &parsed, std::string_view body,
                                   bool created_file) {
  std::size_t last_line = 0;
  for (auto &&[key, node] : parsed) {
    bool header_table = (node.is_table() && !node.as_table()->is_inline()) || node.is_array_of_tables();
    if (!header_table)
      last_line = std::max<std::size_t>(last_line, node.source().end.line);
  }
  bool needs_newline = false;
  std::size_t offset = offset_after_line(text, last_line, needs_newline);
  return insert_block_at(text, offset, needs_newline, body, created_file ? kBeginCreated : kBegin);
}

std::string append_block(std::string_view text, std::string_view body) {
  bool needs_newline = !text.empty() && text.back() != '\n';
  return insert_block_at(text, text.size(), needs_newline, body);
}

std::string insert_block_after_line(std::string_view text, std::size_t line_number, std::string_view body) {
  bool needs_newline = false;
  std::size_t offset = offset_after_line(text, line_number, needs_newline);
  return insert_block_at(text, offset, needs_newline, body);
}

std::string add_import(std::string_view text, const toml::table &parsed, std::string_view entry) {
  std::string entry_text = quote_plain(entry);
  auto it = parsed.find("imports");
  if (it == parsed.end())
    return insert_top_level_block(text, parsed, "imports = [" + entry_text + "]\n");
  const toml::array *imports = it->second.as_array();
  if (!imports)
    throw Error("top-level \"imports\" is not an array");
  std::string out(text);
  if (imports->empty()) {
    std::size_t open = offset_of(text, imports->source().begin); // at '['
    out.insert(open + 1, entry_text);
  } else {
    std::size_t after_last = offset_of(text, imports->back().source().end);
    out.insert(after_last, ", " + entry_text);
  }
  std::size_t key_line_start = offset_of(out, toml::source_position{it->first.source().begin.line, 1});
  out.insert(key_line_start, std::string(kImportPrefix) + entry_text + std::string(kImportSuffix) + "\n");
  return out;
}

std::string replace_value(std::string_view text, const toml::node &node, std::size_t key_line,
                          std::string_view key_name, std::string_view new_value_text) {
  std::size_t from = offset_of(text, node.source().begin), to = offset_of(text, node.source().end);
  std::string_view original = text.substr(from, to - from);
  if (original.find('\n') != std::string_view::npos)
    throw Error("the value of " + quote(key_name) + " spans several lines: gpuslice does not replace it");
  std::string out(text.substr(0, from));
  out += new_value_text;
  out += text.substr(to);
  std::size_t key_line_start = offset_of(out, toml::source_position{static_cast<toml::source_index>(key_line), 1});
  out.insert(key_line_start, std::string(kReplacedPrefix) + std::string(key_name) + std::string(kReplacedWas) +
                                 std::string(original) + "\n");
  return out;
}

std::string strip_gpuslice_edits(std::string_view text, std::string_view source_name, bool *created_file) {
  std::string out(text);
  bool created = false;
  while (undo_one_replacement(out, source_name)) {
  }
  while (undo_one_import(out, source_name)) {
  }
  while (undo_one_block(out, created)) {
  }
  if (created_file)
    *created_file = created;
  return out;
}

bool has_gpuslice_edits(std::string_view text) {
  Line l{};
  return find_line(text, "# gpuslice: ", l);
}

} // namespace gpuslice::containerd::text
