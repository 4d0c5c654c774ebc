#include "gpuslice/shim/command_line.hpp"

#include "../fast_path/fast_path.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

namespace gpuslice::shim {

namespace {

// create/run flags that take a value.
constexpr std::array<std::string_view, 5> kCreateWithValue{"--bundle", "-b", "--console-socket", "--pid-file",
                                                           "--preserve-fds"};
// exec flags that take a value (runc's and crun's).
constexpr std::array<std::string_view, 18> kExecWithValue{
    "--console-socket", "--cwd",    "--env",          "-e",           "--user",     "-u",
    "--additional-gids", "-g",      "--process",      "-p",           "--process-label", "-l",
    "--apparmor",       "--cap",    "-c",             "--preserve-fds", "--pid-file", "--cgroup"};

// ps flags that take a value; start, state, pause and resume take none.
constexpr std::array<std::string_view, 2> kPsWithValue{"--format", "-f"};

// Global flags of runc and crun that take a value ("--root R" or
// "--root=R"): the fast path's list (it finds the verb the same way).
struct GlobalFlags {};

template <std::size_t N> bool takes_value(std::string_view flag, const std::array<std::string_view, N> &list) {
  return std::find(list.begin(), list.end(), flag) != list.end();
}

bool takes_value(std::string_view flag, GlobalFlags) {
  return gpuslice_fp_global_flag_takes_value(flag.data(), flag.size()) != 0;
}

// For args[i] a flag of `list` ("--flag value" or "--flag=value"): the flag
// and its value, advancing i past a separate value. nullopt for other args.
template <typename List>
std::optional<std::pair<std::string, std::string>> flag_with_value(const std::vector<std::string> &args, std::size_t &i,
                                                                   const List &list) {
  const std::string &arg = args[i];
  const auto eq = arg.find('=');
  const std::string flag = arg.substr(0, eq);
  if (!takes_value(flag, list))
    return std::nullopt;
  if (eq != std::string::npos)
    return std::pair{flag, arg.substr(eq + 1)};
  return std::pair{flag, i + 1 < args.size() ? args[++i] : std::string()};
}

} // namespace

CommandLine parse_command_line(int argc, const char *const *argv) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i)
    cl.args.emplace_back(argv[i]);
  std::size_t i = 0;
  // Global flags up to the verb.
  for (; i < cl.args.size(); ++i) {
    const std::string &arg = cl.args[i];
    if (arg.empty() || arg[0] != '-') {
      cl.verb = arg;
      cl.verb_index = i;
      ++i;
      break;
    }
    if (auto fv = flag_with_value(cl.args, i, GlobalFlags{})) {
      if (fv->first == "--log")
        cl.log_path = fv->second;
      else if (fv->first == "--log-format")
        cl.log_format = fv->second;
    }
  }
  const bool exec = cl.verb == "exec";
  if (!cl.edits_bundle() && !cl.deletes() && !cl.checks_monitor())
    return cl;
  // The verb's flags and its positional container id.
  for (; i < cl.args.size(); ++i) {
    const std::string &arg = cl.args[i];
    if (arg == "--") {
      if (i + 1 < cl.args.size())
        cl.container_id = cl.args[i + 1];
      break;
    }
    if (arg.empty() || arg[0] != '-') {
      cl.container_id = arg;
      if (exec)
        break; // what follows is the command to run
      continue;
    }
    if (exec) {
      if (auto fv = flag_with_value(cl.args, i, kExecWithValue); fv && (fv->first == "--process" || fv->first == "-p"))
        cl.process_file = fv->second;
      continue;
    }
    if (cl.verb == "ps") {
      flag_with_value(cl.args, i, kPsWithValue);
      continue;
    }
    if (auto fv = flag_with_value(cl.args, i, kCreateWithValue)) {
      if (fv->first == "--bundle" || fv->first == "-b")
        cl.bundle = fv->second;
      else if (fv->first == "--pid-file")
        cl.pid_file = fv->second;
    }
  }
  return cl;
}

void CommandLine::add_pid_file(const std::string &path) {
  args.insert(args.begin() + static_cast<std::ptrdiff_t>(verb_index) + 1, "--pid-file=" + path);
  pid_file = path;
}

std::vector<std::string> CommandLine::with_global_flags(std::initializer_list<std::string> verb_args) const {
  std::vector<std::string> out(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(verb_index));
  out.insert(out.end(), verb_args);
  return out;
}

} // namespace gpuslice::shim
