// Which glibc a container image has, read from its libc.so.6 as data.
//
// Why: the interposer is preloaded into every program of a limited
// container; on a glibc that lacks a symbol version it references, ld.so
// refuses it and every exec in the container dies ("version `GLIBC_2.x' not
// found"). It is built for glibc >= 2.17 (cmake/glibc_floor/glibc_floor.h);
// an older image must fail at create with the reason, not start broken.
// The image's libc is hostile input: found with the rootfs resolver, never
// loaded or run, each offset checked before use.
#pragma once

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

// Throws Error naming the image's libc.so.6, its newest version and `floor`
// when the image has a glibc that does not define GLIBC_<floor>. An image
// without libc.so.6 in the loader's default dirs (static or musl programs)
// passes: the interposer is not loaded there at all.
void require_image_glibc(const std::string &rootfs, const std::string &floor);

} // namespace gpuslice::create
