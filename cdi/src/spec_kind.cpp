// A spec's kind read off its text without parsing it, for a registry that
// needs the devices of a few kinds only (a container's create). A node holds
// specs of many kinds, some of them large (a driver's spec for eight GPUs is
// tens of KiB of YAML), and a create used to parse them all.
//
// Only a "no" is acted on: a file is skipped when its kind is known for sure
// and is not asked for. Anything the reader is not sure of (an escape in a
// key, a quoted, anchored or tagged key, a second "kind", a flow mapping at
// the top of a YAML document, ...) is "unknown", and the file is parsed as
// before. A file the reader misreads can only be one that the parse refuses
// anyway (no kind, or not a spec), which yields no device either way.
#include "gpuslice/cdi/parse.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace gpuslice::cdi {

namespace {

// The characters of a valid kind (vendor/class, names.hpp); a value with any
// other is not read.
bool kind_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_' || c == '/';
}

bool kind_chars(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!kind_char(c))
      return false;
  return true;
}

// The top-level members of one JSON object, values skipped by bracket depth:
// no recursion, so no nesting a file can make overflows the stack.
class JsonKindReader {
public:
  explicit JsonKindReader(std::string_view text) : t_(text) {}

  std::optional<std::string> kind() {
    space();
    if (!take('{'))
      return std::nullopt;
    std::optional<std::string> kind;
    space();
    if (take('}'))
      return std::nullopt;
    for (;;) {
      std::string_view key;
      bool plain = false;
      space();
      if (!string(key, plain))
        return std::nullopt;
      space();
      if (!take(':'))
        return std::nullopt;
      space();
      if (!plain)
        return std::nullopt; // "ki\u006ed" is "kind" too
      if (key == "kind") {
        std::string_view value;
        bool plain_value = false;
        if (kind || !string(value, plain_value) || !plain_value || !kind_chars(value))
          return std::nullopt;
        kind = std::string(value);
      } else if (!skip_value()) {
        return std::nullopt;
      }
      space();
      if (take(','))
        continue;
      if (!take('}'))
        return std::nullopt;
      space();
      return i_ == t_.size() ? kind : std::nullopt;
    }
  }

private:
  void space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r'))
      ++i_;
  }
  bool take(char c) {
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  // A string at the cursor; `plain` when it has no escape and no control
  // character, so that its raw bytes are its value.
  bool string(std::string_view &out, bool &plain) {
    if (!take('"'))
      return false;
    const std::size_t start = i_;
    plain = true;
    for (; i_ < t_.size(); ++i_) {
      const char c = t_[i_];
      if (c == '"') {
        out = t_.substr(start, i_ - start);
        ++i_;
        return true;
      }
      if (c == '\\') {
        plain = false;
        ++i_;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        plain = false;
      }
    }
    return false;
  }
  bool skip_value() {
    std::string_view ignored;
    bool plain = false;
    if (i_ < t_.size() && t_[i_] == '"')
      return string(ignored, plain);
    int depth = 0;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '"') {
        if (!string(ignored, plain))
          return false;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0)
          return true; // the end of the top-level object, after a scalar
        --depth;
      } else if (c == ',' && depth == 0) {
        return true;
      }
      ++i_;
    }
    return false;
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The first line of `rest`, which then holds what follows it.
std::string_view next_line(std::string_view &rest) {
  const std::size_t nl = rest.find('\n');
  const std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return line;
}

bool blank_or_comment(std::string_view trimmed) { return trimmed.empty() || trimmed.front() == '#'; }

// Whether the next line that is not blank or a comment is indented: then
// it continues a plain scalar on the line before ("kind: a/" and "  b" are
// one value).
bool continued(std::string_view rest) {
  while (!rest.empty()) {
    const std::string_view line = next_line(rest);
    if (!blank_or_comment(trim(line)))
      return line.front() == ' ' || line.front() == '\t';
  }
  return false;
}

// A block mapping's keys at column 0, one per line. Indented lines, and
// sequence entries at column 0, belong to values; a line at column 0 that
// is not a plain `key: value` (a quoted or complex key, an anchor, a tag, a
// flow collection, a second document, a continued scalar) makes the kind
// unknown.
std::optional<std::string> yaml_kind(std::string_view text) {
  std::optional<std::string> kind;
  bool content = false;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    const std::string_view body = trim(line);
    if (blank_or_comment(body) || line.front() == ' ' || line.front() == '\t')
      continue;
    if (!content && line.substr(0, 3) == "---" && blank_or_comment(trim(line.substr(3))))
      continue;
    // "- item" at column 0: an entry of the sequence that is the value of
    // the key before (`devices:` then `- name: ...`, as Go's YAML writers
    // put it); a document that starts with one is a sequence.
    if (content && line.front() == '-' && (body.size() == 1 || line[1] == ' ' || line[1] == '\t'))
      continue;
    content = true;
    const char first = line.front();
    if (!(kind_char(first) && first != '/' && first != '-' && first != '.'))
      return std::nullopt; // " ' ? { [ & * ! % | > @ ` - . < , : and the rest
    std::size_t colon = 0;
    while ((colon = line.find(':', colon)) != std::string_view::npos) {
      if (colon + 1 == line.size() || line[colon + 1] == ' ' || line[colon + 1] == '\t' || line[colon + 1] == '\r')
        break;
      ++colon;
    }
    if (colon == std::string_view::npos)
      return std::nullopt;
    if (trim(line.substr(0, colon)) != "kind")
      continue;
    std::string_view value = line.substr(colon + 1);
    if (const std::size_t hash = value.find(" #"); hash != std::string_view::npos)
      value = value.substr(0, hash);
    value = trim(value);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    if (kind || !kind_chars(value) || continued(text))
      return std::nullopt;
    kind = std::string(value);
  }
  return kind;
}

} // namespace

std::optional<std::string> plain_spec_kind(std::string_view text) {
  if (text.size() > kMaxSpecSize)
    return std::nullopt;
  return looks_like_json(text) ? JsonKindReader(text).kind() : yaml_kind(text);
}

} // namespace gpuslice::cdi
