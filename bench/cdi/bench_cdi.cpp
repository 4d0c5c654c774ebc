// Registry and injection costs at node scale: 1,000 spec files (half JSON,
// half YAML, 8 devices each), then resolve + inject of 8 devices into a
// containerd-style config.json, then what a create's load of one driver's
// spec costs parsed and from the spec cache (spec_cache.hpp). Each figure is printed with a baseline taken
// in the same process (reading the same files raw; parsing and writing the
// same config.json without edits), since these machines are noisy.
#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/cdi/spec_cache.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace gpuslice;
using Clock = std::chrono::steady_clock;

namespace {

double elapsed_us(const std::function<void()> &fn) {
  const auto a = Clock::now();
  fn();
  return std::chrono::duration<double, std::micro>(Clock::now() - a).count();
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double median_us(int runs, const std::function<void()> &fn) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i)
    t.push_back(elapsed_us(fn));
  return median(std::move(t));
}

std::string json_spec(int file) {
  std::string devs;
  for (int d = 0; d < 8; ++d) {
    const std::string n = std::to_string(d);
    devs += std::string(d ? "," : "") + R"({"name": ")" + n + R"(", "containerEdits": {"env": ["GPU_)" + n + "=" +
            std::to_string(file) + R"("], "deviceNodes": [{"path": "/dev/nvidia)" + n +
            R"(", "hostPath": "/dev/null"}, {"path": "/dev/nvidia-caps/cap)" + n +
            R"(", "type": "c", "major": 237, "minor": )" + n + R"(, "permissions": "rw"}]}})";
  }
  return R"({"cdiVersion": "0.6.0", "kind": "vendor)" + std::to_string(file) + R"(.com/gpu",
  "containerEdits": {"env": ["DRIVER=550"], "deviceNodes": [{"path": "/dev/nvidiactl", "hostPath": "/dev/null"}],
    "mounts": [{"hostPath": "/usr/lib/libcuda.so.1", "containerPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "options": ["ro", "nosuid", "nodev", "bind"]},
               {"hostPath": "/usr/bin/nvidia-smi", "containerPath": "/usr/bin/nvidia-smi", "options": ["ro", "nosuid", "nodev", "bind"]}],
    "hooks": [{"hookName": "createContainer", "path": "/usr/bin/nvidia-cdi-hook", "args": ["nvidia-cdi-hook", "update-ldcache"]}]},
  "devices": [)" + devs + "]}";
}

std::string yaml_spec(int file) {
  std::string s = "cdiVersion: 0.6.0\nkind: vendor" + std::to_string(file) +
                  ".com/gpu\ncontainerEdits:\n  env: [DRIVER=550]\n  deviceNodes:\n  - path: /dev/nvidiactl\n    hostPath: /dev/null\n"
                  "  mounts:\n  - hostPath: /usr/lib/libcuda.so.1\n    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
                  "    options: [ro, nosuid, nodev, bind]\n  hooks:\n  - hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n"
                  "    args: [nvidia-cdi-hook, update-ldcache]\ndevices:\n";
  for (int d = 0; d < 8; ++d) {
    const std::string n = std::to_string(d);
    s += "- name: \"" + n + "\"\n  containerEdits:\n    env: [GPU_" + n + "=" + std::to_string(file) + "]\n    deviceNodes:\n" +
         "    - path: /dev/nvidia" + n + "\n      hostPath: /dev/null\n    - path: /dev/nvidia-caps/cap" + n +
         "\n      type: c\n      major: 237\n      minor: " + n + "\n      permissions: rw\n";
  }
  return s;
}

// A GPU driver's spec as nvidia-ctk writes it for `gpus` GPUs: compact YAML
// sequences, per-GPU nodes and symlink hooks, the libraries and binaries as
// mounts (bench/start's driver_spec_yaml, the same shape).
std::string driver_spec_yaml(int gpus) {
  std::string s = "---\ncdiVersion: 0.5.0\ncontainerEdits:\n  deviceNodes:\n";
  for (const char *n : {"nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidiactl"})
    s += std::string("  - path: /dev/") + n + "\n";
  s += "  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n  hooks:\n  - args:\n    - nvidia-cdi-hook\n    - update-ldcache\n"
       "    - --folder\n    - /usr/lib/x86_64-linux-gnu\n    hookName: createContainer\n"
       "    path: /usr/bin/nvidia-cdi-hook\n  mounts:\n";
  std::vector<std::string> paths;
  for (const char *lib : {"EGL_nvidia", "GLESv2_nvidia", "GLX_nvidia", "cuda", "cudadebugger", "nvcuvid",
                          "nvidia-allocator", "nvidia-cfg", "nvidia-eglcore", "nvidia-encode", "nvidia-fbc",
                          "nvidia-glcore", "nvidia-glsi", "nvidia-gpucomp", "nvidia-ml", "nvidia-ngx", "nvidia-nvvm",
                          "nvidia-opencl", "nvidia-opticalflow", "nvidia-ptxjitcompiler", "nvidia-rtcore",
                          "nvidia-tls", "nvoptix"})
    paths.push_back(std::string("/usr/lib/x86_64-linux-gnu/lib") + lib + ".so.550.54.15");
  for (const char *bin : {"smi", "debugdump", "persistenced", "cuda-mps-control"})
    paths.push_back(std::string("/usr/bin/nvidia-") + bin);
  for (const auto &p : paths)
    s += "  - containerPath: " + p + "\n    hostPath: " + p + "\n    options:\n    - ro\n    - nosuid\n    - nodev\n"
         "    - bind\n";
  s += "devices:\n";
  for (int i = 0; i < gpus; ++i) {
    char bus[8];
    std::snprintf(bus, sizeof bus, "%02x", i + 0x18);
    const std::string card = std::to_string(i + 1);
    s += "- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia" + std::to_string(i) + "\n    - path: /dev/dri/card" +
         card + "\n    - path: /dev/dri/renderD" + std::to_string(128 + i) +
         "\n    hooks:\n    - args:\n      - nvidia-cdi-hook\n      - create-symlinks\n      - --link\n      - ../card" +
         card + "::/dev/dri/by-path/pci-0000:" + bus + ":00.0-card\n      hookName: createContainer\n"
         "      path: /usr/bin/nvidia-cdi-hook\n  name: \"" + std::to_string(i) + "\"\n";
  }
  return s + "kind: nvidia.com/gpu\n";
}

} // namespace

int main(int argc, char **argv) {
  const int files = argc > 1 ? std::atoi(argv[1]) : 1000;
  char tmpl[] = "/tmp/gpuslice-bench-cdi-XXXXXX";
  if (!::mkdtemp(tmpl))
    return 1;
  const std::string root = tmpl;
  const std::vector<std::string> dirs{root + "/etc/cdi", root + "/var/run/cdi"};
  std::filesystem::create_directories(dirs[0]);
  std::filesystem::create_directories(dirs[1]);
  std::vector<std::string> paths;
  for (int f = 0; f < files; ++f) {
    const bool yaml = f % 2;
    const std::string path = dirs[f % 4 < 2 ? 0 : 1] + "/spec-" + std::to_string(f) + (yaml ? ".yaml" : ".json");
    fs::write_file_atomic(path, yaml ? yaml_spec(f) : json_spec(f), 0644);
    paths.push_back(path);
  }

  std::size_t devices = 0;
  const double read_us = median_us(5, [&] {
    std::size_t bytes = 0;
    for (const auto &p : paths)
      bytes += fs::read_file(p).size();
    if (!bytes)
      std::abort();
  });
  const double load_us = median_us(5, [&] {
    cdi::Registry r(dirs);
    r.reload();
    if (!r.errors().empty()) {
      std::fprintf(stderr, "bench: %s: %s\n", r.errors()[0].path.c_str(), r.errors()[0].message.c_str());
      std::abort();
    }
    devices = r.device_names().size();
  });

  cdi::Registry registry(dirs);
  registry.refresh();
  constexpr int kRefreshes = 10000;
  const double refresh_us = median_us(5, [&] {
    for (int i = 0; i < kRefreshes; ++i)
      if (registry.refresh())
        std::abort();
  }) / kRefreshes;
  cdi::Registry stamped(dirs, cdi::ChangeDetection::stamps);
  stamped.refresh();
  const double refresh_stamps_us = median_us(5, [&] {
    if (stamped.refresh())
      std::abort();
  });

  const std::string config = fs::read_file(GPUSLICE_SOURCE_DIR "/bench/cdi/containerd-config.json");
  std::vector<std::string> request;
  for (int d = 0; d < 8; ++d)
    request.push_back("vendor" + std::to_string(files / 2) + ".com/gpu=" + std::to_string(d));
  constexpr int kInjects = 2000;
  const double roundtrip_us = median_us(kInjects, [&] {
    auto oci = cdi::OciSpec::parse(config);
    if (oci.dump().empty())
      std::abort();
  });
  const double inject_only_us = median_us(kInjects, [&] {
    auto oci = cdi::OciSpec::parse(config);
    cdi::inject_devices(registry, oci, request);
    if (oci.dump().empty())
      std::abort();
  }) - roundtrip_us;

  // config.json as a create parses it (parse_json) against nlohmann's own
  // parser after the depth pass it needed before, interleaved, each first
  // every other time.
  std::vector<double> ours_us, theirs_us;
  const auto ours = [&] {
    if (parse_json<cdi::OciSpec>(config).empty())
      std::abort();
  };
  const auto theirs = [&] {
    check_json_depth(config);
    if (cdi::OciSpec::parse(config).empty())
      std::abort();
  };
  for (int i = 0; i < kInjects; ++i) {
    if (i % 2) {
      ours_us.push_back(elapsed_us(ours));
      theirs_us.push_back(elapsed_us(theirs));
    } else {
      theirs_us.push_back(elapsed_us(theirs));
      ours_us.push_back(elapsed_us(ours));
    }
  }
  const double parse_ours_us = median(ours_us), parse_theirs_us = median(theirs_us);

  // A create's load: the one spec of the kind asked for, a node's driver
  // spec, parsed (no cache) and from a cache filled by the load before.
  const std::string node_dir = root + "/node", driver = driver_spec_yaml(8);
  std::filesystem::create_directories(node_dir);
  fs::write_file_atomic(node_dir + "/nvidia.yaml", driver, 0644);
  const std::set<std::string> kinds{"nvidia.com/gpu"};
  const cdi::SpecCache cache(root + "/cache");
  auto create_load = [&](const cdi::SpecCache *c) {
    cdi::Registry r({node_dir}, cdi::ChangeDetection::none);
    r.use_cache(c);
    r.reload(kinds);
    if (!r.errors().empty() || r.device_names().size() != 8)
      std::abort();
  };
  constexpr int kCreateLoads = 200;
  const double node_read_us = median_us(kCreateLoads, [&] {
    if (fs::read_file(node_dir + "/nvidia.yaml").empty())
      std::abort();
  });
  const double node_parsed_us = median_us(kCreateLoads, [&] { create_load(nullptr); });
  create_load(&cache);
  const double node_cached_us = median_us(kCreateLoads, [&] { create_load(&cache); });

  if (std::getenv("GPUSLICE_BENCH_KEEP"))
    std::printf("spec files kept in %s\n", root.c_str());
  else
    std::filesystem::remove_all(root);

  std::printf("command: %s %d   (build type " GPUSLICE_BUILD_TYPE ")\n", argv[0], files);
  std::printf("%d spec files (half JSON, half YAML, 8 devices each) -> %zu devices\n", files, devices);
  std::printf("%-44s %10.2f ms   target < 150 ms   (raw read of the same files: %.2f ms, ratio %.1fx)\n",
              "first load", load_us / 1000, read_us / 1000, load_us / read_us);
  std::printf("%-44s %10.3f us   target < 1000 us\n", "refresh, nothing changed (inotify)", refresh_us);
  std::printf("%-44s %10.3f us   (fallback without inotify)\n", "refresh, nothing changed (stamps)", refresh_stamps_us);
  std::printf("%-44s %10.2f us   target < 1000 us   (parse + write config.json alone: %.2f us)\n",
              "resolve + inject 8 devices", inject_only_us, roundtrip_us);
  std::printf("%-44s %10.2f us   (%.1f KB; nlohmann's parser and a depth pass: %.2f us, ratio %.2f)\n",
              "config.json parsed as a create does", parse_ours_us, config.size() / 1024.0, parse_theirs_us,
              parse_ours_us / parse_theirs_us);
  std::printf("%-44s %10.2f us   (%.1f KB of YAML; raw read: %.2f us)\n", "create's load of a driver spec, parsed",
              node_parsed_us, driver.size() / 1024.0, node_read_us);
  std::printf("%-44s %10.2f us   (%.1fx faster%s)\n", "create's load of a driver spec, spec cache", node_cached_us,
              node_parsed_us / node_cached_us, own_build_id().empty() ? "; NO BUILD ID: cache off" : "");
  const bool ok = load_us < 150000 && refresh_us < 1000 && inject_only_us < 1000;
  std::printf("%s\n", ok ? "all targets met" : "TARGET MISSED");
  return ok ? 0 : 1;
}
