// What the create path needs of a container's image: the places gpuslice
// mounts onto, the image's own /etc/ld.so.preload, and which glibc it has
// (read from its libc.so.6 as data).
//
// Why: the interposer is preloaded into every program of a limited
// container; on a glibc that lacks a symbol version it references, ld.so
// refuses it and every exec in the container dies ("version `GLIBC_2.x' not
// found"). It is built for glibc >= 2.17 (cmake/glibc_floor/glibc_floor.h);
// an older image must fail at create with the reason, not start broken.
// The image's libc is hostile input: found with the rootfs resolver, never
// loaded or run, each offset checked before use.
#pragma once

#include "gpuslice/common/rootfs.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslice::create {

// The GLIBC_x.y[.z] version names an ELF file defines (.gnu.version_d), in
// file order. Throws Error when `data` is not a well-formed ELF64 of this
// machine's byte order or its version section is out of bounds.
std::vector<std::string> glibc_versions_defined(std::string_view data, const std::string &shown);

// Highest of `versions` by numeric comparison ("2.17" < "2.2.5" is false).
std::string newest_glibc_version(const std::vector<std::string> &versions);

// The image's facts, read before the modifiers run (image.cpp).
// The image's own preload list: small, or no list a loader would read whole.
inline constexpr std::size_t kMaxImagePreloadSize = 64 * 1024;

struct ImageFacts {
  // What /etc, /run, /run/gpuslice and /etc/ld.so.preload are in the root,
  // every component looked at without following it.
  rootfs::PathKind etc = rootfs::PathKind::missing, run = rootfs::PathKind::missing,
                   run_gpuslice = rootfs::PathKind::missing, preload = rootfs::PathKind::missing;
  std::optional<std::string> preload_text; // the image's /etc/ld.so.preload (bounded)
  // The GLIBC_ versions of its libc.so.6 (the first in the loader's default
  // dirs), and where it is; no libc: a static or musl image.
  std::string libc_path;
  std::vector<std::string> glibc_versions;
};

// Reads them from `rootfs` (the container's root on the host). Throws Error
// naming the file that cannot be read, or is not what it says it is.
ImageFacts read_image(const std::string &rootfs);

// Throws Error naming the image's libc.so.6, its newest version and `floor`
// when the image has a glibc that does not define GLIBC_<floor>. An image
// without libc.so.6 in the loader's default dirs (static or musl programs)
// passes: the interposer is not loaded there at all.
void require_glibc(const ImageFacts &image, const std::string &floor);

} // namespace gpuslice::create
