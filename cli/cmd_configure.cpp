// `gpuslice configure containerd`: registers (or, with --remove, takes out)
// the gpuslice runtime handler in containerd's config. The work is in
// cli/containerd/containerd_config.*; this file only maps flags to options.
#include "commands.hpp"

#include "containerd_config.hpp"

#include <iostream>
#include <memory>

namespace gpuslice::cli {

void register_configure(CLI::App &app, Action &action) {
  CLI::App *configure = app.add_subcommand("configure", "register gpuslice in a container engine's config");
  configure->require_subcommand(1);
  CLI::App *containerd_cmd = configure->add_subcommand(
      "containerd", "add the gpuslice runtime handler to containerd's CRI config (drop-in + imports for config "
                    "versions 2 and 3, a marked block for version 1); containerd must be restarted afterwards");

  struct Flags {
    containerd::ConfigureOptions options;
    bool dry_run = false;
    bool remove = false;
  };
  auto flags = std::make_shared<Flags>();
  containerd_cmd->add_option("--config", flags->options.config_path, "containerd's main config file")
      ->capture_default_str();
  containerd_cmd->add_option("--drop-in", flags->options.drop_in_path,
                             "drop-in file to write (default: <config dir>/conf.d/99-gpuslice.toml)");
  containerd_cmd->add_option("--runtime-path", flags->options.runtime_path, "path of gpuslice-runtime")
      ->capture_default_str();
  containerd_cmd->add_option("--handler-name", flags->options.handler_name, "name of the runtime handler")
      ->capture_default_str();
  containerd_cmd->add_flag("--set-as-default", flags->options.set_as_default,
                           "make the handler containerd's default_runtime_name (every pod then runs through "
                           "gpuslice-runtime, one exec more per runtime call; without it, only pods naming the "
                           "handler's RuntimeClass do)");
  containerd_cmd->add_flag("--dry-run", flags->dry_run, "print what would be written, write nothing");
  containerd_cmd->add_flag("--remove", flags->remove, "take out exactly what an earlier run added");

  containerd_cmd->callback([flags, &action] {
    action = [flags] {
      containerd::Plan plan =
          flags->remove ? containerd::plan_remove(flags->options) : containerd::plan_configure(flags->options);
      if (!flags->dry_run)
        containerd::apply(plan);
      std::cout << containerd::describe(plan, flags->dry_run);
      return 0;
    };
  });
}

} // namespace gpuslice::cli
