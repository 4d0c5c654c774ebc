// The per-container state directory on the host,
// <state-dir>/containers/<id>/ (root, 0700, parents 0700; names.h says what
// is in it): what belongs to one container while it lives. One owner for
// the runtime, the hook, the monitor and the CLI.
//
// Each directory says whose it is in its record (record.hpp): its creator,
// and once the container runs its init, or the pid file that names it. A
// directory whose processes are all gone belongs to no runtime any more
// ("stale", is_live) and is collected by the next create; a live one is
// never reused: a second create with a running container's id is refused
// instead of resetting its state.
//
// What a pid file cannot tell: when the init has ended and the kernel's
// pids have gone round before the container's delete, a process started
// later under the same pid keeps such a directory live until it ends too
// (meanwhile a create of the same id is refused).
#pragma once

#include "gpuslice/common/fd.hpp"
#include "gpuslice/state/names.h"
#include "gpuslice/state/process.hpp"
#include "gpuslice/state/record.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::state {

inline constexpr const char *kRecordFile = GS_STATE_RECORD;
inline constexpr const char *kLimitsFile = GS_STATE_LIMITS;
inline constexpr const char *kPreloadFile = GS_STATE_PRELOAD;
inline constexpr const char *kRunDir = GS_STATE_RUN_DIR;
inline constexpr const char *kRegionSocket = GS_STATE_REGION_SOCKET;
inline constexpr const char *kInitPidFile = GS_STATE_INIT_PID_FILE;
inline constexpr const char *kActivityTable = GS_STATE_ACTIVITY;
inline constexpr const char *kGpuMemoryFile = GS_STATE_GPU_MEMORY;
// Why the GPUs' memory could not be known (NVML missing), said once.
inline constexpr const char *kGpuMemoryUnknownFile = GS_STATE_GPU_MEMORY_UNKNOWN;
inline constexpr const char *kStaleCollected = GS_STATE_STALE_COLLECTED;

// A container id usable as one path component: [A-Za-z0-9_.-], not "." or
// "..", at most 255 bytes. (containerd and runc ids already satisfy this.)
bool is_safe_container_id(std::string_view id);

// <state_dir>/containers/<id>, cleaned (no check of the id).
std::string container_dir_path(const std::string &state_dir, const std::string &id);

struct ContainerDir {
  std::string path;
  UniqueFd fd; // O_DIRECTORY, opened without following links
};

// Whether a container dir with `record` still belongs to a container: its
// init (once recorded) runs; else its creator runs, or the init its
// init_pid_file names, started no earlier than the creator. A record
// without either process is some other program's: live, left alone. The
// one judge of liveness (a create, a delete, the collection of stale dirs).
bool is_live(const Record &record);

// Creates <state_dir>/containers/<id>/ holding `record`, its creator this
// process, atomically (built under a temporary name, renamed into place
// without replacing anything). A stale directory of the same id is
// collected first; a live one is an error naming the id, once its lock is
// released when it has no init yet (a create still deciding, which holds
// it). Returns it open. Throws Error.
ContainerDir create_container_dir(const std::string &state_dir, const std::string &id, Record record);

// Container dir `id`: nullopt when there is none (a symlink there neither).
// Throws Error when it cannot be opened.
std::optional<ContainerDir> open_container_dir(const std::string &state_dir, const std::string &id);

// Whether <state_dir>/containers/<id> exists (a symlink there does not count).
bool container_dir_exists(const std::string &state_dir, const std::string &id);

// The dir's lock (flock, exclusive; waits), taken on `dir`'s descriptor:
// held until every copy of it is closed. One process at a time changes a
// record, starts a container's monitor or decides a create (the init
// recorder holds it until runc has said yes or no). Throws Error.
void lock(const ContainerDir &dir);

// Changes the dir's record under its lock: read, `change`, written back.
// Takes the lock on `dir` (nothing when this descriptor holds it already);
// never call it while holding the lock through another descriptor of the
// same dir, which would wait for itself. Returns the record written.
// Throws Error.
Record update_record(const ContainerDir &dir, const std::function<void(Record &)> &change);

// Makes `to` the creator of `dir` in place of `from`: the process that
// created it hands the rest of the creation to another one (runtime's
// init recorder). Throws Error when `from` is not its creator.
void hand_over_creation(const ContainerDir &dir, const ProcessId &from, const ProcessId &to);

// Records `init_pid` as the container's init in `dir` (its status
// running). A record whose init is another live process is an error (the
// id is in use). Throws Error.
void record_init(const ContainerDir &dir, const std::string &id, int init_pid);

// Removes it with everything inside, without following symlinks; a missing
// directory is fine. With `created_by`, only a directory that process
// created (a later container may have reused the id). Throws Error.
void remove_container_dir(const std::string &state_dir, const std::string &id,
                          const std::optional<ProcessId> &created_by = std::nullopt);

// Removes the directory only when it is stale (`delete`: the id may be a
// live container's of another runtime root). True when it is gone.
bool remove_if_stale(const std::string &state_dir, const std::string &id);

// Removes every stale directory (and leftover temporary); returns the ids
// removed. Errors on one entry do not stop the others.
std::vector<std::string> collect_stale(const std::string &state_dir);

// collect_stale, when no collection started in the last `interval` (the
// mtime of <state_dir>/stale-collected, touched first; a clock set back
// makes one due): a node that shares its GPUs holds a hundred containers
// or more, and a look at each on every create would cost more than the
// rest of the create.
std::vector<std::string> collect_stale_now_and_then(const std::string &state_dir, std::chrono::seconds interval);

// The containers directory, locked (flock, exclusive; waits): for what must
// see every container and add one without another create doing the same in
// between (the admission cap). Created when missing. Released on close.
UniqueFd lock_containers(const std::string &state_dir);

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
// (a create's, renamed into place with its record in it) stays. Throws
// Error.
void remove_judged_dir(int parent, const std::string &name, int judged, const std::string &shown);

} // namespace gpuslice::state
