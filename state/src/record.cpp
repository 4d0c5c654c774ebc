#include "gpuslice/state/record.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/state/names.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>

namespace gpuslice::state {

namespace {

// A record is a few KiB (the monitor's arguments, the CDI env); nothing a
// node writes comes near this.
constexpr std::size_t kMaxRecordSize = 1u << 20;

using Json = nlohmann::json;

Json process_json(const ProcessId &p) { return {{"pid", p.pid}, {"start_time", p.start_time}}; }

ProcessId process_of(const Json &j, const std::string &where) {
  if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer() || !j.contains("start_time") ||
      !j["start_time"].is_number_unsigned())
    throw Error(where + " is not {\"pid\": N, \"start_time\": N}");
  const auto pid = j["pid"].get<int64_t>();
  if (pid <= 0 || pid > INT32_MAX)
    throw Error(where + " is not a process id");
  return {static_cast<int>(pid), j["start_time"].get<uint64_t>()};
}

std::vector<std::string> strings_of(const Json &j, const std::string &where) {
  if (!j.is_array())
    throw Error(where + " is not a list of strings");
  std::vector<std::string> out;
  for (const auto &s : j) {
    if (!s.is_string())
      throw Error(where + " is not a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

std::string string_of(const Json &j, const std::string &where) {
  if (!j.is_string())
    throw Error(where + " is not a string");
  return j.get<std::string>();
}

// ---- formats 2 and 1: a file a fact --------------------------------------

// The files that held a record before state.json: removed by the first write.
constexpr const char *kLegacyFiles[] = {"format",       "creator",   "init",    "monitor", "init-pid-file",
                                        "cdi-env",      "monitor-args", "region-id", "selinux", "create-failed",
                                        "status"};

std::optional<std::string> read_in(int dir_fd, const char *name, const std::string &shown) {
  // O_NONBLOCK: a FIFO planted there must not hang the reader
  UniqueFd f(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!f) {
    if (errno == ENOENT)
      return std::nullopt;
    throw system_error("cannot open " + quote(shown + "/" + name));
  }
  return fs::read_fd(f.get(), shown + "/" + name, kMaxRecordSize);
}

// "PID START\n", as format 2 wrote a process.
std::optional<ProcessId> legacy_process(int dir_fd, const char *name, const std::string &shown) {
  auto text = read_in(dir_fd, name, shown);
  if (!text)
    return std::nullopt;
  if (!text->empty() && text->back() == '\n')
    text->pop_back();
  return parse_process_id(*text); // not a record: as if missing, as format 2's readers took it
}

Record read_legacy(int dir_fd, const std::string &shown) {
  Record r;
  r.format = 1; // no format file: written before it existed
  if (const auto format = read_in(dir_fd, "format", shown)) {
    constexpr std::string_view prefix = "gpuslice-state ";
    const std::string_view text(*format);
    int number = 0;
    const auto digits = text.substr(std::min(prefix.size(), text.size()));
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
    if (text.substr(0, prefix.size()) != prefix || ec != std::errc() || std::string_view(end) != "\n" || number <= 0)
      throw Error(quote(shown + "/format") + " is not \"gpuslice-state N\"");
    if (number >= kStateFormat) // a newer gpuslice writes state.json
      throw Error("state " + quote(shown) + " has format " + std::to_string(number) + " without its " +
                  GS_STATE_RECORD);
    r.format = number;
  }
  r.creator = legacy_process(dir_fd, "creator", shown);
  r.init = legacy_process(dir_fd, "init", shown);
  r.monitor = legacy_process(dir_fd, "monitor", shown);
  if (auto path = read_in(dir_fd, "init-pid-file", shown)) {
    if (path->empty() || path->back() != '\n' || (*path)[0] != '/')
      throw Error(quote(shown + "/init-pid-file") + " is not an absolute path and a newline");
    path->pop_back();
    r.init_pid_file = *path;
  }
  if (const auto env = read_in(dir_fd, "cdi-env", shown))
    r.cdi_env = with_context(quote(shown + "/cdi-env"), [&] { return strings_of(parse_json(*env), "the CDI env"); });
  if (const auto args = read_in(dir_fd, "monitor-args", shown))
    r.monitor_args = split(*args, '\0', EmptyParts::skip);
  if (const auto region = read_in(dir_fd, "region-id", shown))
    r.region = *region;
  if (const auto labels = read_in(dir_fd, "selinux", shown)) {
    const auto lines = split(*labels, '\n', EmptyParts::keep);
    if (lines.size() < 2)
      throw Error(quote(shown + "/selinux") + " is not a file label and a socket label");
    r.selinux = Labels{lines[0], lines[1]};
  }
  if (const auto failed = read_in(dir_fd, "create-failed", shown)) {
    r.status = Status::failed;
    r.failure = *failed;
  } else if (r.init) {
    r.status = Status::running;
  }
  if (auto usage = read_in(dir_fd, "status", shown))
    r.usage = *usage;
  if (const auto limits = read_in(dir_fd, GS_STATE_LIMITS, shown))
    r.limits_digest = limits_digest(*limits); // format 2 kept none: the file as it is now
  return r;
}

} // namespace

std::string_view status_name(Status s) {
  switch (s) {
  case Status::created:
    return "created";
  case Status::running:
    return "running";
  case Status::failed:
    return "failed";
  }
  return "?";
}

std::string record_text(const Record &r) {
  Json j = Json::object();
  j["format"] = kStateFormat;
  j["status"] = status_name(r.status);
  if (r.creator)
    j["creator"] = process_json(*r.creator);
  if (r.init)
    j["init"] = process_json(*r.init);
  if (!r.init_pid_file.empty())
    j["init_pid_file"] = r.init_pid_file;
  if (r.monitor)
    j["monitor"] = process_json(*r.monitor);
  if (!r.monitor_args.empty())
    j["monitor_args"] = r.monitor_args;
  if (!r.region.empty())
    j["region"] = r.region;
  j["cdi_env"] = r.cdi_env;
  if (!r.limits_digest.empty())
    j["limits_digest"] = r.limits_digest;
  if (r.selinux)
    j["selinux"] = {{"file", r.selinux->file}, {"socket", r.selinux->socket}};
  if (!r.failure.empty())
    j["failure"] = r.failure;
  if (!r.usage.empty())
    j["usage"] = parse_json(r.usage);
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Record parse_record(std::string_view text, const std::string &shown) {
  return with_context(quote(shown), [&] {
    const Json j = parse_json(text);
    if (!j.is_object() || !j.contains("format") || !j["format"].is_number_integer())
      throw Error("not a gpuslice state record");
    const auto format = j["format"].get<int64_t>();
    if (format > kStateFormat)
      throw Error("format " + std::to_string(format) + ", written by a newer gpuslice; this one reads formats up to " +
                  std::to_string(kStateFormat) +
                  " (downgraded under running containers? stop them or reinstall the newer version)");
    if (format < kStateFormat)
      throw Error("format " + std::to_string(format) + " never had this file");
    Record r;
    const std::string status = j.contains("status") ? string_of(j["status"], "status") : "";
    if (status == "created")
      r.status = Status::created;
    else if (status == "running")
      r.status = Status::running;
    else if (status == "failed")
      r.status = Status::failed;
    else
      throw Error("status " + quote(status) + " is not created, running or failed");
    for (auto &[key, field] : {std::pair{"creator", &r.creator}, {"init", &r.init}, {"monitor", &r.monitor}})
      if (j.contains(key))
        *field = process_of(j[key], key);
    if (j.contains("init_pid_file")) {
      r.init_pid_file = string_of(j["init_pid_file"], "init_pid_file");
      if (!fs::is_absolute(r.init_pid_file))
        throw Error("init_pid_file " + quote(r.init_pid_file) + " is not absolute");
    }
    if (j.contains("monitor_args"))
      r.monitor_args = strings_of(j["monitor_args"], "monitor_args");
    if (j.contains("region"))
      r.region = string_of(j["region"], "region");
    if (j.contains("cdi_env"))
      r.cdi_env = strings_of(j["cdi_env"], "cdi_env");
    if (j.contains("limits_digest"))
      r.limits_digest = string_of(j["limits_digest"], "limits_digest");
    if (j.contains("selinux")) {
      const auto &s = j["selinux"];
      if (!s.is_object() || !s.contains("file") || !s.contains("socket"))
        throw Error("selinux is not {\"file\": LABEL, \"socket\": LABEL}");
      r.selinux = Labels{string_of(s["file"], "selinux.file"), string_of(s["socket"], "selinux.socket")};
    }
    if (j.contains("failure"))
      r.failure = string_of(j["failure"], "failure");
    if (j.contains("usage")) {
      if (!j["usage"].is_object())
        throw Error("usage is not an object");
      r.usage = j["usage"].dump();
    }
    return r;
  });
}

Record read_record(int dir_fd, const std::string &shown) {
  if (const auto text = read_in(dir_fd, GS_STATE_RECORD, shown))
    return parse_record(*text, shown + "/" + GS_STATE_RECORD);
  return read_legacy(dir_fd, shown);
}

void write_record(int dir_fd, Record r, const std::string &shown) {
  const std::string text = record_text(r);
  const std::string tmp = std::string(".") + GS_STATE_RECORD + ".tmp";
  const std::string path = shown + "/" + GS_STATE_RECORD;
  UniqueFd fd(::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw system_error("cannot write " + quote(path));
  fd.reset();
  // rename only, no fsync: the state dir does not outlive the boot (/run)
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, GS_STATE_RECORD) != 0)
    throw system_error("cannot write " + quote(path));
  if (r.format < kStateFormat)
    for (const char *name : kLegacyFiles)
      (void)::unlinkat(dir_fd, name, 0); // what is left is read no more
}

std::string limits_digest(std::string_view limits_text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : limits_text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char out[17];
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[i] = "0123456789abcdef"[h & 15];
  return std::string(out, 16);
}

} // namespace gpuslice::state
