#!/usr/bin/python3
"""Plot an RDMA FCT CSV (the fct.csv of `cnuas run rdma-fct`, written by RdmaFctRecorder) as
the p50, p95 and p99 of the slowdown (fct / ideal) per message-size bucket, and print the
table: plot-fct.py CSV PNG [TITLE]

Buckets are decades of the message size (< 1 KB, 1-10 KB, ..., >= 10 MB), so a bucket's
percentiles compare messages of like ideal completion time. Percentiles are nearest-rank.
Only successful messages with an ideal time are plotted; a CSV without any is an error."""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

EDGES = [0, 1e3, 1e4, 1e5, 1e6, 1e7, math.inf]
LABELS = ["<1K", "1K-10K", "10K-100K", "100K-1M", "1M-10M", ">=10M"]


def nearest_rank(sorted_values, p):
    rank = max(1, math.ceil(p * len(sorted_values)))
    return sorted_values[rank - 1]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, png = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else "FCT slowdown by message size"
    buckets = [[] for _ in LABELS]
    with open(src) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for row in rows:
            if row["status"] != "success" or not row["slowdown"]:
                continue
            size = float(row["size_bytes"])
            for i in range(len(LABELS)):
                if EDGES[i] <= size < EDGES[i + 1]:
                    buckets[i].append(float(row["slowdown"]))
                    break
    used = [(LABELS[i], sorted(b)) for i, b in enumerate(buckets) if b]
    if not used:
        sys.exit(src + ": no successful messages with a slowdown")
    print("bucket,messages,p50,p95,p99")
    stats = []
    for label, values in used:
        p = [nearest_rank(values, q) for q in (0.5, 0.95, 0.99)]
        stats.append(p)
        print("%s,%d,%.3f,%.3f,%.3f" % (label, len(values), p[0], p[1], p[2]))
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = range(len(used))
    for k, (name, marker) in enumerate([("p50", "o"), ("p95", "s"), ("p99", "^")]):
        ax.plot(xs, [s[k] for s in stats], marker=marker, label=name)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(["%s\n(%d)" % (label, len(v)) for label, v in used])
    ax.set_yscale("log")
    ax.set_xlabel("message size, bytes (messages)")
    ax.set_ylabel("slowdown (FCT / ideal)")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main()
