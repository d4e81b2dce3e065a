#!/bin/bash
# (3) The seed's collapse: the same WebSearch load on a 16-host leaf-spine with PFC and ECN
# consistent, PFC off, and one spine misconfigured (PFC and ECN off), and PFC off with IRN-style
# selective repeat instead of go-back-N (pfc-off-irn); with PFC as the only protection (cc none)
# and with DCQCN. Goodput and tail FCT part only under load. About 1.5 min.
source "$(dirname "$0")/common.sh"
for cc in none dcqcn-paper; do
  mkdir -p "$OUT/collapse-$cc"
  "$CNUAS" run roce-collapse --no-progress --out "$OUT/collapse-$cc" --param cc=$cc \
    --param loads=0.1,0.2,0.3,0.5,0.7 | tee "$OUT/collapse-$cc/summary.txt"
done
"$PY" "$HERE/plot.py" collapse "$OUT"
