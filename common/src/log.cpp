#include "gpuslice/common/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

#include "gpuslice/common/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

namespace gpuslice::log {

namespace {
// UTC, marked as such: a line's time must not cost the time zone's file
// (glibc reads and parses it on the first conversion, gmtime's too):
// write_info_line formats its stamp itself (format_utc), the same as this.
constexpr const char *kPattern = "%Y-%m-%dT%H:%M:%S.%eZ %n[%P] %l: %v";

constexpr std::size_t kUtcTimestampSize = 25; // its 24 characters and a NUL

char *two_digits(char *p, long long v) {
  p[0] = (char)('0' + v / 10 % 10);
  p[1] = (char)('0' + v % 10);
  return p + 2;
}

// Years 0 to 9999 (the seconds of 0000-01-01 to 9999-12-31 since the epoch).
void format_utc(long long sec, long nsec, char out[kUtcTimestampSize]) {
  // Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
  // civil_from_days): 400-year eras that start on 0000-03-01, so that a
  // leap day ends its year.
  long long days = sec / 86400, second = sec % 86400;
  if (second < 0) {
    second += 86400;
    --days;
  }
  const long long z = days + 719468;
  const long long era = (z >= 0 ? z : z - 146096) / 146097;
  const long long day_of_era = z - era * 146097;
  const long long year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const long long day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const long long month_from_march = (5 * day_of_year + 2) / 153;
  const long long day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
  const long long month = month_from_march < 10 ? month_from_march + 3 : month_from_march - 9;
  const long long year = year_of_era + era * 400 + (month <= 2);
  char *p = two_digits(two_digits(out, year / 100), year % 100);
  *p++ = '-';
  p = two_digits(p, month);
  *p++ = '-';
  p = two_digits(p, day);
  *p++ = 'T';
  p = two_digits(p, second / 3600);
  *p++ = ':';
  p = two_digits(p, second / 60 % 60);
  *p++ = ':';
  p = two_digits(p, second % 60);
  *p++ = '.';
  const long ms = nsec / 1000000;
  *p++ = (char)('0' + ms / 100);
  p = two_digits(p, ms % 100);
  *p++ = 'Z';
  *p = '\0';
}

void put_digits(std::string &out, long long value, int width) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 || n < width);
  while (n > 0)
    out += digits[--n];
}

// The file `program` logs to with target "file", its directory made.
std::string log_file(const std::string &program, const Options &options) {
  ::mkdir(options.directory.c_str(), 0755);
  return file_path(program, options);
}
} // namespace

std::string file_path(const std::string &program, const Options &options) {
  return options.directory + "/" + program + ".log";
}

std::string utc_timestamp(const struct timespec &t) {
  char stamp[kUtcTimestampSize];
  format_utc(t.tv_sec, t.tv_nsec, stamp);
  return stamp;
}

void setup(const std::string &program, const Options &options) {
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (options.target == "file") {
      logger = spdlog::basic_logger_mt(program, log_file(program, options));
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
  logger->set_pattern(kPattern, spdlog::pattern_time_type::utc);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

bool write_info_line(const std::string &program, const Options &options, std::string_view message) {
  if (options.target != "file")
    return false;
  // As spdlog's file sink opens it (fopen "ab").
  const UniqueFd fd(::open(log_file(program, options).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666));
  if (!fd)
    return false;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::string line = utc_timestamp(now);
  line.reserve(line.size() + 32 + program.size() + message.size());
  line += ' ';
  line += program;
  line += '[';
  put_digits(line, ::getpid(), 1);
  line += "] info: ";
  line += message;
  line += '\n';
  // One write: O_APPEND keeps lines of processes that log at once whole.
  (void)!::write(fd.get(), line.data(), line.size());
  return true;
}

bool keeps(const Options &options, const std::string &level) {
  const auto threshold = spdlog::level::from_str(options.level);
  return threshold != spdlog::level::off && spdlog::level::from_str(level) >= threshold;
}

void line(std::string_view level, std::string_view message) {
  spdlog::log(spdlog::level::from_str(std::string(level)), "{}", message);
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
