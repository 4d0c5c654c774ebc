// Logging for host-side binaries. A hook's stderr is often lost under runc, so
// binaries log to a file under /var/log/gpuslice/ (or syslog); errors that fail
// a container are additionally printed as one line on stderr by the front end.
#pragma once

// No spdlog here: it is the heaviest header of the build (fmt compiled in,
// header-only) and most files that read the config never log.
#include <string>
#include <string_view>

#include <time.h>

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

// The file `program` logs to with target "file".
std::string file_path(const std::string &program, const Options &options);

// A line's time as setup's logger stamps it, "2026-12-06T09:01:02.345Z"
// (UTC, milliseconds cut, not rounded), without glibc's time zone code.
std::string utc_timestamp(const struct timespec &t);

// One info line in `program`'s log file, as setup's logger writes it
// (the same pattern), without setting spdlog up: for a process whose only
// line it is (gpuslice-runtime's create of a GPU container, with the
// default level): its logger, formatter and file stream would be most of
// the work such a create does itself. False, and
// nothing written, when options do not log to a file or the file cannot
// be opened: the caller logs through spdlog then (setup's fallback). A
// failed write loses the line, as spdlog's would.
bool write_info_line(const std::string &program, const Options &options, std::string_view message);

// One line at `level` ("info", "warn", "error", ...) through the default
// logger (setup's). The one way the programs log: spdlog stays in log.cpp.
void line(std::string_view level, std::string_view message);

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
