// Logging for host-side binaries. A hook's stderr is often lost under runc, so
// binaries log to a file under /var/log/gpuslice/ (or syslog); errors that fail
// a container are additionally printed as one line on stderr by the front end.
#pragma once

// No spdlog here: it is the heaviest header of the build (fmt compiled in,
// header-only) and most files that read the config never log.
#include <string>

namespace gpuslice::log {

struct Options {
  std::string level = "info";          // trace, debug, info, warn, error, off
  std::string target = "file";         // file, syslog, stderr
  std::string directory = "/var/log/gpuslice";

  bool operator==(const Options &) const = default;
};

// Installs the default spdlog logger for `program`. Never throws: a log file
// that cannot be opened falls back to stderr at warn level, because failing a
// container over a log file would be worse than losing its info lines.
void setup(const std::string &program, const Options &options);

// Whether `options` keep a message of `level` ("info", "warn", ...): a line
// that would be dropped is no reason to open the log (a GPU container's
// create runs on every pod's critical path).
bool keeps(const Options &options, const std::string &level);

// Writes out what the default logger holds, before an exec or an exit. Not
// spdlog::shutdown(): that drops the default logger, and a later line (an
// error after an info) would then go through a null logger.
void flush();

// Flushes the default logger and lets it go, its file or socket closed;
// later lines go nowhere. For a process that is about to close every
// descriptor it did not name (a monitor detaching in place): a logger
// left behind would write to a number that something else gets next.
void close();

} // namespace gpuslice::log
