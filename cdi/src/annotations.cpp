#include "gpuslice/cdi/annotations.hpp"

#include "gpuslice/cdi/names.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/strings.hpp"

#include <set>

namespace gpuslice::cdi {

namespace {
bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
} // namespace

std::string annotation_key(std::string_view plugin, std::string_view device_id) {
  std::string name = std::string(plugin) + "_" + std::string(device_id);
  for (char &c : name)
    if (c == '/')
      c = '_';
  const std::string key = std::string(kAnnotationPrefix) + name;
  if (name.size() > 63)
    throw Error("annotation key " + quote(key) + ": name part longer than 63 characters");
  if (plugin.empty() || device_id.empty() || !alnum(name.front()) || !alnum(name.back()))
    throw Error("annotation key " + quote(key) + ": name part must start and end with a letter or digit");
  for (char c : name)
    if (!alnum(c) && c != '_' && c != '.' && c != '-')
      throw Error("annotation key " + quote(key) + ": invalid character " + quote(std::string_view(&c, 1)));
  return key;
}

std::string annotation_value(const std::vector<std::string> &devices) {
  std::string out;
  for (const auto &d : devices) {
    parse_qualified_name(d);
    if (!out.empty())
      out += ',';
    out += d;
  }
  return out;
}

std::vector<std::string> parse_annotations(const Annotations &annotations, const std::vector<std::string> &prefixes) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto &[key, value] : annotations) { // std::map: key order
    bool match = false;
    for (const auto &p : prefixes)
      match = match || (!p.empty() && key.compare(0, p.size(), p) == 0);
    if (!match)
      continue;
    for (const auto &device : split(value, ',', EmptyParts::keep)) {
      with_context("annotation " + quote(key), [&] { parse_qualified_name(device); });
      if (seen.insert(device).second)
        out.push_back(device);
    }
  }
  return out;
}

} // namespace gpuslice::cdi
