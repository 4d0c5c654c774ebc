#include "gpuslice/create/requests.hpp"
#include "gpuslice/create/container_limits.hpp"

#include "gpuslice/cdi/annotations.hpp"
#include "gpuslice/cdi/names.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/json_text.hpp"
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

Requests collect_requests(cdi::OciSpec &oci, const Config &config) {
  Requests r;
  std::set<std::string> seen;
  if (!oci.is_object())
    throw Error("OCI spec is not a JSON object");

  if (auto it = oci.find("annotations"); it != oci.end() && it->is_object()) {
    cdi::Annotations annotations;
    for (auto a = it->begin(); a != it->end(); ++a)
      if (a->is_string())
        annotations[a.key()] = a->get<std::string>();
    for (auto &d : cdi::parse_annotations(annotations, config.annotation_prefixes))
      add(r, seen, d);
  }
  r.from_annotations = r.devices.size();

  if (auto lx = oci.find("linux"); lx != oci.end() && lx->is_object()) {
    if (auto devs = lx->find("devices"); devs != lx->end() && devs->is_array()) {
      auto &list = *devs;
      for (auto d = list.begin(); d != list.end();) {
        const auto path =
            string_member(*d, "path", "linux.devices[" + std::to_string(d - list.begin()) + "].path").value_or("");
        if (!path.empty() && path[0] != '/' && cdi::is_qualified_name(path)) {
          with_context("linux.devices entry " + quote(path), [&] { cdi::parse_qualified_name(path); });
          add(r, seen, path);
          d = list.erase(d);
        } else {
          ++d;
        }
      }
    }
  }

  if (config.accept_env_requests) {
    if (auto p = oci.find("process"); p != oci.end() && p->is_object()) {
      if (auto env = p->find("env"); env != p->end() && env->is_array()) {
        for (std::string_view var : kEnvRequestVars) {
          // The last occurrence is what the process sees.
          std::vector<std::string> strings;
          for (const auto &e : *env)
            if (e.is_string())
              strings.push_back(e.get<std::string>());
          const auto found = env_value(strings, var);
          if (!found)
            continue;
          const std::string &value = *found;
          for (auto &d : devices_from_env_value(value, config.default_kind))
            add(r, seen, d);
          break; // GPUSLICE_VISIBLE_DEVICES, when set, wins over NVIDIA_VISIBLE_DEVICES
        }
      }
    }
  }
  return r;
}

} // namespace gpuslice::create
