// `gpuslice version`: the version and the paths in effect, each with where
// it comes from. What an operator checks first when a GPU container fails
// with "no such file" after an install: which hook, interposer and config
// file this build expects, and whether they are there.
#include "commands.hpp"

#include "gpuslice/common/config.hpp"
#include "gpuslice/common/install_paths.hpp"
#include "gpuslice/common/strings.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace gpuslice::cli {

namespace {

std::string origin(const Config &c, const std::string &key, const std::string &file) {
  return c.from_file.count(key) ? "config file " + file : "compiled-in default";
}

std::string presence(const std::string &path) { return ::access(path.c_str(), F_OK) == 0 ? "" : "  [not found]"; }

void row(const char *name, const std::string &value, const std::string &from, const std::string &extra = "") {
  std::printf("%-17s %s  (%s)%s\n", name, value.c_str(), from.c_str(), extra.c_str());
}

int run_version() {
  const std::string file = config_path();
  const bool file_exists = ::access(file.c_str(), F_OK) == 0;
  const Config c = load_config(file);
  std::printf("gpuslice %s (prefix %s)\n", installed::kVersion, installed::kPrefix);
  row("config", file, file == kDefaultConfigPath ? "compiled-in default" : "$GPUSLICE_CONFIG",
      file_exists ? "" : "  [not found: every key has its default]");
  row("hook-path", c.hook_path, origin(c, "runtime.hook-path", file), presence(c.hook_path));
  row("interposer-path", c.interposer_path, origin(c, "runtime.interposer-path", file), presence(c.interposer_path));
  row("state-dir", c.state_dir, origin(c, "runtime.state-dir", file));
  row("runtimes", join(c.runtimes, ", "), origin(c, "runtime.runtimes", file));
  row("spec-dirs", join(c.spec_dirs, ", "), origin(c, "cdi.spec-dirs", file));
  row("gpuslice-runtime", installed::kRuntimePath, "compiled-in default, what `configure containerd` registers",
      presence(installed::kRuntimePath));
  return 0;
}

} // namespace

void register_version(CLI::App &app, Action &action) {
  auto *cmd = app.add_subcommand("version", "print the version and the paths in effect, and where each comes from");
  cmd->callback([&action] { action = [] { return run_version(); }; });
}

} // namespace gpuslice::cli
