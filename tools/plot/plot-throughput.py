#!/usr/bin/python3
"""Plot a Cnuas throughput CSV (time_us,flow,gbps) as one line per flow: plot-throughput.py CSV PNG TITLE"""
import csv
import sys
from collections import defaultdict

import matplotlib

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
    for name, (xs, ys) in sorted(series.items()):
        ax.plot(xs, ys, label=name, linewidth=1)
    ax.set_xlabel("simulated time (us)")
    ax.set_ylabel("throughput (Gb/s, wire bytes)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main()
