#!/usr/bin/env bash
# build_package.sh deb|rpm DIST: packaging/build.sh as the package tests
# take it, into DIST (emptied first): the compiler of GPUSLICE_PACKAGE_CC /
# GPUSLICE_PACKAGE_CXX (CI: g++ 11, the compiler of Ubuntu 22.04 and RHEL 9),
# no debug info (both packages are stripped, gcc's -g never changes the
# code, and it is a third of the build's time), no -dbgsym package.
# ctest runs it as `packaging: build the .deb` / `.rpm`, beside the tests
# that start containers; test_package.py and test_rpm.py run it themselves
# when run alone.
set -euo pipefail
what=${1:-} dist=${2:-}
case $what in deb | rpm) ;; *) echo "usage: build_package.sh deb|rpm DIST" >&2; exit 2 ;; esac
[[ -n $dist ]] || { echo "usage: build_package.sh deb|rpm DIST" >&2; exit 2; }
rm -rf "$dist"
mkdir -p "$dist"
export DIST=$dist GPUSLICE_NO_DEBUG_INFO=1 DEB_BUILD_OPTIONS=noddebs
if [[ -n ${GPUSLICE_PACKAGE_CC:-} ]]; then export CC=$GPUSLICE_PACKAGE_CC; fi
if [[ -n ${GPUSLICE_PACKAGE_CXX:-} ]]; then export CXX=$GPUSLICE_PACKAGE_CXX; fi
exec bash "$(dirname "$0")/../../packaging/build.sh" "$what"
