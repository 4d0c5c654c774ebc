#include "gpuslice/shim/fast_path_record.hpp"

#include <algorithm>

#include "../fast_path/fast_path.h"
#include "gpuslice/common/byte_codec.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>

namespace gpuslice::shim {

namespace {

bool one_line(const std::string &s) { return s.find('\n') == std::string::npos && s.find('\0') == std::string::npos; }

// Root's and writable by root alone: all the entry trusts.
bool root_only(const struct stat &st) { return st.st_uid == 0 && (st.st_mode & 022) == 0; }

// The record at `name` under `dir`, when it is one the entry would read and
// of at most `max` bytes.
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

std::optional<std::string> config_snapshot(const Config &config, const std::string &build_id) {
  if (build_id.empty())
    return std::nullopt;
  bytes::Writer w;
  w(build_id);
  return w.out + encode_config(config);
}

std::optional<Config> config_from_snapshot(std::string_view snapshot, const std::string &build_id) {
  bytes::Reader r(snapshot);
  if (build_id.empty() || r.view() != build_id || !r.ok())
    return std::nullopt;
  return decode_config(r.rest());
}

std::optional<std::string> fast_path_record(const FastPathFacts &f) {
  const std::string state_dir = fs::is_absolute(f.state_dir) ? fs::clean_path(f.state_dir) : std::string();
  if (f.writer.empty() || !one_line(f.writer) || !fs::is_absolute(f.config_path) || !fs::is_absolute(f.runtime.path) ||
      state_dir.empty() ||
      !one_line(f.config_path) || !one_line(f.runtime.path) || !one_line(state_dir) || (f.path_env && !one_line(*f.path_env)))
    return std::nullopt;
  if (f.config_text && f.config_text->size() > GPUSLICE_FAST_PATH_MAX_CONFIG)
    return std::nullopt;
  std::string r = GPUSLICE_FAST_PATH_MAGIC;
  r += "writer " + f.writer + "\n";
  r += "config " + f.config_path + "\n";
  r += f.path_env ? "PATH=" + *f.path_env + "\n" : std::string("PATH unset\n");
  r += "runtime " + f.runtime.path + "\n";
  r += "runtime-id " + std::to_string(f.runtime.dev_major) + " " + std::to_string(f.runtime.dev_minor) + " " +
       std::to_string(f.runtime.ino) + "\n";
  if (f.runtime.searched_before.size() > GPUSLICE_FP_MAX_SEARCHED_DIRS)
    return std::nullopt;
  r += "searched-before " + std::to_string(f.runtime.searched_before.size()) + "\n";
  for (const auto &d : f.runtime.searched_before) {
    if (!fs::is_absolute(d.path) || !one_line(d.path) || d.mtime_sec < 0 || d.mtime_nsec < 0)
      return std::nullopt;
    r += (d.exists ? std::to_string(d.mtime_sec) + "." + std::to_string(d.mtime_nsec) : std::string("absent")) + " " +
         d.path + "\n";
  }
  r += "state-dir " + state_dir + "\n";
  const auto &triggers = f.create_triggers;
  const bool usable = triggers && triggers->size() <= GPUSLICE_FP_MAX_CREATE_TRIGGERS &&
                      std::all_of(triggers->begin(), triggers->end(),
                                  [](const std::string &t) { return !t.empty() && one_line(t); });
  r += usable ? "create-triggers " + std::to_string(triggers->size()) + "\n" : std::string("create-triggers none\n");
  if (usable)
    for (const auto &t : *triggers)
      r += t + "\n";
  const std::string config = f.config_text ? "config-bytes " + std::to_string(f.config_text->size()) + "\n" + *f.config_text
                                            : std::string("config-bytes absent\n");
  const std::size_t parsed_size = f.config_parsed ? f.config_parsed->size() : 0;
  const std::string parsed_line = "config-parsed " + std::to_string(parsed_size) + "\n";
  if (parsed_size > 0 && r.size() + parsed_line.size() + parsed_size + config.size() <= GPUSLICE_FAST_PATH_MAX_RECORD)
    r += parsed_line + *f.config_parsed;
  else
    r += "config-parsed none\n";
  r += config;
  if (r.size() > GPUSLICE_FAST_PATH_MAX_RECORD) // the entry could never read it
    return std::nullopt;
  return r;
}

void save_fast_path_record(const std::string &config_path, const std::optional<std::string> &config_text,
                           const FoundRuntime &runtime, const std::string &state_dir,
                           const std::vector<std::string> &create_triggers,
                           const std::optional<std::string> &config_parsed, const std::string &dir,
                           std::optional<std::string_view> on_disk) {
  if (::geteuid() != 0)
    return;
  FastPathFacts facts{own_build_id(), config_path,     config_text,     std::nullopt,
                      runtime,        state_dir,       create_triggers, config_parsed};
  struct stat st {};
  if (const char *path = std::getenv("PATH"))
    facts.path_env = path;
  const auto record = fast_path_record(facts);
  if (!record || on_disk == std::string_view(*record))
    return;
  char name[17];
  gpuslice_fp_record_name(config_path.c_str(), name);

  // The entry trusts only a directory and file of root's that no one else
  // can write: made so here, and one made otherwise is left alone.
  ::mkdir(fs::dirname(dir).c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd || ::fstat(dir_fd.get(), &st) != 0 || !root_only(st))
    return;
  if (!on_disk && read_record(dir_fd.get(), name, record->size()) == record)
    return;
  try {
    // rename only, no fsync: a record does not outlive the boot (/run)
    fs::write_file_atomic(dir + "/" + name, *record, 0600, fs::Durability::atomic);
  } catch (const Error &) {
    return;
  }
  fs::prune_oldest(dir_fd.get(), kMaxFastPathRecords);
}

} // namespace gpuslice::shim
