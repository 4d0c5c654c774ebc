#!/usr/bin/env bash
# Assembles the GPU kit (the gpu_kit target calls this; tests/gpu/kit.sh
# builds it): the programs run.sh needs, without debug info, and run.sh.
#   bin/  gpuslice (static), gpuslice-runtime, gpuslice-hook (static),
#         gpuslice-shim, nvml_breach, bench_interposer (glibc >= 2.34,
#         libstdc++ linked in), driver_test (glibc >= 2.17)
#   lib/  libgpuslice-cuda.so
# Usage: assemble_kit.sh KIT_DIR SOURCE_DIR GPUSLICE RUNTIME HOOK SHIM DRIVER_TEST NVML_BREACH BENCH INTERPOSER
set -euo pipefail
[[ $# == 10 ]] || { echo "usage: $0 KIT_DIR SOURCE_DIR GPUSLICE RUNTIME HOOK SHIM DRIVER_TEST NVML_BREACH BENCH INTERPOSER" >&2; exit 2; }
kit=$1 src=$2
shift 2
# Built beside the kit, renamed into place: a half-copied kit never looks whole.
next="$kit.new"
rm -rf "$next"
mkdir -p "$next/bin" "$next/lib"
install_stripped() { # FILE DEST
  objcopy --strip-debug "$1" "$2"
  chmod 0755 "$2"
}
install_stripped "$1" "$next/bin/gpuslice"
for f in "$2" "$3" "$4" "$5" "$6" "$7"; do install_stripped "$f" "$next/bin/$(basename "$f")"; done
install_stripped "$8" "$next/lib/libgpuslice-cuda.so"
install -m 0755 "$src/run.sh" "$next/run.sh"
git -C "$src" describe --always --dirty >"$next/VERSION" 2>/dev/null || echo unknown >"$next/VERSION"
rm -rf "$kit"
mv "$next" "$kit"
