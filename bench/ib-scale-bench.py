#!/usr/bin/python3
"""How InfiniBand's cost grows with the fabric (issue 18): `cnuas run ib-fat-tree` all-to-all on
k-ary fat-trees (k = 8 by default, 16 opt-in), one process per k. Per k: hosts, simulated time,
wall and CPU seconds, packets delivered and packet-hops (packets x cables crossed, the sum of
PortXmitPkts), events, events per packet-hop (issue 18's target: about one), packet-hops per wall
second, peak RSS, and the load average before and after (the machine is shared).

    bench/ib-scale-bench.py                      # k = 8, 100 us of traffic (seconds)
    bench/ib-scale-bench.py --k "8 16"           # with the 1,024-host tree (docs/performance.md)
    bench/ib-scale-bench.py --k "8 16" --plot ib-scale.png

The fabric: 4x HDR links, one data VL, 4 KiB payloads, greedy UD sources to every other host in
turn (the scenario's all-to-all), static subnet (LIDs and routes set directly: the subnet
manager's sweep is sm-bench's subject, and here it would add its SMPs' events to the count).
The events counted are all the run executed, link training and the drain after the sources stop
included; the wall time is the scenario's (traffic and drain), the CPU seconds and peak RSS the
whole process's. Each run is pinned with `taskset -c CORE` and niced (`nice -n NICE`).
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_common as sc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", default=os.environ.get("K", "8"),
                    help="fat-tree sizes, even (default '8'; 16 is opt-in: 1,024 hosts)")
    ap.add_argument("--duration-us", default=os.environ.get("DURATION_US", "100"),
                    help="how long the sources send, microseconds (default 100)")
    ap.add_argument("--pattern", default="all-to-all", help="all-to-all (default) or shift")
    ap.add_argument("--core", default=os.environ.get("CORE", "1"), help="taskset core (1)")
    ap.add_argument("--nice", default=os.environ.get("NICE", "5"), help="niceness (5)")
    ap.add_argument("--out", default=os.path.join(sc.ROOT, "bench", "results"),
                    help="results directory (CSV, each run's output)")
    ap.add_argument("--plot", help="PNG: events per packet-hop and packet-hops per second "
                                   "against hosts")
    a = ap.parse_args()

    ks = [int(k) for k in a.k.replace(",", " ").split()]
    run_stamp = sc.stamp()
    rows = []
    for k in ks:
        if k < 2 or k % 2:
            sys.exit(f"k={k}: a k-ary fat-tree needs an even k >= 2")
        args = ["run", "ib-fat-tree", "--topology", f"fat-tree:k={k}",
                "--param", f"duration-us={a.duration_us}", "--param", f"pattern={a.pattern}",
                "--param", "sm=static"]
        run, s = sc.run_pinned(args, os.path.join(a.out, f"ib-scale-{run_stamp}", f"k{k}"),
                               a.core, a.nice)
        sim = re.match(r"([\d.]+) us in ([\d.]+) s wall", s["simulated"])
        pk = re.match(r"(\d+) sent, (\d+) received, (\d+) dropped", s["packets"])
        ev = re.match(r"(\d+) \(([\d.]+) per packet-hop, (\d+) packet-hops\)", s["events"])
        hosts = re.search(r"\((\d+) hosts", s["topology"])
        if not (sim and pk and ev and hosts):
            sys.exit("ib-fat-tree's summary changed: cannot read " + repr(s))
        wall = float(sim.group(2))
        events, hops = float(ev.group(1)), float(ev.group(3))
        row = {
            "k": k,
            "hosts": int(hosts.group(1)),
            "sim_us": float(sim.group(1)),
            "wall_s": wall,
            "process_wall_s": run["process_wall_s"],
            "cpu_s": run["cpu_s"],
            "packets": float(pk.group(2)),
            "packet_hops": hops,
            "hops_per_packet": hops / max(1.0, float(pk.group(2))),
            "events": events,
            "events_per_hop": events / hops,
            "per_wall_s": hops / wall,
            "per_cpu_s": hops / run["cpu_s"],
            "peak_rss_mb": run["peak_rss_mb"],
            "drops": int(pk.group(3)),
            "breakdown": s.get("event breakdown", ""),
            "throughput": s.get("aggregate throughput", ""),
            "load_before": run["load_before"],
            "load_after": run["load_after"],
            "command": run["command"],
        }
        rows.append(row)
        print(f"k={k}: {wall:.1f} s wall, {row['events_per_hop']:.2f} events/packet-hop, "
              f"{sc.si(row['per_wall_s'])} packet-hops/s, {row['peak_rss_mb']:.0f} MB",
              file=sys.stderr, flush=True)

    f1 = lambda x: f"{x:.1f}"  # noqa: E731
    f2 = lambda x: f"{x:.2f}"  # noqa: E731
    sc.print_table([("k", "k", str), ("hosts", "hosts", lambda x: f"{x:,}"),
                    ("simulated µs", "sim_us", f1), ("wall s (run)", "wall_s", f2),
                    ("process wall s", "process_wall_s", f2), ("process CPU s", "cpu_s", f2),
                    ("packets", "packets", sc.si), ("packet-hops", "packet_hops", sc.si),
                    ("events", "events", sc.si), ("events/packet-hop", "events_per_hop", f2),
                    ("packet-hops/wall s", "per_wall_s", sc.si),
                    ("packet-hops/CPU s (process)", "per_cpu_s", sc.si),
                    ("peak RSS MB", "peak_rss_mb", lambda x: f"{x:.0f}"),
                    ("load (1 min) before / after", "load_before", str)],
                   [dict(r, load_before=sc.load_pair(r))
                    for r in rows])
    for r in rows:
        print(f"k={r['k']}: {r['breakdown']}; aggregate {r['throughput']}")
    csv_path = os.path.join(a.out, f"ib-scale-{run_stamp}.csv")
    sc.write_csv(csv_path, rows)
    print(f"results: {csv_path}", file=sys.stderr)
    if a.plot:
        sc.plot_scaling(a.plot, rows,
                        f"InfiniBand fat-tree, {a.pattern}, {a.duration_us} us of traffic",
                        "per_wall_s", "packet-hops per second", "events_per_hop",
                        "events per packet-hop")


if __name__ == "__main__":
    main()
