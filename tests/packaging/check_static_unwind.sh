#!/usr/bin/env bash
# The static helpers unwind an exception through their .eh_frame_hdr, with
# nothing registered at start-up (shim/static_unwind.c): each has a
# PT_GNU_EH_FRAME, and crtbeginT.o's frame_dummy calls the wrapper that
# registers nothing, not libgcc's __register_frame_info (whose first
# exception then sorts every FDE of the program). And an exception thrown
# and caught still works: gpuslice-runtime, given a config that does not
# parse, says so and exits 1 (an unwinder that finds no FDE aborts: 134).
#   check_static_unwind.sh GPUSLICE_RUNTIME [STATIC_BINARY]...
set -euo pipefail
fail() { echo "check_static_unwind: $*" >&2; exit 1; }
[[ $# -ge 1 ]] || fail "usage: check_static_unwind.sh GPUSLICE_RUNTIME [STATIC_BINARY]..."

for binary in "$@"; do
  headers=$(readelf -lW "$binary")
  grep -q '^ *GNU_EH_FRAME ' <<<"$headers" || fail "$binary: no PT_GNU_EH_FRAME (linked without --eh-frame-hdr)"
  calls=$(objdump -d --no-show-raw-insn --disassemble=frame_dummy "$binary" | grep -E '\<(call|jmp)' || true)
  echo "$binary: frame_dummy's calls: ${calls:-none}"
  grep -q '<__wrap___register_frame_info>' <<<"$calls" ||
    fail "$binary: frame_dummy does not call __wrap___register_frame_info (linked without --wrap)"
  ! grep -q '<__register_frame_info>' <<<"$calls" || fail "$binary: frame_dummy still registers .eh_frame"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[runtime\n' >"$work/config.toml"
rc=0
out=$(GPUSLICE_CONFIG=$work/config.toml "$1" create --bundle "$work" c1 2>&1) || rc=$?
echo "$1 with a broken config: exit $rc: $out"
[[ $rc -eq 1 ]] || fail "$1: exit $rc where a caught exception exits 1"
grep -q "config \"$work/config.toml\"" <<<"$out" || fail "$1: the config's error was not said"
