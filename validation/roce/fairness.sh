#!/bin/bash
# (1) Two DCQCN flows sharing a 40 Gb/s bottleneck: per-flow rate over time, convergence time
# and Jain's index, for the paper preset and the NIC-firmware preset. About 15 s.
source "$(dirname "$0")/common.sh"
for cc in dcqcn-paper dcqcn-mlx; do
  mkdir -p "$OUT/fairness-$cc"
  "$CNUAS" run roce-fairness --no-progress --out "$OUT/fairness-$cc" \
    --param cc=$cc --param bytes=300000000 --param stagger=500us --param limit=60ms \
    | tee "$OUT/fairness-$cc/summary.txt"
done
"$PY" "$HERE/plot.py" fairness "$OUT"
