#include "gpuslice/create/admission.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fd.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/state/container_dir.hpp"
#include "gpuslice/create/monitor_setup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <optional>

namespace gpuslice::create {

namespace {
constexpr std::size_t kMaxLimitsFile = 64 * 1024;
} // namespace

std::set<std::string> gpus_of(const sharing::Limits &limits) {
  std::set<std::string> gpus;
  for (const auto &d : limits.devices)
    gpus.insert(d.key.rfind("GPU-", 0) == 0 ? d.key : kUnnamedGpu);
  return gpus;
}

std::map<std::string, uint64_t> memory_per_gpu(const sharing::Limits &limits) {
  std::map<std::string, uint64_t> memory;
  for (const auto &d : limits.devices)
    if (d.memory)
      memory[d.key.rfind("GPU-", 0) == 0 ? d.key : kUnnamedGpu] += *d.memory;
  return memory;
}

std::map<std::string, GpuLoad> load_per_gpu(const std::string &state_dir) {
  std::map<std::string, GpuLoad> load;
  for (const auto &dir : state::open_container_dirs(state_dir)) {
    UniqueFd f(::openat(dir.fd.get(), state::kLimitsFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!f && errno == ENOENT)
      continue; // a container without limits
    std::set<std::string> gpus{kUnnamedGpu};
    std::map<std::string, uint64_t> memory;
    try {
      if (!f)
        throw system_error("cannot open it");
      const std::string text = fs::read_fd(f.get(), state::kLimitsFile, kMaxLimitsFile);
      if (state::read_record(dir.fd.get(), dir.id).limits_digest != state::limits_digest(text))
        throw Error("not the limits file its create wrote");
      const auto limits = sharing::parse_limits(text);
      gpus = gpus_of(limits);
      memory = memory_per_gpu(limits);
    } catch (const Error &) {
      // counted on the unnamed GPU: a broken file must not free a place
    }
    for (const auto &g : gpus)
      load[g].containers++;
    for (const auto &[g, bytes] : memory)
      load[g].memory += bytes;
  }
  return load;
}

namespace {

// "UUID BYTES" lines; nullopt when the text is anything else.
std::optional<std::map<std::string, uint64_t>> parse_gpu_memory(const std::string &text) {
  std::map<std::string, uint64_t> memory;
  for (const auto &line : split(text, '\n', EmptyParts::skip)) {
    const auto space = line.find(' ');
    uint64_t bytes = 0;
    const char *end = line.data() + line.size();
    if (space == std::string::npos || line.rfind("GPU-", 0) != 0 ||
        std::from_chars(line.data() + space + 1, end, bytes).ptr != end || bytes == 0)
      return std::nullopt;
    memory[line.substr(0, space)] = bytes;
  }
  if (memory.empty())
    return std::nullopt;
  return memory;
}

// Runs `program args`, its stdout and stderr into one string (bounded);
// returns its exit status.
int run_captured(const std::string &program, const std::vector<std::string> &args, std::string &output) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw system_error("cannot make a pipe");
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  std::vector<char *> argv{const_cast<char *>(program.c_str())};
  for (const auto &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  char path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char *envp[] = {path_env, nullptr};
  const pid_t child = ::fork();
  if (child < 0)
    throw system_error("cannot start " + quote(program));
  if (child == 0) {
    ::dup2(write_end.get(), 1);
    ::dup2(write_end.get(), 2);
    ::execve(program.c_str(), argv.data(), envp);
    ::_exit(127);
  }
  write_end.reset();
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (output.size() < 64 * 1024)
      output.append(buf, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      throw system_error("cannot wait for " + quote(program));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

NodeGpus node_gpu_memory(const Config &config, const std::set<std::string> &needed) {
  const std::string file = fs::clean_path(config.state_dir) + "/" + state::kGpuMemoryFile;
  try {
    if (auto memory = parse_gpu_memory(fs::read_file(file, 64 * 1024));
        memory && std::all_of(needed.begin(), needed.end(), [&](const std::string &gpu) {
          return gpu == kUnnamedGpu || memory->count(gpu);
        }))
      return {*memory, ""};
  } catch (const Error &) {
    // not yet asked since boot
  }
  const std::string unknown = fs::clean_path(config.state_dir) + "/" + state::kGpuMemoryUnknownFile;
  struct stat st {};
  if (::stat(unknown.c_str(), &st) == 0 &&
      std::chrono::system_clock::now() - std::chrono::system_clock::from_time_t(st.st_mtime) < kAskAgainAfter) {
    try {
      return {{}, fs::read_file(unknown, 4096), true};
    } catch (const Error &) {
      // asked again below
    }
  }
  // gpuslice-shim asks NVML: this program is static, and a static glibc
  // program cannot load NVML reliably.
  const std::string shim = shim_program(config);
  std::string output;
  const int status = run_captured(shim, {"--query-gpus", "--nvml", config.monitor_nvml_path}, output);
  while (!output.empty() && output.back() == '\n')
    output.pop_back();
  auto memory = status == 0 ? parse_gpu_memory(output) : std::nullopt;
  if (!memory) {
    NodeGpus none{{}, status == 127 ? "cannot execute " + quote(shim)
                      : output.empty() ? quote(shim) + " --query-gpus failed"
                                       : output};
    try {
      fs::write_file_atomic(unknown, none.why, 0644, fs::Durability::atomic);
    } catch (const Error &) {
      // said again at the next create
    }
    return none;
  }
  try {
    fs::write_file_atomic(file, output + "\n", 0644, fs::Durability::atomic); // asked again if lost
    ::unlink(unknown.c_str());
  } catch (const Error &) {
    // asked again at the next create
  }
  return {*memory, ""};
}

namespace {

std::string unnamed_or(const std::string &gpu) {
  return gpu == kUnnamedGpu ? std::string("the GPU of CDI devices that name none (no GPUSLICE_GPU_UUID)") : "GPU " + gpu;
}

void check_memory(const sharing::Limits &limits, const std::map<std::string, GpuLoad> &load, const NodeGpus &gpus,
                  std::vector<std::string> &warnings, std::vector<std::string> &notes) {
  const auto adding = memory_per_gpu(limits);
  if (adding.empty())
    return;
  const auto &total = gpus.memory;
  if (total.empty()) {
    if (!gpus.said)
      notes.push_back("cannot tell whether the memory limits of a GPU's containers fit in its memory "
                      "(admission.allow-memory-overcommit = false): " + gpus.why + " (asked again in " +
                      std::to_string(kAskAgainAfter.count()) + " minutes)");
    return;
  }
  // On a node with one GPU, devices that name none are on that one.
  auto gpu_of = [&](const std::string &key) { return key == kUnnamedGpu && total.size() == 1 ? total.begin()->first : key; };
  std::map<std::string, uint64_t> add, have;
  for (const auto &[key, bytes] : adding)
    add[gpu_of(key)] += bytes;
  for (const auto &[key, l] : load)
    have[gpu_of(key)] += l.memory;
  for (const auto &[gpu, bytes] : add) {
    auto it = total.find(gpu);
    if (it == total.end()) {
      warnings.push_back(gpu == kUnnamedGpu
                             ? "cannot tell which of the node's " + std::to_string(total.size()) +
                                   " GPUs CDI devices without GPUSLICE_GPU_UUID are on: their memory limits are not "
                                   "checked against its memory"
                             : "NVML does not list " + gpu + ": its memory limits are not checked against its memory");
      continue;
    }
    const uint64_t sum = have[gpu] + bytes;
    if (sum > it->second)
      throw Error("GPU " + gpu + " has " + sharing::format_size(it->second) + " of memory, and with this container's " +
                  sharing::format_size(bytes) + " the memory limits of its containers would add up to " +
                  sharing::format_size(sum) + " (admission.allow-memory-overcommit = false)");
  }
}

} // namespace

void check_admission(const sharing::Limits &limits, const AdmissionFacts &facts, const Config &config,
                     std::vector<std::string> &warnings, std::vector<std::string> &notes) {
  const auto &load = facts.load;
  if (config.max_containers_per_gpu > 0)
    for (const auto &gpu : gpus_of(limits)) {
      auto it = load.find(gpu);
      if (it == load.end() || it->second.containers < config.max_containers_per_gpu)
        continue;
      throw Error(unnamed_or(gpu) + " already hosts " + std::to_string(it->second.containers) +
                  " containers with GPU limits (admission.max-containers-per-gpu = " +
                  std::to_string(config.max_containers_per_gpu) + ")");
    }
  if (!config.allow_memory_overcommit)
    check_memory(limits, load, facts.gpus, warnings, notes);
}

} // namespace gpuslice::create
