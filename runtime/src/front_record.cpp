#include "gpuslice/runtime/front_record.hpp"

#include "gpuslice/common/build_id.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/create/requests.hpp"

#include "../front/front.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace gpuslice::runtime {

namespace {

bool one_line(const std::string &s) { return s.find('\n') == std::string::npos && s.find('\0') == std::string::npos; }

// Root's and writable by root alone: all the front trusts.
bool root_only(const struct stat &st) { return st.st_uid == 0 && (st.st_mode & 022) == 0; }

// A "KEY ENTRY" line for each entry, or nullopt when the front could not
// hold them.
std::optional<std::string> list(const char *key, const std::vector<std::string> &entries) {
  if (entries.size() > GS_FRONT_MAX_LIST ||
      !std::all_of(entries.begin(), entries.end(), [](const std::string &e) { return !e.empty() && one_line(e); }))
    return std::nullopt;
  std::string out;
  for (const auto &e : entries)
    out += std::string(key) + " " + e + "\n";
  return out;
}

// The record at `name` under `dir` as the front would read it, when it is
// at most `max` bytes.
std::optional<std::string> read_record(int dir, const std::string &name, std::size_t max) {
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !root_only(st) ||
      static_cast<std::size_t>(st.st_size) > max)
    return std::nullopt;
  try {
    return fs::read_stat_fd(fd.get(), st, name, max);
  } catch (const Error &) {
    return std::nullopt;
  }
}

} // namespace

std::optional<std::string> front_record(const std::string &build_id, const std::string &config_path,
                                        const std::optional<std::string> &config_text, const Config &config) {
  if (!fs::is_absolute(config.state_dir))
    return std::nullopt;
  const std::string state_dir = fs::clean_path(config.state_dir);
  const auto runtimes = list("runtime", config.runtimes), triggers = list("trigger", create::create_triggers(config));
  if (build_id.empty() || !one_line(build_id) || !fs::is_absolute(config_path) || !one_line(config_path) ||
      !one_line(state_dir) || !runtimes || !triggers || (config_text && config_text->size() > GS_FRONT_MAX_CONFIG))
    return std::nullopt;
  std::string r = GS_FRONT_MAGIC;
  r += "writer " + build_id + "\nconfig " + config_path + "\nstate-dir " + state_dir + "\n" + *runtimes + *triggers;
  r += config_text ? "config-bytes " + std::to_string(config_text->size()) + "\n" + *config_text
                   : std::string("config-bytes absent\n");
  return r;
}

void save_front_record(const std::string &config_path, const std::optional<std::string> &config_text,
                       const Config &config, const std::string &dir) {
  if (::geteuid() != 0)
    return;
  const auto record = front_record(own_build_id(), config_path, config_text, config);
  if (!record)
    return;
  char name[17];
  gs_front_digest(config_path.data(), config_path.size(), name);
  // The front trusts only a directory and file of root's that no one else
  // can write: made so here, and one made otherwise is left alone.
  ::mkdir(fs::dirname(dir).c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!dir_fd || ::fstat(dir_fd.get(), &st) != 0 || !root_only(st) ||
      read_record(dir_fd.get(), name, record->size()) == record)
    return;
  try {
    // rename only, no fsync: a record does not outlive the boot (/run)
    fs::write_file_atomic(dir + "/" + name, *record, 0600, fs::Durability::atomic);
  } catch (const Error &) {
    return;
  }
  fs::prune_oldest(dir_fd.get(), kMaxFrontRecords);
}

} // namespace gpuslice::runtime
