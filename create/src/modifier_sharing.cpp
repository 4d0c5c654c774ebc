// GPU limits: what the container needs so that libgpuslice-cuda.so holds
// its processes to them (docs/region.md). A tmpfs-like /run/gpuslice (the
// state dir's run/, read-only) holding, each a read-only bind mount from
// the state dir, the limits file, the region socket (the monitor answers
// there with the usage region) and the interposer; the node's activity
// table for the burst policy; /etc/ld.so.preload (the interposer first,
// then the image's own entries). In a writable root, /run and /etc are
// first bound onto themselves, so that no process of the container can
// rename them (or /run/gpuslice) away and start without the preload: a
// mount point cannot be renamed.
#include "gpuslice/create/modifiers.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/state/container_dir.hpp"

extern "C" {
#include "gpuslice/region.h"
}

#include <algorithm>

namespace gpuslice::create {

static_assert(std::string_view(GS_DEFAULT_REGION_SOCKET) == "/run/gpuslice/region.sock" &&
              std::string_view(GS_DEFAULT_LIMITS_PATH) == "/run/gpuslice/limits",
              "the interposer looks where the runtime mounts");

namespace {

using rootfs::PathKind;

void expect_kind(PathKind kind, const std::string &path, PathKind want) {
  if (kind == PathKind::missing || kind == want)
    return;
  if (kind == PathKind::symlink)
    throw Error("the image's " + quote(path) + " is (or goes through) a symbolic link: gpuslice does not mount its "
                "files through links the image controls (runc and the kernel can resolve them differently)");
  throw Error("the image's " + quote(path) + " is not a " +
              (want == PathKind::directory ? "directory" : "regular file"));
}

// Read-only, and nothing in it runs with privileges or as a device.
OciMount bind_mount(const std::string &source, const std::string &destination) {
  return {destination, "bind", source, {"rbind", "ro", "nosuid", "nodev"}};
}

class Sharing final : public Modifier {
public:
  void modify(BundleSpec &spec, Plan &plan, const Facts &facts, const Context &ctx) const override {
    if (!facts.limits)
      return;
    const ImageFacts &image = *facts.image;
    expect_kind(image.etc, "/etc", PathKind::directory);
    expect_kind(image.run, "/run", PathKind::directory);
    expect_kind(image.run_gpuslice, kSharingDir, PathKind::directory);
    expect_kind(image.preload, "/etc/ld.so.preload", PathKind::regular);
    require_glibc(image, GPUSLICE_GLIBC_FLOOR);

    const sharing::Limits &limits = *facts.limits;
    plan.burst = std::any_of(limits.devices.begin(), limits.devices.end(),
                             [](const sharing::DeviceLimit &d) { return d.policy == sharing::Policy::burst; });
    sharing::Limits rendered = limits;
    if (plan.burst)
      rendered.activity = kActivityContainerPath;
    const std::string limits_text = sharing::render_limits(rendered);
    plan.files.emplace_back(state::kLimitsFile, limits_text);
    plan.files.emplace_back(state::kPreloadFile, merged_preload(image.preload_text));
    plan.record.limits_digest = state::limits_digest(limits_text);
    plan.monitor = true;
    // A pinned dir the image lacks (a root made of a program and its
    // libraries) is made in the root first: the pin's source must exist,
    // and without the pin the dir runc makes for the mounts in it could be
    // renamed away.
    if (!spec.root_readonly())
      for (auto [kind, dir] : {std::pair{image.etc, "/etc"}, std::pair{image.run, "/run"}})
        if (kind == PathKind::missing && !spec.mounts_at(dir))
          plan.image_dirs.emplace_back(dir);
    add_mounts(spec, ctx, facts.rootfs, plan.burst);
  }

private:
  // (destination, source) of each mount add_mounts makes.
  static std::vector<std::pair<std::string, std::string>> own_mounts(const Context &ctx) {
    return {{kSharingDir, ctx.state_path + "/" + state::kRunDir},
            {GS_DEFAULT_LIMITS_PATH, ctx.state_path + "/" + state::kLimitsFile},
            {kInterposerContainerPath, ctx.config.interposer_path},
            {kActivityContainerPath, fs::clean_path(ctx.config.state_dir) + "/" + state::kActivityTable},
            {"/etc/ld.so.preload", ctx.state_path + "/" + state::kPreloadFile}};
  }

  static void add_mounts(BundleSpec &spec, const Context &ctx, const std::string &rootfs, bool burst) {
    // This very create's mounts (sources in this id's state dir), left in
    // config.json by an earlier try of it that was killed after writing it
    // (kill -9, OOM, a reboot): made again below, one copy of each. Any
    // other mount there is not gpuslice's to replace.
    spec.remove_mounts(own_mounts(ctx));
    if (spec.mounts_under(kSharingDir) || spec.mounts_at("/etc/ld.so.preload"))
      throw Error("the container already mounts something at " + quote(kSharingDir) + " or " +
                  quote("/etc/ld.so.preload"));
    // Pins: /etc and /run bound onto themselves, so that they are mount
    // points nobody in the container can rename. Only where the root is
    // writable (a read-only root refuses the rename anyway). Non-recursive
    // and first, so that every later mount (the spec's, then ours) stacks
    // on the pin and keeps its own flags: a recursive bind made last would
    // copy them, and crun remounts such a copy read-write. First, not
    // merely before the mounts inside them: a destination like
    // /var/run/secrets lands in /run through the image's own links.
    if (!spec.root_readonly()) {
      std::vector<OciMount> pins;
      for (const char *dir : {"/etc", "/run"})
        if (!spec.mounts_at(dir)) // else a mount point already
          pins.push_back({dir, "bind", rootfs + dir, {"bind"}});
      spec.add_mounts_first(pins);
    }
    // /run/gpuslice is the state dir's run/ (read-only): the region socket
    // there is found by name at each connect, so a monitor started again
    // after a crash binds a new socket that the container sees; a socket
    // bound onto its own mount point would stay dead with the monitor that
    // made it. Its other names are empty files commit makes, mount points
    // for the binds below (none can be made in a read-only mount).
    spec.add_mount({kSharingDir, "bind", ctx.state_path + "/" + state::kRunDir, {"bind", "ro", "nosuid", "nodev", "noexec"}});
    spec.add_mount(bind_mount(ctx.state_path + "/" + state::kLimitsFile, GS_DEFAULT_LIMITS_PATH));
    spec.add_mount(bind_mount(ctx.config.interposer_path, kInterposerContainerPath));
    if (burst)
      spec.add_mount(bind_mount(fs::clean_path(ctx.config.state_dir) + "/" + state::kActivityTable, kActivityContainerPath));
    spec.add_mount(bind_mount(ctx.state_path + "/" + state::kPreloadFile, "/etc/ld.so.preload"));
  }
};

} // namespace

std::unique_ptr<Modifier> sharing_modifier() { return std::make_unique<Sharing>(); }

} // namespace gpuslice::create
