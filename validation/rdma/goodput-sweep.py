#!/usr/bin/python3
"""One RC QP's goodput against the link's data rate for RDMA WRITEs of 64 B .. 1 MiB.

Runs `cnuas run rdma-incast` with one sender on the `pair` topology (h0 - switch - h1, 4x HDR)
for every size, and compares the measured goodput with the wire arithmetic of
docs/ib-link.md §2.1 worked out here: a message of S bytes at MTU 4096 is ceil(S / 4096)
packets of LRH 8 + BTH 12 (+ RETH 16 on the first) + payload (padded to 4) + ICRC 4 + VCRC 2
+ 2 delimiter bytes, each in whole 4-byte columns of 160 ps; the requester's link also carries
one 8-byte credit update (2 columns) per acknowledgment it receives (one per message).

    validation/rdma/goodput-sweep.py [BUILD_DIR] [OUT_DIR]

Writes OUT_DIR/goodput.csv and OUT_DIR/goodput.png (default validation/rdma/)."""
import csv
import math
import os
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COLUMN_S = 160e-12
MTU = 4096
LINK_GBPS = 200.0


def columns(nbytes):
    return math.ceil(nbytes / 4)


def message_time(size):
    n = max(1, math.ceil(size / MTU))
    cols = 0
    for i in range(n):
        payload = min(MTU, size - i * MTU)
        transport = 12 + (16 if i == 0 else 0) + payload
        transport = (transport + 3) // 4 * 4
        cols += columns(8 + transport + 4 + 2 + 2)
    return (cols + 2) * COLUMN_S  # + the credit update for the message's ACK


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    out = sys.argv[2] if len(sys.argv) > 2 else HERE
    os.makedirs(out, exist_ok=True)
    rows = []
    for size in [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576]:
        outstanding = max(2, math.ceil(8192 / size) * 2)  # at least two bandwidth-delay products
        duration = 200 if size <= 65536 else 4000
        cmd = [os.path.join(build, "bin", "cnuas"), "run", "rdma-incast", "--topology", "pair",
               "--param", "senders=1", "--param", "size=%d" % size,
               "--param", "outstanding=%d" % outstanding,
               "--param", "duration-us=%d" % duration,
               "--no-progress", "--no-plots", "--out", os.path.join(out, "runs", str(size))]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        m = re.search(r"goodput into the last host:\s+([0-9.]+) Gb/s", text)
        measured = float(m.group(1))
        theory = size * 8 / message_time(size) / 1e9
        rows.append((size, outstanding, duration, measured, theory))
        print("%8d B  %4d in flight  measured %7.2f Gb/s  wire arithmetic %7.2f Gb/s  (%.2f %%)"
              % (size, outstanding, measured, theory, 100 * measured / theory))
    with open(os.path.join(out, "goodput.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["size_bytes", "outstanding", "duration_us", "measured_gbps", "theory_gbps"])
        w.writerows(rows)
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = [r[0] for r in rows]
    ax.plot(xs, [r[3] for r in rows], "o-", label="measured (one RC QP, RDMA WRITE)")
    ax.plot(xs, [r[4] for r in rows], "x--", label="wire arithmetic (headers + credit updates)")
    ax.axhline(LINK_GBPS, color="grey", linewidth=0.8, label="4x HDR data rate (200 Gb/s)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size, bytes")
    ax.set_ylabel("goodput, Gb/s")
    ax.set_ylim(0, 210)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("One RC QP over one switch, 4x HDR, MTU 4096")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "goodput.png"), dpi=120)


if __name__ == "__main__":
    main()
