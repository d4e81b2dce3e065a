"""What the scaling benchmarks (bench/roce-scale-bench.py, bench/ib-scale-bench.py) share.

Each fabric size is one `cnuas run` in its own process (peak RSS is a process high-water mark),
started under `taskset -c CORE nice -n NICE` so that a run on the shared build machine stays on
one core and yields to builds. The child's wall time is measured here, its CPU seconds and peak
RSS come from wait4() (the kernel's rusage of that one child, what /usr/bin/time -v prints), and
the load average is read before and after so that a figure can be judged against what else the
machine was doing. The scenario's own summary (`key: value` lines on stdout) gives the event and
packet counts. The run's progress lines (stderr) are passed through.
"""

import csv
import datetime
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cnuas_binary():
    """$CNUAS, else the Release build beside the source tree."""
    path = os.environ.get("CNUAS") or os.path.join(ROOT, "build", "bin", "cnuas")
    if not os.access(path, os.X_OK):
        sys.exit(f"{path}: not built (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && "
                 "cmake --build build --target cnuas), or set CNUAS=")
    return path


def load_average():
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def load_pair(row):
    """The 1-minute load average before and after a run, for a table cell."""
    return f"{row['load_before'].split()[0]} / {row['load_after'].split()[0]}"


def parse_summary(text):
    """The scenario's `key: value` summary lines as a dict (first occurrence of a key)."""
    summary = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith(" ") and key not in summary:
            summary[key.strip()] = value.strip()
    return summary


def run_pinned(args, out_dir, core, niceness):
    """Runs `cnuas ARGS --out OUT_DIR` pinned and niced; returns the measurements and summary."""
    os.makedirs(out_dir, exist_ok=True)
    cmd = ["taskset", "-c", str(core), "nice", "-n", str(niceness), cnuas_binary()] + args + [
        "--out", out_dir, "--no-plots"]
    print("$ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    load_before = load_average()
    stdout_path = os.path.join(out_dir, "stdout.txt")
    t0 = time.monotonic()
    with open(stdout_path, "w") as out:
        child = subprocess.Popen(cmd, stdout=out, stderr=None)
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except KeyboardInterrupt:
            # cnuas got the same Ctrl-C and stops with what it has: wait for its summary.
            _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    load_after = load_average()
    with open(stdout_path) as f:
        text = f.read()
    summary = parse_summary(text)
    if child.returncode not in (0, 1) or not summary:
        sys.stderr.write(text)
        sys.exit(f"cnuas run failed (exit {child.returncode}); output in {stdout_path}")
    return {
        "command": " ".join(shlex.quote(c) for c in ["cnuas"] + args),
        "exit": child.returncode,
        "process_wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024.0,  # KiB on Linux
        "load_before": load_before,
        "load_after": load_after,
    }, summary


def number(text):
    """The leading number of a summary value ('1234 (5 per ...)' -> 1234.0)."""
    token = text.split()[0].rstrip(",")
    return float(token)


def si(x, digits=3):
    """1234567 -> '1.23 M'."""
    for factor, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(x) >= factor:
            return f"{x / factor:.{digits - 1}f}{suffix}"
    return f"{x:.{digits - 1}f}" if x != int(x) else str(int(x))


def print_table(columns, rows, out=sys.stdout):
    """A Markdown table: columns are (header, key, format) and rows dicts."""
    out.write("| " + " | ".join(c[0] for c in columns) + " |\n")
    out.write("|" + "|".join("---" for _ in columns) + "|\n")
    for r in rows:
        out.write("| " + " | ".join(c[2](r[c[1]]) for c in columns) + " |\n")
    out.flush()


def write_csv(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    keys = list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def stamp():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def plot_scaling(path, rows, title, rate_key, rate_label, events_key, events_label,
                 cpu_rate_key=None):
    """Two panels against hosts: the event cost per item, and the items per wall second (and
    per CPU second of the same span, when cpu_rate_key names it)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib (Debian: python3-matplotlib): no plot", file=sys.stderr)
        return False
    hosts = [r["hosts"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.plot(hosts, [r[events_key] for r in rows], "o-")
    a.set_xlabel("hosts")
    a.set_ylabel(events_label)
    a.set_ylim(bottom=0)
    a.grid(True, alpha=0.3)
    b.plot(hosts, [r[rate_key] / 1e3 for r in rows], "o-", label="per wall second")
    if cpu_rate_key:
        b.plot(hosts, [r[cpu_rate_key] / 1e3 for r in rows], "s--", label="per CPU second")
        b.legend()
    b.set_xlabel("hosts")
    b.set_ylabel(rate_label + " (thousands)")
    b.set_ylim(bottom=0)
    b.grid(True, alpha=0.3)
    for r in rows:
        a.annotate(f"k={r['k']}", (r["hosts"], r[events_key]), textcoords="offset points",
                   xytext=(4, 4))
        b.annotate(f"k={r['k']}", (r["hosts"], r[rate_key] / 1e3), textcoords="offset points",
                   xytext=(4, 4))
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}", file=sys.stderr)
    return True
