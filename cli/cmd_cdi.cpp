#include "commands.hpp"

namespace gpuslice::cli {

void register_cdi(CLI::App &, Action &) {}

} // namespace gpuslice::cli
