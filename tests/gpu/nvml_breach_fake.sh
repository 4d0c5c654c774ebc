#!/usr/bin/env bash
# tests/gpu/nvml_breach against the fake NVML, so that the GPU step that
# runs it on a real GPU (run.sh) is known to work before a GPU is at hand:
# a process in a cgroup of its own (v2, or v1's freezer hierarchy: what
# gpuslice-shim reads) allocates 300 MiB through the fake driver, whose
# accounting the fake NVML reads; nvml_breach, with a 256 MiB limit, must
# kill it. Root (cgroups).
#   nvml_breach_fake.sh NVML_BREACH FAKE_NVML BYPASS_STATIC
set -euo pipefail
breach=$1 nvml=$2 bypass=$3
acct=/run/fake-nvidia-driver
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then cg=/sys/fs/cgroup/gpuslice-nvml-check-$$
else cg=/sys/fs/cgroup/freezer/gpuslice-nvml-check-$$; fi
cleanup() { rm -rf "$acct"; rmdir "$cg" 2>/dev/null || true; }
trap cleanup EXIT
rm -rf "$acct" && mkdir -p "$acct/processes" "$cg"
sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" 300 30' sh "$cg" "$bypass" > /dev/null &
victim=$!
for _ in $(seq 200); do [[ -n "$(ls "$acct/processes")" ]] && break; sleep 0.05; done
out=$("$breach" "$nvml" "$victim" $((256 << 20)) 30) || { echo "$out"; exit 1; }
echo "$out"
wait "$victim" && { echo "the process was not killed"; exit 1; } || status=$?
[[ $status == 137 ]] || { echo "the process ended with $status, not SIGKILL"; exit 1; }
grep -q "killed pid $victim (314572800 bytes; monitor.action = kill)" <<<"$out"
grep -q "without the interposer" <<<"$out"
echo "nvml_breach_fake: ok"
