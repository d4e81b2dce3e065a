"""Parameter sweeps: a grid of simulations, one per worker process, restartable.

    python3 -m cnuas.sweep SPEC.toml -o OUT [-j N] [--grid key=v1,v2 ...] [--fixed key=v]

SPEC is a TOML (or JSON) file:

    target = "cnuas:simulate"     # optional: module:function called with each point's keywords
    scenario = "roce-fairness"    # or: run this built-in scenario with them (cnuas.scenario)
    [fixed]                       # keywords every point gets
    topology = "star:hosts=9"
    size = "1MB"
    [grid]                        # every combination of these is one point
    kmax = ["20KB", "50KB", "100KB", "200KB"]
    seed = [1, 2]
    [plot]                        # optional: what the plots show
    x = "kmax"
    y = ["fct_p99_us", "slowdown_p99"]

Each point runs in a process of its own (ns-3 allows one simulation per process, and a crash
then loses only that point), `-j` at a time (default: every core). A finished point is kept
as OUT/points/KEY.json and skipped when the sweep runs again, so a killed sweep resumes where
it stopped; a point that failed (an exception, or a worker that died, even of a signal) is
recorded with its error, the others go on, and the next run tries it again. At the end
OUT/results.csv holds one row a point (its keywords, status, error and metrics) and
OUT/plots/ one PNG per plotted metric.
"""

import argparse
import csv
import hashlib
import importlib
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
import traceback

__all__ = ["Sweep", "load_spec", "main"]


def load_spec(path):
    """Reads a sweep spec (TOML, or JSON by extension) into a dict."""
    with open(path, "rb") as f:
        data = f.read()
    if str(path).endswith(".json"):
        spec = json.loads(data)
    else:
        import tomllib
        spec = tomllib.loads(data.decode())
    unknown = set(spec) - {"target", "scenario", "fixed", "grid", "plot"}
    if unknown:
        raise ValueError(f"{path}: unknown sections or keys: {', '.join(sorted(unknown))}")
    return spec


def _parse_cli_value(text):
    """A --grid/--fixed value: a number when it reads as one, else the string."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


def point_key(point):
    """A stable name for a point: the same keywords give the same file on every run."""
    text = json.dumps(point, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _resolve_target(spec):
    """The function a point calls, and whether it is a built-in scenario."""
    if spec.get("scenario"):
        name = spec["scenario"]

        def run_scenario(**kw):
            import cnuas
            return cnuas.scenario(name, **kw)

        return run_scenario
    module_name, _, function = spec.get("target", "cnuas:simulate").partition(":")
    return getattr(importlib.import_module(module_name), function or "main")


def _metrics_of(value):
    """What a point's function returned, as a flat dict of scalars."""
    if hasattr(value, "metrics"):
        return value.metrics()
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if isinstance(v, (int, float, str, bool))}
    if isinstance(value, (int, float)):
        return {"value": value}
    raise TypeError(f"a sweep point returned {type(value).__name__}, not a Result or a dict")


def _write_json(path, data):
    """Writes atomically: a point file either is complete or does not exist."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, default=str, allow_nan=True)
    os.replace(tmp, path)


def _worker(spec, point, path):
    """Runs one point in this (child) process and records its outcome."""
    began = time.monotonic()
    try:
        metrics = _metrics_of(_resolve_target(spec)(**point))
        record = {"point": point, "status": "ok", "metrics": metrics}
    except BaseException as e:  # the sweep goes on whatever one point raised
        lines = traceback.format_exception_only(type(e), e)
        record = {"point": point, "status": "error", "error": "".join(lines).strip(),
                  "metrics": {}}
    record["seconds"] = round(time.monotonic() - began, 3)
    record["pid"] = os.getpid()
    _write_json(path, record)


def _death_message(exitcode):
    if exitcode is not None and exitcode < 0:
        try:
            return f"worker killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker killed by signal {-exitcode}"
    return f"worker exited with status {exitcode} without a result"


def _clock(seconds):
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Sweep:
    """A grid of points over `spec["grid"]`, with `spec["fixed"]` added to each, run in
    `out_dir` with `jobs` processes at a time."""

    def __init__(self, spec, out_dir, jobs=None, log=sys.stderr):
        self.spec = spec
        self.out_dir = out_dir
        self.points_dir = os.path.join(out_dir, "points")
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.log = log
        grid = spec.get("grid", {})
        for key, values in grid.items():
            if not isinstance(values, list) or not values:
                raise ValueError(f"grid: {key} must be a non-empty list of values")
        self.grid_keys = list(grid)
        self.points = []
        combos = [{}]
        for key in self.grid_keys:
            combos = [{**c, key: v} for c in combos for v in grid[key]]
        for combo in combos:
            self.points.append({**spec.get("fixed", {}), **combo})

    def path_of(self, point):
        return os.path.join(self.points_dir, point_key(point) + ".json")

    def record_of(self, point):
        try:
            with open(self.path_of(point)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def run(self):
        """Runs every point not finished yet; returns the number of failed points."""
        os.makedirs(self.points_dir, exist_ok=True)
        pending = [p for p in self.points if (self.record_of(p) or {}).get("status") != "ok"]
        kept = len(self.points) - len(pending)
        self._say(f"sweep: {len(self.points)} points, {kept} already finished, "
                  f"{len(pending)} to run, {self.jobs} at a time")
        # fork: the worker starts with the parent's imports (cnuas already loaded), and no
        # simulation has run in the parent, so every child's ns-3 state is fresh.
        context = multiprocessing.get_context("fork")
        running = {}
        done = failed = 0
        began = time.monotonic()
        previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            while pending or running:
                while pending and len(running) < self.jobs:
                    point = pending.pop(0)
                    path = self.path_of(point)
                    if os.path.exists(path):
                        os.remove(path)  # a failed attempt's record: this run replaces it
                    proc = context.Process(target=_worker, args=(self.spec, point, path))
                    proc.start()
                    running[proc.sentinel] = (proc, point, path)
                ready = multiprocessing.connection.wait(list(running), timeout=5)
                for sentinel in ready:
                    proc, point, path = running.pop(sentinel)
                    proc.join()
                    record = self.record_of(point)
                    if record is None:
                        record = {"point": point, "status": "error", "metrics": {},
                                  "error": _death_message(proc.exitcode)}
                        _write_json(path, record)
                    done += 1
                    if record["status"] != "ok":
                        failed += 1
                        self._say(f"sweep: point {point_key(point)} {self._label(point)} "
                                  f"failed: {record['error']}")
                    elapsed = time.monotonic() - began
                    remaining = len(pending) + len(running)
                    eta = elapsed / done * remaining if done else 0
                    self._say(f"sweep: {kept + done}/{len(self.points)} done"
                              f"{f' ({failed} failed)' if failed else ''}, {len(running)} "
                              f"running, elapsed {_clock(elapsed)}, ETA {_clock(eta)}")
        finally:
            signal.signal(signal.SIGTERM, previous_term)
            for proc, _, _ in running.values():
                proc.terminate()
                proc.join()
            self.write_table()
        return failed

    def _label(self, point):
        return "(" + ", ".join(f"{k}={point[k]}" for k in self.grid_keys) + ")"

    def _say(self, text):
        print(text, file=self.log, flush=True)

    def rows(self):
        """One dict a point that has a record: its keywords, status, error and metrics."""
        rows = []
        for point in self.points:
            record = self.record_of(point)
            if record is None:
                continue
            row = {"key": point_key(point)}
            row.update({k: point[k] for k in self.grid_keys})
            row["status"] = record["status"]
            row["error"] = record.get("error", "")
            row["seconds"] = record.get("seconds", "")
            row.update(record.get("metrics", {}))
            rows.append(row)
        return rows

    def write_table(self):
        """OUT/results.csv from every point on disk (this run's and earlier runs')."""
        rows = self.rows()
        columns = []
        for row in rows:
            columns += [c for c in row if c not in columns]
        path = os.path.join(self.out_dir, "results.csv")
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        return path

    def plot(self):
        """OUT/plots/Y-vs-X.png for each metric Y: one line per combination of the other grid
        keys (seeds averaged). Returns the files written."""
        from .plot import plot_sweep
        plot = self.spec.get("plot", {})
        x = plot.get("x", self.grid_keys[0] if self.grid_keys else None)
        ys = plot.get("y", ["fct_p99_us"])
        if x is None:
            return []
        return plot_sweep(self.rows(), x, ys if isinstance(ys, list) else [ys],
                          [k for k in self.grid_keys if k != x],
                          os.path.join(self.out_dir, "plots"))


class _Interrupted(Exception):
    pass


def _raise_interrupt(signum, frame):
    raise _Interrupted(f"signal {signum}")


# The allocator the `cnuas` command links (the simulation makes many small objects: glibc's
# malloc costs it about a tenth more CPU). A Python process can only use it if it is loaded
# first, so the sweep command restarts itself with it preloaded (CNUAS_ALLOCATOR=system: not).
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def _restart_with_tcmalloc(argv):
    if (os.environ.get("CNUAS_ALLOCATOR", "auto") == "system" or not os.path.exists(TCMALLOC)
            or "tcmalloc" in os.environ.get("LD_PRELOAD", "")):
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(p for p in (TCMALLOC, env.get("LD_PRELOAD", "")) if p)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "cnuas.sweep"] + list(argv), env)


def main(argv=None):
    if argv is None and __name__ == "__main__":
        _restart_with_tcmalloc(sys.argv[1:])
    parser = argparse.ArgumentParser(prog="python3 -m cnuas.sweep",
                                     description="Run a parameter grid of cnuas simulations.")
    parser.add_argument("spec", nargs="?", help="sweep spec (.toml or .json)")
    parser.add_argument("-o", "--out", required=True, help="output folder (kept across runs)")
    parser.add_argument("-j", "--jobs", type=int, default=None,
                        help="simulations at a time (default: every core)")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                        help="a grid axis (adds to or replaces the spec's)")
    parser.add_argument("--fixed", action="append", default=[], metavar="KEY=VALUE",
                        help="a keyword every point gets")
    parser.add_argument("--target", help="module:function to call per point")
    parser.add_argument("--scenario", help="built-in scenario to run per point")
    parser.add_argument("--no-plots", action="store_true", help="write no plots")
    args = parser.parse_args(argv)
    try:
        spec = load_spec(args.spec) if args.spec else {}
        for item in args.grid:
            key, _, values = item.partition("=")
            spec.setdefault("grid", {})[key] = [_parse_cli_value(v) for v in values.split(",")]
        for item in args.fixed:
            key, _, value = item.partition("=")
            spec.setdefault("fixed", {})[key] = _parse_cli_value(value)
        if args.target:
            spec["target"] = args.target
        if args.scenario:
            spec["scenario"] = args.scenario
        sweep = Sweep(spec, args.out, args.jobs)
    except (OSError, ValueError) as e:
        print(f"cnuas.sweep: error: {e}", file=sys.stderr)
        return 2
    try:
        failed = sweep.run()
    except (KeyboardInterrupt, _Interrupted):
        print("cnuas.sweep: interrupted; finished points are kept, run again to resume",
              file=sys.stderr)
        return 130
    print(f"table: {os.path.join(args.out, 'results.csv')}")
    if not args.no_plots:
        for path in sweep.plot():
            print(f"plot: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
