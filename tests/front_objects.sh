#!/usr/bin/env bash
# front_objects.sh RUNTIME OBJECT...: the objects of gpuslice-runtime's front
# (runtime/front/front.h) reference no symbol but their own and glibc's
# _start (anything else, such as a memcpy the compiler emitted, would be
# called before glibc has started), hold no table of pointers (nothing has
# relocated it when they run), and RUNTIME's ELF entry point is theirs.
set -euo pipefail
runtime=$1
shift
status=0
for object in "$@"; do
  undefined=$(nm -u "$object") # fails on what is no object file
  bad=$(awk '{print $2}' <<<"$undefined" | grep -v -E '^(_start|gs_[a-z_]+)$' || true)
  if [ -n "$bad" ]; then
    echo "FAIL: $object references $(echo $bad)" >&2
    status=1
  fi
  relocations=$(readelf -rW "$object")
  # in what is loaded (not debug info or unwind tables)
  absolute=$(awk '/^Relocation section/ {loaded = $3 !~ /debug|eh_frame/} loaded && /R_X86_64_64|R_AARCH64_ABS64/ {print $5}' \
             <<<"$relocations" | sort -u)
  if [ -n "$absolute" ]; then
    echo "FAIL: $object holds absolute addresses (of $(echo $absolute)), which nothing relocates before _start" >&2
    status=1
  fi
done
entry=$(readelf -hW "$runtime" | awk '/Entry point address/ {print $4}')
symbol=$(nm "$runtime" | awk '$3 == "gpuslice_runtime_entry" {print "0x" $1}')
if [ -z "$symbol" ] || [ $((entry)) -ne $((symbol)) ]; then
  echo "FAIL: $runtime enters at $entry, gpuslice_runtime_entry is at ${symbol:-nowhere}" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "ok: $# objects call nothing outside and hold no absolute address, $runtime enters at gpuslice_runtime_entry ($entry)"
exit "$status"
