#!/usr/bin/python3
"""Plot a Cnuas throughput CSV (time_us,flow,gbps) as one line per flow, averaged over a 10 us
moving window (1 us bins hold a whole number of packets, so raw bins alias against the packet
time): plot-throughput.py CSV PNG TITLE"""
import csv
import sys
from collections import defaultdict

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main():
    src, png, title = sys.argv[1], sys.argv[2], sys.argv[3]
    series = defaultdict(lambda: ([], []))
    with open(src) as f:
        for row in csv.DictReader(f):
            xs, ys = series[row["flow"]]
            xs.append(float(row["time_us"]))
            ys.append(float(row["gbps"]))
    fig, ax = plt.subplots(figsize=(8, 4))
    window = 10
    for name, (xs, ys) in sorted(series.items()):
        if len(ys) >= window:
            smooth = np.convolve(ys, np.ones(window) / window, mode="valid")
            ax.plot(xs[window - 1:], smooth, label=name, linewidth=1.2)
        else:
            ax.plot(xs, ys, label=name, linewidth=1.2)
    ax.set_xlabel("simulated time (us)")
    ax.set_ylabel("throughput (Gb/s, wire bytes)")
    ax.set_ylim(bottom=0)
    ax.set_title(title + f" ({window} us moving average)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main()
