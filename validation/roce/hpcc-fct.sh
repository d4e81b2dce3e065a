#!/bin/bash
# (4) FCT slowdown by flow size (p50/p95/p99 per size bucket) on the HPCC simulator's 320-host
# fat-tree with its WebSearch and FB_Hadoop flows at 30 % load, under DCQCN (its firmware form,
# config_fat_*_dcqcn.txt) and HPCC (config_fat_ws30_5ms_hp95.txt, with the FB flow file for
# FB). Four runs of minutes each, JOBS (2) at a time in the background; progress is printed as
# each finishes. MAX_FLOWS=N runs the first N flows of each file only (0 = all), LIMIT the
# simulated-time limit. With all flows, and the reference simulator's WebSearch fct.txt files in
# HPCC_INPUT_DIR/reference/, it also compares against them (hpcc-compare.py: hpcc-compare.txt
# and .png, docs/validation.md (5)).
#
# Usage: hpcc-fct.sh [HPCC_INPUT_DIR]
# HPCC_INPUT_DIR holds the HPCC simulator's input files (fat.txt, ws30_5ms.txt, fb30_5ms.txt and
# the config_fat_*.txt files); they are not part of this repository. Default: the shared test
# data beside the checkout, ../shared/data/hpcc-compat, when present.
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
if [ $# -gt 1 ]; then
  echo "usage: $0 [HPCC_INPUT_DIR]" >&2
  exit 2
fi
source "$(dirname "$0")/common.sh"
DATA="${1:-}"
if [ -z "$DATA" ] && [ -d "$ROOT/../shared/data/hpcc-compat" ]; then
  DATA="$(cd "$ROOT/../shared/data/hpcc-compat" && pwd)"
fi
if [ -z "$DATA" ]; then
  echo "usage: $0 HPCC_INPUT_DIR (the HPCC simulator's input files; no default found at" \
       "$ROOT/../shared/data/hpcc-compat)" >&2
  exit 2
fi
[ -d "$DATA" ] || { echo "$0: no such directory: $DATA" >&2; exit 2; }
DATA="$(cd "$DATA" && pwd)"
for f in fat.txt ws30_5ms.txt fb30_5ms.txt config_fat_ws30_5ms_dcqcn.txt \
         config_fat_fb30_5ms_dcqcn.txt config_fat_ws30_5ms_hp95.txt; do
  [ -f "$DATA/$f" ] || { echo "$0: $DATA has no $f (not an HPCC input folder?)" >&2; exit 2; }
done
MAX_FLOWS="${MAX_FLOWS:-0}"
LIMIT="${LIMIT:-100ms}"
JOBS="${JOBS:-2}"
run() { # name flowfile config
  local d="$OUT/hpcc-fct-$1"
  mkdir -p "$d"
  echo "$(date +%T) start $1 (flows $2, config $3, max-flows $MAX_FLOWS)"
  "$CNUAS" run roce-hpcc --no-progress --out "$d" --param dir="$DATA" --param flow-file="$2" \
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
# (5) Against the reference simulator's own fct.txt for the same WebSearch inputs, when the
# input folder has them (reference/, as ../shared/data/hpcc-compat does).
REF="$DATA/reference"
if [ -f "$REF/fct_fat_ws30_5ms_dcqcn.txt" ] && [ -f "$REF/fct_fat_ws30_5ms_hp95.txt" ] &&
   [ "$MAX_FLOWS" = 0 ]; then
  "$PY" "$HERE/hpcc-compare.py" --plot "$OUT/hpcc-compare.png" --table "$OUT/hpcc-compare.txt" \
    --label "WebSearch 30 %, DCQCN (CC_MODE 1)" --label "WebSearch 30 %, HPCC (CC_MODE 3, eta 0.95)" \
    "$OUT/hpcc-fct-ws-dcqcn/fct.txt" "$REF/fct_fat_ws30_5ms_dcqcn.txt" \
    "$OUT/hpcc-fct-ws-hpcc/fct.txt" "$REF/fct_fat_ws30_5ms_hp95.txt"
  echo "wrote $OUT/hpcc-compare.png and $OUT/hpcc-compare.txt"
fi
