#!/usr/bin/env bash
# Compute shares on the fake GPU, measured by the programs themselves.
#   compute_share.sh GPUSLICE SHARE_TEST STATE_DIR solo API PCT
#       one process, policy fixed at PCT%, alone on the GPU: gets at most
#       PCT + 5 (the cap: an ungated launch path gets ~100), and at least
#       PCT - 15 (it measures 29.9-30.4 at 30% on a quiet machine, but the fake
#       GPU's kernels are a thread spinning on a CPU: a CI rehearsal once
#       measured 24.8% when the VM stalled; two CPU hogs beside it do not
#       move it below 29.4)
#   compute_share.sh GPUSLICE SHARE_TEST STATE_DIR pair PCT_A PCT_B [KERNEL_MS [STARVED]]
#       two "containers" (two gpuslice exec) at PCT_A / PCT_B, policy fixed,
#       time-sharing one fake GPU (kernels of 1 ms, or KERNEL_MS: longer than
#       the fake's 2 ms slice, they are preempted mid-kernel and their samples
#       stretched, as on a real GPU): neither gets more than its share + 5 (the
#       cap is what gpuslice enforces), neither less than its share - STARVED
#       (default 15: how close each comes to its cap also depends on the fake
#       GPU's lock, which is not fair: on a loaded 2-core CI machine the 30%
#       side once measured 23.2%), and together they keep the GPU busy (>= 85%)
#   compute_share.sh GPUSLICE SHARE_TEST STATE_DIR burst PCT
#       policy burst alone: not capped (over 80); next to a busy burst
#       container: capped at PCT (at most PCT + 5, at least PCT - 15)
set -euo pipefail
gs=$1 prog=$2 state=$3 mode=$4
shift 4
tol=5     # points over a share: the cap gpuslice enforces
under=15  # points under a share (see solo and pair above)
rm -rf "$state"
mkdir -p "$state"
export FAKE_CUDA_GPU_LOCK=$state/gpu.lock

check() { # name measured want: at most want + tol, at least want - under
  local ok
  ok=$(awk -v m="$2" -v w="$3" -v t="$tol" -v u="$under" 'BEGIN { print (m <= w + t && m >= w - u) ? 1 : 0 }')
  echo "$1: measured $2%, wanted $3% (at most +$tol, at least -$under)"
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
  a=$1 b=$2 kernel_ms=${3:-1} starved=${4:-$under}
  "$gs" exec --compute-limit "$a" --policy fixed --state-dir "$state/a" -- "$prog" kernel 3 0 "$kernel_ms" >"$state/a.out" &
  pa=$!
  "$gs" exec --compute-limit "$b" --policy fixed --state-dir "$state/b" -- "$prog" kernel 3 0 "$kernel_ms" >"$state/b.out" &
  pb=$!
  wait $pa
  wait $pb
  sa=$(share_of "$state/a.out") sb=$(share_of "$state/b.out")
  echo "container A: measured $sa%, cap $a%; container B: measured $sb%, cap $b%"
  awk -v sa="$sa" -v sb="$sb" -v a="$a" -v b="$b" -v t="$tol" -v s="$starved" 'BEGIN {
    bad = 0
    if (sa > a + t) { print "container A is over its cap"; bad = 1 }
    if (sb > b + t) { print "container B is over its cap"; bad = 1 }
    if (sa < a - s) { print "container A is starved"; bad = 1 }
    if (sb < b - s) { print "container B is starved"; bad = 1 }
    if (sa + sb < 85) { print "the GPU sits idle between the two"; bad = 1 }
    exit bad }'
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
  # capped (not over pct + 5), not starved (pct - 15: the fake GPU's lock is
  # not fair, see pair)
  near=$(share_of "$state/a.out")
  echo "burst at $pct% next to a busy container: measured $near%, cap $pct%"
  awk -v m="$near" -v p="$pct" -v t="$tol" -v u="$under" 'BEGIN { exit !(m <= p + t && m >= p - u) }' ||
    { echo "burst next to a busy container should be capped at $pct%, not starved"; exit 1; }
  ;;
esac
