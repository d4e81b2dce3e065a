"""The same scenario from the command line and from Python gives the same numbers: the
per-flow CSV rows are byte-identical, and the numpy arrays print as those rows."""

import csv
import os
import subprocess

import numpy as np

import cnuas

# A leaf-spine with 8 hosts under all-to-all FB_Hadoop load for 200 us: a few dozen flows with
# ECN marking at work, a fraction of a second of simulation.
FABRIC = dict(topology="leaf-spine:leaves=2,spines=2,hosts=4", rate="25Gbps", cc="dcqcn-paper",
              kmin="4KB", kmax="40KB", pmax=0.05, buffer="2MB",
              attributes={"ns3::RdmaCcDcqcnPaper::G": 1 / 128})


def make_run(out=None, seed=7):
    fabric = cnuas.Fabric(**FABRIC)
    traffic = cnuas.Traffic.all_to_all(load=0.5, cdf="fb-hadoop.cdf", duration="200us")
    return cnuas.Run(fabric, traffic, limit="20ms", seed=seed, sample="20us", out=out)


def run_cli(cli, args, out):
    command = [cli] + args[1:] + ["--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout}\n{done.stderr}"
    with open(os.path.join(out, "roce-fct.csv")) as f:
        return f.read()


def test_python_and_cli_write_identical_fct_rows(cli, tmp_path):
    run = make_run(out=tmp_path / "python")
    result = run.run()
    cli_csv = run_cli(cli, run.command_line(), tmp_path / "cli")
    with open(tmp_path / "python" / "roce-fct.csv") as f:
        python_csv = f.read()
    assert python_csv == cli_csv
    assert result.flows["src"].size > 10, "the scenario should have enough flows to mean much"

    # The arrays themselves, formatted as the CSV is, give the command line's rows.
    rows = list(csv.DictReader(cli_csv.splitlines()))
    assert len(rows) == result.flows["src"].size
    flows = result.flows
    for i, row in enumerate(rows):
        assert int(row["src"]) == flows["src"][i]
        assert int(row["dst"]) == flows["dst"][i]
        assert int(row["size_bytes"]) == flows["size"][i]
        assert row["start_ns"] == f"{flows['start_ns'][i]:.3f}"
        if row["status"] == "success":
            assert row["fct_ns"] == f"{flows['fct_ns'][i]:.3f}"
            assert row["ideal_ns"] == f"{flows['ideal_fct_ns'][i]:.3f}"
            assert row["slowdown"] == f"{flows['slowdown'][i]:.4f}"
            assert flows["ok"][i] == 1
        else:
            assert np.isnan(flows["fct_ns"][i])


def test_explicit_flows_match_the_cli_with_the_same_flows_file(cli, tmp_path):
    fabric = cnuas.Fabric("star:hosts=5", rate="10Gbps", kmax="50KB")
    traffic = cnuas.Traffic.flows([(1, 0, "200KB", 0), (2, 0, "100KB", "5us"),
                                   (3, 4, 50000, "1us"), (4, 0, "30KB", "0.5us")])
    run = cnuas.Run(fabric, traffic, limit="10ms", out=tmp_path / "python")
    result = run.run()
    flows_file = tmp_path / "flows.txt"
    flows_file.write_text(traffic.flows_file_text())
    cli_csv = run_cli(cli, run.command_line(flows_file), tmp_path / "cli")
    assert (tmp_path / "python" / "roce-fct.csv").read_text() == cli_csv
    assert list(result.flows["size"]) == [200000, 100000, 50000, 30000]
    np.testing.assert_allclose(result.flows["start_ns"], [0.0, 5000.0, 1000.0, 500.0])
    assert result.flows["ok"].all()
    # Three senders into h0 at 10 Gb/s: the slowest of them takes longer than its ideal.
    assert result.flows["slowdown"][:2].max() > 1.5


def test_a_second_run_in_the_same_process_gives_the_same_numbers():
    first = make_run(seed=11).run()
    second = make_run(seed=11).run()
    for key in first.flows:
        np.testing.assert_array_equal(first.flows[key], second.flows[key])
    for key in first.traces:
        np.testing.assert_array_equal(first.traces[key], second.traces[key])
    assert first.counters == second.counters
    # A different seed draws different flows: the comparison above can fail.
    other = make_run(seed=12).run()
    assert not np.array_equal(first.flows["size"], other.flows["size"])


def test_attribute_defaults_do_not_leak_into_the_next_run():
    g = "ns3::RdmaCcDcqcnPaper::G"
    before = cnuas.attribute(g)["default"]
    make_run().run()
    assert cnuas.attribute(g)["default"] == before


def test_traces_are_arrays_of_the_sampled_run():
    result = make_run().run()
    t = result.traces
    samples = t["time_us"].size
    assert samples > 5
    assert t["rate_gbps"].shape == (result.flows["src"].size, samples)
    assert t["max_queue_bytes"].shape == (samples,)
    # Cumulative counters never go down and end at the run's totals or below.
    for key, total in (("pfc_pauses", "pfc_pauses"), ("ecn_marks", "ecn_marks"),
                       ("cnps", "cnps")):
        assert np.all(np.diff(t[key]) >= 0)
        assert t[key][-1] <= result.counters[total]
    assert result.counters["ecn_marks"] > 0
    # numpy owns the scenario's buffers: no copy, contiguous, read/write as any array.
    assert t["rate_gbps"].flags["C_CONTIGUOUS"]


def test_builtin_scenario_with_keywords():
    result = cnuas.scenario("roce-fairness", flows=2, bytes=400000, stagger="100us",
                            sample="10us", limit="2ms")
    assert dict(result.summary)["flows"] == "2"
    assert result.traces["rate_gbps"].shape[0] == 2
    assert result.flows["ok"].all()
