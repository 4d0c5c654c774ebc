#include "gpuslice/cdi/names.hpp"

#include "gpuslice/common/error.hpp"

namespace gpuslice::cdi {

namespace {
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_letter(c) || is_digit(c); }

// Shared shape of vendor and class: a letter first, alphanumeric last,
// [A-Za-z0-9_.-] between. A single letter is valid.
std::string check_kind_part(std::string_view what, std::string_view s) {
  if (s.empty())
    return what == "vendor" ? "empty vendor" : "empty class";
  if (!is_letter(s.front()))
    return std::string(what) + " " + quote(s) + " must start with a letter";
  if (!is_alnum(s.back()))
    return std::string(what) + " " + quote(s) + " must end with a letter or digit";
  for (char c : s)
    if (!is_alnum(c) && c != '_' && c != '.' && c != '-')
      return std::string(what) + " " + quote(s) + " has invalid character " + quote(std::string_view(&c, 1));
  return {};
}
} // namespace

std::string check_vendor(std::string_view vendor) { return check_kind_part("vendor", vendor); }
std::string check_class(std::string_view klass) { return check_kind_part("class", klass); }

std::string check_device_name(std::string_view name) {
  if (name.empty())
    return "empty device name";
  if (!is_alnum(name.front()))
    return "device name " + quote(name) + " must start with a letter or digit";
  if (!is_alnum(name.back()))
    return "device name " + quote(name) + " must end with a letter or digit";
  for (char c : name)
    if (!is_alnum(c) && c != '_' && c != '.' && c != ':' && c != '-')
      return "device name " + quote(name) + " has invalid character " + quote(std::string_view(&c, 1));
  return {};
}

std::string check_kind(std::string_view kind) {
  const auto slash = kind.find('/');
  if (slash == std::string_view::npos)
    return "kind " + quote(kind) + " is not of the form vendor/class";
  if (auto r = check_vendor(kind.substr(0, slash)); !r.empty())
    return "kind " + quote(kind) + ": " + r;
  if (auto r = check_class(kind.substr(slash + 1)); !r.empty())
    return "kind " + quote(kind) + ": " + r;
  return {};
}

bool is_qualified_name(std::string_view s) {
  const auto eq = s.find('=');
  if (eq == std::string_view::npos)
    return false;
  const auto slash = s.substr(0, eq).find('/');
  return slash != std::string_view::npos && slash > 0 && slash + 1 < eq && eq + 1 < s.size();
}

QualifiedName parse_qualified_name(std::string_view s) {
  const auto eq = s.find('=');
  if (eq == std::string_view::npos)
    throw Error("device " + quote(s) + " is not a qualified name (vendor/class=name)");
  const std::string_view kind = s.substr(0, eq);
  const auto slash = kind.find('/');
  if (slash == std::string_view::npos)
    throw Error("device " + quote(s) + " is not a qualified name (vendor/class=name)");
  QualifiedName q{std::string(kind.substr(0, slash)), std::string(kind.substr(slash + 1)), std::string(s.substr(eq + 1))};
  for (const auto &reason : {check_vendor(q.vendor), check_class(q.klass), check_device_name(q.name)})
    if (!reason.empty())
      throw Error("device " + quote(s) + ": " + reason);
  return q;
}

std::string qualified_name(std::string_view vendor, std::string_view klass, std::string_view name) {
  std::string s = std::string(vendor) + "/" + std::string(klass) + "=" + std::string(name);
  for (const auto &reason : {check_vendor(vendor), check_class(klass), check_device_name(name)})
    if (!reason.empty())
      throw Error("cannot build device name " + quote(s) + ": " + reason);
  return s;
}

} // namespace gpuslice::cdi
