"""Plots for validation/roce: `plot.py fairness|incast|incast_steady|collapse OUTDIR` reads
the CSVs the roce-* scenarios wrote under OUTDIR and writes PNGs beside them."""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


FAIRNESS_RUNS = ["dcqcn-paper", "dcqcn-paper-alpha05", "dcqcn-mlx", "dctcp", "timely"]


def fairness(out):
    runs = [r for r in FAIRNESS_RUNS
            if os.path.exists(os.path.join(out, f"fairness-{r}", "roce-fairness.csv"))]
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 2.6 * len(runs)), sharex=True,
                             squeeze=False)
    for ax, cc in zip(axes[:, 0], runs):
        r = rows(os.path.join(out, f"fairness-{cc}", "roce-fairness.csv"))
        t = [float(x["time_us"]) / 1000 for x in r]
        # 1 ms moving average: single 10 us samples are quantised to whole packets.
        for k in [k for k in r[0] if k.startswith("flow")]:
            v = [float(x[k]) for x in r]
            w = 100
            avg = [sum(v[max(0, i - w + 1):i + 1]) / len(v[max(0, i - w + 1):i + 1])
                   for i in range(len(v))]
            ax.plot(t, avg, label=k.replace("_gbps", ""))
        ax2 = ax.twinx()
        ax2.plot(t, [int(x["max_queue_bytes"]) / 1000 for x in r], color="grey", lw=0.5)
        ax2.set_ylabel("queue (KB)")
        ax.set_ylabel("Gb/s (1 ms avg)")
        ax.set_title(f"two flows, 40 Gb/s bottleneck, {cc}", fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
    axes[-1][0].set_xlabel("time (ms)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fairness.png"), dpi=100)


def incast_steady(out):
    fig, axes = plt.subplots(1, 4, figsize=(17, 4))
    for cc, style in [("dcqcn-paper", "-"), ("dcqcn-mlx", "--")]:
        path = os.path.join(out, f"incast-steady-{cc}", "roce-incast-steady.csv")
        if not os.path.exists(path):
            continue
        r = rows(path)
        for mode in ["pfc", "dcqcn", "both"]:
            if mode == "pfc" and cc != "dcqcn-paper":
                continue
            m = [x for x in r if x["mode"] == mode]
            n = [int(x["senders"]) for x in m]
            lab = mode if mode == "pfc" else f"{mode} ({cc})"
            axes[0].plot(n, [100 * float(x["utilisation"]) for x in m], style, marker="o",
                         label=lab)
            axes[1].plot(n, [float(x["jain"]) for x in m], style, marker="o", label=lab)
            axes[2].plot(n, [float(x["mean_queue_bytes"]) / 1e3 for x in m], style,
                         marker="o", label=lab)
            axes[3].plot(n, [max(1, int(x["pauses"])) for x in m], style, marker="o",
                         label=lab)
    axes[3].set_yscale("log")
    for ax, y in zip(axes, ["throughput (% of what the link carries)", "Jain index (per flow)",
                            "mean switch queue (KB)", "PFC PAUSE frames in 40 ms (0 drawn as 1)"]):
        ax.set_xlabel("senders N")
        ax.set_ylabel(y)
    axes[0].legend(fontsize=8)
    fig.suptitle("N-to-1 incast, 40 Gb/s, long-lived senders, steady state (20-40 ms)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "incast-steady.png"), dpi=100)


def incast(out):
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for cc, style in [("dcqcn-paper", "-"), ("dcqcn-mlx", "--")]:
        r = rows(os.path.join(out, f"incast-{cc}", "roce-incast.csv"))
        for mode in ["pfc", "dcqcn", "both"]:
            if mode == "pfc" and cc != "dcqcn-paper":
                continue
            m = [x for x in r if x["mode"] == mode]
            n = [int(x["senders"]) for x in m]
            lab = mode if mode == "pfc" else f"{mode} ({cc})"
            axes[0].plot(n, [float(x["goodput_gbps"]) for x in m], style, marker="o", label=lab)
            axes[1].plot(n, [int(x["peak_queue_bytes"]) / 1e3 for x in m], style, marker="o",
                         label=lab)
            axes[2].plot(n, [int(x["pauses"]) for x in m], style, marker="o", label=lab)
    for ax, y in zip(axes, ["goodput (Gb/s)", "peak switch queue (KB)", "PFC PAUSE frames"]):
        ax.set_xlabel("senders N")
        ax.set_ylabel(y)
    axes[0].legend(fontsize=8)
    fig.suptitle("N-to-1 incast, 40 Gb/s, 2 MB per sender")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "incast.png"), dpi=110)


def collapse(out):
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for row, cc in enumerate(["none", "dcqcn-paper"]):
        r = rows(os.path.join(out, f"collapse-{cc}", "roce-collapse.csv"))
        for cfg in ["consistent", "pfc-off", "inconsistent", "pfc-off-irn"]:
            m = [x for x in r if x["config"] == cfg]
            if not m:
                continue
            load = [float(x["load"]) for x in m]
            axes[row][0].plot(load, [float(x["goodput_gbps"]) for x in m], marker="o", label=cfg)
            axes[row][1].plot(load, [float(x["p99_fct_us"]) / 1000 for x in m], marker="o",
                              label=cfg)
        axes[row][0].set_ylabel(f"goodput (Gb/s), cc={cc}")
        axes[row][1].set_ylabel(f"p99 FCT (ms), cc={cc}")
        for ax in axes[row]:
            ax.set_xlabel("offered load")
            ax.legend(fontsize=8)
    fig.suptitle("WebSearch on a 16-host leaf-spine: consistent vs misconfigured PFC/ECN, "
                 "and PFC off with IRN")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "collapse.png"), dpi=110)


# Flow-size buckets (upper bounds, bytes): the roce-hpcc scenario's, so that the plot and its
# summary agree.
HPCC_BUCKETS = [1e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 1e12]
HPCC_LABELS = ["<=1K", "1K-10K", "10K-30K", "30K-100K", "100K-300K", "300K-1M", "1M-3M",
               "3M-10M", ">10M"]


def _percentile(v, p):
    """The smallest value with at least p of the samples at or below it."""
    v = sorted(v)
    return v[max(0, min(len(v) - 1, math.ceil(p * len(v)) - 1))]


def hpcc_fct(out):
    """(4): slowdown p50/p95/p99 per flow-size bucket, DCQCN vs HPCC, one panel per workload,
    from the roce-hpcc-fct.csv files of validation/roce/hpcc-fct.sh. Writes hpcc-fct.png and
    the table hpcc-fct.txt."""
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5))
    lines = ["workload cc bucket n p50 p95 p99"]
    for ax, wl, title in zip(axes, ["ws", "fb"], ["WebSearch 30 %", "FB_Hadoop 30 %"]):
        nflows = 0
        for cc, color in [("dcqcn", "tab:red"), ("hpcc", "tab:blue")]:
            path = os.path.join(out, f"hpcc-fct-{wl}-{cc}", "roce-hpcc-fct.csv")
            if not os.path.exists(path):
                continue
            r = rows(path)
            nflows = max(nflows, len(r))
            lo = 0
            xs, stats = [], []
            for b, hi in enumerate(HPCC_BUCKETS):
                v = [float(x["slowdown"]) for x in r if lo < int(x["bytes"]) <= hi]
                lo = hi
                if not v:
                    continue
                s = [_percentile(v, p) for p in (0.5, 0.95, 0.99)]
                xs.append(b)
                stats.append(s)
                lines.append(f"{wl} {cc} {b} {len(v)} {s[0]:.2f} {s[1]:.2f} {s[2]:.2f}")
            for k, (p, style) in enumerate([("p50", ":"), ("p95", "--"), ("p99", "-")]):
                ax.plot(xs, [s[k] for s in stats], style, color=color, marker="o",
                        label=f"{cc} {p}")
        ax.set_xticks(range(len(HPCC_BUCKETS)))
        ax.set_xticklabels(HPCC_LABELS, rotation=30, fontsize=8)
        ax.set_yscale("log")
        ax.set_xlabel("flow size")
        ax.set_ylabel("FCT slowdown")
        ax.set_title(f"{title}, 320-host fat-tree, {nflows} flows")
        ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "hpcc-fct.png"), dpi=110)
    with open(os.path.join(out, "hpcc-fct.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    {"fairness": fairness, "incast": incast, "incast_steady": incast_steady,
     "collapse": collapse, "hpcc-fct": hpcc_fct}[sys.argv[1]](sys.argv[2])
