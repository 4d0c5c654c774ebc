#!/usr/bin/env bash
# libgpuslice-cuda.so is preloaded into every process of a container (sh, ls,
# ...): it must depend on glibc alone, export only the wrapped entry points,
# and do nothing at load time (no file read, no thread, no output) until a
# CUDA call. It logs only when GPUSLICE_DEBUG is set.
#   load_safety.sh LIB PROBE
set -euo pipefail
lib=$1 probe=$2
fail() { echo "load_safety: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

needed=$(readelf -d "$lib" | awk '/\(NEEDED\)/ { print $5 }' | tr -d '[]' | tr '\n' ' ')
echo "NEEDED: $needed"
[[ $needed == "libc.so.6 " ]] || fail "depends on more than glibc: $needed"
# Before glibc 2.34 the loader's functions live in libdl.so.2, which an image
# may lack: a reference to one (even to its oldest version) would stop every
# program there at load time (-z now). They are found at run time (init.c).
dl_refs=$(objdump -T "$lib" | awk '/\*UND\*/ && $NF ~ /^dl(open|close|error|addr|info|sym|vsym|mopen)$/ { print $NF }' | tr '\n' ' ')
[[ -z $dl_refs ]] || fail "links the loader's functions (libdl before glibc 2.34): $dl_refs"

extra=$(nm -D --defined-only "$lib" | awk '{ print $3 }' | grep -vE '^(cu[A-Za-z0-9_]+|nvml[A-Za-z0-9_]+|dlsym|dlvsym|dlmopen)$' || true)
[[ -z $extra ]] || fail "exports beyond the version script: $extra"

# Reading the limits file at load time would block on this FIFO.
mkfifo "$tmp/limits"
out=$(GPUSLICE_DEBUG=1 GPUSLICE_LIMITS=$tmp/limits GPUSLICE_REGION=$tmp/limits LD_PRELOAD=$lib \
  timeout 10 sh -c 'ls / >/dev/null && grep "^Threads:" /proc/self/status' 2>"$tmp/err") || fail "sh under preload failed or hung"
[[ ! -s $tmp/err ]] || fail "output at load time: $(cat "$tmp/err")"
[[ $out == "Threads:	1" ]] || fail "threads at load time: $out"

# No limits file: every call passes through (the fake's 16 GiB shows).
GPUSLICE_LIMITS=$tmp/none LD_PRELOAD=$lib "$probe" dlsym alloc 128Mi ok 16Gi >/dev/null 2>"$tmp/err" ||
  fail "pass-through without limits: $(cat "$tmp/err")"
[[ ! -s $tmp/err ]] || fail "output without GPUSLICE_DEBUG: $(cat "$tmp/err")"

# With GPUSLICE_DEBUG the interposer says what it does, on stderr.
GPUSLICE_DEBUG=1 GPUSLICE_LIMITS=$tmp/none LD_PRELOAD=$lib "$probe" dlsym alloc 128Mi ok 16Gi >/dev/null 2>"$tmp/err" || true
grep -q "gpuslice-cuda\[[0-9]*\]: no usable limits file" "$tmp/err" || fail "no debug log: $(cat "$tmp/err")"
# A limits file that is there but cannot be read (an SELinux denial, here a
# directory) or is malformed: the container has limits this process cannot
# see, so every allocation is refused, and the program is told why.
mkdir "$tmp/limits-dir"
printf 'gpuslice-limits 1\ndevice * memory lots\n' > "$tmp/limits-bad"
for limits in "$tmp/limits-dir" "$tmp/limits-bad"; do
  GPUSLICE_LIMITS=$limits LD_PRELOAD=$lib "$probe" dlsym alloc 128Mi oom 16Gi >/dev/null 2>"$tmp/err" ||
    fail "an unreadable limits file ($limits) let an allocation through: $(cat "$tmp/err")"
  grep -q "GPU memory limits cannot be enforced (limits file \"$limits\"" "$tmp/err" ||
    fail "no reason given for $limits: $(cat "$tmp/err")"
done
echo "load_safety: ok"
