#!/usr/bin/python3
"""Plot the ib-cc-incast runs with congestion control off and on side by side: victim, h0 and
hot-spot throughput per 10 us bin. plot-ib-cc.py OFF.csv ON.csv PNG"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def load(path):
    cols = {"time_us": [], "victim_gbps": [], "h0_gbps": [], "hotspot_gbps": []}
    with open(path) as f:
        for row in csv.DictReader(f):
            for k in cols:
                cols[k].append(float(row[k]))
    return cols


def main():
    off, on, png = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, data, title in ((axes[0], off, "cc=none"), (axes[1], on, "cc=iba (annex A10)")):
        t = data["time_us"]
        ax.plot(t, data["victim_gbps"], label="victim h1 -> h9", linewidth=1.4)
        ax.plot(t, data["h0_gbps"], label="h0 -> hot spot", linewidth=1.2)
        ax.plot(t, data["hotspot_gbps"], label="into the hot spot (8 flows)", linewidth=1.2)
        ax.set_title(title)
        ax.set_xlabel("time since traffic start (us)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Gb/s (10 us bins, transport bytes)")
    axes[1].legend(loc="center right", fontsize=8)
    fig.suptitle("ib-incast dumbbell, RDMA WRITE flows: congestion spreading with and without "
                 "IB congestion control")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
