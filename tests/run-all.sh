#!/usr/bin/env bash
# README's test command: configure, build and run every test (unit and, as
# root, integration). Needs the packages .ci/run installs.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure "$@"
