#!/usr/bin/python3
"""The report of hpcc-side-by-side.sh: speed, memory and FCT slowdown of Cnuas against HPCC's
reference simulator, from the runs it made.

Usage: hpcc-side-by-side-report.py [--data DIR] [--max-flows N] RESULTS_DIR CASE [CASE ...]

RESULTS_DIR/CASE/roundK/ holds what one paired run left: `cores` (Cnuas's core, the
reference's), `load-before` and `load-after` (/proc/loadavg), and for `cnuas/` and `reference/`
a `time` file from /usr/bin/time -f "%e %U %S %M" (wall s, user s, system s, peak RSS KiB), an
`fct.txt`, and Cnuas's `summary.txt`. Writes RESULTS_DIR/summary.md (also printed),
speed.png, fct-compare.txt and fct-compare.png. A missing or malformed file is an error.
"""
import argparse
import datetime
import filecmp
import importlib.util
import os
import platform
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LABELS = {
    "ws-dcqcn": "WebSearch 30 %, DCQCN",
    "ws-hpcc": "WebSearch 30 %, HPCC (eta 0.95)",
    "fb-dcqcn": "FB_Hadoop 30 %, DCQCN",
    "fb-hpcc": "FB_Hadoop 30 %, HPCC (eta 0.95)",
    "incast-dcqcn": "60-to-1 incast, DCQCN",
}
# The reference's own outputs for the shared inputs, to check the build reproduces them.
SHARED_REFERENCE = {"ws-dcqcn": "fct_fat_ws30_5ms_dcqcn.txt",
                    "ws-hpcc": "fct_fat_ws30_5ms_hp95.txt"}


def load_compare():
    spec = importlib.util.spec_from_file_location("hpcc_compare",
                                                  os.path.join(HERE, "hpcc-compare.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_time(path):
    try:
        with open(path) as f:
            fields = f.read().split()
        wall, user, system, rss_kib = (float(x) for x in fields[-4:])
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: not a /usr/bin/time record ({e})")
    return {"wall": wall, "cpu": user + system, "rss_mb": rss_kib / 1024}


def read_summary(path):
    """Cnuas's `key: value` summary lines as a dict of strings."""
    out = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.partition(":")
            if sep:
                out[key.strip()] = value.strip()
    return out


def read_first(path):
    with open(path) as f:
        return f.read().strip()


def rounds_of(results, case):
    d = os.path.join(results, case)
    names = sorted((n for n in os.listdir(d) if n.startswith("round")),
                   key=lambda n: int(n[len("round"):]))
    if not names:
        sys.exit(f"{d}: no rounds")
    out = []
    for n in names:
        r = os.path.join(d, n)
        summary = read_summary(os.path.join(r, "cnuas", "summary.txt"))
        out.append({
            "dir": r,
            "round": int(n[len("round"):]),
            "cores": read_first(os.path.join(r, "cores")).split(),
            "load_before": read_first(os.path.join(r, "load-before")),
            "load_after": read_first(os.path.join(r, "load-after")),
            "cnuas": read_time(os.path.join(r, "cnuas", "time")),
            "reference": read_time(os.path.join(r, "reference", "time")),
            "events_per_packet": summary.get("events per packet", "-"),
            "flows_done": summary.get("flows done", "-"),
        })
    return out


def plot_speed(path, cases, per_case):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(cases), 4.2))
    xs = range(len(cases))
    ref = [statistics.mean(r["reference"]["wall"] for r in per_case[c]) for c in cases]
    cn = [statistics.mean(r["cnuas"]["wall"] for r in per_case[c]) for c in cases]
    w = 0.38
    ax.bar([x - w / 2 for x in xs], ref, w, color="tab:gray", label="HPCC reference simulator")
    ax.bar([x + w / 2 for x in xs], cn, w, color="tab:red", label="Cnuas")
    for x, a, b in zip(xs, ref, cn):
        ax.annotate(f"{a / b:.2f}x", (x, max(a, b)), ha="center", va="bottom")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(cases)
    ax.set_ylabel("wall-clock time, s (each pinned to its own core)")
    ax.set_title("Side by side, same inputs, same moment")
    ax.set_ylim(0, max(ref + cn) * 1.3)  # room above the bars for the ratios and the legend
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="the HPCC input folder (its reference/ is checked against)")
    ap.add_argument("--max-flows", type=int, default=0)
    ap.add_argument("results")
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    per_case = {c: rounds_of(a.results, c) for c in a.cases}

    lines = [f"# Cnuas beside HPCC's reference simulator, "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             "",
             f"Machine: {platform.node()}, {os.cpu_count()} cores; both runs started together, "
             "each pinned to its own core (taskset), the cores swapped every second round. "
             + (f"First {a.max_flows} flows of each flow file. " if a.max_flows else "")
             + "Wall and CPU time and peak RSS of each whole process (/usr/bin/time).",
             "",
             "| case | round | cores Cnuas/ref | load before -> after | reference wall / CPU s | "
             "Cnuas wall / CPU s | wall ratio | CPU ratio | peak RSS ref / Cnuas MB | "
             "Cnuas events/packet | Cnuas flows done |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in a.cases:
        for r in per_case[c]:
            ref, cn = r["reference"], r["cnuas"]
            lines.append(
                f"| {c} | {r['round']} | {'/'.join(r['cores'])} | {r['load_before']} -> "
                f"{r['load_after']} | {ref['wall']:.1f} / {ref['cpu']:.1f} | "
                f"{cn['wall']:.1f} / {cn['cpu']:.1f} | **{ref['wall'] / cn['wall']:.2f}x** | "
                f"{ref['cpu'] / cn['cpu']:.2f}x | {ref['rss_mb']:.0f} / {cn['rss_mb']:.0f} | "
                f"{r['events_per_packet']} | {r['flows_done']} |")
    lines.append("")

    # The reference's build against the outputs recorded in the shared data.
    if a.data and a.max_flows == 0:
        for c in a.cases:
            if c in SHARED_REFERENCE:
                shared = os.path.join(a.data, "reference", SHARED_REFERENCE[c])
                if os.path.exists(shared):
                    fresh = os.path.join(per_case[c][0]["dir"], "reference", "fct.txt")
                    same = filecmp.cmp(fresh, shared, shallow=False)
                    lines.append(f"{c}: the reference's fct.txt is "
                                 + ("byte-identical to" if same else "**different from**")
                                 + f" {os.path.relpath(shared)}.")
        lines.append("")

    compare = load_compare()
    configs = [(LABELS.get(c, c),
                compare.compare(os.path.join(per_case[c][0]["dir"], "cnuas", "fct.txt"),
                                os.path.join(per_case[c][0]["dir"], "reference", "fct.txt")))
               for c in a.cases]
    table = "\n".join(compare.format_table(label, rows) for label, rows in configs)
    with open(os.path.join(a.results, "fct-compare.txt"), "w") as f:
        f.write(table)
    compare.plot(os.path.join(a.results, "fct-compare.png"), configs)
    plot_speed(os.path.join(a.results, "speed.png"), a.cases, per_case)
    lines += ["FCT slowdown per size bucket (round 1 of each case; slowdown = FCT / each file's "
              "standalone FCT):", "", table,
              "Plots: speed.png (wall time), fct-compare.png (slowdown percentiles)."]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.results, "summary.md"), "w") as f:
        f.write(text)
    print(text, end="")
    print(f"wrote {a.results}/summary.md, speed.png, fct-compare.txt, fct-compare.png")


if __name__ == "__main__":
    main()
