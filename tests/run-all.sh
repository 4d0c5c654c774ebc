#!/usr/bin/env bash
# README's test command: installs what is missing, configures, builds and runs
# every test (unit, and as root the integration tests with real runc, crun and
# containerd). Extra arguments go to ctest (e.g. -L unit, -R cdi).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSLICE_WERROR="${GPUSLICE_WERROR:-OFF}" \
  -DGPUSLICE_DEBUG_INFO="${GPUSLICE_DEBUG_INFO:-full}"
cmake --build build -j"$(nproc)"
cd build
# In parallel: the tests that start containers take a lock among themselves
# (tests/integration/CMakeLists.txt); the rest runs beside them.
ctest --output-on-failure -j"$(nproc)" "$@"
