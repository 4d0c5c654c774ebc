// Sizes, per-device limit lists and the limits file (docs/region.md). The
// renderer and the interposer's C parser must agree: tests round-trip every
// field through both. Reading the file back is limits_file.cpp's: what
// gpuslice-shim links, without sizes (floating point) or streams.
#include "gpuslice/sharing/limits.hpp"

#include <cstdio>

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

#include "limits_text.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <charconv>
#include <cmath>

namespace gpuslice::sharing {

using namespace limits_text;

std::string format_size(uint64_t bytes) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " bytes";
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    unit++;
  }
  char text[48];
  std::snprintf(text, sizeof text, value == static_cast<double>(static_cast<uint64_t>(value)) ? "%.0f %s" : "%.1f %s",
                value, units[unit]);
  return text;
}

uint64_t parse_size(std::string_view text) {
  std::string_view s = trim(text);
  struct Suffix {
    std::string_view name;
    double mult;
  };
  // Kubernetes' quantities too (what the API server writes in a claim's
  // consumedCapacity): "k", "P", "E", "Pi", "Ei", and exponents ("8e9",
  // which ends in a digit, so never meets the suffix "E").
  static constexpr Suffix suffixes[] = {
      {"Ki", 0x1p10}, {"Mi", 0x1p20}, {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60},
      {"K", 1e3},     {"k", 1e3},     {"M", 1e6},     {"G", 1e9},     {"T", 1e12},    {"P", 1e15},
      {"E", 1e18},    {"B", 1.0}};
  double mult = 1;
  for (const auto &sfx : suffixes) {
    if (s.size() > sfx.name.size() && s.substr(s.size() - sfx.name.size()) == sfx.name) {
      mult = sfx.mult;
      s.remove_suffix(sfx.name.size());
      break;
    }
  }
  if (s.empty() || s.front() == '-' || s.front() == '+')
    throw Error("invalid size " + gpuslice::quote(text) + ": expected a number with an optional suffix such as 4Gi");
  if (mult == 1 && s.find_first_not_of("0123456789") == std::string_view::npos)
    return parse_u64(s, "size");
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v < 0)
    throw Error("invalid size " + gpuslice::quote(text) + ": expected a number with an optional suffix such as 4Gi");
  double bytes = std::floor(v * mult);
  if (bytes >= 18446744073709551615.0)
    throw Error("size " + gpuslice::quote(text) + " is too large");
  return static_cast<uint64_t>(bytes);
}

std::vector<DeviceLimit> parse_memory_limits(std::string_view text) {
  std::vector<DeviceLimit> out;
  if (trim(text).empty())
    throw Error("empty memory limit");
  for (std::string_view item : split(text, ',')) {
    item = trim(item);
    DeviceLimit d;
    auto colon = item.rfind(':');
    if (colon == std::string_view::npos) {
      d.key = "*";
      d.memory = with_context("memory limit " + gpuslice::quote(item), [&] { return parse_size(item); });
    } else {
      d.key = std::string(trim(item.substr(0, colon)));
      if (!valid_key(d.key))
        throw Error("memory limit " + gpuslice::quote(item) + ": device " + gpuslice::quote(d.key) +
                    " is not \"*\", an ordinal or a GPU UUID");
      std::string_view size = item.substr(colon + 1);
      d.memory = with_context("memory limit " + gpuslice::quote(item), [&] { return parse_size(size); });
    }
    for (const auto &o : out)
      if (o.key == d.key)
        throw Error("memory limit for device " + gpuslice::quote(d.key) + " given twice");
    out.push_back(std::move(d));
  }
  return out;
}

void apply_compute(Limits &limits, int percent, Policy policy) {
  if (percent < 0 || percent > 100)
    throw Error("compute limit " + std::to_string(percent) + " is not a percentage between 0 and 100");
  if (limits.devices.empty())
    limits.devices.push_back({"*", {}, {}, {}});
  for (auto &d : limits.devices) {
    d.compute = percent;
    d.policy = policy;
  }
}

// Built as a string, not in a std::ostringstream: the stream would set up
// the C++ locale (all of its facets: a dozen pages of code and data, and
// three page faults), which nothing else in a create does.
std::string render_limits(const Limits &limits) {
  std::string o = GS_LIMITS_HEADER "\n";
  if (limits.devices.size() > GS_LIMITS_MAX_ENTRIES)
    throw Error("too many device limits (at most " + std::to_string(GS_LIMITS_MAX_ENTRIES) + ")");
  for (const auto &d : limits.devices) {
    if (!valid_key(d.key))
      throw Error("device " + gpuslice::quote(d.key) + " is not \"*\", an ordinal or a GPU UUID");
    o += "device ";
    o += d.key;
    if (d.memory)
      o += " memory " + std::to_string(*d.memory);
    if (d.compute) {
      if (*d.compute < 0 || *d.compute > 100)
        throw Error("compute limit of device " + gpuslice::quote(d.key) + " is not between 0 and 100");
      o += " compute " + std::to_string(*d.compute);
    }
    if (d.policy) {
      o += " policy ";
      o += policy_name(*d.policy);
    }
    o += '\n';
  }
  if (!limits.activity.empty()) {
    if (limits.activity.front() != '/' || limits.activity.size() >= 256 ||
        limits.activity.find_first_of(" \t\n") != std::string::npos)
      throw Error("activity file " + gpuslice::quote(limits.activity) + " must be an absolute path without blanks");
    o += "activity " + limits.activity + "\n";
  }
  return o;
}

void write_limits_file(const std::string &path, const Limits &limits) {
  with_context("cannot write limits file " + gpuslice::quote(path),
               [&] { fs::write_file_atomic(path, render_limits(limits), 0444); });
}

} // namespace gpuslice::sharing
