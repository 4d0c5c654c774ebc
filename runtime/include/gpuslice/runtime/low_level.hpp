// Finding and running the low-level OCI runtime (runc, crun).
#pragma once

#include "gpuslice/common/config.hpp"

#include <string>
#include <vector>

namespace gpuslice::runtime {

// The first of config.runtimes that is executable: an absolute path as is, a
// name searched in $PATH (a standard PATH when unset), as the front looks
// for it (front/front.c's gs_find_runtime). Never gpuslice-runtime
// itself, whatever it is installed as. Throws Error listing what was tried.
std::string find_runtime(const Config &config);

// execv's vector: the runtime, then args, then NULL (pointing into both).
std::vector<char *> argv_of(const std::string &runtime, const std::vector<std::string> &args);

// Replaces the process with `runtime args...`; returns only on failure
// (throws Error).
[[noreturn]] void exec_runtime(const std::string &runtime, const std::vector<std::string> &args);

// Runs `runtime args...` as a child with our stdio and returns its exit
// status (128 + signal when killed). Throws Error when it cannot start.
// ChildEnds::with_parent: the child is killed when this process dies (a
// create whose caller gave up must not finish unseen).
enum class ChildEnds { on_its_own, with_parent };
int run_runtime(const std::string &runtime, const std::vector<std::string> &args,
                ChildEnds ends = ChildEnds::on_its_own);

// A failed create must be visible to containerd, whose shim reads only the
// runtime's --log file: one line in the format runc itself writes there
// (JSON {"level","msg","time"} for --log-format json, logfmt otherwise).
void write_runtime_log(const std::string &log_path, const std::string &log_format, const std::string &message);

} // namespace gpuslice::runtime
