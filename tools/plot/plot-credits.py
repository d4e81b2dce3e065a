#!/usr/bin/python3
"""Plot a Cnuas credit trace (time_ns,port,event,vl,fctbs,fccl,credits,stall_ns): the transmit
credits available per port/VL over time, with flow-control packet arrivals marked.
Usage: plot-credits.py CSV PNG TITLE"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main():
    src, png, title = sys.argv[1], sys.argv[2], sys.argv[3]
    credits = defaultdict(lambda: ([], []))
    fc_rx = defaultdict(list)
    with open(src) as f:
        for row in csv.DictReader(f):
            key = f"{row['port']} VL{row['vl']}"
            t = float(row["time_ns"]) / 1000.0
            if row["event"] == "credits":
                xs, ys = credits[key]
                xs.append(t)
                ys.append(int(row["credits"]))
            elif row["event"] == "fc_rx":
                fc_rx[key].append(t)
    fig, ax = plt.subplots(figsize=(8, 4))
    for key, (xs, ys) in sorted(credits.items()):
        ax.step(xs, ys, where="post", label=f"{key} credits (64 B blocks)", linewidth=0.8)
    for key, ts in sorted(fc_rx.items()):
        ax.plot(ts, [0] * len(ts), "|", markersize=6, label=f"{key} flow-control packet received")
    ax.set_xlabel("simulated time (us)")
    ax.set_ylabel("credits available")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main()
