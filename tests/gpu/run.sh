#!/usr/bin/env bash
# Checks on a machine with a real NVIDIA GPU (CUDA 13 driver, PyTorch):
#  1. builds gpuslice and the interposer (RelWithDebInfo, as shipped);
#  2. driver API under `gpuslice exec --memory-limit 8Gi`: total 8 GiB,
#     9 GiB refused, 7 GiB allocated (cuMemAlloc and cuMemCreate);
#  3. PyTorch under the same limit: torch.cuda.mem_get_info() total 8 GiB,
#     a 9 GiB tensor raises torch.cuda.OutOfMemoryError, 7 GiB works;
#  4. compute shares: two processes at 30 / 70 (policy fixed) running a
#     matmul loop together; each one's throughput relative to running alone
#     must be its share +- 5 points;
#  5. gpuslice-shim's enforcement on the real NVML: `gpuslice-shim
#     --query-gpus` lists the GPUs; a PyTorch process in a cgroup of its own
#     takes 2 GiB without the interposer (a bypass) against a 1 GiB limit,
#     and nvml_breach (the monitor's Enforcer, kill, 100 ms) must kill it;
#     it prints what NVML counted for it (the CUDA context's own memory
#     included, which the interposer does not count: monitor.memory-tolerance).
#  6. `gpuslice cdi generate` on the real driver: the spec validates, names
#     every GPU nvidia-smi lists, and, where runc is installed, a busybox
#     container started through gpuslice-runtime with device 0 runs
#     `nvidia-smi -L` (the spec's libraries, tools and ld cache hook).
# Usage: tests/gpu/run.sh [BUILD_DIR]   (prints everything; exit 1 on a failure)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
seconds=${GPU_SHARE_SECONDS:-10}
fail=0
note() { printf '\n== %s\n' "$*"; }

note "build"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target gpuslice gpuslice_cuda gpuslice-shim nvml_breach gpuslice-runtime \
  gpuslice-hook
cc -O2 -std=c11 -Iinterposer/include tests/gpu/driver_test.c -o "$build/driver_test" -ldl
gs="$build/cli/gpuslice"
export GPUSLICE_INTERPOSER_LIB="$PWD/$build/interposer/libgpuslice-cuda.so"
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT

note "driver API under --memory-limit 8Gi"
"$gs" exec --memory-limit 8Gi --state-dir "$state/driver" -- "$build/driver_test" || fail=1

note "PyTorch under --memory-limit 8Gi"
"$gs" exec --memory-limit 8Gi --state-dir "$state/torch" -- python3 - <<'PY' || fail=1
import torch
GiB = 1 << 30
free, total = torch.cuda.mem_get_info()
print(f"mem_get_info: free {free / GiB:.2f} GiB, total {total / GiB:.2f} GiB")
assert total == 8 * GiB, f"total {total}"
try:
    torch.empty(9 * GiB, dtype=torch.uint8, device="cuda")
    raise SystemExit("9 GiB allocation was not refused")
except torch.cuda.OutOfMemoryError as e:
    print("9 GiB: OutOfMemoryError as expected:", str(e).splitlines()[0])
x = torch.empty(7 * GiB, dtype=torch.uint8, device="cuda")
x.fill_(1)
torch.cuda.synchronize()
print("7 GiB: allocated and written")
del x
torch.cuda.empty_cache()
print("pytorch: ok")
PY

note "compute shares 30 / 70 (${seconds}s each)"
cat >"$state/loop.py" <<'PY'
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
alone=$("$gs" exec --policy native --state-dir "$state/alone" -- python3 "$state/loop.py" "$seconds")
echo "alone: $alone matmul/s"
"$gs" exec --compute-limit 30 --policy fixed --state-dir "$state/a" -- python3 "$state/loop.py" "$seconds" >"$state/a.out" &
pa=$!
"$gs" exec --compute-limit 70 --policy fixed --state-dir "$state/b" -- python3 "$state/loop.py" "$seconds" >"$state/b.out" &
pb=$!
wait $pa $pb
for pair in "a 30" "b 70"; do
  set -- $pair
  rate=$(cat "$state/$1.out")
  share=$(awk -v r="$rate" -v a="$alone" 'BEGIN { printf "%.1f", 100 * r / a }')
  echo "container $1: $rate matmul/s = $share% of alone (wanted $2 +- 5)"
  awk -v s="$share" -v w="$2" 'BEGIN { d = s - w; if (d < 0) d = -d; exit !(d <= 5) }' || fail=1
done

note "gpuslice-shim on the real NVML: a 2 GiB bypass against a 1 GiB limit"
"$build/shim/gpuslice-shim" --query-gpus || fail=1
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then cg=/sys/fs/cgroup/gpuslice-gpu-check-$$
else cg=/sys/fs/cgroup/freezer/gpuslice-gpu-check-$$; fi
mkdir -p "$cg"
sh -c 'echo $$ > "$1/cgroup.procs" && exec python3 -c "
import time, torch
x = torch.empty(2 << 30, dtype=torch.uint8, device=\"cuda\"); x.fill_(1); torch.cuda.synchronize()
print(\"holding 2 GiB\", flush=True); time.sleep(60)"' sh "$cg" &
victim=$!
sleep 8 # CUDA's start and the allocation
"$build/tests/gpu/nvml_breach" libnvidia-ml.so.1 "$victim" $((1 << 30)) 60 || fail=1
status=0
wait "$victim" 2>/dev/null || status=$?
echo "the PyTorch process ended with status $status (137: SIGKILL)"
[[ $status == 137 ]] || fail=1
rmdir "$cg" 2>/dev/null || true

note "cdi generate on the real driver"
mkdir -p "$state/cdi"
"$gs" cdi generate --hook-path "$PWD/$build/hook/gpuslice-hook" --output "$state/cdi/nvidia.yaml" || fail=1
"$gs" cdi validate "$state/cdi/nvidia.yaml" || fail=1
listed=$(nvidia-smi -L | wc -l)
named=$("$gs" cdi list --spec-dirs "$state/cdi" | grep -c '^nvidia.com/gpu=[0-9]*$' || true)
echo "nvidia-smi lists $listed GPUs, the spec names $named"
[[ $listed == "$named" ]] || fail=1
if command -v runc >/dev/null && command -v busybox >/dev/null; then
  bundle="$state/bundle"
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
  printf '[cdi]\nspec-dirs = ["%s"]\n[runtime]\nstate-dir = "%s"\n' "$state/cdi" "$state/run" > "$state/gpuslice.toml"
  GPUSLICE_CONFIG="$state/gpuslice.toml" "$build/shim/gpuslice-runtime" run --bundle "$bundle" gpuslice-gpu-check-$$ || fail=1
else
  echo "no runc or busybox on this machine: the container step was not run"
fi

note "result"
if [[ $fail == 0 ]]; then echo "all GPU checks passed"; else echo "SOME GPU CHECKS FAILED"; fi
exit $fail
