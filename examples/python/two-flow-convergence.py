#!/usr/bin/python3
"""Two DCQCN flows into one receiver: the second starts later, and the rates of both converge
to half the line. Plots each flow's rate and the switch queue over time.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/two-flow-convergence.py

Runs the built-in roce-fairness scenario (`cnuas run roce-fairness` gives the same numbers);
--cc, --stagger, --bytes and --rate change it, --attr NAME=VALUE sets any ns-3 attribute.
"""

import argparse
import os

import cnuas
from cnuas.plot import _pyplot


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default="dcqcn-paper", help="congestion control")
    parser.add_argument("--rate", default="40Gbps")
    parser.add_argument("--bytes", type=int, default=10_000_000, help="bytes per flow")
    parser.add_argument("--stagger", default="500us", help="second flow starts this later")
    parser.add_argument("--sample", default="10us", help="rate sampling interval")
    parser.add_argument("--attr", action="append", default=[], metavar="NAME=VALUE",
                        help="an ns-3 attribute, e.g. ns3::RdmaCcDcqcnPaper::G=0.0078125")
    parser.add_argument("-o", "--out", default="out/python/two-flow", help="output folder")
    args = parser.parse_args()
    attributes = dict(a.split("=", 1) for a in args.attr)

    result = cnuas.scenario("roce-fairness", flows=2, cc=args.cc, rate=args.rate,
                            bytes=args.bytes, stagger=args.stagger, sample=args.sample,
                            limit="20ms", attributes=attributes)
    for key, value in result.summary:
        print(f"{key}: {value}")

    plt = _pyplot()
    t = result.traces["time_us"]
    fig, (rates, queue) = plt.subplots(2, 1, sharex=True, figsize=(7, 5.5))
    for i, series in enumerate(result.traces["rate_gbps"]):
        rates.plot(t, series, label=f"flow {i}")
    rates.set_ylabel("rate (Gb/s)")
    rates.set_title(f"two-flow convergence, {args.cc}, {args.rate}")
    rates.legend()
    rates.grid(alpha=0.3)
    queue.plot(t, result.traces["max_queue_bytes"] / 1e3, color="gray")
    queue.set_ylabel("switch queue (KB)")
    queue.set_xlabel("time (us)")
    queue.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"convergence-{args.cc}.png")
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
