#include "gpuslice/cdi/version.hpp"

#include <array>
#include <charconv>

namespace gpuslice::cdi {

namespace {
constexpr std::array<Version, 8> kReleased{{{0, 3, 0}, {0, 4, 0}, {0, 5, 0}, {0, 6, 0},
                                            {0, 7, 0}, {0, 8, 0}, {1, 0, 0}, {1, 1, 0}}};

// Walks a spec and records each use of a versioned feature.
struct Walker {
  Version have;
  std::vector<VersionRequirement> out;

  void need(Version v, std::string field) {
    if (v > have)
      out.push_back({v, std::move(field)});
  }

  void edits(const ContainerEdits &e, const std::string &at) {
    for (std::size_t i = 0; i < e.device_nodes.size(); ++i)
      if (!e.device_nodes[i].host_path.empty())
        need({0, 5, 0}, at + ".deviceNodes[" + std::to_string(i) + "].hostPath");
    for (std::size_t i = 0; i < e.mounts.size(); ++i)
      if (!e.mounts[i].type.empty())
        need({0, 4, 0}, at + ".mounts[" + std::to_string(i) + "].type");
    if (e.intel_rdt) {
      need({0, 7, 0}, at + ".intelRdt");
      if (!e.intel_rdt->schemata.empty())
        need({1, 1, 0}, at + ".intelRdt.schemata");
      if (e.intel_rdt->enable_monitoring)
        need({1, 1, 0}, at + ".intelRdt.enableMonitoring");
    }
    if (!e.additional_gids.empty())
      need({0, 7, 0}, at + ".additionalGids");
    if (!e.net_devices.empty())
      need({1, 1, 0}, at + ".netDevices");
  }
};
} // namespace

std::string Version::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<Version> parse_version(std::string_view text) {
  if (!text.empty() && text.front() == 'v')
    text.remove_prefix(1);
  Version v;
  int *parts[] = {&v.major, &v.minor, &v.patch};
  const char *p = text.data();
  const char *end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      if (p == end || *p != '.')
        return std::nullopt;
      ++p;
    }
    auto [next, ec] = std::from_chars(p, end, *parts[i]);
    if (ec != std::errc() || next == p)
      return std::nullopt;
    p = next;
  }
  if (p != end)
    return std::nullopt;
  for (const auto &r : kReleased)
    if (r == v)
      return v;
  return std::nullopt;
}

std::vector<VersionRequirement> requirements_above(const Spec &spec, Version have) {
  Walker w{have, {}};
  if (!spec.annotations.empty())
    w.need({0, 6, 0}, "annotations");
  if (const auto slash = spec.kind.find('/'); slash != std::string::npos && spec.kind.find('.', slash) != std::string::npos)
    w.need({0, 6, 0}, "kind (a dot in the class " + spec.kind.substr(slash + 1) + ")");
  w.edits(spec.edits, "containerEdits");
  for (std::size_t i = 0; i < spec.devices.size(); ++i) {
    const auto &d = spec.devices[i];
    const std::string at = "devices[" + std::to_string(i) + "]";
    if (!d.name.empty() && d.name.front() >= '0' && d.name.front() <= '9')
      w.need({0, 5, 0}, at + ".name (starts with a digit)");
    if (!d.annotations.empty())
      w.need({0, 6, 0}, at + ".annotations");
    w.edits(d.edits, at + ".containerEdits");
  }
  return std::move(w.out);
}

Version minimum_version(const Spec &spec) {
  Version v = kReleased.front();
  for (const auto &r : requirements_above(spec, kReleased.front()))
    v = std::max(v, r.needs);
  return v;
}

} // namespace gpuslice::cdi
