"""Bad input raises a Python exception that says what is wrong, and never takes the process
down (ns-3 itself aborts on a value it cannot take)."""

import threading

import pytest

import cnuas


def test_unknown_attribute_names_what_exists():
    with pytest.raises(cnuas.ParameterError, match="has no attribute 'Gain'.*G"):
        cnuas.Fabric("star:hosts=3", attributes={"ns3::RdmaCcDcqcnPaper::Gain": 0.1})


def test_unknown_class():
    with pytest.raises(cnuas.ParameterError, match="no ns-3 class 'ns3::NoSuchThing'"):
        cnuas.Fabric("star:hosts=3", attributes={"ns3::NoSuchThing::X": 1})


def test_wrong_type_for_an_attribute():
    with pytest.raises(cnuas.ParameterError, match="bad value 'fast'.*G"):
        cnuas.Fabric("star:hosts=3", attributes={"ns3::RdmaCcDcqcnPaper::G": "fast"})


def test_time_attribute_without_unit_is_refused():
    timer = "ns3::RdmaCcDcqcnPaper::IncreaseTimer"
    with pytest.raises(cnuas.ParameterError, match=f"bad value '55' for {timer}"):
        cnuas.Fabric("star:hosts=3", attributes={timer: "55"})


def test_wrong_unit_in_a_keyword():
    with pytest.raises(cnuas.ParameterError, match="rate: unknown unit 'GB'"):
        cnuas.Fabric("star:hosts=3", rate="40GB")
    with pytest.raises(cnuas.ParameterError, match="kmax: unknown unit"):
        cnuas.Fabric("star:hosts=3", kmax="40Kbps")
    with pytest.raises(cnuas.ParameterError, match="limit: give a unit"):
        cnuas.Run(cnuas.Fabric("star:hosts=3"), cnuas.Traffic.incast(senders=2), limit=5)


def test_kmin_above_kmax():
    with pytest.raises(cnuas.ParameterError, match="kmin .* is above kmax"):
        cnuas.Fabric("star:hosts=3", kmin="100KB", kmax="50KB")


def test_negative_rate():
    with pytest.raises(cnuas.ParameterError, match="rate: a data rate must be positive"):
        cnuas.Fabric("star:hosts=3", rate="-10Gbps")
    with pytest.raises(cnuas.ParameterError, match="MinRate"):
        cnuas.Fabric("star:hosts=3", attributes={"ns3::RdmaCcDcqcnPaper::MinRate": "-1Mbps"})


def test_attribute_the_run_sets_itself_points_to_the_keyword():
    with pytest.raises(cnuas.ParameterError, match="use kmax= instead"):
        cnuas.Fabric("star:hosts=3", attributes={"ns3::SharedBufferMmu::KmaxBytes": 1000})
    # A built-in scenario says the same through its own parameter's name.
    with pytest.raises(cnuas.ParameterError, match="use --param vls"):
        cnuas.scenario("ib-pair", attributes={"ns3::IbSubnetManager::OperationalVls": 2})


def test_errors_found_by_the_scenario_are_parameter_errors():
    # The topology spec is only read by the C++ scenario: its message comes through.
    fabric = cnuas.Fabric("star:hostz=3")
    with pytest.raises(cnuas.ParameterError, match="hostz"):
        cnuas.Run(fabric, cnuas.Traffic.incast(senders=2), limit="1ms").run()
    # An incast that needs more hosts than the star has.
    with pytest.raises(cnuas.ParameterError):
        cnuas.Run(cnuas.Fabric("star:hosts=3"), cnuas.Traffic.incast(senders=5),
                  limit="1ms").run()
    with pytest.raises(cnuas.ParameterError, match="no-such-param"):
        cnuas.scenario("roce-fairness", no_such_param=1)
    with pytest.raises(cnuas.ParameterError, match="no scenario 'roce-nothing'"):
        cnuas.scenario("roce-nothing")


def test_process_still_runs_after_errors():
    result = cnuas.Run(cnuas.Fabric("star:hosts=3"), cnuas.Traffic.incast(senders=2,
                                                                            size="20KB"),
                       limit="1ms").run()
    assert result.flows["ok"].all()


def test_help_lists_attributes_with_defaults_and_units():
    info = cnuas.attribute("ns3::RdmaCcDcqcnPaper::IncreaseTimer")
    assert info["type"].endswith("TimeValue")
    assert info["default"]
    text = cnuas.attributes_text("RdmaCcDcqcnPaper")
    assert "ns3::RdmaCcDcqcnPaper::G = " in text
    assert "roce-fct" in [s["name"] for s in cnuas.scenarios()]
    assert "kmax" in cnuas.describe("roce-fct")


def test_a_second_concurrent_run_is_refused_not_a_crash():
    # A run long enough to be caught while it runs (the GIL is released during it).
    long_run = cnuas.Run(cnuas.Fabric("star:hosts=9", rate="10Gbps"),
                         cnuas.Traffic.incast(senders=8, size="4MB"), limit="100ms")
    outcome = {}

    def background():
        try:
            outcome["result"] = long_run.run()
        except Exception as e:  # reported through the assertion below
            outcome["error"] = e

    thread = threading.Thread(target=background)
    thread.start()
    saw_running = False
    while thread.is_alive():
        if cnuas._cnuas.simulation_running():
            saw_running = True
            with pytest.raises(cnuas.BusyError, match="already running in this process"):
                cnuas.Run(cnuas.Fabric("star:hosts=3"), cnuas.Traffic.incast(senders=2),
                          limit="1ms").run()
            break
    thread.join()
    assert "error" not in outcome, outcome.get("error")
    assert saw_running, "the background run ended before it could be observed"
    assert outcome["result"].flows["ok"].all()
    # And the process is usable again afterwards.
    assert not cnuas._cnuas.simulation_running()
