// commit (create.hpp): every side effect of a create, in one place, with one
// rollback: the state dir goes, and whatever was made in it with it.
#include "gpuslice/create/create.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/rootfs.hpp"
#include "gpuslice/sharing/region.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace gpuslice::create {

Committed commit(Plan &plan, Facts &facts, const Context &ctx, const MonitorStart &start,
                 const std::function<void(const state::ContainerDir &)> &finish) {
  const selinux::Labeler &labeler = plan.labeler;
  UniqueFd region;
  if (plan.monitor) {
    region = make_region(labeler);
    plan.record.region = sharing::to_text(sharing::region_id(region.get()));
  }
  Committed done{state::create_container_dir(ctx.config.state_dir, ctx.container_id, plan.record), std::nullopt};
  const state::ContainerDir &dir = done.dir;
  std::vector<std::string> made; // in the image, undone on failure (when still empty)
  try {
    labeler.label_fd(dir.fd.get(), selinux::Share::private_file, dir.path);
    for (const auto &[name, text] : plan.files) {
      const UniqueFd f = fs::create_file_at(dir.fd.get(), name, text, 0444, dir.path);
      labeler.label_fd(f.get(), selinux::Share::private_read_only, dir.path + "/" + name);
    }
    // The image's missing pinned dirs, made without following its links
    // (none lies on the way: the facts saw the path missing).
    if (!plan.image_dirs.empty()) {
      const UniqueFd root(::open(facts.rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!root)
        throw system_error("cannot open the container's root " + quote(facts.rootfs));
      for (const auto &path : plan.image_dirs) {
        rootfs::make_dirs_in_root(root.get(), path, facts.rootfs);
        made.push_back(path);
      }
    }
    // Its own limits file is in place: the next create counts it. Before
    // the monitor, whose start forks: a child would hold the lock on.
    facts.admission_lock.reset();
    if (plan.monitor) {
      make_run_dir(dir, plan.burst, labeler);
      PendingMonitor monitor{{}, shim_program(ctx.config), plan.record.monitor_args};
      monitor.setup.region = std::move(region);
      // Bound now: the container finds the socket from its first moment,
      // and a connect waits in the backlog until the monitor answers it.
      monitor.setup.listener = listen_in_run(dir, labeler);
      if (plan.burst)
        monitor.setup.activity_table = open_activity(ctx.config, labeler);
      monitor.setup.interval_ms = ctx.config.monitor_interval_ms;
      switch (start.when) {
      case MonitorStart::When::deferred:
        done.monitor = std::move(monitor);
        break;
      case MonitorStart::When::on_init:
        state::record_init(dir, ctx.container_id, start.init_pid);
        launch_monitor(std::move(monitor), dir);
        break;
      case MonitorStart::When::after_this_process:
        // `run`: this process runs runc and exits once the container has
        // ended; runc has written the init's pid by then.
        monitor.setup.watched = shim::open_pidfd(static_cast<int>(::getpid()));
        monitor.setup.pid_file = fs::absolute(start.pid_file);
        exec_and_record(std::move(monitor), dir);
        break;
      }
    } else if (start.when == MonitorStart::When::on_init) {
      state::record_init(dir, ctx.container_id, start.init_pid);
    }
    finish(dir);
  } catch (...) {
    for (const auto &path : made)
      ::rmdir((facts.rootfs + path).c_str());
    state::remove_container_dir(ctx.config.state_dir, ctx.container_id, state::process_id(static_cast<int>(::getpid())));
    throw;
  }
  return done;
}

} // namespace gpuslice::create
