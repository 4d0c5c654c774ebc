#!/usr/bin/env bash
# fast_path_objects.sh [--ordered] RUNTIME OBJECT...: the objects of gpuslice-runtime's
# fast path (shim/fast_path/) reference no symbol but their own and glibc's
# _start (anything else, such as a memcpy the compiler emitted, would be
# called before glibc has started), and RUNTIME's ELF entry point is theirs.
# Their read-only tables lie in one section (fast_path.c's FAST_PATH_TABLE),
# and with --ordered (a link by shim/hot-text.order) RUNTIME has it first in
# .rodata, in the window of the fast path's strings.
set -euo pipefail
ordered=0
if [ "${1:-}" = --ordered ]; then
  ordered=1
  shift
fi
runtime=$1
shift
status=0
for object in "$@"; do
  undefined=$(nm -u "$object") # fails on what is no object file
  bad=$(awk '{print $2}' <<<"$undefined" | grep -v -E '^(_start|gpuslice_fp_[a-z_]+)$' || true)
  if [ -n "$bad" ]; then
    echo "FAIL: $object references $(echo $bad)" >&2
    status=1
  fi
done
for object in "$@"; do
  # objdump -t: ADDRESS FLAGS SECTION SIZE NAME; objects (O) in a .rodata section
  symbols=$(objdump -t "$object")
  apart=$(awk '$0 ~ / O \.rodata/ {for (i = 1; i <= NF; ++i) if ($i ~ /^\.rodata/) {
            if ($i != ".rodata.gpuslice_fp_tables") print $NF; break }}' <<<"$symbols")
  if [ -n "$apart" ]; then
    echo "FAIL: $object has read-only objects outside .rodata.gpuslice_fp_tables: $(echo $apart)" >&2
    status=1
  fi
done
if [ "$ordered" -eq 1 ]; then
  sections=$(readelf -SW "$runtime") # whole, before awk reads it: no SIGPIPE under pipefail
  rodata=$(awk '{for (i = 1; i < NF; ++i) if ($i == ".rodata") print "0x" $(i + 2)}' <<<"$sections")
  tables=$(nm "$runtime" | awk '$3 == "gpuslice_fp_global_flags_with_value" {print "0x" $1}')
  if [ -z "$rodata" ] || [ -z "$tables" ] || [ $((tables / 4096)) -ne $((rodata / 4096)) ]; then
    echo "FAIL: the fast path's tables (${tables:-nowhere}) are not in the first page of .rodata (${rodata:-none})" >&2
    status=1
  fi
fi
entry=$(readelf -hW "$runtime" | awk '/Entry point address/ {print $4}')
symbol=$(nm "$runtime" | awk '$3 == "gpuslice_runtime_entry" {print "0x" $1}')
if [ -z "$symbol" ] || [ $((entry)) -ne $((symbol)) ]; then
  echo "FAIL: $runtime enters at $entry, gpuslice_runtime_entry is at ${symbol:-nowhere}" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "ok: $# objects call nothing outside and keep their tables together$([ "$ordered" -eq 1 ] && echo ", first in .rodata"), $runtime enters at gpuslice_runtime_entry ($entry)"
exit "$status"
