"""InfiniBand through Fabric(kind="ib"), Traffic and Run: the same numbers as `cnuas run ib-fct`,
the traffic kinds of RoCE, congestion control on and off, and the credit traces."""

import csv
import os
import subprocess

import numpy as np
import pytest

import cnuas

# A leaf-spine of 8 hosts at 4x HDR under all-to-all FB_Hadoop load for 150 us: some 100 flows,
# the subnet manager's sweep first, a tenth of a second of simulation.
IB_FABRIC = dict(topology="leaf-spine:leaves=2,spines=2,hosts=4", kind="ib", rate="4xHDR",
                 buffer="16KiB", attributes={"ns3::IbSwitch::Latency": "150ns"})

# The ib-incast dumbbell: h2..h8 and h0 (across the inter-switch link) write to the hot spot
# h10; the victim h1 writes to the idle h9 across the same inter-switch link as h0.
HOT_SPOT_FLOWS = [(h, 10, "2MB", 0) for h in [0, 2, 3, 4, 5, 6, 7, 8]] + [(1, 9, "2MB", 0)]


def ib_run(out=None, seed=5, sample="10us"):
    return cnuas.Run(cnuas.Fabric(**IB_FABRIC),
                     cnuas.Traffic.all_to_all(load=0.5, cdf="fb-hadoop.cdf", duration="150us"),
                     limit="10ms", seed=seed, sample=sample, out=out)


def hot_spot(cc, sample="10us", **keywords):
    fabric = cnuas.Fabric("dumbbell:left=2,right=9", kind="ib", cc=cc, **keywords)
    return cnuas.Run(fabric, cnuas.Traffic.flows(HOT_SPOT_FLOWS), limit="5ms",
                     sample=sample).run()


def test_python_and_cli_write_identical_ib_fct_rows(cli, tmp_path):
    run = ib_run(out=tmp_path / "python")
    result = run.run()
    command = [cli] + run.command_line()[1:] + ["--out", str(tmp_path / "cli")]
    assert run.command_line()[2] == "ib-fct"
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout}\n{done.stderr}"
    cli_csv = (tmp_path / "cli" / "ib-fct.csv").read_text()
    assert (tmp_path / "python" / "ib-fct.csv").read_text() == cli_csv
    rows = list(csv.DictReader(cli_csv.splitlines()))
    assert len(rows) == result.flows["src"].size > 30
    for i, row in enumerate(rows):
        assert int(row["src"]) == result.flows["src"][i]
        assert int(row["size_bytes"]) == result.flows["size"][i]
        assert row["status"] == "success"
        assert row["fct_ns"] == f"{result.flows['fct_ns'][i]:.3f}"
        assert row["ideal_ns"] == f"{result.flows['ideal_fct_ns'][i]:.3f}"
        assert row["slowdown"] == f"{result.flows['slowdown'][i]:.4f}"
    # The summary `cnuas run` printed is the Result's.
    for key, value in result.summary:
        if "wall" not in key:
            assert f"{key}:" in done.stdout and value in done.stdout


def test_every_traffic_kind_runs_on_infiniband():
    fabric = cnuas.Fabric("star:hosts=9", kind="ib", buffer="8KiB")
    kinds = {
        "incast": cnuas.Traffic.incast(senders=4, size="200KB"),
        "permutation": cnuas.Traffic.permutation(load=0.4, cdf="fb-hadoop.cdf",
                                                 duration="100us"),
        "incast_load": cnuas.Traffic.incast_load(senders=4, load=0.6, cdf="fb-hadoop.cdf",
                                                 duration="100us"),
    }
    for name, traffic in kinds.items():
        result = cnuas.Run(fabric, traffic, limit="20ms").run()
        assert result.flows["ok"].all(), name
        assert result.flows["src"].size >= 4, name
        # Nothing finishes faster than alone on its path.
        assert (result.flows["slowdown"] >= 0.999).all(), name
    incast = cnuas.Run(fabric, kinds["incast"], limit="20ms").run()
    assert set(incast.flows["dst"]) == {0}
    # Four senders share h0's link: the last to finish took about four times its ideal.
    assert incast.flows["slowdown"].max() > 3


def test_ib_congestion_control_frees_the_victim_of_head_of_line_blocking():
    off = hot_spot("none")
    on = hot_spot("iba")
    victim = len(HOT_SPOT_FLOWS) - 1
    # Without CC the victim crawls at the hot spot's share behind h0's blocked packets; with
    # annex A10 the sources into the hot spot are throttled and the victim gets its link.
    assert off.flows["fct_ns"][victim] > 1.5 * on.flows["fct_ns"][victim]
    assert off.counters["fecn_marks"] == 0 and off.counters["cc_mads"] == 0
    assert on.counters["fecn_marks"] > 0 and on.counters["cnps"] > 0
    assert on.counters["cc_mads"] > 0
    assert off.counters["drops"] == on.counters["drops"] == 0  # credit flow control
    # The CC parameters reach the run: a switch threshold of 0 turns marking off.
    silent = hot_spot("iba", threshold=0)
    assert silent.counters["fecn_marks"] == 0


def test_credit_and_port_traces_are_arrays_of_the_run():
    result = hot_spot("none", sample="5us", vls=2)
    t = result.traces
    samples = t["time_us"].size
    ports = t["ports"]
    assert samples > 20
    assert ports[0] == "h0:1" and "h10:1" in ports and any(p.startswith("sw") for p in ports)
    assert t["credits_blocks"].shape == (len(ports), 2, samples)
    assert t["credit_stall_us"].shape == (len(ports), 2, samples)
    assert t["port_queue_bytes"].shape == (len(ports), samples)
    assert t["rate_gbps"].shape == (len(HOT_SPOT_FLOWS), samples)
    # numpy owns the scenario's buffers (no copy), contiguous.
    for key in ("credits_blocks", "credit_stall_us", "port_queue_bytes"):
        assert t[key].flags["C_CONTIGUOUS"] and t[key].base is not None
    # Credits never exceed the 64 KiB buffer (1024 blocks); the hot spot starves h0 of them.
    assert t["credits_blocks"].max() <= 1024
    h0 = result.port("h0:1")
    assert t["credit_stall_us"][h0, 0, -1] > 50
    assert np.all(np.diff(t["credit_stall_us"], axis=2) >= 0)  # running totals
    # VL 1 carries nothing: it keeps its credits and never stalls.
    assert np.all(t["credit_stall_us"][:, 1, :] == 0)
    # Per-port buffers: their largest among switch ports is max_queue_bytes, at most a VL's.
    switch_rows = [i for i, p in enumerate(ports) if p.startswith("sw")]
    np.testing.assert_array_equal(t["port_queue_bytes"][switch_rows].max(axis=0),
                                  t["max_queue_bytes"])
    assert t["max_queue_bytes"].max() > 0
    assert t["port_queue_bytes"].max() <= 2 * 65536
    # RoCE's PFC and ECN series are not InfiniBand's; FECN marks are.
    assert "pfc_pauses" not in t and "ecn_marks" not in t
    assert t["fecn_marks"].shape == (samples,)


def test_sampling_does_not_change_the_numbers():
    quiet = ib_run(sample=0).run()
    watched = ib_run(sample="2us").run()
    for key in quiet.flows:
        np.testing.assert_array_equal(quiet.flows[key], watched.flows[key])
    assert quiet.traces["time_us"].size == 0
    # And a different seed changes them: the comparison can fail.
    other = ib_run(seed=6, sample=0).run()
    assert not np.array_equal(quiet.flows["size"], other.flows["size"])


def test_static_subnet_and_routing_engines():
    traffic = cnuas.Traffic.flows([(0, 15, "100KB", 0), (4, 11, "100KB", "1us")])
    results = {}
    for name, keywords in {"updown": dict(routing="updown"), "minhop": dict(routing="minhop"),
                           "static": dict(sm="static")}.items():
        fabric = cnuas.Fabric("fat-tree:k=4", kind="ib", **keywords)
        results[name] = cnuas.Run(fabric, traffic, limit="5ms").run()
        assert results[name].flows["ok"].all()
    assert results["static"].counters["smps"] == 0
    assert results["updown"].counters["smps"] > 0
    summary = dict(results["minhop"].summary)
    assert "minhop" in summary["subnet manager"]


def test_simulate_takes_the_fabric_kind():
    result = cnuas.simulate(fabric="ib", topology="star:hosts=5", senders=4, size="100KB",
                            rate="4xNDR", buffer=32768, limit="5ms")
    assert result.flows["ok"].all()
    assert dict(result.summary)["host link"].startswith("4xNDR")


def test_keywords_of_the_other_fabric_name_it():
    with pytest.raises(cnuas.ParameterError, match="kmax: not a keyword of an InfiniBand"):
        cnuas.Fabric("star:hosts=3", kind="ib", kmax="100KB")
    with pytest.raises(cnuas.ParameterError, match="vls, threshold: not a keyword of a RoCEv2"):
        cnuas.Fabric("star:hosts=3", vls=2, threshold=3)
    with pytest.raises(cnuas.ParameterError, match="pfc: not a keyword of an InfiniBand"):
        cnuas.simulate(fabric="ib", pfc=False)
    with pytest.raises(cnuas.ParameterError, match="kind: 'roce' or 'ib'"):
        cnuas.Fabric("star:hosts=3", kind="omnipath")


def test_invalid_infiniband_parameters_raise():
    bad = [
        (dict(rate="200Gbps"), "rate: an InfiniBand link rate WIDTHxSPEED"),
        (dict(rate="3xHDR"), "rate: an InfiniBand link rate"),
        (dict(vls=3), "vls: 1, 2, 4, 8 or 15"),
        (dict(buffer=100), "buffer: whole 64-byte credits"),
        (dict(buffer="1MB"), "buffer: whole 64-byte credits"),
        (dict(buffer=4096), "less than one packet of the 4096-byte MTU"),
        (dict(buffer="-64B"), "buffer: must not be negative"),
        (dict(mtu=1500), "mtu: 256, 512"),
        (dict(sm="opensm"), "sm: 'builtin' or 'static'"),
        (dict(routing="ftree"), "routing: 'updown' or 'minhop'"),
        (dict(sm="static", routing="minhop"), "routing: the built-in subnet manager's"),
        (dict(cc="dcqcn-paper"), "cc: on InfiniBand 'none' or 'iba'"),
        (dict(cc="iba", sm="static"), "cc='iba' needs sm='builtin'"),
        (dict(threshold=3), "threshold: a parameter of IB congestion control, which is off"),
        (dict(cc="iba", threshold=16), r"threshold: a whole number in \[0, 15\]"),
        (dict(cc="iba", ccti_limit=200), r"ccti_limit: a whole number in \[0, 127\]"),
        (dict(cc="iba", cct_step="64ns"), "cct_step: a whole number"),
        (dict(attributes={"ns3::IbNetDevice::VlBufferBytes": 4096}), "use buffer= instead"),
        (dict(attributes={"ns3::IbCcManager::CctiTimer": 4}), "use ccti_timer= instead"),
        (dict(attributes={"ns3::IbSwitch::Latency": "100"}), "bad value '100'"),
    ]
    for keywords, message in bad:
        with pytest.raises(cnuas.ParameterError, match=message):
            cnuas.Fabric("star:hosts=3", kind="ib", **keywords)


def test_help_shows_the_infiniband_keywords():
    text = cnuas.Fabric.__doc__
    for word in ("kind", "vls", "buffer", "routing", "threshold", "ccti_timer", "4xHDR"):
        assert word in text
    described = cnuas.describe("ib-fct")
    for word in ("vls", "buffer", "routing", "cc", "cct-step", "flows-file", "pattern"):
        assert f"  {word}" in described


def test_a_sweep_over_infiniband_parameters(tmp_path):
    import cnuas.sweep
    spec = tmp_path / "ib.toml"
    spec.write_text("""
[fixed]
fabric = "ib"
topology = "star:hosts=5"
senders = 4
size = "200KB"
limit = "5ms"
[grid]
buffer = [4160, 65536]
""")
    out = tmp_path / "sweep"
    assert cnuas.sweep.main([str(spec), "-o", str(out), "-j", "2", "--no-plots"]) == 0
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["buffer"] for r in rows] == ["4160", "65536"]
    assert all(r["status"] == "ok" and int(float(r["flows_done"])) == 4 for r in rows)
    # The smaller buffer holds fewer credits (one 4 KiB packet's): its switch buffers no more.
    assert float(rows[0]["peak_queue_bytes"]) <= 4160 < float(rows[1]["peak_queue_bytes"])
