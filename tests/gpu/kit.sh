#!/usr/bin/env bash
# Builds the GPU kit into build-gpu-kit/ (git-ignored): everything
# tests/gpu/run.sh needs on the GPU machine, which has a CUDA driver,
# PyTorch, CMake and gcc but none of our build dependencies and no network.
# The programs are static or need only glibc (and libgcc_s); run.sh is
# copied in. Carry that one folder and run its run.sh (tests/README.md has
# the exact device call).
# Usage: tests/gpu/kit.sh [BUILD_DIR]   (default build: README's build dir,
#        RelWithDebInfo; the kit's binaries are stripped of debug info)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
kit=$PWD/build-gpu-kit
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSLICE_GPU_KIT_DIR="$kit" >/dev/null
cmake --build "$build" -j"$(nproc)" --target gpu_kit
echo "GPU kit: $kit ($(du -sh "$kit" | cut -f1)), $(cat "$kit/VERSION")"
echo "run there: bash build-gpu-kit/run.sh"
