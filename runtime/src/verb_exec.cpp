// `exec --process FILE` (verbs.hpp). Why: containerd 1.6 builds an exec'd
// process (kubectl exec, exec probes, CRI ExecSync) from the spec it stored
// at create, not from the bundle gpuslice-runtime edited: the CDI edits'
// env (LD_LIBRARY_PATH of a driver, NVIDIA_VISIBLE_DEVICES, ...) is missing
// there and CUDA breaks in exec'd processes. The create keeps that env in
// the container's record.
#include "gpuslice/runtime/verbs.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <set>

namespace gpuslice::runtime {

namespace {
// A process spec is a few KiB; containerd's own limit on a spec is far below this.
constexpr std::size_t kMaxProcessFile = 4u << 20;
} // namespace

std::size_t add_cdi_env(const std::string &process_file, const std::string &state_dir, const std::string &id) {
  if (!state::is_safe_container_id(id))
    return 0;
  const auto dir = state::open_container_dir(state_dir, id);
  if (!dir)
    return 0;
  const std::vector<std::string> env = state::read_record(dir->fd.get(), dir->path).cdi_env;
  if (env.empty())
    return 0;
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

} // namespace gpuslice::runtime
