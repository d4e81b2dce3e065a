#!/bin/bash
# (2) N-to-1 incast, N = 2..16, with PFC only, DCQCN only and both: goodput, peak queue,
# PAUSE frames, drops. About 15 s.
source "$(dirname "$0")/common.sh"
for cc in dcqcn-paper dcqcn-mlx; do
  mkdir -p "$OUT/incast-$cc"
  "$CNUAS" run roce-incast --no-progress --out "$OUT/incast-$cc" --param cc=$cc \
    --param senders=2,4,6,8,12,16 | tee "$OUT/incast-$cc/summary.txt"
done
"$PY" "$HERE/plot.py" incast "$OUT"
