// `delete` of a container with state (verbs.hpp).
#include "gpuslice/runtime/verbs.hpp"

#include "gpuslice/runtime/low_level.hpp"
#include "gpuslice/state/container_dir.hpp"

namespace gpuslice::runtime {

int delete_with_state(const Call &call) {
  const CommandLine &cl = call.cl;
  // A container whose processes are gone (the usual delete, after the task
  // exited) has stale state: removed first, then runc is exec'd.
  if (state::remove_if_stale(call.config.state_dir, cl.container_id))
    exec_runtime(call.runtime, cl.args);
  // Otherwise the state goes only once runc has deleted the container: a
  // refused delete (running, no --force) keeps the state its processes
  // use, and the same id may be a live container's under another runtime
  // root.
  const int status = run_runtime(call.runtime, cl.args, ChildEnds::on_its_own);
  if (status == 0)
    state::remove_if_stale(call.config.state_dir, cl.container_id);
  return status;
}

} // namespace gpuslice::runtime
