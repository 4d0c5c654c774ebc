#!/usr/bin/env bash
# Runs every fuzz target for SECONDS over a copy of its seed corpus.
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]   (BUILD_DIR configured with -DGPUSLICE_FUZZ=ON)
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for pair in fuzz_spec_parse:spec fuzz_apply:apply fuzz_requests:requests fuzz_containerd_edit:containerd fuzz_region:region fuzz_hook_state:hook_state fuzz_hook_config:hook_config fuzz_json_parse:json; do
  target=${pair%%:*} corpus=${pair##*:}
  mkdir -p "$work/$corpus"
  cp "$here/corpus/$corpus/"* "$work/$corpus/"
  echo "== $target for ${seconds}s"
  if ! "$build/tests/fuzz/$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$work/" "$work/$corpus" 2>"$work/$target.log"; then
    tail -n 60 "$work/$target.log"
    for crash in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
      [ -e "$crash" ] && { echo "reproducer: $crash"; base64 "$crash" | head -c 4000; echo; }
    done
    status=1
  else
    grep -E '^(#[0-9]+ *DONE|Done)' "$work/$target.log" | tail -n 1 || tail -n 2 "$work/$target.log"
  fi
done
exit $status
