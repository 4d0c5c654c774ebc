// gpuslice: the operator's tool. Parses the command line and runs one verb.
#include "commands.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/install_paths.hpp"

#include <iostream>

int main(int argc, char **argv) {
  CLI::App app{"gpuslice: CDI GPU injection and GPU sharing for containers"};
  app.set_version_flag("--version", std::string("gpuslice ") + gpuslice::installed::kVersion);
  app.require_subcommand(1);
  gpuslice::cli::Action action;
  gpuslice::cli::register_cdi(app, action);
  gpuslice::cli::register_configure(app, action);
  gpuslice::cli::register_exec(app, action);
  gpuslice::cli::register_inspect(app, action);
  gpuslice::cli::register_version(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  try {
    return action ? action() : 0;
  } catch (const gpuslice::Error &e) {
    std::cerr << "gpuslice: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "gpuslice: internal error: " << e.what() << "\n";
    return 1;
  }
}
