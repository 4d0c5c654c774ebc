#include "gpuslice/create/requests.hpp"
#include "gpuslice/create/container_limits.hpp"

#include "gpuslice/cdi/annotations.hpp"
#include "gpuslice/cdi/names.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/strings.hpp"

#include <algorithm>
#include <set>

namespace gpuslice::create {

namespace {

constexpr std::string_view kEnvRequestVars[] = {"GPUSLICE_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"};

void add(Requests &r, std::set<std::string> &seen, const std::string &device) {
  if (seen.insert(device).second)
    r.devices.push_back(device);
}

} // namespace

std::vector<std::string> create_triggers(const Config &config) {
  std::vector<std::string> triggers;
  for (const auto &p : config.annotation_prefixes)
    if (!p.empty()) // matches nothing (cdi::parse_annotations)
      triggers.push_back(p);
  if (config.accept_env_requests)
    triggers.insert(triggers.end(), std::begin(kEnvRequestVars), std::end(kEnvRequestVars));
  triggers.insert(triggers.end(), std::begin(kLimitEnvVars), std::end(kLimitEnvVars));
  if (config.accept_gpushare_env) // a limit of gpushare's (container_limits)
    triggers.push_back("ALIYUN_COM_GPU_MEM_CONTAINER");
  return triggers;
}

std::vector<std::string> devices_from_env_value(const std::string &value, const std::string &default_kind) {
  std::vector<std::string> out;
  if (value.empty() || value == "none" || value == "void")
    return out;
  for (const auto &item : split(value, ',', EmptyParts::skip)) {
    std::string device = cdi::is_qualified_name(item) ? item : default_kind + "=" + item;
    with_context("visible devices " + quote(value), [&] { cdi::parse_qualified_name(device); });
    out.push_back(std::move(device));
  }
  return out;
}

Requests collect_requests(const BundleSpec &spec, const Config &config) {
  Requests r;
  std::set<std::string> seen;
  for (auto &d : cdi::parse_annotations(spec.annotations(), config.annotation_prefixes))
    add(r, seen, d);
  r.from_annotations = r.devices.size();
  for (const auto &name : spec.cdi_device_names())
    add(r, seen, name);
  if (config.accept_env_requests) {
    const auto env = spec.process_env();
    for (std::string_view var : kEnvRequestVars) {
      // The last occurrence is what the process sees.
      const auto found = env_value(env, var);
      if (!found)
        continue;
      for (auto &d : devices_from_env_value(*found, config.default_kind))
        add(r, seen, d);
      break; // GPUSLICE_VISIBLE_DEVICES, when set, wins over NVIDIA_VISIBLE_DEVICES
    }
  }
  return r;
}

} // namespace gpuslice::create
