#!/usr/bin/python3
"""DCQCN's ECN Kmax against tail latency: an N-to-1 incast for each Kmax (and seed), one
simulation per core, the p99 flow completion time plotted against Kmax.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/dcqcn-kmax-sweep.py

Defaults run in about a minute on two cores; scale up with --senders, --size, --kmax, --seeds.
The sweep keeps its points in --out: run it again (or after Ctrl-C) and finished points are
skipped.
"""

import argparse
import os
import sys

import cnuas.sweep


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--senders", type=int, default=16, help="incast senders (default 16)")
    parser.add_argument("--size", default="2MB", help="bytes each sender writes")
    parser.add_argument("--rate", default="40Gbps", help="link rate")
    parser.add_argument("--kmin", default="5KB", help="ECN Kmin (DCQCN paper: 5 KB)")
    parser.add_argument("--kmax", default="10KB,20KB,40KB,80KB,160KB,320KB,640KB",
                        help="comma-separated Kmax values")
    parser.add_argument("--pmax", type=float, default=0.01, help="marking probability at Kmax")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per Kmax (ECN draws)")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="processes (all cores)")
    parser.add_argument("-o", "--out", default="out/python/dcqcn-kmax", help="output folder")
    args = parser.parse_args()

    spec = {
        "fixed": {
            "traffic": "incast",
            "topology": f"star:hosts={args.senders + 1}",
            "senders": args.senders,
            "size": args.size,
            "rate": args.rate,
            "cc": "dcqcn-paper",
            "kmin": args.kmin,
            "pmax": args.pmax,
            "limit": "100ms",
        },
        "grid": {
            "kmax": args.kmax.split(","),
            "seed": list(range(1, args.seeds + 1)),
        },
        "plot": {"x": "kmax", "y": ["fct_p99_us", "ecn_marks", "pfc_pauses"]},
    }
    sweep = cnuas.sweep.Sweep(spec, args.out, args.jobs)
    failed = sweep.run()
    print(f"table: {sweep.write_table()}")
    for path in sweep.plot():
        print(f"plot: {path}")
    print(f"{'kmax':>8}  {'p99 FCT (us)':>12}  {'ECN marks':>9}  {'PFC pauses':>10}")
    for row in sweep.rows():
        if row["status"] == "ok":
            print(f"{row['kmax']:>8}  {row['fct_p99_us']:12.1f}  {row['ecn_marks']:9.0f}  "
                  f"{row['pfc_pauses']:10.0f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
