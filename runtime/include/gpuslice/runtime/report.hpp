// What gpuslice-runtime says, and where: its log (set up only when there is
// something to log: a container that asks for no GPU must not pay for
// opening log files), and, for a refusal, stderr and the runtime log file
// containerd reads (--log), in runc's format.
#pragma once

#include "gpuslice/common/config.hpp"
#include "gpuslice/create/create.hpp"
#include "gpuslice/runtime/command_line.hpp"

#include <string>
#include <vector>

namespace gpuslice::runtime {

// A refusal: one line on stderr, in --log, and in gpuslice's log. Returns
// the exit status to give (1).
int fail(const CommandLine &cl, const Config &config, const std::string &message);

// A line of gpuslice's log at `level` (warn, error), written out at once:
// the caller execs next.
void log_line(const Config &config, const char *level, const std::string &message);

// A create's line: the devices injected, its warnings and notes before it.
// The usual create logs this one line: spdlog is set up only for more.
void log_injected(const Config &config, const std::string &id, const create::Created &created);

} // namespace gpuslice::runtime
