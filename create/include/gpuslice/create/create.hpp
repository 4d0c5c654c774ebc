// The create path, which gpuslice-runtime (create, run) and gpuslice-hook
// (podman, CRI-O) share (design.md):
//
//   config.json, parsed once into the typed spec (bundle_spec.hpp)
//   -> what it asks for (requests.hpp)
//   -> what the host says: CDI specs, device nodes, the image, the GPUs'
//      load (gather_facts)
//   -> the modifiers, each changing only the spec and the plan (modifiers.hpp)
//   -> one commit of every side effect, with one rollback (commit)
//
// and then only the exec of the runtime (or, in gpuslice-hook, what the
// engine did not do: commit's `finish`).
#pragma once

#include "gpuslice/create/bundle_spec.hpp"
#include "gpuslice/create/modifiers.hpp"
#include "gpuslice/create/monitor_setup.hpp"
#include "gpuslice/create/plan.hpp"
#include "gpuslice/selinux/system.hpp"
#include "gpuslice/state/container_dir.hpp"

#include <functional>
#include <optional>
#include <string>

namespace gpuslice::create {

// The call's context: container `id` of the bundle in `bundle_dir`.
Context context_of(const Config &config, const std::string &config_file, const std::string &id,
                   const std::string &bundle_dir, HookMode hooks);

// What the host says for `spec`'s requests. No request and no limit in
// config.json's env: facts.asks_nothing() and nothing else read. A limit in
// that env that no requested device gives comes from a device the engine
// applied (Facts::applied) or is refused. With limits: the containers dir's lock, held in
// facts until the commit has the container's limits file in place, and
// stale dirs collected when the cap would refuse. Throws Error naming the
// device, spec or file.
Facts gather_facts(const BundleSpec &spec, const Context &ctx, selinux::System &system = selinux::kernel());

// The devices a create gives, for the log: the requested ones, then those
// the engine applied ("NAME (applied by the engine)").
std::vector<std::string> devices_of(const Facts &facts);

// The modifiers over `spec`, in order: the plan. Throws Error.
Plan plan_create(BundleSpec &spec, const Facts &facts, const Context &ctx, selinux::System &system = selinux::kernel());

// When the container's monitor starts: left to the caller, once runc has
// made the init (`create`: Committed::monitor); now, on the init that runs
// (gpuslice-hook); now, watching this process until it exits and then the
// init runc's pid file names (`run`).
struct MonitorStart {
  enum class When { deferred, on_init, after_this_process } when = When::deferred;
  int init_pid = 0;     // on_init
  std::string pid_file; // after_this_process
};

// Performs `plan`: the state dir with its record (this process its
// creator; a stale one of the same id collected, a live one refused), the
// bind-mounted files, each labelled; the monitor's region and run/ with its
// socket; the monitor when `start` says now; then `finish` with the dir in
// place (gpuslice-runtime writes config.json there). On any failure the
// state dir is removed and nothing else stays. Returns the dir, still open,
// and a deferred monitor. Throws Error.
struct Committed {
  state::ContainerDir dir;
  std::optional<PendingMonitor> monitor;
};
Committed commit(Plan &plan, Facts &facts, const Context &ctx, const MonitorStart &start,
                 const std::function<void(const state::ContainerDir &)> &finish);

// The whole path for a bundle, as gpuslice-runtime's create and run take
// it: its config.json read, planned and committed, written back last (the
// commit's finish). `pid_file`: the one runc is given; "" for one in the
// state dir, which is then set here for the caller to pass on (runc's
// earlier file there removed once the id is this create's). Without limits
// the record names that file as the init's. With `run`, the monitor starts
// watching this process (MonitorStart::When::after_this_process), else it
// is left to the caller. nullopt, config.json untouched, when it asks for
// no device. Throws Error naming the device, spec or file; nothing stays.
struct BundleCreate {
  std::string bundle_dir; // "" for the current one
  std::string container_id;
  std::string pid_file;
  bool run = false;
};
struct Created {
  state::ContainerDir dir;
  std::optional<PendingMonitor> monitor;
  std::vector<std::string> devices;  // injected
  std::vector<std::string> warnings; // for the log
  bool limits = false;
  std::vector<std::string> notes; // for the log, at info
};
std::optional<Created> create_bundle(BundleCreate &request, const Config &config, const std::string &config_file);

} // namespace gpuslice::create
