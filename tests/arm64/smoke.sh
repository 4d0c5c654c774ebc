#!/usr/bin/env bash
# smoke.sh RUNTIME: an arm64 gpuslice-runtime run under qemu-aarch64 in
# front of this machine's runc (an x86-64 program, which qemu hands to the
# kernel). Which path each call took is read from qemu's -strace: glibc's
# start-up calls set_tid_address before anything else it does, the front
# never does, so a call whose first execve comes before any set_tid_address
# was the front's. Run by tests/arm64/run.sh, as root.
set -euo pipefail
runtime=$(realpath "${1:?usage: smoke.sh RUNTIME}")
work=$(mktemp -d)
config=$work/gpuslice.toml
record=/run/gpuslice/runtime-front/$(python3 -c '
import sys
h = 0xcbf29ce484222325
for b in sys.argv[1].encode():
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print(f"{h:016x}")' "$config")
cleanup() {
  for id in arm64-plain arm64-device; do runc --root "$work/root" delete -f "$id" >/dev/null 2>&1 || true; done
  rm -f "$record"
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# The configured runtime: runc, each call's arguments noted first.
cat >"$work/runc" <<EOF
#!/bin/sh
echo "\$*" >>"$work/calls"
exec runc "\$@"
EOF
chmod +x "$work/runc"
write_config() {
  cat >"$config" <<EOF
[cdi]
spec-dirs = ["$work/cdi"]

[runtime]
runtimes = ["$work/runc"]
state-dir = "$work/state"

[log]
level = "debug"
target = "file"
directory = "$work/log"
$1
EOF
}
write_config ""

# call EXPECTED ARGS...: runs the arm64 runtime with ARGS; EXPECTED is
# front, full or "full, failing". Its output in $work/out; its errors in
# $work/trace, among qemu's lines (a write to stderr shows inside its own).
call() {
  local expected=$1 rc=0 taken
  shift
  : >"$work/calls"
  GPUSLICE_CONFIG=$config qemu-aarch64 -strace "$runtime" --root "$work/root" "$@" \
    >"$work/out" 2>"$work/trace" </dev/null || rc=$?
  taken=$(grep -m1 -o -E '^[0-9]+ (execve|set_tid_address)\(' "$work/trace" | awk '{print $2}' || true)
  case $taken in execve\() taken=front ;; set_tid_address\() taken=full ;; *) taken=none ;; esac
  [ "$rc" -ne 0 ] && taken="$taken, failing"
  if [ "$taken" != "$expected" ]; then
    fail "$* took the $taken path, not the $expected one: $(tail -5 "$work/trace")"
  else
    echo "ok: $* ($taken)"
  fi
}
# the runtime's arguments as the configured runtime got them
passed() {
  local expected="--root $work/root $*"
  [ "$(cat "$work/calls")" = "$expected" ] || fail "runc got '$(cat "$work/calls")', not '$expected'"
}

# A record is written by the full program, then trusted by the front.
rm -f "$record"
call full list
passed list
grep -q '^ID ' "$work/out" || fail "list printed no table: $(cat "$work/out")"
[ -f "$record" ] || fail "the full program wrote no record at $record"
call front list
passed list
grep -q '^ID ' "$work/out" || fail "list printed no table: $(cat "$work/out")"
# any change of the config's bytes is the full program's again
write_config "# edited"
call full list
call front list

# A container that asks for nothing: created, started and deleted through
# the front, by runc itself.
bundle=$work/bundle
mkdir -p "$bundle/rootfs/bin"
cp /bin/busybox "$bundle/rootfs/bin/busybox"
runc spec --bundle "$bundle"
python3 - "$bundle/config.json" <<'EOF'
import json, sys
path = sys.argv[1]
spec = json.load(open(path))
spec["process"]["terminal"] = False
spec["process"]["args"] = ["/bin/busybox", "true"]
json.dump(spec, open(path, "w"), indent=1)
EOF
call front create --bundle "$bundle" arm64-plain
passed create --bundle "$bundle" arm64-plain
call front state arm64-plain
grep -q '"status": "created"' "$work/out" || fail "arm64-plain is not created: $(cat "$work/out")"
call front start arm64-plain
for _ in $(seq 50); do
  runc --root "$work/root" state arm64-plain | grep -q '"status": "stopped"' && break
  sleep 0.1
done
call front delete arm64-plain
passed delete arm64-plain
runc --root "$work/root" state arm64-plain >/dev/null 2>&1 && fail "arm64-plain is still there after delete"

# A container whose annotations ask for a CDI device: the full program
# reads config.json, finds no spec that defines the device and refuses,
# without running runc or leaving a state dir.
python3 - "$bundle/config.json" <<'EOF'
import json, sys
path = sys.argv[1]
spec = json.load(open(path))
spec["annotations"] = {"cdi.k8s.io/arm64-smoke": "example.com/gpu=0"}
json.dump(spec, open(path, "w"), indent=1)
EOF
mkdir -p "$work/cdi"
call "full, failing" create --bundle "$bundle" arm64-device
grep -q 'example.com/gpu=0' "$work/trace" || fail "the refusal does not name the device: $(tail -5 "$work/trace")"
[ -s "$work/calls" ] && fail "runc was run for a device nothing defines: $(cat "$work/calls")"
[ -e "$work/state/containers/arm64-device" ] && fail "a refused create left $work/state/containers/arm64-device"
runc --root "$work/root" state arm64-device >/dev/null 2>&1 && fail "runc holds arm64-device"

if [ "$failures" -ne 0 ]; then
  echo "arm64 smoke: $failures failure(s)" >&2
  exit 1
fi
echo "arm64 smoke: every call took the path it should, under $(qemu-aarch64 --version | head -1)"
