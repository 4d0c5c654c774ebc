#include "gpuslice/runtime/report.hpp"

#include "gpuslice/common/log.hpp"
#include "gpuslice/runtime/low_level.hpp"


#include <cstdio>

namespace gpuslice::runtime {

namespace {

void start_logging(const Config &config) {
  static bool started = false;
  if (!started)
    log::setup("gpuslice-runtime", config.log);
  started = true;
}

} // namespace

int fail(const CommandLine &cl, const Config &config, const std::string &message) {
  std::fprintf(stderr, "gpuslice-runtime: %s\n", message.c_str());
  write_runtime_log(cl.log_path, cl.log_format, "gpuslice: " + message);
  log_line(config, "error", message);
  return 1;
}

void log_line(const Config &config, const char *level, const std::string &message) {
  start_logging(config);
  log::line(level, message);
  log::flush();
}

void log_injected(const Config &config, const std::string &id, const create::Created &created) {
  const auto &warnings = created.warnings;
  if (warnings.empty() && !log::keeps(config.log, "info"))
    return;
  std::string line = "container " + id + ": injected ";
  for (std::size_t i = 0; i < created.devices.size(); ++i)
    line += (i ? "," : "") + created.devices[i];
  if (created.limits)
    line += " with GPU limits";
  if (warnings.empty() && created.notes.empty() && log::write_info_line("gpuslice-runtime", config.log, line))
    return;
  start_logging(config);
  for (const auto &w : warnings)
    log::line("warn", w);
  for (const auto &n : created.notes)
    log::line("info", n);
  log::line("info", line);
  log::flush();
}

} // namespace gpuslice::runtime
