#include "gpuslice/state/process.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <vector>

namespace gpuslice::state {

std::optional<ProcessId> process_id(int pid) {
  if (pid <= 0)
    return std::nullopt;
  // This process's own, asked for by each record it writes of itself: read
  // once. A forked child has another pid, so it reads its own.
  static std::optional<ProcessId> self;
  const bool is_self = pid == static_cast<int>(::getpid());
  if (is_self && self && self->pid == pid)
    return self;
  // No exception for a process that is gone, the usual answer (delete,
  // stale collection): the first throw in a static binary sets up the
  // unwinder.
  const UniqueFd f(::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
  if (!f)
    return std::nullopt;
  std::string stat;
  try {
    // a file of /proc has no size: read in chunks
    stat = fs::read_stat_fd(f.get(), (struct stat){}, "/proc/PID/stat", 4096);
  } catch (const Error &) {
    return std::nullopt;
  }
  // "PID (COMM) STATE PPID ...": COMM may hold anything, ')' included, so
  // fields are counted from the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos)
    return std::nullopt;
  std::vector<std::string> fields = split(std::string_view(stat).substr(close + 1), ' ', EmptyParts::skip);
  // fields[0] is field 3 (state); the start time is field 22.
  if (fields.size() < 20 || fields[0] == "Z" || fields[0] == "X")
    return std::nullopt; // a zombie has ended
  ProcessId p{pid, 0};
  std::from_chars(fields[19].data(), fields[19].data() + fields[19].size(), p.start_time);
  if (is_self)
    self = p;
  return p;
}

bool process_alive(const ProcessId &p) {
  auto now = process_id(p.pid);
  return now && now->start_time == p.start_time;
}

std::string to_text(const ProcessId &p) { return std::to_string(p.pid) + " " + std::to_string(p.start_time); }

std::optional<ProcessId> parse_process_id(std::string_view text) {
  const auto space = text.find(' ');
  if (space == std::string_view::npos)
    return std::nullopt;
  ProcessId p;
  const std::string_view pid = text.substr(0, space), start = text.substr(space + 1);
  auto [pe, pec] = std::from_chars(pid.data(), pid.data() + pid.size(), p.pid);
  auto [se, sec] = std::from_chars(start.data(), start.data() + start.size(), p.start_time);
  if (pec != std::errc() || pe != pid.data() + pid.size() || p.pid <= 0 || sec != std::errc() ||
      se != start.data() + start.size())
    return std::nullopt;
  return p;
}

} // namespace gpuslice::state
