// Input: any text, as a bundle's config.json. The entry's CDI merge
// (shim/fast_path/cdi_merge.h) of fixed edits either hands the create over
// (-1) or writes the very document cdi::apply_edits makes of the text; it
// never writes one where apply_edits refuses.
#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/json_text.hpp"

#include "../../shim/fast_path/cdi_merge.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

using gpuslice::cdi::OciSpec;

gpuslice_fp_json_node nodes[8192];
char out[1 << 20];
int work[1 << 16];

const gpuslice_fp_env_entry kEnv[] = {{"PATH", "\"PATH=/usr/bin\""}, {"GPU", "\"GPU=0\""}};
const gpuslice_fp_device_node kDevices[] = {{"/dev/nvidiactl", 'c', 195, 255, 0666, -1, -1, "rwm"},
                                           {"/dev/nvidia0", 'c', 195, 0, -1, 0, 44, "rw"},
                                           {"/dev/fifo", 'p', 0, 0, -1, -1, -1, "rwm"}};
const gpuslice_fp_keyed_json kMounts[] = {
    {"/usr/lib/libcuda.so.1", R"({"destination":"/usr/lib/libcuda.so.1","source":"/h/libcuda.so.1","options":["ro"]})"},
    {"/dev/shm", R"({"destination":"/dev/shm","source":"/h/shm"})"}};
const gpuslice_fp_keyed_json kHooks[] = {{"createContainer", R"({"path":"/bin/hook","args":["hook","x"]})"},
                                        {"prestart", R"({"path":"/bin/true"})"}};
const gpuslice_fp_edits kEdits{2, kEnv, 3, kDevices, 2, kMounts, 2, kHooks};

// The same edits as cdi::apply_edits takes them.
gpuslice::cdi::ContainerEdits full_edits() {
  gpuslice::cdi::ContainerEdits e;
  e.env = {"PATH=/usr/bin", "GPU=0"};
  for (const auto &d : kDevices) {
    gpuslice::cdi::DeviceNode n;
    n.path = d.path;
    n.type = std::string(1, d.type);
    n.major = static_cast<int64_t>(d.major);
    n.minor = static_cast<int64_t>(d.minor);
    if (d.file_mode >= 0)
      n.file_mode = static_cast<uint32_t>(d.file_mode);
    if (d.uid >= 0)
      n.uid = static_cast<uint32_t>(d.uid);
    if (d.gid >= 0)
      n.gid = static_cast<uint32_t>(d.gid);
    n.permissions = d.access;
    e.device_nodes.push_back(n);
  }
  for (const auto &m : kMounts) {
    const OciSpec o = OciSpec::parse(m.json);
    gpuslice::cdi::Mount mount;
    mount.container_path = o["destination"];
    mount.host_path = o["source"];
    if (o.contains("options"))
      mount.options = o["options"].get<std::vector<std::string>>();
    e.mounts.push_back(mount);
  }
  for (const auto &h : kHooks) {
    const OciSpec o = OciSpec::parse(h.json);
    gpuslice::cdi::Hook hook;
    hook.hook_name = h.key;
    hook.path = o["path"];
    if (o.contains("args"))
      hook.args = o["args"].get<std::vector<std::string>>();
    e.hooks.push_back(hook);
  }
  return e;
}

gpuslice::cdi::HostNode no_host_node(const std::string &path) { throw gpuslice::Error("no host node " + path); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
  static const gpuslice::cdi::ContainerEdits edits = full_edits();
  const std::string text(reinterpret_cast<const char *>(data), size);
  const int count = gpuslice_fp_json_parse(text.data(), text.size(), nodes, 8192, GPUSLICE_FP_JSON_MAX_DEPTH);
  if (count < 0)
    return 0;
  const long n = gpuslice_fp_apply_edits(text.data(), nodes, count, &kEdits, out, sizeof out, work, std::size(work));
  if (n < 0)
    return 0;
  OciSpec expected = gpuslice::parse_json<OciSpec>(text);
  try {
    gpuslice::cdi::apply_edits(expected, edits, no_host_node);
  } catch (const gpuslice::Error &) {
    std::abort(); // written here, refused there
  }
  if (gpuslice::parse_json<OciSpec>(std::string(out, static_cast<std::size_t>(n))) != expected)
    std::abort();
  return 0;
}
