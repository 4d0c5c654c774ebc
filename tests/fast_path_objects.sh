#!/usr/bin/env bash
# fast_path_objects.sh RUNTIME OBJECT...: the objects of gpuslice-runtime's
# fast path (shim/fast_path/) reference no symbol but their own and glibc's
# _start (anything else, such as a memcpy the compiler emitted, would be
# called before glibc has started), and RUNTIME's ELF entry point is theirs.
set -euo pipefail
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
entry=$(readelf -hW "$runtime" | awk '/Entry point address/ {print $4}')
symbol=$(nm "$runtime" | awk '$3 == "gpuslice_runtime_entry" {print "0x" $1}')
if [ -z "$symbol" ] || [ $((entry)) -ne $((symbol)) ]; then
  echo "FAIL: $runtime enters at $entry, gpuslice_runtime_entry is at ${symbol:-nowhere}" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "ok: $# objects call nothing outside, $runtime enters at gpuslice_runtime_entry ($entry)"
exit "$status"
