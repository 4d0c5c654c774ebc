#include "gpuslice/common/toml_text.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/strings.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gpuslice {

namespace {

// The code points toml++ 3.3 neither classifies nor rejects (its table).
bool unsafe(uint32_t cp) {
  return (cp >= 0xA1 && cp <= 0x499) || (cp >= 0x2C5E && cp <= 0x2FFF) || (cp >= 0x3001 && cp <= 0x3057) ||
         (cp >= 0xFB26 && cp <= 0xFEFE);
}

// Stand-ins of the same UTF-8 length that toml++ classifies (not white
// space, not anything TOML gives a meaning to outside strings).
constexpr uint32_t kFirst2 = 0x500, kLast2 = 0x7FF;   // 2 bytes: Cyrillic supplement .. NKo
constexpr uint32_t kFirst3 = 0x4E00, kLast3 = 0x9FFF; // 3 bytes: CJK ideographs

// Each character of the text, valid UTF-8 or one raw byte (toml++ reports
// invalid UTF-8 itself).
Utf8Char decode(std::string_view text, std::size_t i) {
  Utf8Char ch = decode_utf8(text, i);
  if (!ch.valid)
    ch.cp = static_cast<unsigned char>(text[i]);
  return ch;
}

// Original character -> stand-in, and back, for one text.
struct Substitution {
  std::map<std::string, std::string> forward, back;
};

std::string substitute(std::string_view text, Substitution &s) {
  std::set<uint32_t> present;
  bool any = false;
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Char ch = decode(text, i);
    present.insert(ch.cp);
    any = any || (ch.len > 1 && unsafe(ch.cp));
    i += ch.len;
  }
  if (!any)
    return std::string(text);
  uint32_t next2 = kFirst2, next3 = kFirst3;
  auto stand_in = [&](std::size_t len) {
    uint32_t &next = len == 2 ? next2 : next3;
    const uint32_t last = len == 2 ? kLast2 : kLast3;
    while (next <= last && present.count(next))
      ++next;
    if (next > last)
      throw Error("too many different non-ASCII characters for this system's TOML library (toml++ 3.3)");
    return encode_utf8(next++);
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Char ch = decode(text, i);
    const std::string original(text.substr(i, ch.len));
    if (ch.len > 1 && unsafe(ch.cp)) {
      auto it = s.forward.find(original);
      if (it == s.forward.end()) {
        it = s.forward.emplace(original, stand_in(ch.len)).first;
        s.back.emplace(it->second, original);
      }
      out += it->second;
    } else {
      out += original;
    }
    i += ch.len;
  }
  return out;
}

std::string restore(std::string_view text, const Substitution &s) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Char ch = decode(text, i);
    const std::string piece(text.substr(i, ch.len));
    auto it = ch.len > 1 ? s.back.find(piece) : s.back.end();
    out += it != s.back.end() ? it->second : piece;
    i += ch.len;
  }
  return out;
}

void restore(toml::node &node, const Substitution &s);

void restore(toml::table &table, const Substitution &s) {
  std::vector<std::pair<toml::key, toml::key>> renames;
  for (auto &&[key, value] : table) {
    restore(value, s);
    std::string original = restore(key.str(), s);
    if (original != key.str())
      renames.emplace_back(key, toml::key(original, key.source()));
  }
  for (const auto &rename : renames) {
    const toml::key &original = rename.second;
    toml::node *node = table.get(rename.first.str());
    toml::table moved; // a holder of the value under its original key
    node->visit([&](auto &&value) { moved.insert(original, std::move(value)); });
    table.erase(rename.first.str());
    for (auto &&entry : moved) {
      const toml::key &key = entry.first;
      entry.second.visit([&](auto &&v) { table.insert(key, std::move(v)); });
    }
  }
}

void restore(toml::node &node, const Substitution &s) {
  if (auto *t = node.as_table()) {
    restore(*t, s);
  } else if (auto *a = node.as_array()) {
    for (auto &element : *a)
      restore(element, s);
  } else if (auto *str = node.as_string()) {
    *str = restore(str->get(), s); // assigning the string keeps the node's position in the text
  }
}

} // namespace

toml::table parse_toml(std::string_view text, std::string_view source_name) {
  Substitution s;
  const std::string safe = substitute(text, s);
  try {
    toml::table t = toml::parse(safe, source_name);
    if (!s.back.empty())
      restore(t, s);
    return t;
  } catch (const toml::parse_error &e) {
    std::ostringstream msg;
    msg << restore(e.description(), s) << " at line " << e.source().begin.line << ", column "
        << e.source().begin.column;
    throw Error(msg.str());
  }
}

} // namespace gpuslice
