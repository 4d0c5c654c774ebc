// gpuslice cdi list|validate|inject|generate: the CDI library from the
// command line, for operators checking what a node's spec dirs offer and
// what a container would get, and writing the spec of the node's NVIDIA
// driver (nvidia/generate.hpp).
#include "commands.hpp"

#include "gpuslice/cdi/apply.hpp"
#include "gpuslice/cdi/names.hpp"
#include "gpuslice/cdi/parse.hpp"
#include "gpuslice/cdi/registry.hpp"
#include "gpuslice/cdi/validate.hpp"
#include "gpuslice/common/config.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/install_paths.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/nvidia/discover.hpp"
#include "gpuslice/nvidia/generate.hpp"
#include "gpuslice/sharing/limits.hpp"

#include <iostream>
#include <memory>

namespace gpuslice::cli {

namespace {

struct CdiOptions {
  std::string spec_dirs; // comma-separated; empty: from config
  std::string output_format = "text";
  std::vector<std::string> files;
  std::string config_in;
  std::string output_path;
  std::vector<std::string> devices;
};

std::vector<std::string> spec_dirs(const CdiOptions &o) {
  if (o.spec_dirs.empty())
    return load_config(config_path()).spec_dirs;
  return split(o.spec_dirs, ',', EmptyParts::skip);
}

void print_errors(const cdi::Registry &registry) {
  for (const auto &e : registry.errors())
    std::cerr << e.path << ": " << e.message << "\n";
}

int run_list(const CdiOptions &o) {
  const auto dirs = spec_dirs(o);
  cdi::Registry registry(dirs);
  registry.reload();
  print_errors(registry);
  const auto names = registry.device_names();
  if (names.empty()) // an empty answer must not look like a broken command
    std::cerr << "gpuslice: no CDI device in " << join(dirs, ", ") << "\n";
  if (o.output_format == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto &n : names)
      out.push_back({{"name", n}, {"spec", registry.find(n)->spec->path}});
    std::cout << out.dump(2) << "\n";
  } else {
    for (const auto &n : names)
      std::cout << n << "\n";
  }
  return 0;
}

int run_validate(const CdiOptions &o) {
  std::size_t problems = 0, checked = 0;
  auto report = [&](const std::string &path, const std::string &msg) {
    std::cerr << path << ": " << msg << "\n";
    ++problems;
  };
  if (!o.files.empty()) {
    for (const auto &f : o.files) {
      ++checked;
      try {
        std::vector<std::string> list;
        cdi::Spec s = cdi::parse_spec(fs::read_file(f, cdi::kMaxSpecSize));
        s.path = f;
        for (const auto &p : cdi::validate_spec(s))
          report(f, p);
        for (const auto &w : cdi::annotation_warnings(s))
          std::cerr << f << ": warning: " << w << "\n";
      } catch (const Error &e) {
        report(f, e.message());
      }
    }
  } else {
    cdi::Registry registry(spec_dirs(o));
    registry.reload();
    for (const auto &e : registry.errors())
      report(e.path, e.message);
    for (const auto &spec : registry.specs())
      for (const auto &w : cdi::annotation_warnings(*spec))
        std::cerr << spec->path << ": warning: " << w << "\n";
    checked = registry.specs().size();
  }
  if (problems) {
    std::cerr << problems << " problem" << (problems > 1 ? "s" : "") << " found\n";
    return 1;
  }
  std::cout << checked << " spec file" << (checked == 1 ? "" : "s") << " valid\n";
  return 0;
}

int run_inject(const CdiOptions &o) {
  cdi::Registry registry(spec_dirs(o));
  registry.reload();
  cdi::OciSpec oci;
  with_context("OCI spec " + quote(o.config_in), [&] { oci = parse_json<cdi::OciSpec>(fs::read_file(o.config_in)); });
  try {
    for (const auto &d : o.devices)
      cdi::parse_qualified_name(d);
    cdi::inject_devices(registry, oci, o.devices);
  } catch (const Error &e) {
    std::cerr << "gpuslice: cannot inject: " << e.what() << "\n";
    return 2;
  }
  const std::string text = oci.dump(2) + "\n";
  if (o.output_path.empty())
    std::cout << text;
  else
    fs::write_file_atomic(o.output_path, text);
  return 0;
}

struct GenerateCli {
  nvidia::DiscoverOptions discover;
  nvidia::GenerateOptions generate;
  std::string vendor = "nvidia.com", device_class = "gpu", naming = "index", output;
};

int run_generate(GenerateCli &g) {
  g.generate.kind = g.vendor + "/" + g.device_class;
  g.generate.naming = g.naming == "uuid" ? nvidia::Naming::uuid : g.naming == "both" ? nvidia::Naming::both
                                                                                     : nvidia::Naming::index;
  if (!g.generate.memory_limit.empty())
    with_context("--memory-limit", [&] { return sharing::parse_size(g.generate.memory_limit); });
  if (!g.generate.compute_limit.empty()) {
    const auto &c = g.generate.compute_limit;
    if (c.empty() || c.size() > 3 || c.find_first_not_of("0123456789") != std::string::npos || std::stoi(c) < 1 ||
        std::stoi(c) > 100)
      throw Error("--compute-limit " + quote(c) + " is not a percentage from 1 to 100");
  }
  bool json = false;
  if (!g.output.empty()) {
    if (g.output.ends_with(".json"))
      json = true;
    else if (!g.output.ends_with(".yaml") && !g.output.ends_with(".yml"))
      throw Error("--output " + quote(g.output) + ": the name must end in .yaml, .yml or .json (the registry "
                  "loads nothing else)");
  }
  const nvidia::Driver driver = nvidia::discover(g.discover);
  const auto spec = nvidia::generate_spec(driver, g.generate);
  const std::string text = json ? spec.dump(2) + "\n" : nvidia::to_yaml(spec);
  if (g.output.empty())
    std::cout << text;
  else
    fs::write_file_atomic(g.output, text, 0644);
  std::cerr << "gpuslice: " << driver.gpus.size() << " GPU" << (driver.gpus.size() == 1 ? "" : "s") << ", driver "
            << driver.version << ", " << driver.libraries.size() << " libraries"
            << (g.output.empty() ? std::string() : ": wrote " + g.output) << "\n";
  return 0;
}

} // namespace

void register_cdi(CLI::App &app, Action &action) {
  auto opts = std::make_shared<CdiOptions>();
  CLI::App *cdi = app.add_subcommand("cdi", "inspect CDI specs and apply them to OCI specs");
  cdi->require_subcommand(1);
  const char *dirs_help = "comma-separated CDI spec dirs in priority order (later wins); default: [cdi] spec-dirs "
                          "of the config file, else /etc/cdi,/var/run/cdi";

  CLI::App *list = cdi->add_subcommand("list", "print the qualified names of all usable devices, sorted; "
                                               "spec errors go to stderr and do not change the exit code");
  list->add_option("--spec-dirs", opts->spec_dirs, dirs_help);
  list->add_option("--output,-o", opts->output_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  list->callback([&action, opts] { action = [opts] { return run_list(*opts); }; });

  CLI::App *validate = cdi->add_subcommand("validate", "report every problem in the given spec files, or in every "
                                                       "spec of the spec dirs (conflicts included); exit 1 if any");
  validate->add_option("--spec-dirs", opts->spec_dirs, dirs_help);
  validate->add_option("files", opts->files, "spec files to check instead of the spec dirs");
  validate->callback([&action, opts] { action = [opts] { return run_validate(*opts); }; });

  CLI::App *inject = cdi->add_subcommand("inject", "apply the edits of DEVICEs to an OCI config.json; exit 2 when a "
                                                   "device is invalid or unknown (nothing is written then)");
  inject->add_option("--spec-dirs", opts->spec_dirs, dirs_help);
  inject->add_option("--config", opts->config_in, "the OCI runtime spec to edit (never modified unless also --output)")
      ->required();
  inject->add_option("--output", opts->output_path, "write the result here atomically instead of stdout");
  inject->add_option("devices", opts->devices, "qualified device names, vendor/class=name")->required();
  inject->callback([&action, opts] { action = [opts] { return run_inject(*opts); }; });

  auto gen = std::make_shared<GenerateCli>();
  gen->generate.hook_path = installed::kHookPath;
  CLI::App *generate = cdi->add_subcommand(
      "generate", "write a CDI spec for this node's NVIDIA GPUs: one device per GPU plus \"all\", the driver's "
                  "libraries, tools, firmware and persistenced socket mounted read-only, and a createContainer "
                  "hook (gpuslice-hook update-ldcache) for the ld cache");
  generate->add_option("--dev-root", gen->discover.dev_root, "where /dev, /proc/driver/nvidia and /run are")
      ->capture_default_str();
  generate->add_option("--driver-root", gen->discover.driver_root,
                       "where the driver's libraries, tools and firmware are (a GPU operator's driver root)")
      ->capture_default_str();
  generate->add_option("--host-root", gen->discover.host_root,
                       "where the host's / is mounted when run in a container: files are read under it, and the "
                       "spec names them without it")
      ->capture_default_str();
  generate->add_option("--library-dir", gen->discover.library_dirs,
                       "a library folder inside the driver root (repeat; default: the distributions' usual ones)");
  generate->add_option("--vendor", gen->vendor, "the spec's vendor")->capture_default_str();
  generate->add_option("--class", gen->device_class, "the spec's class")->capture_default_str();
  generate->add_option("--device-name-strategy", gen->naming, "name devices by index (0, 1...), uuid (GPU-...) "
                                                              "or both")
      ->check(CLI::IsMember({"index", "uuid", "both"}))
      ->capture_default_str();
  generate->add_option("--output,-o", gen->output, "write here atomically: YAML (.yaml, .yml) or JSON (.json); "
                                                   "default: YAML on stdout");
  generate->add_option("--cdi-version", gen->generate.cdi_version, "default: the lowest version that holds the spec");
  generate->add_option("--slices", gen->generate.slices, "N devices per GPU, NAME-0 ... NAME-(N-1), each with the "
                                                         "GPU's UUID and the limits below (compute 100/N by default)");
  generate->add_option("--memory-limit", gen->generate.memory_limit, "GPUSLICE_MEMORY_LIMIT of every device (e.g. 8Gi)");
  generate->add_option("--compute-limit", gen->generate.compute_limit, "GPUSLICE_COMPUTE_LIMIT of every device, "
                                                                       "percent");
  generate->add_option("--hook-path", gen->generate.hook_path, "gpuslice-hook in the spec's hook")
      ->capture_default_str();
  generate->callback([&action, gen] { action = [gen] { return run_generate(*gen); }; });
}

} // namespace gpuslice::cli
