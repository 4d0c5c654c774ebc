// gpuslice-runtime: an OCI runtime command line in front of runc or crun.
// `create` and `run` get the container's CDI devices applied to the bundle
// (a create with devices execs runc; for a container with limits a second
// process records the init once runc has exited, and starts its monitor:
// runtime/lifecycle.hpp); `delete` of a container that has gpuslice state (and
// `run` of one) removes that state; `exec` gets the container's CDI env;
// start, state, exec, ps, pause and resume start the container's monitor
// again when it died; every other verb (and a container that asks for no
// device) is an exec of the low-level runtime with the arguments untouched.
// Most of those execs happen before main, in the front
// (fast_path/front.h), where the record this program saves shows that it
// would do nothing else.
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/create/bundle.hpp"
#include "gpuslice/runtime/command_line.hpp"
#include "gpuslice/create/exec_env.hpp"
#include "gpuslice/runtime/front_record.hpp"
#include "gpuslice/runtime/lifecycle.hpp"
#include "gpuslice/create/monitor_start.hpp"
#include "gpuslice/create/requests.hpp"
#include "gpuslice/runtime/low_level.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "front/front.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <unistd.h>
#include <cstring>

using namespace gpuslice;

namespace {

// Logging is set up only when there is something to log: a container that
// asks for no GPU must not pay for opening log files.
void start_logging(const Config &config) {
  static bool started = false;
  if (!started)
    log::setup("gpuslice-runtime", config.log);
  started = true;
}

int fail(const runtime::CommandLine &cl, const Config &config, const std::string &message) {
  std::fprintf(stderr, "gpuslice-runtime: %s\n", message.c_str());
  runtime::write_runtime_log(cl.log_path, cl.log_format, "gpuslice: " + message);
  start_logging(config);
  spdlog::error("{}", message);
  log::flush();
  return 1;
}

// create::tidy_bundle of `bundle` once: now(), or on the way out. No bundle:
// nothing to tidy.
class BundleTidying {
public:
  explicit BundleTidying(std::optional<std::string> bundle) : bundle_(std::move(bundle)) {}
  BundleTidying(const BundleTidying &) = delete;
  BundleTidying &operator=(const BundleTidying &) = delete;
  ~BundleTidying() {
    try {
      now();
    } catch (const std::exception &) {
      // Out of memory: the next create tidies.
    }
  }
  void now() {
    if (bundle_)
      create::tidy_bundle(*bundle_);
    bundle_.reset();
  }

private:
  std::optional<std::string> bundle_;
};

} // namespace

int run(runtime::CommandLine &cl) {
  const std::string config_file = config_path();
  Config config;
  std::optional<std::string> config_text;
  try {
    config_text = read_config_text(config_file);
    if (config_text)
      config = parse_config(*config_text, config_file);
    // What the front may rely on at the next calls.
    runtime::save_front_record(config_file, config_text, config, GS_FRONT_RECORD_DIR);
  } catch (const Error &e) {
    // delete, kill and state must keep working with a broken config, or
    // containers could never be cleaned up; only create refuses.
    if (cl.edits_bundle())
      return fail(cl, config, e.message());
  }

  std::string runtime;
  try {
    runtime = runtime::find_runtime(config);
  } catch (const Error &e) {
    return fail(cl, config, e.message());
  }

  if (cl.deletes() && !cl.container_id.empty() && state::container_dir_exists(config.state_dir, cl.container_id)) {
    try {
      return runtime::delete_with_state(runtime, cl, config);
    } catch (const Error &e) {
      return fail(cl, config, "cannot delete container " + quote(cl.container_id) + ": " + e.message());
    }
  }

  if (cl.checks_monitor() && !cl.container_id.empty()) {
    // A container with limits must not run on without its monitor: one
    // that died is started again, and said. A failure fails `start` (the
    // container's processes would run unmonitored); for any other verb it
    // is logged, and the verb goes on (a probe or `state` must not fail
    // for it).
    const bool starting = cl.verb == "start";
    try {
      if (auto restarted = create::restart_monitor_if_gone(
              config, cl.container_id, starting ? create::Unmonitored::refuse : create::Unmonitored::tolerate)) {
        start_logging(config);
        spdlog::warn("{}", *restarted);
        log::flush(); // before the exec
      }
    } catch (const Error &e) {
      if (starting)
        return fail(cl, config, "cannot start container " + quote(cl.container_id) + ": " + e.message());
      start_logging(config);
      spdlog::error("{}", e.message());
      log::flush();
    }
  }

  if (!cl.process_file.empty() && !cl.container_id.empty()) {
    try {
      create::add_cdi_env(cl.process_file, config.state_dir, cl.container_id);
    } catch (const Error &e) {
      return fail(cl, config, "cannot exec in container " + quote(cl.container_id) + ": " + e.message());
    }
  }

  // A create killed half-way (kill -9) left its temporary config.json.
  // Every create or run tidies once: before runc runs, or as it fails; a
  // create whose init recorder takes the exec leaves it to the recorder,
  // off the container's critical path.
  BundleTidying tidying(cl.edits_bundle() ? std::optional<std::string>(cl.bundle) : std::nullopt);
  create::BundleEdit edit;
  if (cl.edits_bundle()) {
    try {
      create::CreateRequest request{cl.bundle, cl.container_id, cl.pid_file};
      request.defer_monitor = cl.verb == "create";
      edit = create::prepare_bundle(request, config, config_file,
                                  cl.verb == "run" ? create::HookMode::add : create::HookMode::none);
      if (request.pid_file != cl.pid_file)
        cl.add_pid_file(request.pid_file);
      if (edit.written && (!edit.warnings.empty() || log::keeps(config.log, "info"))) {
        std::string line = "container " + cl.container_id + ": injected ";
        for (std::size_t i = 0; i < edit.devices.size(); ++i)
          line += (i ? "," : "") + edit.devices[i];
        if (edit.shared)
          line += " with GPU limits";
        // The usual create logs this one line: spdlog is set up only for more.
        if (!edit.warnings.empty() || !log::write_info_line("gpuslice-runtime", config.log, line)) {
          start_logging(config);
          for (const auto &w : edit.warnings)
            spdlog::warn("{}", w);
          spdlog::info("{}", line);
          log::flush();
        }
      }
    } catch (const Error &e) {
      return fail(cl, config, "cannot create container " + quote(cl.container_id) + ": " + e.message());
    }
  }

  try {
    if (cl.verb == "create" && edit.written && !edit.shared) { // no limits: nothing to wait for
      tidying.now();
      runtime::exec_create(runtime, cl, config, std::move(edit.state_dir));
    }
    if (cl.verb == "create" && edit.written) { // limits: commit made the monitor ready
      if (!edit.monitor)
        throw Error("internal error: no monitor made ready for container " + quote(cl.container_id));
      runtime::exec_recording_init(runtime, cl, config, std::move(edit.state_dir), cl.pid_file, *edit.monitor);
      tidying.now(); // no recorder (a kernel before 5.3): runc as a child
      return runtime::create_recording_init(runtime, cl, config, cl.pid_file, std::move(*edit.monitor));
    }
    tidying.now();
    edit.state_dir = {}; // not held open while runc runs (`run`: the container's life)
    if (cl.verb == "run" && edit.written)
      return runtime::run_with_state(runtime, cl, config);
    runtime::exec_runtime(runtime, cl.args);
  } catch (const Error &e) {
    return fail(cl, config, e.message());
  }
}

int main(int argc, char **argv) {
  runtime::CommandLine cl = runtime::parse_command_line(argc, argv);
  int status;
  try {
    status = run(cl);
  } catch (const std::exception &e) {
    // A bug, not a refusal: still one line where containerd shows it.
    status = fail(cl, Config{}, std::string("internal error: ") + e.what());
  }
  // Out without the destructors of static objects (as mold does): every
  // call is on a container's critical path, and the kernel frees the rest.
  log::flush();
  std::fflush(nullptr);
  ::_exit(status);
}
