#include "gpuslice/common/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

#include <sys/stat.h>
#include <syslog.h>

namespace gpuslice::log {

void setup(const std::string &program, const Options &options) {
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (options.target == "file") {
      ::mkdir(options.directory.c_str(), 0755);
      logger = spdlog::basic_logger_mt(program, options.directory + "/" + program + ".log");
    } else if (options.target == "syslog") {
      logger = spdlog::syslog_logger_mt(program, program, LOG_PID, LOG_DAEMON);
    }
  } catch (const std::exception &) {
    logger.reset();
  }
  if (!logger) {
    spdlog::drop(program);
    logger = spdlog::stderr_logger_mt(program);
  }
  logger->set_level(spdlog::level::from_str(options.level));
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %n[%P] %l: %v");
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

bool keeps(const Options &options, const std::string &level) {
  const auto threshold = spdlog::level::from_str(options.level);
  return threshold != spdlog::level::off && spdlog::level::from_str(level) >= threshold;
}

void flush() {
  if (auto *logger = spdlog::default_logger_raw())
    logger->flush();
}

void close() {
  flush();
  spdlog::drop_all();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("closed")); // no sink
}

} // namespace gpuslice::log
