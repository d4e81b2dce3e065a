#!/usr/bin/python3
"""InfiniBand incast with a victim flow, congestion control off and on: rates, credits and
credit stalls over time, and every flow's completion time.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/ib-cc-incast.py

The ib-incast dumbbell (h0, h1 on one switch, h2..h10 on the other): h2..h8 and h0 write
--size each into the hot spot h10, h0 across the inter-switch link; the victim h1 writes to the
idle h9 across the same link. Without congestion control h0's packets wait in the far switch
for the hot spot's credit and the victim waits behind them (head-of-line blocking); with IB
congestion control (IBA annex A10) the switches mark FECN, the hot spot's senders slow down
and the victim gets its link. Runs the built-in ib-fct scenario (Run.command_line() prints the
`cnuas run` command with the same numbers); --threshold, --ccti-timer, --cct-step, --buffer,
--vls and --rate change it, --attr NAME=VALUE sets any ns-3 attribute.
"""

import argparse
import os

import cnuas
from cnuas.plot import _pyplot


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="4MB", help="bytes each flow writes")
    parser.add_argument("--rate", default="4xHDR", help="InfiniBand link rate")
    parser.add_argument("--buffer", default="64KiB", help="receive buffer per VL and port")
    parser.add_argument("--vls", type=int, default=1, help="operational data VLs")
    parser.add_argument("--threshold", type=int, default=14, help="switch CC threshold")
    parser.add_argument("--ccti-timer", type=int, default=2, help="CCTI_Timer (1.024 us)")
    parser.add_argument("--cct-step", type=int, default=64, help="CCT step, ns per entry")
    parser.add_argument("--sample", default="5us", help="trace sampling interval")
    parser.add_argument("--attr", action="append", default=[], metavar="NAME=VALUE",
                        help="an ns-3 attribute, e.g. ns3::IbSwitch::Latency=200ns")
    parser.add_argument("-o", "--out", default="out/python/ib-cc-incast", help="output folder")
    args = parser.parse_args()
    attributes = dict(a.split("=", 1) for a in args.attr)

    hot_spot, victim_src, victim_dst = 10, 1, 9
    senders = [0, 2, 3, 4, 5, 6, 7, 8]
    flows = [(h, hot_spot, args.size, 0) for h in senders]
    flows.append((victim_src, victim_dst, args.size, 0))
    traffic = cnuas.Traffic.flows(flows)
    results = {}
    for cc in ("none", "iba"):
        cc_keywords = (dict(threshold=args.threshold, ccti_timer=args.ccti_timer,
                            cct_step=args.cct_step) if cc == "iba" else {})
        fabric = cnuas.Fabric("dumbbell:left=2,right=9", kind="ib", rate=args.rate,
                              buffer=args.buffer, vls=args.vls, cc=cc, attributes=attributes,
                              **cc_keywords)
        run = cnuas.Run(fabric, traffic, limit="50ms", sample=args.sample)
        results[cc] = result = run.run()
        victim = result.flows["fct_ns"][-1] / 1e3
        print(f"cc={cc}: victim h1 -> h9 done in {victim:.1f} us "
              f"(alone: {result.flows['ideal_fct_ns'][-1] / 1e3:.1f} us), hot-spot flows "
              f"{result.flows['fct_ns'][:-1].max() / 1e3:.1f} us, "
              f"{int(result.counters['fecn_marks'])} FECN marks, credit stall at h0 "
              f"{result.traces['credit_stall_us'][result.port('h0:1'), 0, -1]:.1f} us")
        print("   ", " ".join(run.command_line()))

    plt = _pyplot()
    fig, axes = plt.subplots(3, 2, sharex="col", figsize=(11, 8))
    for column, (cc, result) in enumerate(results.items()):
        t = result.traces["time_us"]
        rates, credits, queue = axes[:, column]
        rates.plot(t, result.traces["rate_gbps"][-1], label="victim h1 -> h9")
        rates.plot(t, result.traces["rate_gbps"][0], label="h0 -> hot spot")
        rates.plot(t, result.traces["rate_gbps"][1], label="h2 -> hot spot", alpha=0.6)
        rates.set_title(f"IB congestion control {'on (annex A10)' if cc == 'iba' else 'off'}")
        rates.set_ylabel("sent (Gb/s)")
        rates.legend(fontsize=8)
        # h0's credits on VL 0 (64-byte blocks) and the credit-stall time it has accumulated.
        h0 = result.port("h0:1")
        credits.plot(t, result.traces["credits_blocks"][h0, 0], label="h0 credits (blocks)")
        stall = credits.twinx()
        stall.plot(t, result.traces["credit_stall_us"][h0, 0], color="tab:red",
                   label="h0 credit stall so far (us)")
        stall.set_ylabel("stall (us)", color="tab:red")
        credits.set_ylabel("credits (64 B)")
        credits.legend(loc="upper left", fontsize=8)
        # The busiest switch input buffers (the inter-switch link's end in the far switch).
        q = result.traces["port_queue_bytes"]
        busiest = q.max(axis=1).argsort()[-3:][::-1]
        for row in busiest:
            queue.plot(t, q[row] / 1e3, label=result.traces["ports"][row])
        queue.set_ylabel("switch input buffer (KB)")
        queue.set_xlabel("time since traffic start (us)")
        queue.legend(fontsize=8)
        for ax in (rates, credits, queue):
            ax.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "ib-cc-incast.png")
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
