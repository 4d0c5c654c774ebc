#!/usr/bin/env bash
# README's main job: builds gpuslice, then starts a real container through
# gpuslice-runtime + runc that asks for a GPU the way a DRA claim does (a
# cdi.k8s.io/ annotation), and shows what the container got: the device, its
# env and driver files, and a 256 MiB GPU memory limit that a CUDA program
# inside cannot exceed. Without a GPU, the GPU is simulated: device nodes made
# with mknod (char 195:0 and 195:255, the NVIDIA majors), gpuslice's fake
# libcuda.so.1 and libnvidia-ml.so.1 (one 16 GiB GPU) as the driver's
# libraries, and a CDI spec describing
# them as a DRA driver would. Run as root on Debian 12 / Ubuntu 22.04.
# Leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "gpu-container.sh: run as root (it creates device nodes and containers)" >&2; exit 1; }

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target gpuslice gpuslice-runtime gpuslice-shim gpuslice-hook gpuslice_cuda fake_cuda fake_nvml cuda-alloc >/dev/null

work=$(mktemp -d /tmp/gpuslice-demo-XXXXXX)
root="$work/runc-root"
id="gpuslice-demo-$$"
cleanup() {
  runc --root "$root" delete --force "$id" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# A simulated GPU: its device nodes and the CDI spec a DRA driver would write.
mkdir -p "$work/dev" "$work/cdi" "$work/driver"
mknod -m 666 "$work/dev/nvidia0" c 195 0
mknod -m 666 "$work/dev/nvidiactl" c 195 255
echo "550.54.15 (simulated)" > "$work/driver/version"
cp build/tests/fakes/lib/libcuda.so.1 "$work/driver/libcuda.so.1"
# and its NVML, which the monitor and admission ask for the GPU's memory
cp build/tests/fakes/lib/libnvidia-ml.so.1 "$work/driver/libnvidia-ml.so.1"
cat > "$work/cdi/demo-gpu.yaml" <<SPEC
cdiVersion: "0.6.0"
kind: nvidia.com/gpu
containerEdits:
  env: ["NVIDIA_DRIVER_CAPABILITIES=compute,utility", "LD_LIBRARY_PATH=/usr/local/nvidia"]
  deviceNodes:
    - {path: /dev/nvidiactl, hostPath: $work/dev/nvidiactl}
  mounts:
    - {hostPath: $work/driver, containerPath: /usr/local/nvidia, options: [ro, nosuid, nodev, bind]}
devices:
  - name: "0"
    containerEdits:
      env: [NVIDIA_VISIBLE_DEVICES=0, GPUSLICE_MEMORY_LIMIT=256Mi]
      deviceNodes:
        - {path: /dev/nvidia0, hostPath: $work/dev/nvidia0}
SPEC

cat > "$work/gpuslice.toml" <<CONF
[cdi]
spec-dirs = ["$work/cdi"]
[runtime]
runtimes = ["runc"]
hook-path = "$PWD/build/bin/gpuslice-hook"
state-dir = "$work/state"
interposer-path = "$PWD/build/interposer/libgpuslice-cuda.so"
shim-path = "$PWD/build/bin/gpuslice-shim"
[monitor]
nvml-path = "$work/driver/libnvidia-ml.so.1"
[log]
target = "stderr"
level = "warn"
CONF
export GPUSLICE_CONFIG="$work/gpuslice.toml"

echo "== CDI devices on this node (gpuslice cdi list)"
build/bin/gpuslice cdi list

# A small image (busybox, glibc and a CUDA program) whose spec asks for
# nvidia.com/gpu=0 through an annotation.
rootfs="$work/bundle/rootfs"
mkdir -p "$rootfs/bin"
cp /bin/busybox "$rootfs/bin/busybox"
for applet in sh ls cat env grep mount head; do ln -s busybox "$rootfs/bin/$applet"; done
cp build/examples/cuda-alloc "$rootfs/bin/cuda-alloc"
# the image's glibc: what the program and the driver library need
for lib in $(for f in build/examples/cuda-alloc build/tests/fakes/lib/libcuda.so.1; do ldd "$f"; done |
             grep -o '/[^ ]*' | sort -u); do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
(cd "$work/bundle" && runc spec)
python3 - "$work/bundle/config.json" <<'PY'
import json, sys
path = sys.argv[1]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["sh", "-c",
    "echo '-- devices:'; ls -l /dev/nvidia0 /dev/nvidiactl; "
    "echo '-- env:'; env | grep NVIDIA | sort; "
    "echo '-- driver mount:'; cat /usr/local/nvidia/version; grep /usr/local/nvidia /proc/mounts; "
    "echo '-- open /dev/nvidia0 (ENXIO means the device cgroup let it through, there is no driver):'; "
    "cat /dev/nvidia0 2>&1 | head -1; "
    "echo '-- /etc/ld.so.preload:'; cat /etc/ld.so.preload; "
    "echo '-- a CUDA program on a 16 GiB (simulated) GPU, limit 256 MiB: 300 MiB must fail, 200 MiB fit:'; "
    "out=$(cuda-alloc 300 200 2>&1); echo \"$out\"; "
    "echo \"$out\" | grep -q '(300 MiB): CUDA_ERROR_OUT_OF_MEMORY' && echo \"$out\" | grep -q '(200 MiB): CUDA_SUCCESS' "
    "&& echo '-- the limit held' || { echo '-- the limit did NOT hold'; exit 1; }"]
c.setdefault("annotations", {})["cdi.k8s.io/demo-dra_claim-1"] = "nvidia.com/gpu=0"
json.dump(c, open(path, "w"), indent=2)
PY

echo "== container $id started through gpuslice-runtime with cdi.k8s.io annotation nvidia.com/gpu=0"
build/bin/gpuslice-runtime --root "$root" run --bundle "$work/bundle" "$id"
left=$(ls -A "$work/state/containers" 2>/dev/null | wc -l)
echo "== the container's state dir, made at create, is gone now that it has ended: $left left"
# What admission checked the limit against: the GPU's memory as NVML (the
# simulated node's, beside its driver) reported it, kept for later creates.
echo "== the node's GPUs as NVML reports them to admission (UUID, bytes): $(cat "$work/state/gpu-memory" 2>/dev/null || echo 'none: NVML was not asked or not found')"
