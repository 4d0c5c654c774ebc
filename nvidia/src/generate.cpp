#include "gpuslice/nvidia/generate.hpp"

#include "gpuslice/cdi/names.hpp"
#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/cdi/version.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

#include <set>

namespace gpuslice::nvidia {

namespace {

using Json = nlohmann::ordered_json;

const Json kReadOnly = Json::array({"ro", "nosuid", "nodev", "bind"});

Json node_of(const DeviceNode &n) {
  Json j = {{"path", n.file.container_path}};
  if (n.file.host_path != n.file.container_path)
    j["hostPath"] = n.file.host_path;
  j["type"] = "c";
  j["major"] = n.major;
  j["minor"] = n.minor;
  return j;
}

Json mount_of(const HostFile &f) {
  return {{"hostPath", f.host_path}, {"containerPath", f.container_path}, {"options", kReadOnly}};
}

std::vector<std::string> names_of(const Gpu &g, Naming naming) {
  switch (naming) {
  case Naming::index:
    return {std::to_string(g.index)};
  case Naming::uuid:
    return {g.uuid};
  case Naming::both:
    return {std::to_string(g.index), g.uuid};
  }
  return {};
}

Json common_edits(const Driver &d, const std::string &hook_path) {
  Json edits = Json::object();
  Json nodes = Json::array();
  for (const auto &n : d.control)
    nodes.push_back(node_of(n));
  edits["deviceNodes"] = nodes;
  Json mounts = Json::array();
  for (const auto *files : {&d.libraries, &d.binaries, &d.directories, &d.sockets})
    for (const auto &f : *files)
      mounts.push_back(mount_of(f));
  if (!mounts.empty())
    edits["mounts"] = mounts;
  // The folders of the mounted libraries, each once, in the order found.
  std::vector<std::string> folders;
  for (const auto &lib : d.libraries) {
    const std::string dir = fs::dirname(lib.container_path);
    if (std::find(folders.begin(), folders.end(), dir) == folders.end())
      folders.push_back(dir);
  }
  if (!folders.empty()) {
    Json args = Json::array({"gpuslice-hook", "update-ldcache"});
    for (const auto &f : folders) {
      args.push_back("--folder");
      args.push_back(f);
    }
    edits["hooks"] = Json::array({{{"hookName", "createContainer"},
                                   {"path", hook_path},
                                   {"args", args},
                                   {"env", Json::array({std::string("PATH=") + kDefaultPath})}}});
  }
  return edits;
}

} // namespace

Json generate_spec(const Driver &d, const GenerateOptions &o) {
  cdi::parse_qualified_name(o.kind + "=x"); // the kind alone is checked by the parse below, with context
  if (o.slices < 0 || o.slices > 64)
    throw Error("--slices " + std::to_string(o.slices) + " is not between 0 and 64");
  if (o.naming != Naming::index)
    for (const auto &g : d.gpus)
      if (g.uuid.empty())
        throw Error("GPU " + g.bus_id + " has no UUID in /proc/driver/nvidia: name devices by index");
  std::vector<SpecDevice> devices;
  for (const auto &g : d.gpus) {
    std::vector<std::string> env;
    const bool limited = o.slices > 0 || !o.memory_limit.empty() || !o.compute_limit.empty();
    if (limited) {
      env = {gpu_env(g)};
      if (!o.memory_limit.empty())
        env.push_back("GPUSLICE_MEMORY_LIMIT=" + o.memory_limit);
      if (!o.compute_limit.empty())
        env.push_back("GPUSLICE_COMPUTE_LIMIT=" + o.compute_limit);
      else if (o.slices > 0)
        env.push_back("GPUSLICE_COMPUTE_LIMIT=" + std::to_string(100 / o.slices));
    }
    for (const auto &name : names_of(g, o.naming)) {
      if (o.slices == 0) {
        devices.push_back({name, {&g}, env});
        continue;
      }
      for (int k = 0; k < o.slices; ++k)
        devices.push_back({name + "-" + std::to_string(k), {&g}, env});
    }
  }
  // "all": every GPU, whole (a claim of all of a node's GPUs shares none).
  SpecDevice all{"all", {}, {}};
  for (const auto &g : d.gpus)
    all.gpus.push_back(&g);
  devices.push_back(all);
  return spec_of(d, o.kind, devices, o.hook_path, o.cdi_version);
}

std::string gpu_env(const Gpu &g) {
  if (g.uuid.empty())
    throw Error("GPU " + g.bus_id + " has no UUID: its limits could not be kept to it");
  return "GPUSLICE_GPU_UUID=" + g.uuid;
}

Json spec_of(const Driver &d, const std::string &kind, const std::vector<SpecDevice> &devices,
             const std::string &hook_path, const std::string &cdi_version) {
  Json listed = Json::array();
  for (const auto &device : devices) {
    Json nodes = Json::array();
    for (const Gpu *g : device.gpus)
      nodes.push_back(node_of(g->node));
    Json edits = {{"deviceNodes", nodes}};
    if (!device.env.empty())
      edits["env"] = device.env;
    listed.push_back({{"name", device.name}, {"containerEdits", edits}});
  }
  Json spec = {{"cdiVersion", cdi::kCurrentVersion.str()}, {"kind", kind}, {"devices", listed},
               {"containerEdits", common_edits(d, hook_path)}};
  // The library's own checks: what it would refuse to load is never written.
  const auto check = [&](const Json &doc) {
    cdi::Spec parsed = with_context("the generated spec", [&] { return cdi::parse_spec(doc.dump()); });
    const auto problems = cdi::validate_spec(parsed);
    if (!problems.empty())
      throw Error("the generated spec is not valid: " + join(problems, "; "));
    return parsed;
  };
  const cdi::Version lowest = cdi::minimum_version(check(spec));
  if (cdi_version.empty()) {
    spec["cdiVersion"] = lowest.str();
  } else {
    const auto asked = cdi::parse_version(cdi_version);
    if (!asked)
      throw Error("--cdi-version " + quote(cdi_version) + " is not a CDI version");
    if (*asked < lowest)
      throw Error("--cdi-version " + asked->str() + " cannot hold this spec: it needs " + lowest.str());
    spec["cdiVersion"] = asked->str();
  }
  check(spec);
  return spec;
}

} // namespace gpuslice::nvidia
