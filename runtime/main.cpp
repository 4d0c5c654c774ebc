// gpuslice-runtime: an OCI runtime command line in front of runc or crun.
// Most calls never get here: the front (front/front.h) execs the runtime
// before the C library starts when this program would do nothing else.
// What does get here: the config read and its record for the front kept,
// then the verb (verbs.hpp), or the runtime exec'd with the arguments
// untouched.
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/log.hpp"
#include "gpuslice/runtime/command_line.hpp"
#include "gpuslice/runtime/front_record.hpp"
#include "gpuslice/runtime/low_level.hpp"
#include "gpuslice/runtime/report.hpp"
#include "gpuslice/runtime/verbs.hpp"
#include "gpuslice/state/container_dir.hpp"

#include "front/front.h"

#include <cstdio>
#include <unistd.h>

using namespace gpuslice;
using namespace gpuslice::runtime;

namespace {

int run(CommandLine &cl) {
  const std::string config_file = config_path();
  Config config;
  try {
    const std::optional<std::string> config_text = read_config_text(config_file);
    if (config_text)
      config = parse_config(*config_text, config_file);
    // What the front may rely on at the next calls.
    save_front_record(config_file, config_text, config, GS_FRONT_RECORD_DIR);
  } catch (const Error &e) {
    // delete, kill and state must keep working with a broken config, or
    // containers could never be cleaned up; only create refuses.
    if (cl.edits_bundle())
      return fail(cl, config, e.message());
  }
  Call call{cl, config, config_file, {}};
  try {
    call.runtime = find_runtime(config);
  } catch (const Error &e) {
    return fail(cl, config, e.message());
  }
  const std::string &id = cl.container_id;
  std::string doing;
  try {
    if (cl.edits_bundle()) {
      doing = "cannot create container " + quote(id) + ": ";
      return create_or_run(call);
    }
    if (cl.deletes() && !id.empty() && state::container_dir_exists(config.state_dir, id)) {
      doing = "cannot delete container " + quote(id) + ": ";
      return delete_with_state(call);
    }
    if (cl.checks_monitor() && !id.empty()) {
      doing = "cannot start container " + quote(id) + ": ";
      check_monitor(call);
    }
    if (!cl.process_file.empty() && !id.empty()) {
      doing = "cannot exec in container " + quote(id) + ": ";
      add_cdi_env(cl.process_file, config.state_dir, id);
    }
    doing.clear();
    exec_runtime(call.runtime, cl.args);
  } catch (const Error &e) {
    return fail(cl, config, doing + e.message());
  }
}

} // namespace

int main(int argc, char **argv) {
  CommandLine cl = parse_command_line(argc, argv);
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
