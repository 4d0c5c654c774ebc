#include "commands.hpp"

namespace gpuslice::cli {

void register_exec(CLI::App &, Action &) {}

} // namespace gpuslice::cli
