#include "commands.hpp"

namespace gpuslice::cli {

void register_configure(CLI::App &, Action &) {}

} // namespace gpuslice::cli
