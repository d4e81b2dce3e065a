#!/usr/bin/python3
"""FCT slowdown of Cnuas against HPCC's reference simulator, per flow-size bucket.

Usage: hpcc-compare.py [--label NAME] [--plot OUT.png] [--table OUT.txt]
                       CNUAS_FCT.txt REFERENCE_FCT.txt [CNUAS_FCT.txt REFERENCE_FCT.txt ...]

Each pair is one configuration: an fct.txt that `cnuas run roce-hpcc` wrote and the reference
simulator's fct.txt for the same inputs (../shared/data/hpcc-compat/reference/ holds the
WebSearch ones). Both files have the HPCC simulator's columns
    sip dip sport dport size_bytes start_ns fct_ns standalone_fct_ns
and a flow's slowdown is fct / standalone fct, each file's own standalone column (Cnuas writes
the reference's definition there, so that the two slowdowns have one denominator). For every
bucket (<10 KB, 10-100 KB, 100 KB-1 MB, >=1 MB; KB = 1000 bytes) the table gives the flow
count and p50/p95/p99 of both and Cnuas's difference from the reference in per cent; the plot
draws the percentiles of both per bucket. The percentile is the nearest-rank one (the smallest
value with at least p of the samples at or below it), as validation/roce/plot.py takes it.

The last column pairs every flow with its twin in the other file (same size, same start to the
microsecond) and gives the median of Cnuas's FCT over the reference's: the systematic part of
the difference, which the percentiles mix with the luck of single flows (paths, marks).

Exit status 0 even when the two differ: this is a report, not a test.
"""
import argparse
import math
import os
import sys

BUCKETS = [(0, 10_000, "<10KB"), (10_000, 100_000, "10-100KB"),
           (100_000, 1_000_000, "100KB-1MB"), (1_000_000, math.inf, ">=1MB")]
PERCENTILES = (0.50, 0.95, 0.99)


def read_fct(path):
    """(size, slowdown, start_ns, fct_ns) of every flow in an HPCC-format fct.txt; malformed
    lines are errors."""
    flows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 8:
                sys.exit(f"{path}:{n}: expected 8 columns (sip dip sport dport size start fct "
                         f"standalone), got {len(fields)}")
            size, fct, ideal = int(fields[4]), int(fields[6]), int(fields[7])
            if ideal <= 0:
                sys.exit(f"{path}:{n}: standalone FCT {ideal} is not positive")
            flows.append((size, fct / ideal, int(fields[5]), fct))
    if not flows:
        sys.exit(f"{path}: no flows")
    return flows


def percentile(values, p):
    v = sorted(values)
    return v[max(0, min(len(v) - 1, math.ceil(p * len(v)) - 1))]


def bucket_stats(flows):
    """[(label, n, [p50, p95, p99])] per bucket (n 0 and no percentiles when empty)."""
    out = []
    for lo, hi, label in BUCKETS:
        v = [s for size, s, *_ in flows if lo <= size < hi]
        out.append((label, len(v), [percentile(v, p) for p in PERCENTILES] if v else []))
    return out


def paired_ratios(cnuas, ref):
    """Per bucket, the FCT ratios Cnuas / reference of the flows both files have (matched by
    size and start in whole microseconds; a key two flows share is left out)."""
    def index(flows):
        seen, out = set(), {}
        for size, _, start, fct in flows:
            key = (size, round(start / 1000))
            if key in seen:
                out.pop(key, None)
            else:
                seen.add(key)
                out[key] = fct
        return out
    c, r = index(cnuas), index(ref)
    ratios = [[] for _ in BUCKETS]
    for key, fct in c.items():
        if key in r and r[key] > 0:
            for b, (lo, hi, _) in enumerate(BUCKETS):
                if lo <= key[0] < hi:
                    ratios[b].append(fct / r[key])
    return ratios


def compare(cnuas_path, ref_path):
    """Rows (bucket, n cnuas, n ref, cnuas percentiles, ref percentiles, differences %,
    paired median FCT ratio or None)."""
    rows = []
    cnuas, ref = read_fct(cnuas_path), read_fct(ref_path)
    paired = paired_ratios(cnuas, ref)
    for (label, n_c, c), (_, n_r, r), p in zip(bucket_stats(cnuas), bucket_stats(ref), paired):
        diff = [100.0 * (a / b - 1) for a, b in zip(c, r)] if c and r else []
        rows.append((label, n_c, n_r, c, r, diff, percentile(p, 0.5) if p else None))
    return rows


def format_table(label, rows):
    lines = [f"## {label}" if label else "",
             "| bucket | flows (Cnuas/ref) | Cnuas p50/p95/p99 | reference p50/p95/p99 | "
             "Cnuas vs reference | paired median FCT ratio |",
             "|---|---|---|---|---|---|"]
    for bucket, n_c, n_r, c, r, d, pm in rows:
        fmt = lambda v: "/".join(f"{x:.2f}" for x in v) if v else "-"
        fd = "/".join(f"{x:+.0f}" for x in d) + " %" if d else "-"
        fp = f"{pm:.3f}" if pm is not None else "-"
        lines.append(f"| {bucket} | {n_c}/{n_r} | {fmt(c)} | {fmt(r)} | {fd} | {fp} |")
    worst = max((abs(x) for *_, d, _ in rows for x in d), default=float("nan"))
    lines.append(f"largest difference: {worst:.1f} %")
    return "\n".join(l for l in lines if l != "") + "\n"


def plot(path, configs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(configs), figsize=(6.5 * len(configs), 4.5), squeeze=False)
    for ax, (label, rows) in zip(axes[0], configs):
        xs = range(len(rows))
        for k, (p, style) in enumerate([("p50", ":"), ("p95", "--"), ("p99", "-")]):
            ax.plot(xs, [r[3][k] if r[3] else math.nan for r in rows], style, marker="o",
                    color="tab:red", label=f"Cnuas {p}")
            ax.plot(xs, [r[4][k] if r[4] else math.nan for r in rows], style, marker="s",
                    color="tab:gray", label=f"reference {p}")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r[0] for r in rows])
        ax.set_yscale("log")
        ax.set_xlabel("flow size")
        ax.set_ylabel("FCT slowdown")
        ax.set_title(label)
        ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", action="append", default=[],
                    help="name of each pair, in order (default: the Cnuas file's folder)")
    ap.add_argument("--plot", help="write a PNG with the percentiles of both per bucket")
    ap.add_argument("--table", help="also write the table to this file")
    ap.add_argument("files", nargs="+", help="CNUAS_FCT REFERENCE_FCT pairs")
    a = ap.parse_args()
    if len(a.files) % 2:
        ap.error("files come in pairs: CNUAS_FCT.txt REFERENCE_FCT.txt")
    pairs = list(zip(a.files[0::2], a.files[1::2]))
    labels = a.label + [os.path.basename(os.path.dirname(os.path.abspath(c)))
                        for c, _ in pairs[len(a.label):]]
    configs = [(label, compare(c, r)) for label, (c, r) in zip(labels, pairs)]
    text = "\n".join(format_table(label, rows) for label, rows in configs)
    print(text, end="")
    if a.table:
        with open(a.table, "w") as f:
            f.write(text)
    if a.plot:
        plot(a.plot, configs)


if __name__ == "__main__":
    main()
