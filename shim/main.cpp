// gpuslice-shim: the monitor of one container (loop.hpp's
// run_monitor), a program of its own so that it is small, dynamically
// linked against glibc (it will load NVML), and named in `ps`. Exec'd at
// create by the init recorder that was the monitor until its first interval
// (--watched is the init, --init its pid, --connected), started by
// gpuslice-hook, or before `runc run` (--watched is gpuslice-runtime until
// it exits, then the init --pid-file names); never by hand
// (shim::exec_monitor, exec_in_place): its descriptors arrive at fixed
// numbers, already detached (own session, stdio on /dev/null, nothing else
// open, PATH alone in its environment). Started again by any later
// gpuslice-runtime call that finds it gone (create/monitor_start.hpp).
//
//   gpuslice-shim --listener FD --region FD --watched FD [--activity FD]
//                 [--pid-file PATH | --init PID] [--state-dir DIR --id ID --creator "PID START"]
//                 [--limits PATH --interval-ms N --action log|kill|freeze
//                  --tolerance BYTES --nvml LIBRARY [--log-file PATH] [--pod NS/NAME]]
//                 [--connected PID,...]
// (BYTES a plain number: no size parsing here, which would pull locale and
// libm code into every monitor.) --connected: the pids that took the region
// before this process served it (not bypasses), from the monitor that ran
// in place until its first interval (gpuslice-runtime's init recorder,
// create/monitor_start.hpp, which execs this in the same process) or, at a
// restart, the processes that map the region; the first check comes at
// once.
//
//   gpuslice-shim --query-gpus [--nvml LIBRARY]
// prints "UUID MEMORY-BYTES" per GPU, from NVML, for gpuslice-runtime's
// admission: gpuslice-runtime is static, and a static glibc program cannot
// load NVML reliably. Exit 1 and the reason when NVML cannot say.
//
// Whoever starts it records it in <state-dir>/containers/<id>/monitor
// (create/monitor_start.cpp). When the container ends it removes <state-dir>/containers/<id>, if the
// directory is still the one its creator made. With --limits it checks the
// container's GPU memory against the driver's own accounting every
// interval (enforcer.hpp).
#include "gpuslice/shim/enforcer.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/strings.hpp"
#include "gpuslice/shim/loop.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

namespace {

using namespace gpuslice;

int number(const std::string &text, const std::string &flag) {
  int n = -1;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || p != text.data() + text.size() || n < 0)
    throw Error(flag + " " + quote(text) + " is not a number");
  return n;
}

int query_gpus(int argc, char **argv) {
  std::string library = "libnvidia-ml.so.1";
  if (argc == 4 && std::string_view(argv[2]) == "--nvml")
    library = argv[3];
  else if (argc != 2)
    throw Error("usage: gpuslice-shim --query-gpus [--nvml LIBRARY]");
  std::string why;
  auto nvml = shim::Nvml::load(library, why);
  if (!nvml)
    throw Error(why);
  const auto gpus = nvml->devices();
  if (gpus.empty())
    throw Error("NVML (" + library + ") lists no GPU");
  for (const auto &gpu : gpus)
    std::printf("%s %llu\n", gpu.uuid.c_str(), static_cast<unsigned long long>(gpu.total));
  return 0;
}

int run(int argc, char **argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--query-gpus")
    return query_gpus(argc, argv);
  static const char *const flags[] = {"--listener", "--region",      "--watched", "--activity",  "--pid-file",
                                      "--state-dir", "--id",         "--creator", "--limits",    "--interval-ms",
                                      "--action",    "--tolerance",  "--nvml",    "--log-file",  "--pod",
                                      "--init",      "--connected"};
  const Error usage("usage: gpuslice-shim --listener FD --region FD --watched FD [--activity FD] [--pid-file PATH] "
                    "[--state-dir DIR --id ID --creator \"PID START\"] (started by gpuslice-runtime, not by hand)");
  std::map<std::string, std::string> opt;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (std::find(std::begin(flags), std::end(flags), flag) == std::end(flags) || i + 1 >= argc)
      throw usage;
    opt[std::string(flag)] = argv[i + 1];
  }
  for (const char *required : {"--listener", "--region", "--watched"})
    if (!opt.count(required))
      throw usage;
  shim::MonitorSetup setup;
  setup.listener.reset(number(opt["--listener"], "--listener"));
  setup.region.reset(number(opt["--region"], "--region"));
  setup.watched.reset(number(opt["--watched"], "--watched"));
  if (opt.count("--activity"))
    setup.activity_table.reset(number(opt["--activity"], "--activity"));
  setup.pid_file = opt["--pid-file"];
  if (opt.count("--init")) // --watched is the container's init already
    setup.init_pid = number(opt["--init"], "--init");
  if (opt.count("--state-dir") || opt.count("--id") || opt.count("--creator")) {
    if (!opt.count("--state-dir") || !opt.count("--id") || !opt.count("--creator"))
      throw Error("--state-dir, --id and --creator go together");
    const auto creator = state::parse_process_id(opt["--creator"]);
    if (!creator)
      throw Error("--creator " + quote(opt["--creator"]) + " is not \"PID STARTTIME\"");
    setup.cleanup = [state_dir = opt["--state-dir"], id = opt["--id"], creator = *creator] {
      try {
        state::remove_container_dir(state_dir, id, creator);
      } catch (const Error &) {
        // the next create, or the poststop hook in hook mode, removes it
      }
    };
  }
  std::unique_ptr<shim::Enforcer> enforcer;
  FILE *log = nullptr;
  if (opt.count("--limits")) {
    shim::EnforcerSetup e;
    e.limits = with_context("--limits", [&] { return sharing::parse_limits(fs::read_file(opt["--limits"], 65536)); });
    e.action = shim::parse_action(opt.count("--action") ? opt["--action"] : "log");
    if (opt.count("--tolerance")) { // bytes: gpuslice-runtime parsed the size
      const std::string &t = opt["--tolerance"];
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), e.tolerance);
      if (ec != std::errc() || p != t.data() + t.size())
        throw Error("--tolerance " + quote(t) + " is not a number of bytes");
    }
    e.container_id = opt["--id"];
    setup.interval_ms = opt.count("--interval-ms") ? number(opt["--interval-ms"], "--interval-ms") : 1000;
    e.pod = opt["--pod"];
    if (opt.count("--state-dir") && opt.count("--id"))
      // In the container's record, for `gpuslice inspect`. The dir opened
      // anew each time: its lock is let go when the descriptor closes.
      e.report = [state_dir = opt["--state-dir"], id = opt["--id"]](const std::string &json) {
        if (const auto dir = state::open_container_dir(state_dir, id))
          state::update_record(*dir, [&](state::Record &r) { r.usage = json; });
      };
    if (opt.count("--log-file")) {
      // Its directory as gpuslice-runtime's logging makes it (which may
      // not have run yet: it starts only after the create's side effects).
      ::mkdir(fs::dirname(opt["--log-file"]).c_str(), 0755);
      log = std::fopen(opt["--log-file"].c_str(), "ae");
    }
    e.log = log;
    auto load_nvml = [library = opt.count("--nvml") ? opt["--nvml"] : "libnvidia-ml.so.1", id = e.container_id,
                      log]() {
      std::string why;
      auto nvml = shim::Nvml::load(library, why);
      if (!nvml && log)
        std::fprintf(log, "gpuslice-shim container %s: %s: GPU memory is enforced by the interposer alone\n",
                     id.c_str(), why.c_str());
      return nvml;
    };
    enforcer = std::make_unique<shim::Enforcer>(std::move(e), std::move(load_nvml));
    if (opt.count("--connected")) {
      setup.first_interval_at_once = true;
      for (const auto &pid : split(opt["--connected"], ',', EmptyParts::skip))
        enforcer->connected(number(pid, "--connected"));
    }
    setup.on_connect = [&](int pid) { enforcer->connected(pid); };
    setup.on_init = [&](int pid) { enforcer->init_started(pid); };
    setup.on_interval = [&, region = setup.region.get()] { enforcer->check(region); };
  }
  // Started at kMonitorStartNice, so that loading did not slow the
  // container's start; the loop (answering the container, enforcing) runs
  // at the default priority.
  if (::setpriority(PRIO_PROCESS, 0, 0) != 0 && log)
    std::fprintf(log, "gpuslice-shim container %s: cannot return to nice 0: %s\n", opt["--id"].c_str(),
                 std::strerror(errno));
  shim::run_monitor(setup);
  if (log)
    std::fclose(log);
  return 0;
}

} // namespace

// A static libstdc++'s default terminate handler prints the demangled type
// of an uncaught exception, which links the demangler: text that every
// monitor would map. Every Error is caught in main; anything else is
// a bug, and aborts as it would anyway.
namespace __gnu_cxx {
void __verbose_terminate_handler() { std::abort(); }
} // namespace __gnu_cxx

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const gpuslice::Error &e) {
    std::fprintf(stderr, "gpuslice-shim: %s\n", e.what());
    return argc >= 2 && std::string_view(argv[1]) == "--query-gpus" ? 1 : 2;
  }
}
