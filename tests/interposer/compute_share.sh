#!/usr/bin/env bash
# Compute shares on the fake GPU, measured by the programs themselves.
#   compute_share.sh GPUSLICE SHARE_TEST STATE_DIR solo API PCT
#       one process, policy fixed at PCT%, alone on the GPU: gets PCT +- 5
#   compute_share.sh GPUSLICE SHARE_TEST STATE_DIR pair PCT_A PCT_B
#       two "containers" (two gpuslice exec) at PCT_A / PCT_B, policy fixed,
#       time-sharing one fake GPU: each gets its share +- 5
#   compute_share.sh GPUSLICE SHARE_TEST STATE_DIR burst PCT
#       policy burst alone: not capped (over 80); next to a busy fixed
#       container: capped at PCT +- 5
set -euo pipefail
gs=$1 prog=$2 state=$3 mode=$4
shift 4
tol=5
rm -rf "$state"
mkdir -p "$state"
export FAKE_CUDA_GPU_LOCK=$state/gpu.lock

check() { # name measured want
  local ok
  ok=$(awk -v m="$2" -v w="$3" -v t="$tol" 'BEGIN { d = m - w; if (d < 0) d = -d; print (d <= t) ? 1 : 0 }')
  echo "$1: measured $2%, wanted $3% +- $tol"
  [[ $ok == 1 ]]
}
share_of() { awk '/^share/ { print $2 }' "$1"; }

case $mode in
solo)
  api=$1 pct=$2
  "$gs" exec --compute-limit "$pct" --policy fixed --state-dir "$state/a" -- "$prog" "$api" 1.2 >"$state/a.out"
  check "$api alone at $pct%" "$(share_of "$state/a.out")" "$pct"
  ;;
pair)
  a=$1 b=$2
  "$gs" exec --compute-limit "$a" --policy fixed --state-dir "$state/a" -- "$prog" kernel 3 >"$state/a.out" &
  pa=$!
  "$gs" exec --compute-limit "$b" --policy fixed --state-dir "$state/b" -- "$prog" kernel 3 >"$state/b.out" &
  pb=$!
  wait $pa
  wait $pb
  ra=0 rb=0
  check "container A" "$(share_of "$state/a.out")" "$a" || ra=1
  check "container B" "$(share_of "$state/b.out")" "$b" || rb=1
  exit $((ra | rb))
  ;;
burst)
  pct=$1
  "$gs" exec --compute-limit "$pct" --policy burst --state-dir "$state/a" -- "$prog" kernel 1.2 >"$state/alone.out"
  alone=$(share_of "$state/alone.out")
  echo "burst at $pct% alone: measured $alone%"
  awk -v m="$alone" 'BEGIN { exit !(m > 80) }' || { echo "burst alone should not be capped"; exit 1; }
  "$gs" exec --compute-limit 60 --policy burst --state-dir "$state/b" -- "$prog" kernel 3 >"$state/b.out" &
  pb=$!
  "$gs" exec --compute-limit "$pct" --policy burst --state-dir "$state/a" -- "$prog" kernel 3 >"$state/a.out"
  wait $pb
  check "burst at $pct% next to a busy container" "$(share_of "$state/a.out")" "$pct"
  ;;
esac
