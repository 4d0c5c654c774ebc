#!/usr/bin/env bash
# The static helpers unwind an exception through their .eh_frame_hdr, with
# nothing registered at start-up (shim/static_unwind.c): each has a
# PT_GNU_EH_FRAME whose .eh_frame_hdr holds a search table (a linker that
# cannot make one writes the header alone, and libgcc then reads every FDE
# at each frame), and crtbeginT.o's frame_dummy calls the wrapper that
# registers nothing, not libgcc's __register_frame_info (whose first
# exception then sorts every FDE of the program). And an exception thrown
# and caught still works: each, given a config that does not parse, says
# so and exits 1 (an unwinder that finds no FDE aborts: 134). The GPU kit's
# static CLI (gpuslice-static, for a machine without our libraries) is
# linked the same way, and checked the same way.
#   check_static_unwind.sh GPUSLICE_RUNTIME GPUSLICE_HOOK GPUSLICE_STATIC
set -euo pipefail
fail() { echo "check_static_unwind: $*" >&2; exit 1; }
[[ $# -eq 3 ]] || fail "usage: check_static_unwind.sh GPUSLICE_RUNTIME GPUSLICE_HOOK GPUSLICE_STATIC"
runtime=$1 hook=$2 cli=$3

for binary in "$runtime" "$hook" "$cli"; do
  grep -q '^ *GNU_EH_FRAME ' <<<"$(readelf -lW "$binary")" ||
    fail "$binary: no PT_GNU_EH_FRAME (linked without --eh-frame-hdr)"
  # .eh_frame_hdr: version 1, then the encodings of eh_frame_ptr, of
  # fde_count (0xff: no table) and of the table (0x3b, the one libgcc
  # searches), eh_frame_ptr (4 bytes), fde_count (4, little-endian).
  offset=$(readelf -SW "$binary" | sed 's/^ *\[ *[0-9]*\]//' | awk '$1 == ".eh_frame_hdr" { print $4 }')
  [[ -n $offset ]] || fail "$binary: no .eh_frame_hdr section"
  read -r -a header < <(od -An -v -tx1 -j $((16#$offset)) -N 12 "$binary")
  [[ ${header[0]} == 01 && ${header[2]} != ff && ${header[3]} == 3b ]] ||
    fail "$binary: .eh_frame_hdr has no search table (header ${header[*]})"
  fdes=$((16#${header[11]}${header[10]}${header[9]}${header[8]}))
  echo "$binary: .eh_frame_hdr indexes $fdes FDEs"
  [[ $fdes -gt 0 ]] || fail "$binary: .eh_frame_hdr indexes no FDE"
  calls=$(objdump -d --no-show-raw-insn --disassemble=frame_dummy "$binary" | grep -E '\<(call|jmp)' || true)
  echo "$binary: frame_dummy's calls: ${calls:-none}"
  grep -q '<__wrap___register_frame_info>' <<<"$calls" ||
    fail "$binary: frame_dummy does not call __wrap___register_frame_info (linked without --wrap)"
  ! grep -q '<__register_frame_info>' <<<"$calls" || fail "$binary: frame_dummy still registers .eh_frame"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[runtime\n' >"$work/config.toml"
expect_config_error() { # NAME COMMAND...: exits 1 and names the config
  local name=$1 rc=0 out
  shift
  out=$(GPUSLICE_CONFIG=$work/config.toml "$@" 2>&1 </dev/null) || rc=$?
  echo "$name with a broken config: exit $rc: $out"
  [[ $rc -eq 1 ]] || fail "$name: exit $rc where a caught exception exits 1"
  grep -q "config \"$work/config.toml\"" <<<"$out" || fail "$name: the config's error was not said"
}
expect_config_error gpuslice-runtime "$runtime" create --bundle "$work" c1
expect_config_error gpuslice-hook "$hook" poststop
expect_config_error gpuslice-static "$cli" cdi list
