#include "gpuslice/runtime/command_line.hpp"

#include "../front/command_line.h"

namespace gpuslice::runtime {

CommandLine parse_command_line(int argc, const char *const *argv) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i)
    cl.args.emplace_back(argv[i]);
  gs_call call;
  gs_read_call(argc, const_cast<char *const *>(argv), &call);
  auto take = [](const char *value) { return value ? std::string(value) : std::string(); };
  if (call.verb < argc) {
    cl.verb = argv[call.verb];
    cl.verb_index = static_cast<std::size_t>(call.verb - 1);
  }
  cl.container_id = take(call.id);
  cl.bundle = take(call.bundle);
  cl.pid_file = take(call.pid_file);
  cl.process_file = take(call.process);
  cl.log_path = take(call.log);
  cl.log_format = take(call.log_format);
  if (call.doubt > 0 && call.doubt < argc)
    cl.doubt = argv[call.doubt];
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

} // namespace gpuslice::runtime
