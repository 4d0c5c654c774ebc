// The per-container state directory on the host,
// <state-dir>/containers/<id>/ (root, 0700, parents 0700): what belongs to
// one container while it lives (its limits file, preload list, region
// socket). One owner for the runtime, the hook, the monitor and the CLI.
//
// Each directory says whose it is: `creator` (the process creating the
// container: gpuslice-runtime, then runc with the same pid) and, once the
// container runs, `init` (its init process), each as "PID STARTTIME" so that
// a reused pid is not taken for the same process. A container without
// limits has no process of gpuslice's left once its create is done (the
// runtime is exec'd in the create's own process) and no `init` record:
// `init-pid-file` names the pid file its runtime writes, and the process
// that file names is its init when it started no earlier than the creator
// (an older one under that pid is not this create's). A directory whose
// recorded process is gone belongs to no runtime any more ("stale") and is
// collected by the next create; a live one is never reused: a second create
// with a running container's id is refused instead of resetting its state.
//
// What a pid file cannot tell: when the init has ended and the kernel's
// pids have gone round before the container's delete, a process started
// later under the same pid keeps such a directory live until it ends too
// (meanwhile a create of the same id is refused).
//
// The layout has a format number (`format`: "gpuslice-state N"), so that a
// package upgrade can leave running containers alone: the new runtime, hook
// and monitor read what an older one wrote (a directory without `format`
// predates the record and has format 1's layout), and refuse, naming both
// numbers, a format newer than theirs (a downgrade under running
// containers). Removing a directory never depends on its format.
#pragma once

#include "gpuslice/common/fd.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::state {

// A container id usable as one path component: [A-Za-z0-9_.-], not "." or
// "..", at most 255 bytes. (containerd and runc ids already satisfy this.)
bool is_safe_container_id(std::string_view id);

// The layout this build writes and the newest it reads. 2: a directory
// with no `init` record may live by its `init-pid-file` (a reader of 1
// takes it for stale once its creator has exited, and collection, which
// never looks at the format, removes it: a downgrade under running
// containers without limits loses their state, and their execs the CDI
// env; README).
inline constexpr int kStateFormat = 2;

// The format of the state directory `dir_fd` (shown as `shown` in errors):
// 1 when it has no record. Throws Error when the record is unreadable or
// newer than kStateFormat.
int read_state_format(int dir_fd, const std::string &shown);

struct ContainerDir {
  std::string path;
  UniqueFd fd; // O_DIRECTORY, opened without following links
};

// A process as recorded: pid and start time (clock ticks since boot, field
// 22 of /proc/PID/stat).
struct ProcessId {
  int pid = 0;
  uint64_t start_time = 0;
  bool operator==(const ProcessId &) const = default;
};
std::optional<ProcessId> process_id(int pid); // nullopt: no such process

// A ProcessId as the records hold it and gpuslice-shim's --creator passes
// it: "PID STARTTIME", and back (exactly that, a pid above 0; else nullopt).
std::string to_text(const ProcessId &p);
std::optional<ProcessId> parse_process_id(std::string_view text);
bool process_alive(const ProcessId &p);

// The records of a container dir (opened as `dir_fd`): its creator (the
// process that creates the container, or the one it handed over to), its
// init, and its monitor (gpuslice-shim, which records itself). nullopt
// when missing or not a record.
inline constexpr const char *kCreatorRecord = "creator";
inline constexpr const char *kInitRecord = "init";
inline constexpr const char *kMonitorRecord = "monitor";
// The pid file's absolute path and a newline.
inline constexpr const char *kInitPidFileRecord = "init-pid-file";
std::optional<ProcessId> read_process_record(int dir_fd, const char *name);
void write_process_record(int dir_fd, const char *name, const ProcessId &p, const std::string &shown); // throws Error

// Creates <state_dir>/containers/<id>/ with `creator` set to the calling
// process, atomically (built under a temporary name, renamed into place
// without replacing anything). A stale directory of the same id is
// collected first; a live one is an error naming the id, once its lock is
// released when it has no init yet (a create still deciding, which holds
// it). Throws Error.
ContainerDir create_container_dir(const std::string &state_dir, const std::string &id);

// Makes `to` the creator of `dir` (as create_container_dir returned it, still
// open) in place of `from`: the process that created it hands the rest of
// the creation to another one (shim's exec_recording_init). Throws Error
// when `from` is not its creator.
void hand_over_creation(const ContainerDir &dir, const ProcessId &from, const ProcessId &to);

// Opens the directory (creating it, as above, when missing), checks its
// format and records `init`. A directory whose recorded init is another
// live process is an error (the id is in use). Throws Error.
ContainerDir record_init(const std::string &state_dir, const std::string &id, int init_pid);

// Whether <state_dir>/containers/<id> exists (a symlink there does not count).
bool container_dir_exists(const std::string &state_dir, const std::string &id);

// Removes it with everything inside, without following symlinks; a missing
// directory is fine. With `created_by`, only a directory that this process
// created (a later container may have reused the id). Throws Error.
void remove_container_dir(const std::string &state_dir, const std::string &id,
                          const std::optional<ProcessId> &created_by = std::nullopt);

// Removes the directory only when its recorded process is gone (`delete`:
// the id may be a live container's of another runtime root). True when it
// is gone.
bool remove_if_stale(const std::string &state_dir, const std::string &id);

// Removes every directory (and leftover temporary) whose recorded process is
// gone; returns the ids removed. Errors on one entry do not stop the others.
std::vector<std::string> collect_stale(const std::string &state_dir);

// collect_stale, when no collection started in the last `interval` (the
// mtime of <state_dir>/stale-collected, touched first; a clock set back
// makes one due). What a create calls: a node that shares its GPUs holds a
// hundred containers or more, and a look at each (its records, /proc) on
// every create cost more than the rest of the create.
inline constexpr const char *kStaleCollectedRecord = "stale-collected";
std::vector<std::string> collect_stale_now_and_then(const std::string &state_dir, std::chrono::seconds interval);

// The containers directory, locked (flock, exclusive; waits): for what must
// see every container and add one without another create doing the same in
// between (the admission cap). Created when missing. Released on close.
UniqueFd lock_containers(const std::string &state_dir);

// Container dir <id>, opened and locked (flock, exclusive; waits): one
// process at a time starts its monitor (gpuslice-runtime's create and its
// restarts, monitor_start.hpp). Released on close. Throws Error.
UniqueFd lock_container_dir(const std::string &state_dir, const std::string &id);
// The same lock, taken on `dir` as create_container_dir returned it (no
// path looked up again): held until every copy of its fd is closed.
void lock_container_dir(const ContainerDir &dir);

// Every container directory (not the temporaries of creates in progress),
// opened without following links; live or stale alike (collect_stale
// first to see only live ones). None when there is no containers dir;
// throws Error when it cannot be listed.
struct NamedDir {
  std::string id;
  UniqueFd fd;
};
std::vector<NamedDir> open_container_dirs(const std::string &state_dir);

// A file of a container dir (opened as `dir_fd`), read without following a
// link and bounded (64 KiB): nullopt when it cannot be opened (missing);
// throws Error when it cannot be read.
std::optional<std::string> read_state_file(int dir_fd, const char *name);

// Removes what is inside the directory `dir_fd`, without following links.
void remove_contents(int dir_fd, const std::string &shown);

// Removes directory `name` of `parent`, judged (stale, say) through
// `judged`, an fd open on it: its contents through `judged`, then the name
// only while it is an empty directory. A directory that took the name since
// (a create's, renamed into place with its records in it) stays. Throws
// Error.
void remove_judged_dir(int parent, const std::string &name, int judged, const std::string &shown);

} // namespace gpuslice::state
