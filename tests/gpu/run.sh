#!/usr/bin/env bash
# The GPU check, run from the GPU kit on a machine with a real NVIDIA GPU
# (CUDA driver, PyTorch). It uses only what the kit holds (tests/gpu/kit.sh
# builds it; this script is copied into it) plus the machine's own driver,
# nvidia-smi and PyTorch: nothing is built there.
#
# Checks, each one or more lines of the table printed at the end:
#  1. driver API under `gpuslice exec --memory-limit ${GPU_LIMIT_GIB}Gi`
#     (default 8): cuMemGetInfo shows the limit; one GiB over it is refused
#     and one under it allocated through cuMemAlloc, cuMemCreate (VMM),
#     cuMemAllocAsync, the default pool, managed memory; memory freed into
#     a pool that keeps it is not had again from another pool until trimmed;
#     a capture in global mode on another thread survives the interposer's
#     wait for a cuMemFreeAsync, which is credited; NVML's total; with
#     1 GiB held, cuMemGetInfo and NVML v1/v2 agree on total and free;
#  2. nvidia-smi inside the limit shows the limit as the GPU's total;
#  3. PyTorch: mem_get_info's total is the limit, a tensor over it raises
#     torch.cuda.OutOfMemoryError, one under it works;
#  4. one budget for two processes of one "container" (one gpuslice exec,
#     one usage region): while one holds LIMIT-3 GiB, 4 GiB is refused to
#     the other and 2 GiB granted;
#  5. compute shares 30 / 70 (policy fixed), two matmul loops at once: each
#     one's throughput relative to running alone is its share +- 5 points;
#     5b. a PyTorch CUDA graph captured and replayed under a share (fixed 50,
#     burst 30);
#  6. the interposer's added cost per call on the real driver (bench_interposer;
#     an INFO line where the added cost is within what two runs of the
#     direct calls differ by: the target is then neither met nor missed);
#  7. gpuslice-shim on the real NVML: --query-gpus lists the GPUs, and a
#     PyTorch process holding 2 GiB without the interposer (a bypass) in a
#     cgroup of its own is killed against a 1 GiB limit (nvml_breach);
#  8. `gpuslice cdi generate` on the real driver: the spec validates and
#     names every GPU nvidia-smi lists (and, where runc and busybox exist, a
#     container started through gpuslice-runtime runs `nvidia-smi -L`).
#  9. a second process's view: under one limit, process B's next
#     cuMemGetInfo shows process A's 128 MiB taken, then freed (HAMi-core's
#     stale free == total);
# 10. a SIGKILL storm (${GPU_STORM_SECONDS:-20} s): 8 processes allocate and
#     free 64 MiB in a loop under one limit while one is SIGKILLed every
#     200 ms and replaced: none stalls (a lock a killed process kept hangs
#     the others in HAMi-core), and the whole limit is had again afterwards.
# Usage: run.sh [KIT_DIR]   (default: the kit this script is in)
# Exit status 1 when any line is FAIL.
set -uo pipefail # not -e: every check runs and gets its line
here=$(cd "$(dirname "$0")" && pwd)
kit=${1:-$here}
[[ -x $kit/bin/gpuslice ]] || kit=$here/../../build-gpu-kit
[[ -x $kit/bin/gpuslice ]] || { echo "run.sh: no GPU kit at $kit: build it with tests/gpu/kit.sh" >&2; exit 2; }
kit=$(cd "$kit" && pwd)
bin=$kit/bin
gs=$bin/gpuslice
export GPUSLICE_INTERPOSER_LIB=$kit/lib/libgpuslice-cuda.so
limit=${GPU_LIMIT_GIB:-8}
seconds=${GPU_SHARE_SECONDS:-10}
work=$(mktemp -d)
results=$work/results
: >"$results"
trap 'rm -rf "$work"' EXIT

note() { printf '\n== %s\n' "$*"; }
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$results"; } # check, PASS|FAIL, detail
# The "PASS|FAIL name: detail" lines a program printed, recorded under `prefix`.
record_lines() { # prefix file
  local status rest
  while read -r status rest; do
    [[ $status == PASS || $status == FAIL ]] || continue
    record "$1${rest%%: *}" "$status" "${rest#*: }"
  done <"$2"
}
# Runs a step with a bound: a hang must not eat the machine's time.
bounded() { timeout --kill-after=10 "$@"; }

note "machine"
cat "$kit/VERSION" 2>/dev/null | sed 's/^/kit /'
nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true

note "1. driver API under a ${limit} GiB limit"
bounded 180 "$gs" exec --memory-limit "${limit}Gi" --state-dir "$work/driver" -- "$bin/driver_test" check "$limit" \
  | tee "$work/driver.out"
rc=${PIPESTATUS[0]}
record_lines "driver: " "$work/driver.out"
[[ $rc == 0 ]] || grep -q '^FAIL' "$work/driver.out" || record "driver: run" FAIL "exit status $rc"

note "2. nvidia-smi inside the limit"
smi=$(bounded 60 "$gs" exec --memory-limit "${limit}Gi" --state-dir "$work/smi" -- \
  nvidia-smi -i 0 --query-gpu=memory.total,memory.used --format=csv,noheader,nounits 2>&1)
echo "$smi"
total_mib=$(echo "$smi" | head -1 | cut -d, -f1 | tr -d ' ')
if [[ $total_mib == $((limit * 1024)) ]]; then record "nvidia-smi: memory.total" PASS "$total_mib MiB"
else record "nvidia-smi: memory.total" FAIL "'$smi' (want $((limit * 1024)) MiB)"; fi

note "3. PyTorch under the limit"
cat >"$work/torch_check.py" <<'PY'
import sys
import torch
GiB = 1 << 30
limit = int(sys.argv[1])
def report(ok, name, detail):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
free, total = torch.cuda.mem_get_info()
report(total == limit * GiB, "mem_get_info", f"total {total / GiB:.2f} GiB, free {free / GiB:.2f} GiB")
try:
    torch.empty((limit + 1) * GiB, dtype=torch.uint8, device="cuda")
    report(False, "over the limit", f"{limit + 1} GiB tensor was allocated")
except torch.cuda.OutOfMemoryError as e:
    report(True, "over the limit", f"{limit + 1} GiB: torch.cuda.OutOfMemoryError")
try:
    x = torch.empty((limit - 2) * GiB, dtype=torch.uint8, device="cuda")
    x.fill_(1)
    torch.cuda.synchronize()
    report(int(x[-1].item()) == 1, "under the limit", f"{limit - 2} GiB tensor allocated and written")
    del x
except Exception as e:  # noqa: BLE001 - any failure is the finding
    report(False, "under the limit", f"{limit - 2} GiB: {type(e).__name__}: {str(e).splitlines()[0]}")
PY
bounded 300 "$gs" exec --memory-limit "${limit}Gi" --state-dir "$work/torch" -- python3 "$work/torch_check.py" "$limit" \
  2>&1 | tee "$work/torch.out"
record_lines "pytorch: " "$work/torch.out"
grep -q '^\(PASS\|FAIL\)' "$work/torch.out" || record "pytorch: run" FAIL "no result (is PyTorch installed?)"

note "4. two processes, one budget of ${limit} GiB"
held=$((limit - 3))
bounded 180 "$gs" exec --memory-limit "${limit}Gi" --state-dir "$work/shared" -- sh -c '
  bin=$1 held=$2 flag=$3
  "$bin/driver_test" hold "$held" 60 "$flag" & holder=$!
  for i in $(seq 300); do [ -e "$flag" ] && break; sleep 0.1; done
  [ -e "$flag" ] || { echo "FAIL holder: did not get $held GiB"; kill $holder; exit 1; }
  echo "PASS holder: $held GiB held by pid $holder"
  "$bin/driver_test" try 4 oom | sed "s/^\(PASS\|FAIL\) cuMemAlloc/\1 second process, 4 GiB more/"
  "$bin/driver_test" try 2 ok | sed "s/^\(PASS\|FAIL\) cuMemAlloc/\1 second process, 2 GiB more/"
  kill $holder; wait $holder 2>/dev/null; exit 0' sh "$bin" "$held" "$work/holding" 2>&1 | tee "$work/shared.out"
record_lines "one region: " "$work/shared.out"
grep -q '^\(PASS\|FAIL\)' "$work/shared.out" || record "one region: run" FAIL "no result"

note "5. compute shares 30 / 70 (${seconds}s each)"
cat >"$work/loop.py" <<'PY'
import sys, time, torch
seconds = float(sys.argv[1])
a = torch.randn(4096, 4096, device="cuda")
b = torch.randn(4096, 4096, device="cuda")
for _ in range(10):
    a @ b
torch.cuda.synchronize()
n, t0 = 0, time.time()
while time.time() - t0 < seconds:
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    n += 10
print(n / (time.time() - t0))
PY
alone=$(bounded 120 "$gs" exec --policy native --state-dir "$work/alone" -- python3 "$work/loop.py" "$seconds")
echo "alone: $alone matmul/s"
bounded 120 "$gs" exec --compute-limit 30 --policy fixed --state-dir "$work/a" -- python3 "$work/loop.py" "$seconds" \
  >"$work/a.out" &
pa=$!
bounded 120 "$gs" exec --compute-limit 70 --policy fixed --state-dir "$work/b" -- python3 "$work/loop.py" "$seconds" \
  >"$work/b.out" &
pb=$!
wait $pa $pb
for pair in "a 30" "b 70"; do
  set -- $pair
  rate=$(cat "$work/$1.out")
  share=$(awk -v r="$rate" -v a="$alone" 'BEGIN { if (a > 0 && r > 0) printf "%.1f", 100 * r / a; else print "none" }')
  detail="$rate matmul/s = $share% of alone ($alone), wanted $2 +- 5"
  if awk -v s="$share" -v w="$2" 'BEGIN { d = s - w; if (d < 0) d = -d; exit !(s != "none" && d <= 5) }'; then
    record "compute share $2%" PASS "$detail"
  else record "compute share $2%" FAIL "$detail"; fi
done

note "5b. a CUDA graph captured under a compute share (PyTorch)"
# The gate once asked about its events inside the capture, which spoils it
# (cudaErrorStreamCaptureInvalidated on an H200 under any share).
cat >"$work/capture.py" <<'PY'
import torch
a = torch.randn(2048, 2048, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        b = a @ a
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    b = a @ a
    c = b @ a
for _ in range(20):
    g.replay()
torch.cuda.synchronize()
print("captured and replayed" if float(c.abs().sum()) > 0 else "replayed to zeros", flush=True)
PY
for share in "50 fixed" "30 burst"; do
  set -- $share
  out=$(bounded 60 "$gs" exec --compute-limit "$1" --policy "$2" --state-dir "$work/capture-$2" -- \
    python3 "$work/capture.py" 2>&1 | tail -1)
  echo "$2 $1%: $out"
  if [[ $out == "captured and replayed" ]]; then record "graph capture: $2 $1%" PASS "$out"
  else record "graph capture: $2 $1%" FAIL "$out"; fi
done

note "6. the interposer's cost per call on the real driver"
bounded 300 "$bin/bench_interposer" libcuda.so.1 "$kit/lib/libgpuslice-cuda.so" "${GPU_BENCH_ITERATIONS:-20000}" \
  2>&1 | tee "$work/bench.out"
rc=${PIPESTATUS[0]}
while IFS= read -r line; do
  [[ $line == *target* ]] || continue
  name=$(echo "${line:0:34}" | sed 's/ *$//')
  detail=$(echo "${line:34}" | tr -s ' ')
  if [[ $line == *met ]]; then record "overhead: $name" PASS "$detail"
  elif [[ $line == *"not resolved"* ]]; then record "overhead: $name" INFO "$detail" # within the A/A spread
  else record "overhead: $name" FAIL "$detail"; fi
done <"$work/bench.out"
[[ $rc == 0 ]] || record "overhead: run" FAIL "bench_interposer exit status $rc"

note "7. gpuslice-shim on the real NVML: a 2 GiB bypass against a 1 GiB limit"
if bounded 60 "$bin/gpuslice-shim" --query-gpus | tee "$work/gpus.out" && [[ -s $work/gpus.out ]]; then
  record "gpuslice-shim --query-gpus" PASS "$(wc -l <"$work/gpus.out") GPU(s): $(head -1 "$work/gpus.out")"
else record "gpuslice-shim --query-gpus" FAIL "no GPU listed"; fi
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then cg=/sys/fs/cgroup/gpuslice-gpu-check-$$
else cg=/sys/fs/cgroup/freezer/gpuslice-gpu-check-$$; fi
if mkdir -p "$cg" 2>/dev/null; then
  sh -c 'echo $$ > "$1/cgroup.procs" && exec python3 -c "
import time, torch
x = torch.empty(2 << 30, dtype=torch.uint8, device=\"cuda\"); x.fill_(1); torch.cuda.synchronize()
print(\"holding 2 GiB\", flush=True); time.sleep(60)"' sh "$cg" &
  victim=$!
  sleep 8 # CUDA's start and the allocation
  bounded 90 "$bin/nvml_breach" libnvidia-ml.so.1 "$victim" $((1 << 30)) 60 2>&1 | tee "$work/breach.out"
  status=0
  wait "$victim" 2>/dev/null || status=$?
  if [[ $status == 137 ]]; then record "monitor kills a bypass" PASS "$(tail -1 "$work/breach.out")"
  else record "monitor kills a bypass" FAIL "the process ended with status $status, not 137 (SIGKILL)"; fi
  rmdir "$cg" 2>/dev/null || true
else
  record "monitor kills a bypass" FAIL "cannot create a cgroup ($cg): not root?"
fi

note "8. cdi generate on the real driver"
mkdir -p "$work/cdi"
generated=no
if bounded 60 "$gs" cdi generate --hook-path "$bin/gpuslice-hook" --output "$work/cdi/nvidia.yaml" &&
   bounded 60 "$gs" cdi validate "$work/cdi/nvidia.yaml"; then
  generated=yes
  listed=$(nvidia-smi -L | wc -l)
  named=$("$gs" cdi list --spec-dirs "$work/cdi" | grep -c '^nvidia.com/gpu=[0-9]*$' || true)
  if [[ $listed == "$named" ]]; then record "cdi generate" PASS "the spec names the $named GPU(s) nvidia-smi lists"
  else record "cdi generate" FAIL "nvidia-smi lists $listed GPUs, the spec names $named"; fi
else
  record "cdi generate" FAIL "generate or validate failed"
fi
if [[ $generated == no ]]; then
  echo "no spec: the container step was not run"
elif command -v runc >/dev/null && command -v busybox >/dev/null; then
  bundle="$work/bundle"
  mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/etc" "$bundle/rootfs/usr/lib/x86_64-linux-gnu"
  cp "$(command -v busybox)" "$bundle/rootfs/bin/busybox"; ln -s busybox "$bundle/rootfs/bin/sh"
  (cd "$bundle" && runc spec)
  python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["process"]["terminal"] = False; c["process"]["args"] = ["nvidia-smi", "-L"]; c["root"]["readonly"] = False
c.setdefault("annotations", {})["cdi.k8s.io/gpu"] = "nvidia.com/gpu=0"
json.dump(c, open(p, "w"))
PY
  printf '[cdi]\nspec-dirs = ["%s"]\n[runtime]\nstate-dir = "%s"\n' "$work/cdi" "$work/run" >"$work/gpuslice.toml"
  if out=$(GPUSLICE_CONFIG="$work/gpuslice.toml" bounded 60 "$bin/gpuslice-runtime" run --bundle "$bundle" \
      "gpuslice-gpu-check-$$" 2>&1) && [[ $out == *GPU\ 0* ]]; then
    record "container: nvidia-smi -L" PASS "$(echo "$out" | head -1)"
  else record "container: nvidia-smi -L" FAIL "$(echo "$out" | tail -1)"; fi
else
  echo "no runc or busybox on this machine: the container step was not run"
fi

note "9. a second process's view of one limit"
bounded 120 "$gs" exec --memory-limit "${limit}Gi" --state-dir "$work/view" -- "$bin/driver_test" view \
  | tee "$work/view.out"
record_lines "view: " "$work/view.out"
grep -q '^\(PASS\|FAIL\)' "$work/view.out" || record "view: run" FAIL "no result"

storm=${GPU_STORM_SECONDS:-20}
note "10. a SIGKILL storm (${storm} s)"
bounded $((storm + 120)) "$gs" exec --memory-limit "${limit}Gi" --state-dir "$work/storm" -- "$bin/driver_test" storm \
  "$storm" | tee "$work/storm.out"
record_lines "storm: " "$work/storm.out"
grep -q '^\(PASS\|FAIL\)' "$work/storm.out" || record "storm: run" FAIL "no result (hung, or killed by its bound)"

note "result"
awk -F'\t' '{ printf "%-4s  %-46s  %s\n", $2, $1, $3 }' "$results"
passed=$(grep -c $'\tPASS\t' "$results" || true)
failed=$(grep -c $'\tFAIL\t' "$results" || true)
unresolved=$(grep -c $'\tINFO\t' "$results" || true)
echo "$passed passed, $failed failed, $unresolved not resolved (an added cost within what two direct runs differ by)"
[[ $failed == 0 && $passed -gt 0 ]]
