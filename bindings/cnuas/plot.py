"""Plots of results and sweeps with matplotlib's Agg backend (no display needed)."""

import math
import os

from .units import parse_bytes, parse_rate, parse_time


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def numeric(value):
    """A grid value as a number for an axis: numbers as they are, "100KB" as bytes, "40Gbps"
    as bit/s, "5us" as seconds; None if it is none of these (a category such as a cc name)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    for parse in (parse_bytes, parse_rate, parse_time):
        try:
            return float(parse(value))
        except ValueError:
            continue
    return None


def _mean(values):
    values = [v for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    return sum(values) / len(values) if values else float("nan")


def plot_sweep(rows, x, ys, series_keys, out_dir):
    """One PNG per metric in `ys` against grid key `x`, one line per combination of
    `series_keys` (a "seed" key is averaged over, not drawn). Failed points are left out."""
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    rows = [r for r in rows if r.get("status") == "ok"]
    keys = [k for k in series_keys if k != "seed"]
    files = []
    for y in ys:
        groups = {}
        for r in rows:
            label = ", ".join(f"{k}={r[k]}" for k in keys)
            groups.setdefault(label, {}).setdefault(r[x], []).append(r.get(y, float("nan")))
        if not groups:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        categorical = any(numeric(v) is None for g in groups.values() for v in g)
        for label, by_x in sorted(groups.items()):
            xs = sorted(by_x, key=lambda v: (numeric(v) if not categorical else str(v)))
            positions = list(range(len(xs))) if categorical else [numeric(v) for v in xs]
            ax.plot(positions, [_mean(by_x[v]) for v in xs], marker="o", label=label or y)
            if categorical:
                ax.set_xticks(positions, [str(v) for v in xs])
        if not categorical:
            values = [numeric(v) for g in groups.values() for v in g]
            if min(values) > 0 and max(values) / min(values) >= 20:
                ax.set_xscale("log")  # grid values that span decades (Kmax, loads of flows)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.grid(alpha=0.3)
        if len(groups) > 1 or keys:
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{y}-vs-{x}.png".replace("/", "_").replace(":", "_"))
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def plot_rates(result, path, title="per-flow rate"):
    """Each flow's sending rate over time (Result.traces["rate_gbps"]) as a PNG."""
    plt = _pyplot()
    t = result.traces["time_us"]
    rates = result.traces["rate_gbps"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i in range(rates.shape[0]):
        ax.plot(t, rates[i], label=f"flow {i}")
    ax.set_xlabel("time (us)")
    ax.set_ylabel("rate (Gb/s)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_slowdown_by_size(results, path, title="FCT slowdown by flow size", quantile=50):
    """`results` {label: Result}: the `quantile` slowdown of flows binned by size (log bins)."""
    import numpy as np
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, result in results.items():
        ok = result.flows["ok"].astype(bool)
        sizes = result.flows["size"][ok].astype(float)
        slow = result.flows["slowdown"][ok]
        if sizes.size == 0:
            continue
        edges = np.unique(np.quantile(sizes, np.linspace(0, 1, 11)))
        which = np.clip(np.searchsorted(edges, sizes, side="right") - 1, 0, len(edges) - 2)
        xs, ys = [], []
        for b in range(len(edges) - 1):
            chosen = slow[which == b]
            if chosen.size:
                xs.append(np.sqrt(edges[b] * edges[b + 1]) if edges[b] > 0 else edges[b + 1])
                ys.append(np.percentile(chosen, quantile))
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel(f"p{quantile} FCT slowdown")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
