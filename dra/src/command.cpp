#include "gpuslice/dra/command.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/install_paths.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/dra/api_client.hpp"
#include "gpuslice/dra/kubelet_grpc.hpp"
#include "gpuslice/dra/resource_api.hpp"
#include "gpuslice/dra/slices.hpp"
#include "gpuslice/nvidia/discover.hpp"
#include "gpuslice/shim/nvml.hpp"

#include <CLI/CLI.hpp>

#include <malloc.h>
#include <signal.h>

#include <cstdlib>
#include <iostream>

namespace gpuslice::dra {

namespace {

struct Flags {
  PluginOptions plugin;
  std::string kubeconfig;
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";
  nvidia::DiscoverOptions discover;
  std::string log_level = "info";
};

// Each GPU's memory, from NVML (the driver's own library), matched by UUID.
std::vector<uint64_t> gpu_memory(const nvidia::Driver &driver, const nvidia::DiscoverOptions &found) {
  std::string library = "libnvidia-ml.so.1";
  for (const auto &lib : driver.libraries)
    if (lib.container_path.find("/libnvidia-ml.so.") != std::string::npos)
      library = found.readable(lib.host_path);
  std::string why;
  const auto nvml = shim::Nvml::load(library, why);
  if (!nvml)
    throw Error("cannot read the GPUs' memory from NVML (" + library + "): " + why);
  const auto devices = nvml->devices();
  std::vector<uint64_t> memory;
  for (const auto &gpu : driver.gpus) {
    const auto it = std::find_if(devices.begin(), devices.end(), [&](const shim::GpuInfo &d) { return d.uuid == gpu.uuid; });
    if (it == devices.end())
      throw Error("NVML does not know GPU " + gpu.uuid + " (" + gpu.bus_id + ")");
    memory.push_back(it->total);
  }
  return memory;
}

// What a change of GPUs changes: which GPUs at which nodes, the driver.
std::string gpus_of(const nvidia::Driver &driver) {
  std::string key = driver.version;
  for (const auto &gpu : driver.gpus)
    key += "\n" + gpu.bus_id + " " + gpu.uuid + " " + gpu.model + " " + std::to_string(gpu.node.minor);
  return key;
}

// How often the node's GPUs and its slice are looked at again (and at once
// on SIGHUP): a /proc read (NVML only when they changed) and two GETs.
constexpr time_t kRediscoverSeconds = 60;

int serve_kubelet(Flags &flags) {
  log::setup("gpuslice-kubelet-plugin", {flags.log_level, "stderr", ""});
  auto &o = flags.plugin;
  if (o.node_name.empty())
    if (const char *node = std::getenv("NODE_NAME"))
      o.node_name = node;
  if (o.node_name.empty())
    throw Error("no node name: give --node-name or set NODE_NAME (the downward API's spec.nodeName)");
  if (o.plugin_dir.empty())
    o.plugin_dir = "/var/lib/kubelet/plugins/" + o.driver_name;
  auto driver = nvidia::discover(flags.discover);
  auto pool = pool_devices(driver, gpu_memory(driver, flags.discover), o.slices);
  const ApiServer server = flags.kubeconfig.empty() ? in_cluster() : from_kubeconfig(flags.kubeconfig, o.plugin_dir);
  const auto resources = std::make_shared<ResourceApi>(std::make_shared<ApiClient>(server));
  Plugin plugin(o, driver, pool, [resources](const ClaimRef &ref) { return resources->claim(ref); });
  const auto publish = [&] {
    resources->publish_slice(SliceContext{o.driver_name, o.node_name, "", driver, pool, o.slices == 0});
  };
  publish();
  log::line("info", "driver " + o.driver_name + " on node " + o.node_name + ": " + std::to_string(pool.size()) +
                        " device(s) on " + std::to_string(driver.gpus.size()) + " GPU(s), API server " + server.server);

  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP})
    sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr); // before gRPC starts its threads
  bool unpublished = false; // the GPUs changed and the slice does not say so yet
  serve(plugin, sockets_of(flags.registrar_dir, o.plugin_dir, o.driver_name), [&] {
    for (;;) {
      const timespec every{kRediscoverSeconds, 0};
      const int signal = sigtimedwait(&signals, nullptr, &every);
      if (signal == SIGTERM || signal == SIGINT) {
        log::line("info", std::string("stopping on ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT"));
        return;
      }
      try {
        auto found = nvidia::discover(flags.discover);
        if (gpus_of(found) != gpus_of(driver)) {
          auto found_pool = pool_devices(found, gpu_memory(found, flags.discover), o.slices);
          driver = std::move(found);
          pool = std::move(found_pool);
          plugin.update(driver, pool);
          unpublished = true;
          log::line("info", "the node's GPUs changed: " + std::to_string(driver.gpus.size()) + " GPU(s)");
        } else if (signal == SIGHUP) {
          log::line("info", "the node's GPUs are unchanged");
        }
        if (!unpublished && !resources->slice_current(o.node_name, o.driver_name)) {
          log::line("info", "this node's ResourceSlice is gone (its Node made again?): publishing it again");
          unpublished = true;
        }
        if (unpublished) {
          publish();
          unpublished = false;
        }
      } catch (const std::exception &e) {
        log::line("error", std::string("cannot publish the node's GPUs again: ") + e.what());
      }
    }
  });
  return 0;
}

} // namespace

int run_kubelet_plugin(int argc, char **argv) {
  // One malloc arena for every thread: gRPC's threads would each get one,
  // and keep its pages, for calls that the plugin serializes anyway
  // (bench/kubelet_plugin: 29 MiB instead of 35 after 1,000 claims).
  mallopt(M_ARENA_MAX, 1);
  CLI::App app{"gpuslice-kubelet-plugin: gpuslice's DRA driver for kubelet. It registers with kubelet, and "
               "prepares each ResourceClaim allocated on this node as a CDI spec whose devices carry the "
               "claim's share of a GPU (memory, compute), enforced by gpuslice-runtime."};
  app.set_version_flag("--version", std::string("gpuslice-kubelet-plugin ") + installed::kVersion);
  Flags flags;
  auto &o = flags.plugin;
  o.hook_path = installed::kHookPath;
  app.add_option("--driver-name", o.driver_name, "the DRA driver's name, the DeviceClass's driver")->capture_default_str();
  app.add_option("--node-name", o.node_name, "this node's name, its pool's name (default: env NODE_NAME)");
  app.add_option("--kubeconfig", flags.kubeconfig, "the API server and credentials (default: the pod's service account)");
  app.add_option("--cdi-root", o.cdi_root, "where claims' CDI specs are written")->capture_default_str();
  app.add_option("--registrar-dir", flags.registrar_dir, "kubelet's plugin registration dir")->capture_default_str();
  app.add_option("--plugin-dir", o.plugin_dir, "dra.sock and the checkpoint (default: /var/lib/kubelet/plugins/<driver-name>)");
  app.add_option("--dev-root", flags.discover.dev_root, "where the driver's /dev and /proc are (as for gpuslice cdi generate)")
      ->capture_default_str();
  app.add_option("--driver-root", flags.discover.driver_root, "where the driver's libraries and tools are")
      ->capture_default_str();
  app.add_option("--host-root", flags.discover.host_root,
                 "where the host's / is mounted when run in a container (a DaemonSet): the driver is read under "
                 "it, and the claims' specs name its files without it")
      ->capture_default_str();
  app.add_option("--slices", o.slices, "N fixed devices per GPU, each with 1/N of its memory and compute as its "
                                       "limits (for clusters without consumable capacity; 0: one device per GPU)")
      ->capture_default_str();
  app.add_option("--hook-path", o.hook_path, "gpuslice-hook as the claims' specs name it")->capture_default_str();
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  try {
    return serve_kubelet(flags);
  } catch (const std::exception &e) {
    std::cerr << "gpuslice-kubelet-plugin: " << e.what() << "\n";
    return 1;
  }
}

} // namespace gpuslice::dra
