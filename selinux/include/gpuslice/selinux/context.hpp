// SELinux security contexts as gpuslice meets them: the `linux.mountLabel`
// and `process.selinuxLabel` that containerd, CRI-O or podman write into a
// container's config.json ("system_u:object_r:container_file_t:s0:c1,c2"),
// and the labels of gpuslice's own configuration.
//
// Parsed before use because what gpuslice writes into a file's
// security.selinux attribute must be a context it understood: part of it
// (the level, even the type) comes from the pod's securityContext, which the
// pod author writes. Only the syntax is checked here; whether the policy
// knows the user, role and type is the kernel's answer when the label is set.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuslice::selinux {

// Sensitivities s0..s1023 and categories c0..c1023: beyond what any policy
// defines (targeted: s0 and c0..c1023), so no valid label is refused.
inline constexpr int kMaxSensitivity = 1023;
inline constexpr int kMaxCategory = 1023;

// "s0:c1,c5.c9": a sensitivity and a set of categories, kept as sorted,
// disjoint, non-adjacent inclusive ranges.
struct Level {
  int sensitivity = 0;
  std::vector<std::pair<int, int>> categories;
  bool operator==(const Level &) const = default;
};

// "low" or "low-high"; high is nullopt when the range is one level.
struct Range {
  Level low;
  std::optional<Level> high;
  bool operator==(const Range &) const = default;
};

struct Context {
  std::string user, role, type;
  std::optional<Range> range; // nullopt: a policy without MLS/MCS
  bool operator==(const Context &) const = default;
};

// Throws Error naming the field that is wrong ("its level: category
// \"c1024\" is above c1023"). Empty text is an error too.
Context parse_context(std::string_view text);
Level parse_level(std::string_view text);

// Canonical text, as the kernel writes it back: categories ascending, a run
// of three or more as "cA.cB".
std::string to_string(const Level &level);
std::string to_string(const Context &context);

// `a` dominates `b`: sensitivity at least b's and every category of b.
bool dominates(const Level &a, const Level &b);

} // namespace gpuslice::selinux
