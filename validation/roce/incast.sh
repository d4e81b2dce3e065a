#!/bin/bash
# (2) N-to-1 incast, N = 2..16, with PFC only, DCQCN only and both. Main table: long-lived
# senders (the DCQCN paper's incast measures steady throughput), throughput against what the
# link can carry, per-flow Jain index, mean and peak queue, PAUSE frames and drops over a
# 40 ms run, rates averaged over its second half. Second table: every sender writes 2 MB once
# (goodput = all bytes / last completion). About 2 min.
source "$(dirname "$0")/common.sh"
for cc in dcqcn-paper dcqcn-mlx; do
  mkdir -p "$OUT/incast-steady-$cc"
  "$CNUAS" run roce-incast --no-progress --out "$OUT/incast-steady-$cc" --param cc=$cc \
    --param senders=2,4,8,12,16 --param duration=40ms --param warmup=20ms \
    | tee "$OUT/incast-steady-$cc/summary.txt"
  mkdir -p "$OUT/incast-$cc"
  "$CNUAS" run roce-incast --no-progress --out "$OUT/incast-$cc" --param cc=$cc \
    --param senders=2,4,6,8,12,16 | tee "$OUT/incast-$cc/summary.txt"
done
"$PY" "$HERE/plot.py" incast "$OUT"
"$PY" "$HERE/plot.py" incast_steady "$OUT"
