// Each verb family of `gpuslice` lives in its own file and registers its
// subcommands here; main() only parses and dispatches.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace gpuslice::cli {

// A registered subcommand sets this to the function that runs it; the function
// returns the process exit code.
using Action = std::function<int()>;

void register_cdi(CLI::App &app, Action &action);
void register_configure(CLI::App &app, Action &action);
void register_exec(CLI::App &app, Action &action);
void register_inspect(CLI::App &app, Action &action);
void register_version(CLI::App &app, Action &action);

} // namespace gpuslice::cli
