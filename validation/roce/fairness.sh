#!/bin/bash
# (1) Two flows sharing a 40 Gb/s bottleneck: per-flow rate over time, convergence time, Jain's
# index, the spread between the flows, utilisation and the queue, for DCQCN (paper preset, the
# same with ns3-rdma's initial alpha 0.5, the NIC-firmware preset), DCTCP and TIMELY.
# About 30 s.
source "$(dirname "$0")/common.sh"
run() { # name cc extra-params...
  local name=$1 cc=$2
  shift 2
  mkdir -p "$OUT/fairness-$name"
  "$CNUAS" run roce-fairness --no-progress --out "$OUT/fairness-$name" \
    --param cc=$cc --param bytes=300000000 --param stagger=500us --param limit=80ms "$@" \
    | tee "$OUT/fairness-$name/summary.txt"
}
run dcqcn-paper dcqcn-paper
run dcqcn-paper-alpha05 dcqcn-paper --param cc-attrs=InitialAlpha=0.5
run dcqcn-mlx dcqcn-mlx
# DCTCP as the HPCC paper runs it: threshold marking at K = 30 KB x 40/10, a window (HAS_WIN).
run dctcp dctcp --param ecn=threshold --param kmin=120000 --param kmax=120000 --param pmax=1 \
  --param "cc-attrs=Window=100000;RateAi=200Mbps"
# TIMELY: no ECN; the HPCC paper's steps scaled to 40 G (10 Mb/s x 40/10).
run timely timely --param ecn=off --param cc-attrs=Delta=40Mbps
"$PY" "$HERE/plot.py" fairness "$OUT"
