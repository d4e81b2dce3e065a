#!/usr/bin/python3
"""FCT slowdown by flow size, DCQCN against HPCC, on a fat-tree under WebSearch all-to-all
load: the two simulations run side by side (one process each), then one plot.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/fct-dcqcn-vs-hpcc.py

Defaults (k=4 fat-tree of 16 hosts, 50 % load for 10 ms of arrivals) run in about a minute
on two cores; scale up with --k, --load, --duration (the HPCC paper: k=8, 30 %, 5 ms+).
"""

import argparse
import multiprocessing
import os

import numpy as np

import cnuas
from cnuas.plot import plot_slowdown_by_size


def simulate(args_and_cc):
    """One policy's run, in a process of its own (ns-3 runs one simulation per process)."""
    args, cc = args_and_cc
    fabric = cnuas.Fabric(f"fat-tree:k={args.k}", rate=args.rate, cc=cc)
    traffic = cnuas.Traffic.all_to_all(load=args.load, cdf=args.cdf, duration=args.duration)
    result = cnuas.Run(fabric, traffic, limit="100ms", seed=args.seed).run()
    return cc, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=4, help="fat-tree arity (hosts = k^3/4)")
    parser.add_argument("--rate", default="100Gbps")
    parser.add_argument("--load", type=float, default=0.5)
    parser.add_argument("--duration", default="10ms", help="flows arrive during this time")
    parser.add_argument("--cdf", default="websearch.cdf")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cc", default="dcqcn-paper,hpcc", help="policies to compare")
    parser.add_argument("-o", "--out", default="out/python/fct-cc", help="output folder")
    args = parser.parse_args()

    policies = args.cc.split(",")
    with multiprocessing.get_context("fork").Pool(len(policies), maxtasksperchild=1) as pool:
        results = dict(pool.map(simulate, [(args, cc) for cc in policies]))
    for cc, result in results.items():
        m = result.metrics()
        print(f"{cc}: {m['flows_done']}/{m['flows']} flows, slowdown p50 "
              f"{m['slowdown_p50']:.2f} p99 {m['slowdown_p99']:.2f}, PFC pauses "
              f"{m['pfc_pauses']:.0f}, drops {m['drops']:.0f}")
    os.makedirs(args.out, exist_ok=True)
    for quantile in (50, 99):
        path = plot_slowdown_by_size(
            results, os.path.join(args.out, f"slowdown-p{quantile}.png"),
            title=f"fat-tree k={args.k}, WebSearch {args.load:.0%} load", quantile=quantile)
        print(f"plot: {path}")


if __name__ == "__main__":
    main()
