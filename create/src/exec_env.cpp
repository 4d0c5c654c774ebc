#include "gpuslice/create/exec_env.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <set>

namespace gpuslice::create {

namespace {

// A process spec is a few KiB; containerd's own limit on a spec is far below this.
constexpr std::size_t kMaxProcessFile = 4u << 20;

} // namespace

std::string cdi_env_text(const std::vector<std::string> &env) {
  return nlohmann::json(env).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::size_t add_cdi_env(const std::string &process_file, const std::string &state_dir, const std::string &id) {
  if (!state::container_dir_exists(state_dir, id))
    return 0;
  const std::string record = fs::clean_path(state_dir) + "/containers/" + id + "/" + kCdiEnvFile;
  std::vector<std::string> env;
  try {
    env = parse_json(fs::read_file(record, kMaxProcessFile)).get<std::vector<std::string>>();
  } catch (Error &e) {
    if (e.error_number() == ENOENT)
      return 0; // a state dir of a hook-only container: no record
    e.context("CDI env of container " + quote(id));
    throw;
  } catch (const nlohmann::json::exception &) {
    throw Error("CDI env of container " + quote(id) + ": " + quote(record) + " is not a list of strings");
  }
  return with_context("process spec " + quote(process_file), [&]() -> std::size_t {
    auto process = parse_json<nlohmann::ordered_json>(fs::read_file(process_file, kMaxProcessFile));
    if (!process.is_object())
      throw Error("not a JSON object");
    auto &list = process["env"];
    if (list.is_null())
      list = nlohmann::ordered_json::array();
    if (!list.is_array())
      throw Error("\"env\" is not an array");
    std::set<std::string> set;
    for (const auto &e : list)
      if (e.is_string())
        set.insert(std::string(env_key(e.get<std::string>())));
    std::size_t added = 0;
    for (const auto &e : env)
      if (set.insert(std::string(env_key(e))).second) {
        list.push_back(e);
        ++added;
      }
    if (added)
      fs::write_file_atomic(process_file, process.dump(), static_cast<mode_t>(-1), fs::Durability::atomic);
    return added;
  });
}

} // namespace gpuslice::create
