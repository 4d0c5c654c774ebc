// The runc-compatible command line gpuslice-runtime receives from
// containerd-shim-runc-v2 (or a person): global flags, a verb, the verb's own
// flags. Only what `create` and `run` need is interpreted; the argument vector
// itself is always passed on to the low-level runtime unchanged.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

namespace gpuslice::runtime {

struct CommandLine {
  std::vector<std::string> args; // argv[1..], untouched
  std::string verb;              // "" when none was found (e.g. --version)
  std::size_t verb_index = 0;    // index of the verb in args
  std::string bundle;            // create/run: --bundle/-b, else ""
  std::string pid_file;          // create/run: --pid-file, else ""
  std::string container_id;      // create/run/delete and checks_monitor() verbs: the positional argument
  std::string process_file;      // exec: --process/-p, else ""
  std::string log_path;          // global --log
  std::string log_format;        // global --log-format (text or json)
  // The first argument read with doubt (a flag runc's parser does not know
  // to gpuslice, a missing value; the verb when there is not exactly one
  // container id), or "" when none: what else it read may then be wrong.
  std::string doubt;

  // Only create and run edit the bundle; delete cleans up after runc; exec
  // gets the CDI env added to its process file; every other verb is a plain
  // exec.
  bool edits_bundle() const { return verb == "create" || verb == "run"; }
  bool deletes() const { return verb == "delete"; }
  // Verbs of a running container's life, which restart its monitor when it
  // is gone (monitor_start.hpp); container_id is set for them too.
  bool checks_monitor() const {
    return verb == "start" || verb == "state" || verb == "exec" || verb == "ps" || verb == "pause" || verb == "resume";
  }

  // Adds "--pid-file=PATH" right after the verb.
  void add_pid_file(const std::string &path);

  // The global flags (--root, --log, ...), then `verb_args`: another call
  // of the runtime on the same state.
  std::vector<std::string> with_global_flags(std::initializer_list<std::string> verb_args) const;
};

// Read the way runc reads it: Go's flag syntax ("-bundle x", "--bundle=x"
// and "-b x" alike). Never throws: an argument vector it does not
// understand is still passed on (a create or run is refused: create.hpp's
// caller, verb_create.cpp).
CommandLine parse_command_line(int argc, const char *const *argv);

} // namespace gpuslice::runtime
