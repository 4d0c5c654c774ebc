#!/usr/bin/env bash
# build_last_release.sh DIR: gpuslice-runtime and gpuslice-shim of the last
# release whose state is format 2, built from this repository's history into
# DIR (its programs in DIR/build/shim), for test_upgrade.py. Unoptimised and
# dynamic: what matters is what it writes. A second run finds them there and
# does nothing. ctest runs it as `upgrade: build the last format-2 release`,
# beside the tests that start containers.
set -euo pipefail
commit=b03e90978cea2d34b65366db0cd01eae331173b4
dir=${1:?usage: build_last_release.sh DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -x $dir/build/shim/gpuslice-runtime && -x $dir/build/shim/gpuslice-shim &&
      $(cat "$dir/commit" 2>/dev/null) == "$commit" ]]; then
  exit 0
fi
if ! git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "build_last_release.sh: commit $commit is not in $repo's history (a shallow clone? git fetch --unshallow)" >&2
  exit 1
fi
rm -rf "$dir"
mkdir -p "$dir/src"
git -C "$repo" archive "$commit" | tar -x -C "$dir/src"
log=$dir/build.log
# That release's build, not this one's environment (CI's GPUSLICE_WERROR...).
if ! env -u GPUSLICE_WERROR -u GPUSLICE_DEBUG_INFO sh -c '
    cmake -S "$1/src" -B "$1/build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-O0 -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
      -DBUILD_TESTING=OFF -DGPUSLICE_STATIC_HELPERS=OFF -DGPUSLICE_HOT_TEXT_ORDER=OFF -DGPUSLICE_WERROR=OFF &&
    cmake --build "$1/build" -j"$(nproc)" --target gpuslice-runtime gpuslice-shim' sh "$dir" >"$log" 2>&1; then
  tail -40 "$log" >&2
  echo "build_last_release.sh: the build of $commit failed (all of it in $log)" >&2
  exit 1
fi
echo "$commit" >"$dir/commit"
