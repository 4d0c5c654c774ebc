// Reading the limits file back (docs/region.md), and the policy names: all
// that gpuslice-shim needs of limits, kept apart from limits.cpp so that the
// monitor does not link size parsing (floating point, with locale and libm
// behind it) or string streams.
#include "gpuslice/sharing/limits.hpp"

#include "limits_text.hpp"

extern "C" {
#include "gpuslice/region.h"
}

namespace gpuslice::sharing {

using namespace limits_text;

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

} // namespace gpuslice::sharing
