#!/bin/bash
# (4) FCT slowdown by flow size (p50/p95/p99 per size bucket) on the HPCC simulator's 320-host
# fat-tree with its WebSearch and FB_Hadoop flows at 30 % load, under DCQCN (its firmware form,
# config_fat_*_dcqcn.txt) and HPCC (config_fat_ws30_5ms_hp95.txt, with the FB flow file for
# FB). Four runs of minutes each, two at a time in the background; progress is printed as each
# finishes. MAX_FLOWS=N runs the first N flows of each file only (0 = all), LIMIT the
# simulated-time limit.
source "$(dirname "$0")/common.sh"
MAX_FLOWS="${MAX_FLOWS:-0}"
LIMIT="${LIMIT:-100ms}"
JOBS="${JOBS:-2}"
run() { # name flowfile config
  local d="$OUT/hpcc-fct-$1"
  mkdir -p "$d"
  echo "$(date +%T) start $1 (flows $2, config $3, max-flows $MAX_FLOWS)"
  "$CNUAS" run roce-hpcc --no-progress --out "$d" --param flow-file="$2" \
    --param config-file="$3" --param max-flows="$MAX_FLOWS" --param limit="$LIMIT" \
    > "$d/summary.txt" 2> "$d/stderr.txt" || { echo "$1 failed, see $d/stderr.txt" >&2; return 1; }
  echo "$(date +%T) done  $1: $(grep -m1 'flows done' "$d/summary.txt" | tr -s ' ')"
}
pids=()
for spec in "ws-dcqcn ws30_5ms.txt config_fat_ws30_5ms_dcqcn.txt" \
            "ws-hpcc ws30_5ms.txt config_fat_ws30_5ms_hp95.txt" \
            "fb-dcqcn fb30_5ms.txt config_fat_fb30_5ms_dcqcn.txt" \
            "fb-hpcc fb30_5ms.txt config_fat_ws30_5ms_hp95.txt"; do
  # shellcheck disable=SC2086
  run $spec &
  pids+=($!)
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 2; done
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ "$fail" = 0 ] || exit 1
"$PY" "$HERE/plot.py" hpcc-fct "$OUT"
echo "wrote $OUT/hpcc-fct.png and $OUT/hpcc-fct.txt"
