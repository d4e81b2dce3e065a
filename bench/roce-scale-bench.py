#!/usr/bin/python3
"""How RoCE's cost grows with the fabric (issue 17): k-ary fat-trees of k = 8, 12 (16 opt-in),
WebSearch flows at 30 % of every host's link under the firmware DCQCN, the same simulated time
at every k, one `cnuas run roce-fct` per k. Per k: hosts, simulated time, wall and CPU seconds,
RoCE packets (data, ACK, CNP) and packet-hops, events, events per packet, packets per wall
second, peak RSS, and the load average before and after (the machine is shared).

    bench/roce-scale-bench.py                    # k = 8 and 12, 2 ms each (a few minutes)
    bench/roce-scale-bench.py --k "8 12 16"      # with the 1,024-host tree (docs/performance.md)
    bench/roce-scale-bench.py --k 16 --time 1ms --plot out.png

The fabric: 100 Gb/s on every link (a k-ary fat-tree has full bisection), 1 us cables (the
topology's default), the marking of HPCC's WebSearch DCQCN configuration at 100 Gb/s (Kmin 400
KB, Kmax 1,600 KB, Pmax 0.2; config_fat_ws30_5ms_dcqcn.txt). Flows arrive (Poisson, all-to-all,
sizes from data/cdf/websearch.cdf) for the whole simulated time and the run stops there, flows
in flight included: a fixed window of a steady offered load, so the counts compare across k.
Each run is pinned with `taskset -c CORE` and niced (`nice -n NICE`), one at a time.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_common as sc  # noqa: E402


def parse_time_ms(text):
    units = {"ms": 1.0, "us": 1e-3, "s": 1e3}
    for unit in ("ms", "us", "s"):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    sys.exit(f"--time {text}: give a unit (ms, us or s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", default=os.environ.get("K", "8 12"),
                    help="fat-tree sizes, even (default '8 12'; 16 is opt-in: ~1,024 hosts)")
    ap.add_argument("--time", default=os.environ.get("SIM_TIME", "2ms"),
                    help="simulated time per k, flows arriving throughout (default 2ms)")
    ap.add_argument("--load", default="0.3", help="offered load per host link (default 0.3)")
    ap.add_argument("--cc", default="dcqcn-mlx", help="congestion control (default dcqcn-mlx)")
    ap.add_argument("--rate", default="100Gbps", help="every link's rate (default 100Gbps)")
    ap.add_argument("--core", default=os.environ.get("CORE", "1"), help="taskset core (1)")
    ap.add_argument("--nice", default=os.environ.get("NICE", "5"), help="niceness (5)")
    ap.add_argument("--out", default=os.path.join(sc.ROOT, "bench", "results"),
                    help="results directory (CSV, each run's output)")
    ap.add_argument("--plot", help="PNG: events per packet and packets per second against hosts")
    a = ap.parse_args()

    ks = [int(k) for k in a.k.replace(",", " ").split()]
    ms = parse_time_ms(a.time)
    run_stamp = sc.stamp()
    rows = []
    for k in ks:
        if k < 2 or k % 2:
            sys.exit(f"k={k}: a k-ary fat-tree needs an even k >= 2")
        args = ["run", "roce-fct", "--topology", f"fat-tree:k={k}",
                "--param", f"rate={a.rate}", "--param", "cdf=websearch.cdf",
                "--param", "pattern=all-to-all", "--param", f"load={a.load}",
                "--param", f"duration={a.time}", "--param", f"limit={a.time}",
                "--param", f"cc={a.cc}", "--param", "kmin=400000",
                "--param", "kmax=1600000", "--param", "pmax=0.2"]
        run, s = sc.run_pinned(args, os.path.join(a.out, f"roce-scale-{run_stamp}", f"k{k}"),
                               a.core, a.nice)
        packets = sc.number(s["RoCE packets sent"])
        hops = sc.number(s["packet-hops"])
        events = sc.number(s["events"])
        flows_done, flows = (int(x) for x in s["flows done"].split("/"))
        row = {
            "k": k,
            "hosts": k ** 3 // 4,
            "sim_ms": sc.number(s["simulated time (ms)"]),
            "wall_s": sc.number(s["wall time (s)"]),
            "process_wall_s": run["process_wall_s"],
            "cpu_s": sc.number(s["CPU time (s)"]),
            "process_cpu_s": run["cpu_s"],
            "flows": flows,
            "flows_done": flows_done,
            "packets": packets,
            "packet_hops": hops,
            "events": events,
            "events_per_packet": events / packets,
            "events_per_hop": events / hops,
            "per_wall_s": packets / sc.number(s["wall time (s)"]),
            "per_cpu_s": packets / sc.number(s["CPU time (s)"]),
            "peak_rss_mb": run["peak_rss_mb"],
            "load_before": run["load_before"],
            "load_after": run["load_after"],
            "command": run["command"],
        }
        rows.append(row)
        print(f"k={k}: {row['wall_s']:.1f} s wall, {row['events_per_packet']:.2f} events/packet, "
              f"{sc.si(row['per_wall_s'])} packets/s, {row['peak_rss_mb']:.0f} MB",
              file=sys.stderr, flush=True)

    f1 = lambda x: f"{x:.1f}"  # noqa: E731
    f2 = lambda x: f"{x:.2f}"  # noqa: E731
    sc.print_table([("k", "k", str), ("hosts", "hosts", lambda x: f"{x:,}"),
                    ("simulated ms", "sim_ms", lambda x: f"{x:.3f}"),
                    ("flows (done)", "flows", str), ("wall s", "wall_s", f1),
                    ("CPU s", "cpu_s", f1), ("RoCE packets", "packets", sc.si),
                    ("packet-hops", "packet_hops", sc.si), ("events", "events", sc.si),
                    ("events/packet", "events_per_packet", f2),
                    ("events/packet-hop", "events_per_hop", f2),
                    ("packets/wall s", "per_wall_s", sc.si),
                    ("packets/CPU s", "per_cpu_s", sc.si),
                    ("peak RSS MB", "peak_rss_mb", lambda x: f"{x:.0f}"),
                    ("load (1 min) before / after", "load_before", str)],
                   [dict(r, flows=f"{r['flows']:,} ({r['flows_done']:,})",
                         load_before=sc.load_pair(r)) for r in rows])
    csv_path = os.path.join(a.out, f"roce-scale-{run_stamp}.csv")
    sc.write_csv(csv_path, rows)
    print(f"results: {csv_path}", file=sys.stderr)
    if a.plot:
        sc.plot_scaling(a.plot, rows,
                        f"RoCE fat-tree, WebSearch {float(a.load):.0%}, {a.cc}, {a.time} "
                        "simulated", "per_wall_s", "RoCE packets per second",
                        "events_per_packet", "events per RoCE packet", cpu_rate_key="per_cpu_s")


if __name__ == "__main__":
    main()
