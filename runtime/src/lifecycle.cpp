#include "gpuslice/runtime/lifecycle.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/create/monitor_start.hpp"
#include "gpuslice/runtime/low_level.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <unistd.h>

namespace gpuslice::runtime {

namespace {

int init_pid_from(const std::string &pid_file) {
  const auto pid = shim::read_pid_file(pid_file);
  if (!pid)
    throw Error("the runtime's pid file " + quote(pid_file) + " is missing or holds no pid");
  return *pid;
}

} // namespace

void exec_create(const std::string &runtime, const CommandLine &cl, const Config &config,
                 state::ContainerDir state_dir) {
  const auto me = state::process_id(static_cast<int>(::getpid()));
  state_dir = {}; // closed: nothing holds it open while the container lives
  try {
    exec_runtime(runtime, cl.args);
  } catch (const Error &) {
    state::remove_container_dir(config.state_dir, cl.container_id, me);
    throw;
  }
}

int create_recording_init(const std::string &runtime, const CommandLine &cl, const Config &config,
                          const std::string &pid_file, create::PendingMonitor monitor) {
  const auto me = state::process_id(static_cast<int>(::getpid()));
  const int status = run_runtime(runtime, cl.args, ChildEnds::with_parent);
  if (status != 0) {
    // the dir this process made, not one a later create of the id made since
    state::remove_container_dir(config.state_dir, cl.container_id, me);
    return status;
  }
  try {
    const int init_pid = init_pid_from(pid_file);
    // Under the dir's lock from before the record: a restart
    // (monitor_start.hpp) that saw the init but no monitor yet would start a
    // second one.
    const UniqueFd locked = state::lock_container_dir(config.state_dir, cl.container_id);
    const state::ContainerDir dir = state::record_init(config.state_dir, cl.container_id, init_pid);
    create::launch_monitor(std::move(monitor), dir);
  } catch (const Error &e) {
    (void)run_runtime(runtime, cl.with_global_flags({"delete", "--force", cl.container_id}), ChildEnds::with_parent);
    state::remove_container_dir(config.state_dir, cl.container_id, me);
    throw Error("cannot record the init of container " + quote(cl.container_id) +
                " or start its monitor (deleted again): " + e.message());
  }
  return 0;
}

int delete_with_state(const std::string &runtime, const CommandLine &cl, const Config &config) {
  if (state::remove_if_stale(config.state_dir, cl.container_id))
    exec_runtime(runtime, cl.args);
  const int status = run_runtime(runtime, cl.args, ChildEnds::on_its_own);
  // Only once the container is gone: the same id may be a live container's
  // under another runtime root.
  if (status == 0)
    state::remove_if_stale(config.state_dir, cl.container_id);
  return status;
}

int run_with_state(const std::string &runtime, const CommandLine &cl, const Config &config) {
  const int status = run_runtime(runtime, cl.args);
  state::remove_if_stale(config.state_dir, cl.container_id);
  return status;
}

} // namespace gpuslice::runtime
