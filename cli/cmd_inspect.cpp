// `gpuslice inspect`: the node's GPUs and the containers sharing them, for
// the operator (a table, like `kubectl inspect cgpu`), for programs (JSON)
// and for Prometheus (the text format, written atomically for
// node_exporter's textfile collector). The work is gpuslice_inspect's
// (inspect/); this file only reads the command line.
#include "commands.hpp"

#include "gpuslice/common/config.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/inspect/report.hpp"

#include <cstdio>
#include <memory>
#include <string>

namespace gpuslice::cli {

namespace {

struct InspectOptions {
  std::string output = "table";
  bool details = false;
  std::string output_file;
};

int run_inspect(const InspectOptions &opts) {
  const Config config = load_config(config_path());
  const inspect::NodeReport report = inspect::collect(config);
  const std::string text = opts.output == "json"         ? inspect::to_json(report)
                           : opts.output == "prometheus" ? inspect::to_prometheus(report)
                                                         : inspect::to_table(report, opts.details);
  if (opts.output_file.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  // A scraper reads the file at any moment: it sees the old one or the new.
  fs::write_file_atomic(opts.output_file, text, 0644);
  return 0;
}

} // namespace

void register_inspect(CLI::App &app, Action &action) {
  auto opts = std::make_shared<InspectOptions>();
  auto *cmd = app.add_subcommand(
      "inspect", "show the node's GPUs and the containers sharing them: memory allotted by limits, used (NVML) and "
                 "total per GPU; with -d each container's limits, use, compute share and what its monitor did "
                 "(reads the state dir: run as root)");
  cmd->add_option("--output,-o", opts->output, "table (default), json, or prometheus (the text exposition format)")
      ->check(CLI::IsMember({"table", "json", "prometheus"}));
  cmd->add_flag("--details,-d", opts->details, "the table also lists each container (json and prometheus always do)");
  cmd->add_option("--output-file", opts->output_file,
                  "write to this file atomically instead of stdout (node_exporter's textfile collector: a "
                  "*.prom file in its directory, from a systemd timer; docs/inspect.md)");
  cmd->callback([&action, opts] { action = [opts] { return run_inspect(*opts); }; });
}

} // namespace gpuslice::cli
