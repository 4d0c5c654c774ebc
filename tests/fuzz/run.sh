#!/usr/bin/env bash
# Runs every fuzz target for SECONDS over a copy of its seed corpus, as many
# at once as there are CPUs (each target is one process: CI's 2 cores run
# two, and every target still gets its SECONDS).
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]   (BUILD_DIR configured with -DGPUSLICE_FUZZ=ON)
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pairs=(fuzz_spec_parse:spec fuzz_apply:apply fuzz_requests:requests fuzz_containerd_edit:containerd fuzz_region:region
       fuzz_hook_state:hook_state fuzz_hook_config:hook_config fuzz_json_parse:json
       fuzz_bundle_spec:bundle_spec fuzz_front:front)

# One target: its log in $work/TARGET.log, its findings under $work/TARGET/,
# its exit status in $work/TARGET.status.
fuzz_one() {
  local target=$1 corpus=$2 rc=0
  mkdir -p "$work/$target/corpus"
  cp "$here/corpus/$corpus/"* "$work/$target/corpus/"
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/$target/" "$work/$target/corpus" 2>"$work/$target.log" || rc=$?
  echo "$rc" >"$work/$target.status"
}

for pair in "${pairs[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  fuzz_one "${pair%%:*}" "${pair##*:}" &
done
wait

status=0
for pair in "${pairs[@]}"; do
  target=${pair%%:*}
  echo "== $target for ${seconds}s"
  if [ "$(cat "$work/$target.status" 2>/dev/null)" != 0 ]; then
    tail -n 60 "$work/$target.log" || echo "(no log: the target did not start)"
    for crash in "$work/$target"/crash-* "$work/$target"/leak-* "$work/$target"/timeout-* "$work/$target"/oom-*; do
      [ -e "$crash" ] && { echo "reproducer: $crash"; base64 "$crash" | head -c 4000; echo; }
    done
    status=1
  else
    grep -E '^(#[0-9]+ *DONE|Done)' "$work/$target.log" | tail -n 1 || tail -n 2 "$work/$target.log"
  fi
done
exit $status
