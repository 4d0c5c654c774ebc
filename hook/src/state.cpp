#include "gpuslice/hook/state.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <nlohmann/json.hpp>

namespace gpuslice::hook {

ContainerState parse_state(std::string_view json_text) {
  if (json_text.size() > (1 << 20))
    throw Error("container state on stdin is larger than 1 MiB");
  const auto j = with_context("container state on stdin", [&] { return parse_json(json_text); });
  if (!j.is_object())
    throw Error("container state on stdin is not a JSON object");
  ContainerState s;
  auto str = [&](const char *key, std::string &out, bool required) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required)
        throw Error(std::string("container state has no ") + quote(key));
      return;
    }
    if (!it->is_string())
      throw Error(std::string("container state: ") + quote(key) + " is not a string");
    out = it->get<std::string>();
  };
  str("ociVersion", s.oci_version, false);
  str("id", s.id, true);
  str("status", s.status, false);
  str("bundle", s.bundle, false);
  if (auto it = j.find("pid"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
      throw Error("container state: \"pid\" is not a process id");
    s.pid = static_cast<int>(it->get<int64_t>());
  }
  if (!state::is_safe_container_id(s.id))
    throw Error("container state: id " + quote(s.id) + " is not a safe path component");
  if (!s.bundle.empty() && !fs::is_absolute(s.bundle))
    throw Error("container state: bundle " + quote(s.bundle) + " is not absolute");
  return s;
}

} // namespace gpuslice::hook
