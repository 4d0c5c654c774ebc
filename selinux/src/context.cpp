// Syntax of contexts and MLS/MCS levels (docs/selinux.md). The grammar is
// the kernel's: user:role:type[:sensitivity[:categories][-sensitivity[:categories]]],
// categories a comma list of cN and cA.cB.
#include "gpuslice/selinux/context.hpp"

#include "gpuslice/common/error.hpp"

#include <algorithm>
#include <bitset>
#include <charconv>

namespace gpuslice::selinux {

namespace {

// Longer than any label a runtime writes, short enough to keep messages and
// xattrs small.
constexpr std::size_t kMaxContextSize = 4096;

// User, role and type names as policy languages allow them.
void check_name(std::string_view name, const char *field) {
  if (name.empty())
    throw Error(std::string("its ") + field + " is empty");
  const auto ok = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  };
  if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')) ||
      !std::all_of(name.begin(), name.end(), ok))
    throw Error(std::string("its ") + field + " " + quote(name) +
                " is not a name (a letter, then letters, digits, '_' or '.')");
}

// "c12" or "s3": the number after `prefix`, at most `max`. No leading zero:
// the kernel looks names up as written, and "c01" names no category.
int parse_number(std::string_view text, char prefix, int max, const char *what) {
  const auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  if (text.size() < 2 || text.size() > 5 || text[0] != prefix || !std::all_of(text.begin() + 1, text.end(), digit))
    throw Error(std::string(what) + " " + quote(text) + " is not " + prefix + "<number>");
  if (text.size() > 2 && text[1] == '0')
    throw Error(std::string(what) + " " + quote(text) + " has a leading zero");
  int n = 0;
  std::from_chars(text.data() + 1, text.data() + text.size(), n);
  if (n > max)
    throw Error(std::string(what) + " " + quote(text) + " is above " + prefix + std::to_string(max));
  return n;
}

std::vector<std::pair<int, int>> runs_of(const std::bitset<kMaxCategory + 1> &set) {
  std::vector<std::pair<int, int>> runs;
  for (int c = 0; c <= kMaxCategory; c++) {
    if (!set[c])
      continue;
    if (!runs.empty() && runs.back().second == c - 1)
      runs.back().second = c;
    else
      runs.emplace_back(c, c);
  }
  return runs;
}

std::bitset<kMaxCategory + 1> set_of(const Level &level) {
  std::bitset<kMaxCategory + 1> set;
  for (const auto &[lo, hi] : level.categories)
    for (int c = lo; c <= hi; c++)
      set.set(c);
  return set;
}

} // namespace

Level parse_level(std::string_view text) {
  Level level;
  const auto colon = text.find(':');
  level.sensitivity = parse_number(text.substr(0, colon), 's', kMaxSensitivity, "sensitivity");
  if (colon == std::string_view::npos)
    return level;
  std::string_view rest = text.substr(colon + 1);
  if (rest.empty())
    throw Error("the category list after " + quote(text.substr(0, colon + 1)) + " is empty");
  std::bitset<kMaxCategory + 1> set;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto dot = item.find('.');
    const int lo = parse_number(item.substr(0, dot), 'c', kMaxCategory, "category");
    int hi = lo;
    if (dot != std::string_view::npos) {
      hi = parse_number(item.substr(dot + 1), 'c', kMaxCategory, "category");
      if (hi <= lo)
        throw Error("category range " + quote(item) + " does not go upwards");
    }
    for (int c = lo; c <= hi; c++) {
      if (set[c])
        throw Error("category c" + std::to_string(c) + " is listed twice");
      set.set(c);
    }
    if (comma == std::string_view::npos)
      break;
    rest = rest.substr(comma + 1);
  }
  level.categories = runs_of(set);
  return level;
}

bool dominates(const Level &a, const Level &b) {
  if (a.sensitivity < b.sensitivity)
    return false;
  const auto sa = set_of(a), sb = set_of(b);
  return (sa & sb) == sb;
}

Context parse_context(std::string_view text) {
  return with_context("SELinux context " + quote(text), [&] {
    if (text.empty())
      throw Error("it is empty");
    if (text.size() > kMaxContextSize)
      throw Error("it is longer than " + std::to_string(kMaxContextSize) + " bytes");
    Context c;
    std::string_view rest = text;
    std::string *fields[] = {&c.user, &c.role, &c.type};
    const char *names[] = {"user", "role", "type"};
    for (int i = 0; i < 3; i++) {
      const auto colon = rest.find(':');
      if (colon == std::string_view::npos && i < 2)
        throw Error("it has no " + std::string(names[i + 1]) + " (user:role:type[:level])");
      const std::string_view field = rest.substr(0, colon);
      check_name(field, names[i]);
      *fields[i] = std::string(field);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (colon != std::string_view::npos && i == 2 && rest.empty())
        throw Error("its level is empty");
      if (colon == std::string_view::npos)
        return c;
    }
    with_context("its level " + quote(rest), [&] {
      Range range;
      const auto dash = rest.find('-');
      range.low = parse_level(rest.substr(0, dash));
      if (dash != std::string_view::npos) {
        range.high = parse_level(rest.substr(dash + 1));
        if (!dominates(*range.high, range.low))
          throw Error("its high level does not dominate its low level");
      }
      c.range = std::move(range);
    });
    return c;
  });
}

std::string to_string(const Level &level) {
  std::string out = "s" + std::to_string(level.sensitivity);
  char sep = ':';
  for (const auto &[lo, hi] : level.categories) {
    if (hi - lo >= 2) {
      out += sep + ("c" + std::to_string(lo)) + ".c" + std::to_string(hi);
    } else {
      for (int c = lo; c <= hi; c++) {
        out += sep + ("c" + std::to_string(c));
        sep = ',';
      }
    }
    sep = ',';
  }
  return out;
}

std::string to_string(const Context &context) {
  std::string out = context.user + ":" + context.role + ":" + context.type;
  if (context.range) {
    out += ":" + to_string(context.range->low);
    if (context.range->high)
      out += "-" + to_string(*context.range->high);
  }
  return out;
}

} // namespace gpuslice::selinux
