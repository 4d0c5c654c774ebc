// A container's record, state.json in its state dir (names.h): the one file
// that says whose the dir is and what later calls need of the create.
//
// Why one file: the create writes it whole before the dir gets its name, and
// every later change (the init recorded, the creation handed over, a
// monitor started, a failure) replaces it whole by a rename under the dir's
// lock, so a reader sees one consistent record, never half of a change.
//
// The record has a format number so that a package upgrade can leave
// running containers alone: this build reads what an older one wrote
// (format 2 and 1 kept each fact in a file of its own; read_record reads
// those too, and the first write replaces them by state.json), and
// refuses, naming both numbers, a format newer than its own (a downgrade
// under running containers).
#pragma once

#include "gpuslice/state/process.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::state {

// The format this build writes and the newest it reads.
inline constexpr int kStateFormat = 3;

enum class Status {
  created, // committed by the create; its init is the one runc's pid file names
  running, // its init recorded
  failed,  // the create failed after it returned (the container deleted again): `start` says why
};
std::string_view status_name(Status s);

// The container's SELinux labels (selinux/labeler.hpp), for what a monitor
// started again makes.
struct Labels {
  std::string file, socket;
  bool operator==(const Labels &) const = default;
};

struct Record {
  int format = kStateFormat; // as read: below kStateFormat, the files of an older gpuslice
  Status status = Status::created;
  // The process creating the container (gpuslice-runtime, then runc under
  // its pid), or the one it handed the creation over to (the init recorder).
  std::optional<ProcessId> creator;
  std::optional<ProcessId> init; // the container's init, once recorded
  // Without limits nothing of gpuslice's waits for the runtime: its init is
  // the process this pid file names (absolute), started after the creator.
  std::string init_pid_file;
  std::optional<ProcessId> monitor;      // gpuslice-shim, or the recorder in its place
  std::vector<std::string> monitor_args; // gpuslice-shim's, for a restart; empty: no monitor
  std::string region;                    // the usage region's identity (sharing::to_text)
  std::vector<std::string> cdi_env;      // the CDI edits' env, for the processes `exec` starts
  std::string limits_digest;             // limits_digest() of the limits file; "" without limits
  std::optional<Labels> selinux;
  std::string failure; // with Status::failed
  std::string usage;   // the monitor's last report, a JSON object's text ("": none yet)

  bool has_monitor() const { return !monitor_args.empty(); }
  bool operator==(const Record &) const = default;
};

// state.json's text, and back; parse_record throws Error naming `shown`
// for anything but a record of format kStateFormat or older.
std::string record_text(const Record &r);
Record parse_record(std::string_view text, const std::string &shown);

// The record of the container dir open as `dir_fd` (`shown` names it):
// state.json, else the files of format 2 or 1. Throws Error when it cannot
// be read or is of a newer format.
Record read_record(int dir_fd, const std::string &shown);

// Replaces the record (a rename: readers see the old one or the new) and,
// where it was read from an older format's files, removes them. The caller
// holds the dir's lock, or the dir has no name yet. Throws Error.
void write_record(int dir_fd, Record r, const std::string &shown);

// The digest a record keeps of a limits file's text (FNV-1a 64, hex).
std::string limits_digest(std::string_view limits_text);

} // namespace gpuslice::state
