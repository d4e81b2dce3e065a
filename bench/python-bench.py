#!/usr/bin/python3
"""What the Python path costs against the command line, and how fast sweeps go.

    PYTHONPATH=build/python /usr/bin/python3 bench/python-bench.py [--build build] [--rounds 3]

1. Overhead: the same roce-fct run (k=4 fat-tree, WebSearch all-to-all at 50 % for --duration
   of arrivals, DCQCN) as `cnuas run` and as a Python script (`cnuas.Run(...).run()`), each in
   a fresh process, rounds alternating so that both see the same machine. Reports the median
   CPU time (user + system, steadier than wall time on a shared machine) and wall time of
   each, and checks that both wrote the same FCT CSV. The command links tcmalloc; a Python
   process uses glibc's malloc unless tcmalloc is preloaded, so that variant is measured too.
2. The same on InfiniBand: an ib-fct run (k=4 fat-tree at 4x HDR, WebSearch all-to-all at
   50 %, after the subnet manager's sweep) as `cnuas run` and from Python, paired: both started
   together, each pinned to its own core (`taskset -c 0` / `-c 1`), the cores swapped between
   rounds, so both see the same machine at the same time. Reports each one's median CPU time
   and the per-round CPU ratio, and checks the FCT CSVs are the same.
3. Sweep throughput: `python3 -m cnuas.sweep` over a grid of small incast points (the Kmax
   example's) with -j = every core: points per minute, wall clock.

--only roce|ib|sweep runs one part.
"""

import argparse
import filecmp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def timed(command, env=None):
    """(wall seconds, CPU seconds of the child) of running `command` to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def overhead(build, rounds, duration, scratch):
    import cnuas
    fabric = cnuas.Fabric("fat-tree:k=4", rate="100Gbps", cc="dcqcn-paper")
    traffic = cnuas.Traffic.all_to_all(load=0.5, duration=duration)
    run = cnuas.Run(fabric, traffic, limit="200ms", seed=1)
    cli = [os.path.join(build, "bin", "cnuas")] + run.command_line()[1:]
    script = ("import cnuas, sys\n"
              "f = cnuas.Fabric('fat-tree:k=4', rate='100Gbps', cc='dcqcn-paper')\n"
              f"t = cnuas.Traffic.all_to_all(load=0.5, duration='{duration}')\n"
              "cnuas.Run(f, t, limit='200ms', seed=1, out=sys.argv[1]).run()\n")
    env = dict(os.environ)
    env_tcmalloc = dict(env, LD_PRELOAD=TCMALLOC)
    variants = {
        "cnuas run (C++)": lambda out: timed(cli + ["--out", out]),
        "Python": lambda out: timed([sys.executable, "-c", script, out], env),
    }
    if os.path.exists(TCMALLOC):
        variants["Python + tcmalloc"] = lambda out: timed([sys.executable, "-c", script, out],
                                                          env_tcmalloc)
    figures = {name: [] for name in variants}
    for r in range(rounds):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            out = os.path.join(scratch, f"{name.split()[0]}-{r}")
            figures[name].append(variants[name](out))
    same = filecmp.cmp(os.path.join(scratch, "cnuas-0", "roce-fct.csv"),
                       os.path.join(scratch, "Python-0", "roce-fct.csv"), shallow=False)
    base_cpu = statistics.median(c for _, c in figures["cnuas run (C++)"])
    print(f"== Python path against the command line: roce-fct, k=4 fat-tree, WebSearch 50 %, "
          f"{duration} of arrivals, {rounds} rounds")
    for name, runs in figures.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:20s} CPU {cpu:7.2f} s ({(cpu / base_cpu - 1) * 100:+5.1f} %)   "
              f"wall {wall:7.2f} s   (CPU of each round: "
              f"{', '.join(f'{c:.2f}' for _, c in runs)})")
    print(f"same FCT CSV from both: {'yes' if same else 'NO'}")


def paired(commands, cores, envs):
    """Starts the commands together, command i pinned to cores[i]; returns the CPU seconds
    (user + system) each child used, from its own rusage."""
    children = [subprocess.Popen(["taskset", "-c", str(core)] + command, env=env,
                                 stdout=subprocess.DEVNULL)
                for command, core, env in zip(commands, cores, envs)]
    cpu = {}
    pending = {c.pid: i for i, c in enumerate(children)}
    while pending:
        pid, status, usage = os.wait4(-1, 0)
        if pid in pending:
            if status != 0:
                raise RuntimeError(f"{commands[pending[pid]]} failed ({status})")
            cpu[pending.pop(pid)] = usage.ru_utime + usage.ru_stime
    for c in children:
        c.returncode = 0  # reaped above
    return [cpu[i] for i in range(len(commands))]


def ib_overhead(build, rounds, duration, scratch):
    import cnuas
    keywords = "'fat-tree:k=4', kind='ib', rate='4xHDR'"
    fabric = cnuas.Fabric("fat-tree:k=4", kind="ib", rate="4xHDR")
    traffic = cnuas.Traffic.all_to_all(load=0.5, duration=duration)
    run = cnuas.Run(fabric, traffic, limit="200ms", seed=1)
    script = ("import cnuas, sys\n"
              f"f = cnuas.Fabric({keywords})\n"
              f"t = cnuas.Traffic.all_to_all(load=0.5, duration='{duration}')\n"
              "cnuas.Run(f, t, limit='200ms', seed=1, out=sys.argv[1]).run()\n")
    # Both with tcmalloc, the allocator the command links (the sweep runner preloads it too),
    # so that the difference is the Python path itself.
    env = dict(os.environ)
    if os.path.exists(TCMALLOC):
        env["LD_PRELOAD"] = TCMALLOC
    cli_cpu, py_cpu, same = [], [], True
    for r in range(rounds):
        cli_out = os.path.join(scratch, f"ib-cli-{r}")
        py_out = os.path.join(scratch, f"ib-py-{r}")
        cli = ([os.path.join(build, "bin", "cnuas")] + run.command_line()[1:] +
               ["--out", cli_out])
        python = [sys.executable, "-c", script, py_out]
        cores = (0, 1) if r % 2 == 0 else (1, 0)
        c, p = paired([cli, python], cores, [dict(os.environ), env])
        cli_cpu.append(c)
        py_cpu.append(p)
        same &= filecmp.cmp(os.path.join(cli_out, "ib-fct.csv"),
                            os.path.join(py_out, "ib-fct.csv"), shallow=False)
    ratios = [p / c for c, p in zip(cli_cpu, py_cpu)]
    print(f"== InfiniBand, paired and pinned: ib-fct, k=4 fat-tree at 4x HDR, WebSearch 50 %, "
          f"{duration} of arrivals, {rounds} rounds")
    print(f"cnuas run (C++)      CPU {statistics.median(cli_cpu):7.2f} s   "
          f"(rounds: {', '.join(f'{c:.2f}' for c in cli_cpu)})")
    print(f"Python + tcmalloc    CPU {statistics.median(py_cpu):7.2f} s   "
          f"(rounds: {', '.join(f'{c:.2f}' for c in py_cpu)})")
    print(f"Python / C++ per round: {', '.join(f'{x:.3f}' for x in ratios)} "
          f"(median {statistics.median(ratios):.3f})")
    print(f"same FCT CSV from both: {'yes' if same else 'NO'}")


def sweep_throughput(points, scratch):
    jobs = os.cpu_count()
    out = os.path.join(scratch, "sweep")
    command = [sys.executable, "-m", "cnuas.sweep", "-o", out, "-j", str(jobs), "--no-plots",
               "--fixed", "topology=star:hosts=17", "--fixed", "senders=16",
               "--fixed", "size=500KB", "--fixed", "rate=40Gbps", "--fixed", "limit=100ms",
               "--grid", "kmax=10KB,20KB,40KB,80KB,160KB,320KB",
               "--grid", "seed=" + ",".join(str(s) for s in range(1, points // 6 + 1))]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    n = 6 * (points // 6)
    print(f"== Sweep: {n} incast points (16 x 500 KB into one 40 Gb/s port), -j {jobs}")
    print(f"{n / wall * 60:.0f} points per minute (wall {wall:.1f} s, "
          f"CPU {cpu / n:.2f} s a point)")
    began = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"rerun with every point finished: {time.monotonic() - began:.2f} s (all skipped)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="build folder (bin/cnuas)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each variant")
    parser.add_argument("--duration", default="5ms", help="arrival window of the FCT run")
    parser.add_argument("--ib-duration", default="5ms",
                        help="arrival window of the InfiniBand run")
    parser.add_argument("--points", type=int, default=48, help="sweep points (multiple of 6)")
    parser.add_argument("--only", choices=("roce", "ib", "sweep"), help="run one part")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cnuas-python-bench-") as scratch:
        if args.only in (None, "roce"):
            overhead(args.build, args.rounds, args.duration, scratch)
        if args.only in (None, "ib"):
            ib_overhead(args.build, args.rounds, args.ib_duration, scratch)
        if args.only in (None, "sweep"):
            sweep_throughput(args.points, scratch)


if __name__ == "__main__":
    main()
