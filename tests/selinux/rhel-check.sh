#!/usr/bin/env bash
# What only an enforcing RHEL 9.4 GPU node can show (docs/selinux.md): a
# confined GPU container (container_t with the engine's categories, no
# securityContext, no label=disable, no container_use_devices) started
# through gpuslice works, through containerd's CRI and through podman; a
# second container cannot read the first one's files; and the kernel logged
# no AVC denial meanwhile.
#
# Needs: root; SELinux enforcing; the gpuslice RPM installed (its module
# loaded); container-selinux; for containerd: containerd with
# enable_selinux = true and the gpuslice handler registered (`gpuslice
# configure containerd`), crictl; for podman: podman; ausearch (audit); a
# CDI spec for the GPU (e.g. `nvidia-ctk cdi generate --output
# /var/run/cdi/nvidia.yaml`). The script writes one more spec of its own,
# a slice with a memory limit (removed at exit).
#
#   tests/selinux/rhel-check.sh [--device nvidia.com/gpu=0] [--image IMAGE]
#                               [--limit 1Gi] [--skip-containerd] [--skip-podman]
set -euo pipefail

device=nvidia.com/gpu=0
image=registry.access.redhat.com/ubi9/python-311:latest  # python3 for the ctypes probe
limit=1Gi
use_containerd=1
use_podman=1

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --skip-containerd) use_containerd=0; shift ;;
    --skip-podman) use_podman=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "rhel-check: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

failures=0
pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
need() { command -v "$1" >/dev/null 2>&1 || { echo "rhel-check: $1 is missing ($2)" >&2; exit 2; }; }

[ "$(id -u)" -eq 0 ] || { echo "rhel-check: run as root" >&2; exit 2; }
need getenforce "policycoreutils"
need semodule "policycoreutils"
need ausearch "audit"
need gpuslice "the gpuslice package"
need nvidia-smi "the NVIDIA driver"
need numfmt "coreutils"
[ "$(getenforce)" = Enforcing ] || { echo "rhel-check: SELinux is $(getenforce), not Enforcing" >&2; exit 2; }

started=$(date +%s)
limit_bytes=$(numfmt --from=iec-i "$limit")

# --- the package's part
if semodule -l | grep -qx gpuslice; then pass "policy module gpuslice is loaded"; else fail "policy module gpuslice is not loaded"; fi
interposer=$(gpuslice version | awk '/interposer-path/ {print $2}')
case "$(ls -Z "$interposer" 2>/dev/null)" in
  *container_ro_file_t:s0*) pass "interposer $interposer is container_ro_file_t:s0" ;;
  *) fail "interposer $interposer: $(ls -Z "$interposer" 2>&1)" ;;
esac
case "$(ls -Z /usr/bin/gpuslice-runtime)" in
  *container_runtime_exec_t*) pass "gpuslice-runtime is container_runtime_exec_t" ;;
  *) fail "gpuslice-runtime: $(ls -Z /usr/bin/gpuslice-runtime)" ;;
esac

# --- a slice of the GPU: the driver's device plus a limit on its GPU
uuid=$(nvidia-smi -L | sed -n '1s/.*(UUID: \(GPU-[^)]*\)).*/\1/p')
[ -n "$uuid" ] || { echo "rhel-check: nvidia-smi -L names no GPU" >&2; exit 2; }
mkdir -p /var/run/cdi
slice_spec=/var/run/cdi/gpuslice-rhel-check.yaml
cat > "$slice_spec" <<EOF
cdiVersion: 0.6.0
kind: gpuslice-check.local/slice
devices:
  - name: limit
    containerEdits:
      env: [GPUSLICE_GPU_UUID=$uuid, GPUSLICE_MEMORY_LIMIT=$limit]
EOF
request="$device,gpuslice-check.local/slice=limit"
workdir=$(mktemp -d)
cleanup() {
  rm -f "$slice_spec"
  [ -n "${pod_a:-}" ] && crictl rmp -f "$pod_a" >/dev/null 2>&1
  [ -n "${pod_b:-}" ] && crictl rmp -f "$pod_b" >/dev/null 2>&1
  podman rm -f gpuslice-check-a gpuslice-check-b >/dev/null 2>&1 || :
  rm -rf "$workdir"
}
trap cleanup EXIT

# What runs inside each container: its process label, gpuslice's files
# and their labels, the limit itself (libcuda through ctypes: what the
# device sees, an allocation over the limit refused, one under it granted),
# and nvidia-smi when the spec mounts it.
probe='import ctypes, os
cu = ctypes.CDLL("libcuda.so.1")
limit = int(os.environ["LIMIT_BYTES"])
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
free, total = ctypes.c_size_t(), ctypes.c_size_t()
print("init", cu.cuInit(0), cu.cuDeviceGet(ctypes.byref(dev), 0), cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev))
cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
print("total", total.value)
print("over", cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(limit + (64 << 20))))
print("under", cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(limit // 2)))'
# shellcheck disable=SC2016 # $PROBE is the container's, from its env
inside='cat /proc/self/attr/current; echo; cat /etc/ld.so.preload; cat /run/gpuslice/limits;
        ls -Z /run/gpuslice; python3 -c "$PROBE";
        if command -v nvidia-smi >/dev/null; then nvidia-smi -L; fi'

check_output() { # engine output
  local engine=$1 out=$2
  case "$out" in *container_t:s0:c*) pass "$engine: the process is confined ($(echo "$out" | head -1))" ;;
                 *) fail "$engine: the process is not container_t with categories: $out" ;; esac
  case "$out" in *libgpuslice-cuda.so*) pass "$engine: the merged ld.so.preload is readable" ;;
                 *) fail "$engine: /etc/ld.so.preload: $out" ;; esac
  case "$out" in *"$uuid memory"*) pass "$engine: the limits file is readable and names the GPU" ;;
                 *) fail "$engine: /run/gpuslice/limits: $out" ;; esac
  case "$out" in *"container_ro_file_t:s0:c"*limits*) pass "$engine: its limits file is container_ro_file_t at its categories" ;;
                 *) fail "$engine: ls -Z /run/gpuslice: $out" ;; esac
  case "$out" in *"init 0 0 0"*) pass "$engine: libcuda initialises" ;;
                 *) fail "$engine: cuInit/cuDeviceGet/cuCtxCreate: $out" ;; esac
  case "$out" in *"total $limit_bytes"*) pass "$engine: the device shows $limit ($limit_bytes bytes)" ;;
                 *) fail "$engine: cuMemGetInfo total is not $limit_bytes: $out" ;; esac
  case "$out" in *"over 2"*) pass "$engine: an allocation over the limit fails (CUDA_ERROR_OUT_OF_MEMORY)" ;;
                 *) fail "$engine: an allocation over the limit: $out" ;; esac
  case "$out" in *"under 0"*) pass "$engine: an allocation under the limit succeeds" ;;
                 *) fail "$engine: an allocation under the limit: $out" ;; esac
}

# --- containerd, through the CRI
if [ "$use_containerd" = 1 ]; then
  need crictl "cri-tools"
  need python3 "python3, to write the CRI configs"
  json_string() { printf '%s' "$1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'; }
  pod_json() { printf '{"metadata":{"name":"%s","namespace":"default","uid":"%s"},"log_directory":"%s"}' "$1" "$1-uid" "$workdir"; }
  ctr_json() { # name, mounts json, command
    printf '{"metadata":{"name":"%s"},"image":{"image":"%s"},"command":["sh","-c",%s],"log_path":"%s.log",
             "envs":[{"key":"PROBE","value":%s},{"key":"LIMIT_BYTES","value":"%s"}],
             "annotations":{"cdi.k8s.io/gpuslice-check":"%s"},"mounts":%s}' \
      "$1" "$image" "$(json_string "$3")" "$1" "$(json_string "$probe")" "$limit_bytes" "$request" "$2"
  }
  crictl pull "$image" >/dev/null
  pod_json a > "$workdir/pod-a.json"
  pod_a=$(crictl runp --runtime gpuslice "$workdir/pod-a.json")
  ctr_json a '[]' "$inside; sleep 60" > "$workdir/ctr-a.json"
  ca=$(crictl create "$pod_a" "$workdir/ctr-a.json" "$workdir/pod-a.json")
  crictl start "$ca" >/dev/null
  sleep 3
  check_output containerd "$(sed 's/^[^ ]* [^ ]* [^ ]* //' "$workdir/a.log" 2>/dev/null)"
  # Another pod (other categories) is given pod a's limits file by path,
  # without relabelling: MCS must deny it.
  limits_a=$(find /run/gpuslice/containers -maxdepth 2 -path "*/$ca*/limits" 2>/dev/null | head -1)
  if [ -n "$limits_a" ]; then
    pod_json b > "$workdir/pod-b.json"
    pod_b=$(crictl runp --runtime gpuslice "$workdir/pod-b.json")
    ctr_json b "[{\"container_path\":\"/peek\",\"host_path\":\"$limits_a\",\"readonly\":true}]" \
      'cat /peek >/dev/null 2>&1 && echo PEEK-READ || echo PEEK-DENIED' > "$workdir/ctr-b.json"
    cb=$(crictl create "$pod_b" "$workdir/ctr-b.json" "$workdir/pod-b.json")
    crictl start "$cb" >/dev/null
    sleep 3
    case "$(cat "$workdir/b.log" 2>/dev/null)" in
      *PEEK-DENIED*) pass "containerd: another pod cannot read pod a's limits file" ;;
      *) fail "containerd: another pod read pod a's limits file: $(cat "$workdir/b.log" 2>&1)" ;;
    esac
  else
    fail "containerd: no state dir for container $ca under /run/gpuslice/containers"
  fi
fi

# --- podman, with gpuslice-runtime as its runtime
if [ "$use_podman" = 1 ]; then
  need podman "podman"
  out=$(podman run --name gpuslice-check-a --runtime /usr/bin/gpuslice-runtime \
        -e PROBE="$probe" -e LIMIT_BYTES="$limit_bytes" \
        --annotation "cdi.k8s.io/gpuslice-check=$request" "$image" sh -c "$inside" 2>&1) || :
  check_output podman "$out"
  podman run -d --name gpuslice-check-b --runtime /usr/bin/gpuslice-runtime \
    --annotation "cdi.k8s.io/gpuslice-check=$request" "$image" sleep 60 >/dev/null
  id_b=$(podman inspect --format '{{.Id}}' gpuslice-check-b)
  peek=$(podman run --rm -v "/run/gpuslice/containers/$id_b/limits:/peek:ro" "$image" \
         sh -c 'cat /peek >/dev/null 2>&1 && echo PEEK-READ || echo PEEK-DENIED' 2>&1) || :
  case "$peek" in
    *PEEK-DENIED*) pass "podman: another container cannot read a GPU container's limits file" ;;
    *) fail "podman: another container read a GPU container's limits file: $peek" ;;
  esac
fi

# --- the kernel's word: every AVC record since this script started (by
# the record's own timestamp, msg=audit(EPOCH.MS:ID)), but for the two
# deliberate peeks. ausearch exits 1 with "<no matches>" when there is none.
avc_status=0
avc=$(LC_ALL=C ausearch -m AVC,USER_AVC -ts today --raw 2>&1) || avc_status=$?
if [ "$avc_status" -ne 0 ] && ! echo "$avc" | grep -q '<no matches>'; then
  fail "ausearch failed ($avc_status): $avc"
else
  unexpected=$(echo "$avc" | grep -E '^type=(USER_)?AVC ' | awk -v since="$started" 'match($0, /msg=audit\([0-9]+/) {
      t = substr($0, RSTART + 10, RLENGTH - 10); if (t + 0 >= since + 0) print }' |
    grep -v 'path="/peek"\|name="peek"' || :)
  if [ -z "$unexpected" ]; then
    pass "no unexpected AVC denial since $(date -d "@$started")"
  else
    fail "AVC denials:"; echo "$unexpected"
  fi
fi

echo
if [ "$failures" -eq 0 ]; then echo "rhel-check: all passed"; else echo "rhel-check: $failures failed"; fi
[ "$failures" -eq 0 ]
