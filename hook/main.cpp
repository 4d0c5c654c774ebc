// gpuslice-hook STAGE: the OCI hook of GPU containers, with the container
// state on stdin. At createRuntime or prestart it records the init of a
// container gpuslice-runtime created, or does the create path's work itself
// for one it did not (podman / CRI-O hooks.d, runc or crun with the hook in
// config.json: hook/prepare.hpp); poststop removes the state dir. It runs
// as root on the host with the environment its hook entry gives it, never
// the container's.
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/hook/state.hpp"
#include "gpuslice/hook/ldcache.hpp"
#include "gpuslice/hook/prepare.hpp"
#include "gpuslice/state/container_dir.hpp"


#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace gpuslice;

namespace {

const std::string kUsage =
    std::string("usage: gpuslice-hook createRuntime|prestart|createContainer|poststop < container-state.json\n"
                "       gpuslice-hook update-ldcache --folder DIR [--folder DIR]... < container-state.json\n"
                "  the OCI hook of GPU containers; reads the OCI container state on stdin\n"
                "  createRuntime, prestart: for a container gpuslice-runtime created, record its init in\n"
                "    <state-dir>/containers/<id>/; for one it did not (podman, CRI-O, runc or crun with this\n"
                "    hook in config.json) that requests CDI devices: resolve them, then make their device nodes\n"
                "    and mounts inside the container, allow them in its device cgroup, run the CDI spec's hooks,\n"
                "    and wire its GPU limits and monitor; any failure fails the container\n"
                "  createContainer: accepted, does nothing (runc runs it inside the container)\n"
                "  poststop: remove the container's state directory\n"
                "  update-ldcache: add the folders to the container's ld cache, with the host's static ldconfig\n"
                "    run inside the container's root in a sandbox (own PID/IPC/UTS/net namespaces, chroot,\n"
                "    CAP_DAC_OVERRIDE only, no_new_privs, seccomp, resource limits); a CDI createContainer hook\n"
                "  config: $GPUSLICE_CONFIG or ") +
    kDefaultConfigPath + " ([runtime] state-dir, [cdi] spec-dirs, [log])\n";

// The container state, bounded: a hook's stdin is the runtime's, but nothing
// read from outside is unbounded.
std::string read_stdin() { return fs::read_fd(0, "the container state on stdin", 1 << 20); }

} // namespace

namespace {

// gpuslice-hook update-ldcache --folder DIR [--folder DIR]...
int update_ldcache_main(int argc, char **argv) {
  std::vector<std::string> folders;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage.c_str(), stdout);
      return 0;
    }
    if (arg == "--folder" && i + 1 < argc)
      folders.emplace_back(argv[++i]);
    else if (arg.starts_with("--folder="))
      folders.push_back(arg.substr(9));
    else {
      std::fprintf(stderr, "gpuslice-hook update-ldcache: unexpected argument \"%s\"\n%s", arg.c_str(), kUsage.c_str());
      return 2;
    }
  }
  try {
    const Config config = load_config(config_path());
    log::setup("gpuslice-hook", config.log);
    const auto state = hook::parse_state(read_stdin());
    hook::update_ldcache(state, folders);
    log::line("info", "container " + state.id + ": ld cache updated with " + join(folders, ", "));
    log::flush();
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gpuslice-hook update-ldcache: %s\n", e.what());
    log::line("error", std::string("update-ldcache: ") + e.what());
    return 1;
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "update-ldcache"))
    return update_ldcache_main(argc, argv);
  if (argc != 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage.c_str(), argc == 2 ? stdout : stderr);
    return argc == 2 ? 0 : 2;
  }
  const std::string stage = argv[1];
  if (stage != "createRuntime" && stage != "prestart" && stage != "createContainer" && stage != "poststop") {
    std::fprintf(stderr, "gpuslice-hook: unknown stage \"%s\"\n%s", stage.c_str(), kUsage.c_str());
    return 2;
  }
  try {
    const Config config = load_config(config_path());
    log::setup("gpuslice-hook", config.log);
    const std::string state_json = read_stdin();
    const auto state = hook::parse_state(state_json);
    if (stage == "poststop") {
      state::remove_container_dir(config.state_dir, state.id);
      log::line("info", "container " + state.id + ": state removed");
    } else if (stage != "createContainer") { // runc runs that inside the container: its pid is not the host's
      const auto prepared = hook::prepare_container(state, state_json, config, config_path());
      for (const auto &w : prepared.warnings)
        log::line("warn", "container " + state.id + ": " + w);
      for (const auto &n : prepared.notes)
        log::line("info", "container " + state.id + ": " + n);
      if (prepared.injected)
        log::line("info", "container " + state.id + " (" + stage + "): injected " + join(prepared.devices, ", "));
    }
    log::flush();
    return 0;
  } catch (const std::exception &e) {
    // Error (a refusal) or anything else (a bug): one line, never an abort.
    std::fprintf(stderr, "gpuslice-hook %s: %s\n", stage.c_str(), e.what());
    log::line("error", stage + ": " + e.what());
    return 1;
  }
}
