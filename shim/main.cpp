// gpuslice-runtime: an OCI runtime command line in front of runc or crun.
// `create` and `run` get the container's CDI devices applied to the bundle;
// every other verb (and a container that asks for no device) is an exec of
// the low-level runtime with the arguments untouched.
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/shim/bundle.hpp"
#include "gpuslice/shim/command_line.hpp"
#include "gpuslice/shim/runtime.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>

using namespace gpuslice;

namespace {

int fail(const shim::CommandLine &cl, const std::string &message) {
  std::fprintf(stderr, "gpuslice-runtime: %s\n", message.c_str());
  shim::write_runtime_log(cl.log_path, cl.log_format, "gpuslice: " + message);
  spdlog::error("{}", message);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  const shim::CommandLine cl = shim::parse_command_line(argc, argv);
  const std::string config_file = config_path();
  Config config;
  try {
    config = load_config(config_file);
  } catch (const Error &e) {
    // delete, kill and state must keep working with a broken config, or
    // containers could never be cleaned up; only create refuses.
    if (cl.edits_bundle())
      return fail(cl, e.message());
  }

  std::string runtime;
  try {
    runtime = shim::find_runtime(config);
  } catch (const Error &e) {
    return fail(cl, e.message());
  }

  if (cl.edits_bundle()) {
    log::setup("gpuslice-runtime", config.log);
    try {
      const auto edit = shim::prepare_bundle(cl.bundle, config, config_file);
      if (edit.written) {
        std::string devices;
        for (const auto &d : edit.devices)
          devices += (devices.empty() ? "" : ",") + d;
        spdlog::info("container {}: injected {}", cl.container_id, devices);
      }
    } catch (const Error &e) {
      return fail(cl, "cannot create container " + quote(cl.container_id) + ": " + e.message());
    }
    spdlog::shutdown();
  }

  try {
    shim::exec_runtime(runtime, cl.args);
  } catch (const Error &e) {
    return fail(cl, e.message());
  }
}
