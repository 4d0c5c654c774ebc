#include "gpuslice/dra/claim.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/sharing/limits.hpp"

#include <algorithm>

namespace gpuslice::dra {

namespace {

using nlohmann::json;

// obj[key] when it is there and of `type`, nullptr when absent (or null);
// Error when it is there as something else.
const json *member(const json &obj, const char *key, json::value_t type) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return nullptr;
  const bool fits = it->type() == type || (type == json::value_t::number_unsigned && it->is_number_integer());
  if (!fits)
    throw Error(std::string("\"") + key + "\" is " + it->type_name() + ", not " + json(type).type_name());
  return &*it;
}

// The array at `list`, or an empty one: both lvalues, so no copy is made.
const json &items(const json *list) {
  static const json none = json::array();
  return list ? *list : none;
}

std::string string_member(const json &obj, const char *key) {
  const json *v = member(obj, key, json::value_t::string);
  return v ? v->get<std::string>() : std::string();
}

// Whether a configuration listing `requests` applies to `request`: an empty
// list applies to every request, and a request's name to its subrequests.
bool applies(const json *requests, const std::string &request) {
  if (!requests || requests->empty())
    return true;
  const std::string parent = request.substr(0, request.find('/'));
  return std::any_of(requests->begin(), requests->end(), [&](const json &r) {
    return r.is_string() && (r.get<std::string>() == request || r.get<std::string>() == parent);
  });
}

AllocatedDevice read_result(const json &result) {
  if (!result.is_object())
    throw Error("a result is " + std::string(result.type_name()) + ", not an object");
  AllocatedDevice d;
  d.request = string_member(result, "request");
  d.device = string_member(result, "device");
  if (d.request.empty() || d.device.empty())
    throw Error("a result without its request or device");
  d.share_id = string_member(result, "shareID");
  if (const json *consumed = member(result, "consumedCapacity", json::value_t::object))
    if (const json *memory = member(*consumed, "memory", json::value_t::string))
      d.memory = with_context("consumedCapacity.memory of device " + quote(d.device),
                              [&] { return sharing::parse_size(memory->get<std::string>()); });
  return d;
}

// The configurations of `driver`, each with the requests it names: the
// class's first, then the claim's (the API's order of precedence).
std::vector<std::pair<const json *, ShareConfig>> share_configs(const json *configs, const std::string &driver) {
  std::vector<std::pair<const json *, ShareConfig>> from_class, from_claim;
  for (const json &c : items(configs)) {
    if (!c.is_object())
      throw Error("a configuration is " + std::string(c.type_name()) + ", not an object");
    const json *opaque = member(c, "opaque", json::value_t::object);
    if (!opaque || string_member(*opaque, "driver") != driver)
      continue;
    const std::string source = string_member(c, "source");
    if (source != "FromClass" && source != "FromClaim")
      throw Error("a configuration's source is " + quote(source) + ", not FromClass or FromClaim");
    const json *parameters = member(*opaque, "parameters", json::value_t::object);
    if (!parameters)
      throw Error("a configuration of " + driver + " without parameters");
    (source == "FromClass" ? from_class : from_claim)
        .emplace_back(member(c, "requests", json::value_t::array), parse_share_config(*parameters));
  }
  from_class.insert(from_class.end(), from_claim.begin(), from_claim.end());
  return from_class;
}

} // namespace

std::vector<AllocatedDevice> allocated_devices(const nlohmann::json &claim, const ClaimRef &ref,
                                               const std::string &driver, const std::string &pool) {
  return with_context("claim " + ref.namespace_name + "/" + ref.name, [&] {
    if (!claim.is_object())
      throw Error("the API server's answer is " + std::string(claim.type_name()) + ", not an object");
    const json *metadata = member(claim, "metadata", json::value_t::object);
    const std::string uid = metadata ? string_member(*metadata, "uid") : std::string();
    if (uid != ref.uid)
      throw Error("its uid is " + quote(uid) + ", not " + quote(ref.uid) +
                  " as kubelet says (deleted and made again since?)");
    const json *status = member(claim, "status", json::value_t::object);
    const json *allocation = status ? member(*status, "allocation", json::value_t::object) : nullptr;
    const json *devices = allocation ? member(*allocation, "devices", json::value_t::object) : nullptr;
    if (!devices)
      throw Error("it is not allocated");
    const auto configs = share_configs(member(*devices, "config", json::value_t::array), driver);
    std::vector<AllocatedDevice> out;
    const json *results = member(*devices, "results", json::value_t::array);
    for (const json &result : items(results)) {
      if (result.is_object() && (string_member(result, "driver") != driver || string_member(result, "pool") != pool))
        continue; // another driver's, or a device of another pool (not this node's)
      AllocatedDevice d = read_result(result);
      for (const auto &[requests, config] : configs)
        if (applies(requests, d.request))
          d.config = merged(d.config, config);
      out.push_back(std::move(d));
    }
    return out;
  });
}

} // namespace gpuslice::dra
