// `create` and `run` (verbs.hpp): the create path over the bundle
// (create/create.hpp), then runc.
#include "gpuslice/runtime/verbs.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/create/create.hpp"
#include "gpuslice/runtime/init_recorder.hpp"
#include "gpuslice/runtime/low_level.hpp"
#include "gpuslice/runtime/report.hpp"


namespace gpuslice::runtime {

namespace {

// A create killed half-way (kill -9) left its temporary config.json. Every
// create or run tidies once: before runc runs, or as it fails; a create
// whose init recorder takes the exec leaves it to the recorder, off the
// container's critical path.
class BundleTidying {
public:
  explicit BundleTidying(std::string bundle) : bundle_(std::move(bundle)) {}
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
    if (!done_)
      tidy_bundle(bundle_);
    done_ = true;
  }
  void leave_to_recorder() { done_ = true; }

private:
  std::string bundle_;
  bool done_ = false;
};

// `run` of a container with state: runc runs as a child; `run` deletes the
// container when it ends, and its state goes then too (still there when
// detached: its init lives).
int run_with_state(const Call &call) {
  const int status = run_runtime(call.runtime, call.cl.args);
  state::remove_if_stale(call.config.state_dir, call.cl.container_id);
  return status;
}

} // namespace

void tidy_bundle(const std::string &bundle) {
  fs::remove_stale_temporaries((bundle.empty() ? std::string(".") : bundle) + "/config.json");
}

int create_or_run(const Call &call) {
  CommandLine &cl = call.cl;
  const bool run = cl.verb == "run";
  // Which bundle runc will use, and so which config.json to edit, must be
  // certain: on any doubt nothing is edited and runc is not run.
  if (!cl.doubt.empty())
    throw Error("cannot read " + cl.verb + "'s command line as runc does, at " + quote(cl.doubt) +
                " (a flag gpuslice does not know, a flag without its value, or not exactly one container id): "
                "refusing to " + cl.verb + " a container whose bundle it cannot be sure of");
  BundleTidying tidying(cl.bundle);
  create::BundleCreate request{cl.bundle, cl.container_id, cl.pid_file, run};
  auto created = create::create_bundle(request, call.config, call.config_file);
  if (!created) { // config.json is not even rewritten
    tidying.now();
    exec_runtime(call.runtime, cl.args);
  }
  if (request.pid_file != cl.pid_file)
    cl.add_pid_file(request.pid_file);
  log_injected(call.config, cl.container_id, *created);
  // Nothing after the commit but the exec.
  if (run) {
    tidying.now();
    created->dir = {}; // not held open while runc runs: the container's life
    return run_with_state(call);
  }
  if (!created->monitor) { // no limits: nothing to wait for
    tidying.now();
    exec_create(call.runtime, cl, call.config, std::move(created->dir));
  }
  tidying.leave_to_recorder();
  exec_recording_init(call.runtime, cl, call.config, std::move(created->dir), request.pid_file, *created->monitor);
  tidying.now(); // no recorder (a kernel before 5.3): runc as a child
  return create_recording_init(call.runtime, cl, call.config, request.pid_file, std::move(*created->monitor));
}

} // namespace gpuslice::runtime
