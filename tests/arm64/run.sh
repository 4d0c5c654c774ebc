#!/usr/bin/env bash
# tests/arm64/run.sh [BUILD_DIR]: gpuslice-runtime cross-compiled for arm64
# (aarch64) and run under qemu-aarch64 in front of this machine's runc.
#
# Why: the front (runtime/front/) is the only code written per architecture
# (its entry in assembly, its raw system calls, its hand-over to glibc's
# _start); the rest is portable C++ that must still build against arm64's
# glibc and libstdc++. This builds the whole runtime for arm64 (BUILD_DIR,
# default build-arm64), checks the front's objects as the x86-64 build's are
# checked (tests/front_objects.sh), and runs smoke.sh: calls that the front
# passes to runc, calls it leaves to the full program, and a real container
# created, started and deleted through both.
#
# Installs what it needs when missing (root): Debian's cross toolchain and
# qemu-user, and through multiarch the arm64 archives the runtime links
# (libyaml) or whose CMake files the configuration reads.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$repo/build-arm64}")

packages=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user runc busybox-static python3 file
          libyaml-dev:arm64 libtomlplusplus-dev:arm64 libspdlog-dev:arm64 libseccomp-dev:arm64 libcap-dev:arm64)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "arm64/run.sh: missing packages: ${missing[*]} (run as root to install them)" >&2
    exit 1
  fi
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Unoptimised: this checks that it builds and what it does, not its speed
# (the x86-64 builds measure that).
mkdir -p "$build"
cmake -S "$repo" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-O0 -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DBUILD_TESTING=OFF -DGPUSLICE_KUBELET_PLUGIN=OFF \
  -DGPUSLICE_WERROR="${GPUSLICE_WERROR:-OFF}" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" --target gpuslice-runtime

runtime=$build/bin/gpuslice-runtime
file -b "$runtime" | grep -q "ARM aarch64" || { echo "FAIL: $runtime is no aarch64 program: $(file -b "$runtime")" >&2; exit 1; }
bash "$repo/tests/front_objects.sh" "$runtime" \
  "$build"/runtime/CMakeFiles/gpuslice_front.dir/front/*.o \
  "$build"/runtime/CMakeFiles/gpuslice_runtime_entry.dir/front/*.o
bash "$repo/tests/arm64/smoke.sh" "$runtime"
