// Sizes, per-device limit lists and the limits file (docs/region.md). The
// renderer and the interposer's C parser must agree: tests round-trip every
// field through both.
#include "gpuslice/sharing/limits.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <charconv>
#include <cmath>
#include <sstream>

namespace gpuslice::sharing {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    auto pos = s.find(sep);
    out.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos)
      return out;
    s.remove_prefix(pos + 1);
  }
}

bool valid_key(std::string_view k) {
  if (k == "*")
    return true;
  if (k.empty() || k.size() >= 48)
    return false;
  if (k.rfind("GPU-", 0) == 0 || k.rfind("MIG-", 0) == 0) {
    for (char c : k.substr(4))
      if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == '-'))
        return false;
    return true;
  }
  for (char c : k)
    if (c < '0' || c > '9')
      return false;
  return true;
}

uint64_t parse_u64(std::string_view s, std::string_view what) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw Error("invalid " + std::string(what) + " " + gpuslice::quote(s));
  return v;
}

} // namespace

uint64_t parse_size(std::string_view text) {
  std::string_view s = trim(text);
  struct Suffix {
    std::string_view name;
    double mult;
  };
  static constexpr Suffix suffixes[] = {
      {"Ki", 1024.0}, {"Mi", 1024.0 * 1024}, {"Gi", 1024.0 * 1024 * 1024}, {"Ti", 1024.0 * 1024 * 1024 * 1024},
      {"K", 1e3},     {"M", 1e6},            {"G", 1e9},                   {"T", 1e12},
      {"B", 1.0}};
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
  if (mult == 1 && s.find('.') == std::string_view::npos)
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

Policy parse_policy(std::string_view text) {
  if (text == "native")
    return Policy::native;
  if (text == "fixed")
    return Policy::fixed;
  if (text == "burst")
    return Policy::burst;
  throw Error("invalid compute policy " + gpuslice::quote(text) + ": expected native, fixed or burst");
}

std::string_view policy_name(Policy p) {
  switch (p) {
  case Policy::native:
    return "native";
  case Policy::fixed:
    return "fixed";
  case Policy::burst:
    return "burst";
  }
  return "native";
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

std::string render_limits(const Limits &limits) {
  std::ostringstream o;
  o << GS_LIMITS_HEADER << "\n";
  if (limits.devices.size() > GS_LIMITS_MAX_ENTRIES)
    throw Error("too many device limits (at most " + std::to_string(GS_LIMITS_MAX_ENTRIES) + ")");
  for (const auto &d : limits.devices) {
    if (!valid_key(d.key))
      throw Error("device " + gpuslice::quote(d.key) + " is not \"*\", an ordinal or a GPU UUID");
    o << "device " << d.key;
    if (d.memory)
      o << " memory " << *d.memory;
    if (d.compute) {
      if (*d.compute < 0 || *d.compute > 100)
        throw Error("compute limit of device " + gpuslice::quote(d.key) + " is not between 0 and 100");
      o << " compute " << *d.compute;
    }
    if (d.policy)
      o << " policy " << policy_name(*d.policy);
    o << "\n";
  }
  if (!limits.activity.empty()) {
    if (limits.activity.front() != '/' || limits.activity.size() >= 256 ||
        limits.activity.find_first_of(" \t\n") != std::string::npos)
      throw Error("activity file " + gpuslice::quote(limits.activity) + " must be an absolute path without blanks");
    o << "activity " << limits.activity << "\n";
  }
  return o.str();
}

Limits parse_limits(std::string_view text) {
  Limits out;
  auto lines = split(text, '\n');
  if (lines.empty() || trim(lines[0]) != GS_LIMITS_HEADER)
    throw Error("limits file does not start with " + gpuslice::quote(GS_LIMITS_HEADER));
  for (std::size_t n = 1; n < lines.size(); n++) {
    auto ctx = "line " + std::to_string(n + 1);
    std::vector<std::string_view> w;
    for (auto x : split(trim(lines[n]), ' '))
      if (!trim(x).empty())
        w.push_back(trim(x));
    if (w.empty() || w[0].front() == '#')
      continue;
    if (w[0] == "activity" && w.size() == 2) {
      out.activity = std::string(w[1]);
      continue;
    }
    if (w[0] != "device" || w.size() < 2 || w.size() % 2 != 0 || !valid_key(w[1]))
      throw Error(ctx + ": expected \"device KEY [memory BYTES] [compute PCT] [policy P]\"");
    DeviceLimit d{std::string(w[1]), {}, {}, {}};
    for (std::size_t i = 2; i < w.size(); i += 2) {
      if (w[i] == "memory")
        d.memory = with_context(ctx, [&] { return parse_u64(w[i + 1], "memory"); });
      else if (w[i] == "compute") {
        uint64_t c = with_context(ctx, [&] { return parse_u64(w[i + 1], "compute"); });
        if (c > 100)
          throw Error(ctx + ": compute " + gpuslice::quote(w[i + 1]) + " is over 100");
        d.compute = static_cast<int>(c);
      } else if (w[i] == "policy")
        d.policy = with_context(ctx, [&] { return parse_policy(w[i + 1]); });
      else
        throw Error(ctx + ": unknown field " + gpuslice::quote(w[i]));
    }
    out.devices.push_back(std::move(d));
  }
  return out;
}

void write_limits_file(const std::string &path, const Limits &limits) {
  with_context("cannot write limits file " + gpuslice::quote(path),
               [&] { fs::write_file_atomic(path, render_limits(limits), 0444); });
}

} // namespace gpuslice::sharing
