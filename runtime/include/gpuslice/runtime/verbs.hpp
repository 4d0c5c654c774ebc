// The verbs of gpuslice-runtime that do more than exec the low-level
// runtime (main.cpp dispatches, one file each): create and run
// (verb_create.cpp), delete (verb_delete.cpp), exec (verb_exec.cpp), and
// the verbs of a running container's life, which start its monitor again
// when it died (verb_monitored.cpp). Each throws Error, said by main in the
// runtime's log where containerd shows it; most end in an exec of the
// runtime and return only its status where it ran as a child.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/runtime/command_line.hpp"

#include <string>

namespace gpuslice::runtime {

struct Call {
  CommandLine &cl;
  const Config &config;
  std::string config_file;
  std::string runtime; // runc or crun, as found
};

// The create path over the bundle's config.json (create/create.hpp), then
// runc: exec'd (`create` without limits), exec'd with an init recorder
// beside it (with limits), or run as a child (`run`). A config.json that
// asks for no device is untouched.
int create_or_run(const Call &call);

// `delete` of a container with a state dir: its state goes once runc has
// deleted it (or at once when its processes are gone).
int delete_with_state(const Call &call);

// `exec --process FILE`: the CDI env of container `id` added to FILE where
// the process does not set a variable itself (FILE replaced atomically);
// returns how many were added. A container without state is left alone.
std::size_t add_cdi_env(const std::string &process_file, const std::string &state_dir, const std::string &id);

// start, state, ps, pause, resume, exec: a container with limits whose
// monitor died gets another before the verb goes on. A failure fails
// `start` (the container's processes would run unmonitored) and is logged
// for the others (a probe or `state` must not fail for it).
void check_monitor(const Call &call);

} // namespace gpuslice::runtime
