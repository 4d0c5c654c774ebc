// Making an Injection's nodes and mounts inside a running container's mount
// namespace, as root on the host, with the container's image as hostile
// input.
//
// A child forked for the purpose opens every host source first (open_tree
// clones, made read-only and so on on the detached copy: a bind mount
// ignores `ro` when it is made), then enters the namespace with setns on
// a pidfd of the container's init, and makes each target inside the root
// through rootfs::make_mount_target: resolved in the root, mounted onto
// by descriptor (move_mount). Nothing is ever looked up by a path string
// a second time, so an image whose links point at host directories, or a
// target swapped for a link meanwhile, reaches only its own root. The
// child loads nothing and never execs: what the container's files hold is
// only data to it. The parent's namespaces are never changed.
//
// Device nodes are made with mknodat, except in a container with a user
// namespace of its own, where a node made inside could not be opened: the
// host's node (CDI hostPath) is bound there instead, once checked to be
// the very device.
#pragma once

#include "gpuslice/hook/injection.hpp"

#include <string>

namespace gpuslice::hook {

// `rootfs`: the container's root in its mount namespace (the engine's
// root.path: at prestart and createRuntime the root is mounted there and
// not yet pivoted into). Throws Error naming the node or mount.
void inject_in_container(int init_pid, const std::string &rootfs, const Injection &injection);

} // namespace gpuslice::hook
