// Qualified device names: vendor/class=name.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuslice::cdi {

struct QualifiedName {
  std::string vendor, klass, name;
  std::string kind() const { return vendor + "/" + klass; }
  std::string str() const { return vendor + "/" + klass + "=" + name; }
};

// Each returns an empty string when valid, else the reason.
std::string check_vendor(std::string_view vendor);
std::string check_class(std::string_view klass);
std::string check_device_name(std::string_view name);
std::string check_kind(std::string_view kind);

// Cheap syntactic test: does `s` look like vendor/class=name at all?
bool is_qualified_name(std::string_view s);

// Splits on the first '=', then the kind on the first '/', and validates each
// part. Throws Error with the reason.
QualifiedName parse_qualified_name(std::string_view s);

// Builds vendor/class=name after validating the parts; throws Error.
std::string qualified_name(std::string_view vendor, std::string_view klass, std::string_view name);

} // namespace gpuslice::cdi
