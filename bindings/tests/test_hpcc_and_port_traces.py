"""HPCC-simulator inputs outside scenario("roce-hpcc"): Fabric.from_hpcc and Traffic.from_hpcc
give the numbers of the scenario and take Python-side parameters; RoCE's per-port traces."""

import os

import numpy as np
import pytest

import cnuas

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The HPCC-format inputs live beside the project, never in it (their README): skip without them,
# as the C++ HPCC tests do.
HPCC = os.path.join(os.path.dirname(SOURCE), "shared", "data", "hpcc-compat")
needs_hpcc = pytest.mark.skipif(not os.path.isdir(HPCC),
                                reason=f"{HPCC} (the shared HPCC test data) is absent")

# The 60-to-1 incast of the HPCC inputs (one switch, 100 Gb/s), its first 12 flows.
TOPOLOGY = "topology.txt"
FLOWS = "incast60.txt"
CONFIG = "config_topology_incast60_dcqcn.txt"


@needs_hpcc
def test_hpcc_inputs_from_python_match_the_scenario():
    expected = cnuas.scenario("roce-hpcc", dir=HPCC, topology_file=TOPOLOGY, flow_file=FLOWS,
                              config_file=CONFIG, max_flows=12, limit="20ms", sample="20us")
    fabric = cnuas.Fabric.from_hpcc(TOPOLOGY, config=CONFIG, directory=HPCC)
    traffic = cnuas.Traffic.from_hpcc(FLOWS, directory=HPCC)
    run = cnuas.Run(fabric, traffic, max_flows=12, limit="20ms", sample="20us")
    result = run.run()
    assert result.flows["src"].size == 12 and result.flows["ok"].all()
    for key in expected.flows:
        np.testing.assert_array_equal(result.flows[key], expected.flows[key])
    for key in ("time_us", "max_queue_bytes", "ecn_marks", "rate_gbps", "port_queue_bytes"):
        np.testing.assert_array_equal(result.traces[key], expected.traces[key])
    assert result.counters == expected.counters
    assert run.command_line()[2] == "roce-hpcc"
    assert f"topology-file={os.path.join(HPCC, TOPOLOGY)}" in run.command_line()


@needs_hpcc
def test_hpcc_inputs_combine_with_python_parameters(tmp_path):
    traffic = cnuas.Traffic.from_hpcc(os.path.join(HPCC, FLOWS))
    base = cnuas.Fabric.from_hpcc(os.path.join(HPCC, TOPOLOGY),
                                  config=os.path.join(HPCC, CONFIG))
    first = cnuas.Run(base, traffic, max_flows=12, limit="20ms").run()
    # A congestion control other than the configuration's, and an attribute of its own.
    hpcc = cnuas.Fabric.from_hpcc(os.path.join(HPCC, TOPOLOGY), config=os.path.join(HPCC, CONFIG),
                                  cc="hpcc", attributes={"ns3::RdmaCcHpcc::TargetUtilization": 0.8})
    second = cnuas.Run(hpcc, traffic, max_flows=12, limit="20ms").run()
    assert dict(second.summary)["congestion control"] == "ns3::RdmaCcHpcc"
    assert not np.array_equal(first.flows["fct_ns"], second.flows["fct_ns"])
    # The time offset moves every start (the flow file's start at 2 s).
    late = cnuas.Run(base, cnuas.Traffic.from_hpcc(os.path.join(HPCC, FLOWS), time_offset=1.9999),
                     max_flows=12, limit="20ms").run()
    np.testing.assert_allclose(late.flows["start_ns"] - first.flows["start_ns"], 100000.0)
    # Written where asked, as the scenario writes it (the simulator's fct.txt among them).
    kept = cnuas.Run(base, traffic, max_flows=4, limit="20ms", out=tmp_path).run()
    assert (tmp_path / "fct.txt").exists() and kept.files


def test_hpcc_inputs_are_checked(tmp_path):
    with pytest.raises(cnuas.ParameterError, match="topology: no such file"):
        cnuas.Fabric.from_hpcc(tmp_path / "missing.txt")
    (tmp_path / "topo.txt").write_text("2 1 1\n0\n0 1 100Gbps 1us 0\n")
    (tmp_path / "flows.txt").write_text("1\n0 1 3 100 1000 2\n")
    with pytest.raises(cnuas.ParameterError, match="cc: 'fast' is not one of"):
        cnuas.Fabric.from_hpcc("topo.txt", directory=tmp_path, cc="fast")
    with pytest.raises(cnuas.ParameterError, match="time_offset"):
        cnuas.Traffic.from_hpcc("flows.txt", directory=tmp_path, time_offset=-1)
    fabric = cnuas.Fabric.from_hpcc("topo.txt", directory=tmp_path)
    hpcc_flows = cnuas.Traffic.from_hpcc("flows.txt", directory=tmp_path)
    with pytest.raises(cnuas.ParameterError, match="runs the flows of Traffic.from_hpcc"):
        cnuas.Run(fabric, cnuas.Traffic.incast(senders=1))
    with pytest.raises(cnuas.ParameterError, match="go together"):
        cnuas.Run(cnuas.Fabric("star:hosts=3"), hpcc_flows)
    with pytest.raises(cnuas.ParameterError, match="HPCC files: Fabric.from_hpcc"):
        cnuas.Fabric("star:hosts=3", kind="hpcc")


def test_roce_per_port_queue_traces():
    fabric = cnuas.Fabric("dumbbell:left=4,right=2", rate="25Gbps", kmax="60KB", buffer="2MB")
    traffic = cnuas.Traffic.flows([(0, 4, "300KB", 0), (1, 4, "300KB", 0), (2, 4, "300KB", 0),
                                   (3, 5, "100KB", 0)])
    result = cnuas.Run(fabric, traffic, limit="10ms", sample="5us").run()
    t = result.traces
    ports = t["ports"]
    samples = t["time_us"].size
    assert t["port_queue_bytes"].shape == (len(ports), samples)
    assert ports[:6] == ["h0:1", "h1:1", "h2:1", "h3:1", "h4:1", "h5:1"]
    switch_rows = [i for i, p in enumerate(ports) if not p.startswith("h")]
    np.testing.assert_array_equal(t["port_queue_bytes"][switch_rows].max(axis=0),
                                  t["max_queue_bytes"])
    # Three senders into h4: its switch port queues; the idle h5's hardly.
    into_h4 = [i for i in switch_rows if t["port_queue_bytes"][i].max() > 20000]
    assert into_h4, "the port towards the receiver of the incast should queue"
    assert t["port_queue_bytes"].flags["C_CONTIGUOUS"]
