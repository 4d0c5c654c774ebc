// A process as the state records name it: its pid and its start time, so
// that a pid the kernel has given to another process since is not taken
// for the same one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuslice::state {

// pid and start time (clock ticks since boot, field 22 of /proc/PID/stat).
struct ProcessId {
  int pid = 0;
  uint64_t start_time = 0;
  bool operator==(const ProcessId &) const = default;
};

// The process running as `pid` now; nullopt when there is none (or a zombie).
std::optional<ProcessId> process_id(int pid);
// Whether that very process still runs.
bool process_alive(const ProcessId &p);

// "PID STARTTIME", as gpuslice-shim's --creator passes it, and back
// (exactly that, a pid above 0; else nullopt).
std::string to_text(const ProcessId &p);
std::optional<ProcessId> parse_process_id(std::string_view text);

} // namespace gpuslice::state
