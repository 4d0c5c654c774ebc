// gpuslice-hook STAGE: the OCI hook runc runs for GPU containers, with the
// container state on stdin. createRuntime (prestart under podman / CRI-O)
// sets up the container's state dir, poststop removes it; prestart, which
// only hooks.d runs, first refuses a GPU container gpuslice-runtime did not
// create (hook/unprepared.hpp). It runs as root on
// the host with the environment gpuslice-runtime gave it, never the
// container's.
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/hook/state.hpp"
#include "gpuslice/hook/unprepared.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

using namespace gpuslice;

namespace {

const std::string kUsage =
    std::string("usage: gpuslice-hook createRuntime|prestart|createContainer|poststop < container-state.json\n"
                "  the OCI hook gpuslice-runtime adds to GPU containers; reads the OCI container state on stdin\n"
                "  createRuntime, prestart: record the container's init in <state-dir>/containers/<id>/\n"
                "    (0700, created when missing)\n"
                "  prestart (podman's and CRI-O's hooks.d): first refuse a container that requests CDI devices\n"
                "    but was not created through gpuslice-runtime (the hook does not inject devices itself)\n"
                "  poststop: remove that directory\n"
                "  config: $GPUSLICE_CONFIG or ") +
    kDefaultConfigPath + " ([runtime] state-dir)\n";

// The container state, bounded: a hook's stdin is the runtime's, but nothing
// read from outside is unbounded.
std::string read_stdin() { return fs::read_fd(0, "the container state on stdin", 1 << 20); }

} // namespace

int main(int argc, char **argv) {
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
    const auto state = hook::parse_state(read_stdin());
    if (stage == "poststop") {
      state::remove_container_dir(config.state_dir, state.id);
      spdlog::info("container {}: state removed", state.id);
    } else {
      if (stage == "prestart") // podman's and CRI-O's hooks.d: maybe without gpuslice-runtime
        hook::refuse_unprepared(state, config);
      const auto dir = state::record_init(config.state_dir, state.id, state.pid);
      spdlog::info("container {} ({}): init {} recorded in {}", state.id, stage, state.pid, dir.path);
    }
    spdlog::shutdown();
    return 0;
  } catch (const std::exception &e) {
    // Error (a refusal) or anything else (a bug): one line, never an abort.
    std::fprintf(stderr, "gpuslice-hook %s: %s\n", stage.c_str(), e.what());
    spdlog::error("{}: {}", stage, e.what());
    return 1;
  }
}
