#include "gpuslice/shim/command_line.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace gpuslice::shim {

namespace {

// Global flags of runc and crun that take a value ("--root R" or "--root=R").
constexpr std::array<std::string_view, 8> kGlobalWithValue{"--root",     "--log",           "--log-format", "--criu",
                                                           "--rootless", "--cgroup-manager", "--log-level",  "--debug-log"};
// create/run flags that take a value.
constexpr std::array<std::string_view, 5> kCreateWithValue{"--bundle", "-b", "--console-socket", "--pid-file",
                                                           "--preserve-fds"};

template <std::size_t N> bool takes_value(std::string_view flag, const std::array<std::string_view, N> &list) {
  return std::find(list.begin(), list.end(), flag) != list.end();
}

// Splits "--flag=value"; value is nullopt-like (npos) when absent.
std::pair<std::string_view, std::string_view> split_flag(std::string_view arg, bool &has_inline) {
  const auto eq = arg.find('=');
  has_inline = eq != std::string_view::npos;
  return has_inline ? std::pair{arg.substr(0, eq), arg.substr(eq + 1)} : std::pair{arg, std::string_view{}};
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
      ++i;
      break;
    }
    bool inline_value = false;
    auto [flag, value] = split_flag(arg, inline_value);
    if (!takes_value(flag, kGlobalWithValue))
      continue;
    std::string v;
    if (inline_value)
      v = value;
    else if (i + 1 < cl.args.size())
      v = cl.args[++i];
    if (flag == "--log")
      cl.log_path = v;
    else if (flag == "--log-format")
      cl.log_format = v;
  }
  if (!cl.edits_bundle())
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
      continue;
    }
    bool inline_value = false;
    auto [flag, value] = split_flag(arg, inline_value);
    if (!takes_value(flag, kCreateWithValue))
      continue;
    std::string v;
    if (inline_value)
      v = value;
    else if (i + 1 < cl.args.size())
      v = cl.args[++i];
    if (flag == "--bundle" || flag == "-b")
      cl.bundle = v;
  }
  return cl;
}

} // namespace gpuslice::shim
