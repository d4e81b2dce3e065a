"""Cnuas from Python: RoCE fabrics, traffic, congestion control and their results as numpy.

A run is a fabric, the traffic on it and how long to simulate::

    import cnuas
    fabric = cnuas.Fabric("star:hosts=9", rate="40Gbps", cc="dcqcn-paper", kmax="100KB")
    traffic = cnuas.Traffic.incast(senders=8, size="1MB")
    result = cnuas.Run(fabric, traffic, limit="20ms", sample="10us").run()
    result.flows["fct_ns"], result.traces["max_queue_bytes"], result.metrics()

Every run goes through the built-in scenario `roce-fct` that `cnuas run` runs, so
`Run.command_line()` prints the command that gives the same numbers. Any other built-in
scenario runs with `cnuas.scenario(NAME, **params)`; `cnuas.scenarios()` lists them.

ns-3 keeps one simulator per process: one run at a time per process (a second concurrent one
raises BusyError). `python3 -m cnuas.sweep` fans a parameter grid out over processes.
"""

import os
import shutil
import tempfile

import numpy as np

from . import _cnuas
from .units import format_rate, format_time, parse_bytes, parse_rate, parse_time

ParameterError = _cnuas.ParameterError
BusyError = _cnuas.BusyError
SimulationError = _cnuas.SimulationError

__all__ = [
    "Fabric", "Traffic", "Run", "Result", "scenario", "scenarios", "describe", "attribute",
    "attributes", "attributes_text", "simulate", "ParameterError", "BusyError",
    "SimulationError",
]

# The congestion-control policies, by the names `cnuas run` takes, and their ns-3 classes
# (whose attributes Fabric(attributes=...) may set).
CONGESTION_CONTROL = {
    "none": "ns3::RdmaCcNone",
    "dcqcn-paper": "ns3::RdmaCcDcqcnPaper",
    "dcqcn-mlx": "ns3::RdmaCcDcqcnMlx",
    "dctcp": "ns3::RdmaCcDctcp",
    "timely": "ns3::RdmaCcTimely",
    "hpcc": "ns3::RdmaCcHpcc",
}

# Attributes the RoCE run sets on every object it builds from its own arguments: a default set
# through `attributes=` would be silently overridden, so Fabric refuses them and names the
# keyword that does the job.
_SET_BY_THE_RUN = {
    "ns3::SharedBufferMmu::BufferBytes": "buffer=",
    "ns3::SharedBufferMmu::KminBytes": "kmin=",
    "ns3::SharedBufferMmu::KmaxBytes": "kmax=",
    "ns3::SharedBufferMmu::Pmax": "pmax=",
    "ns3::SharedBufferMmu::EcnMode": "ecn=",
    "ns3::EthNetDevice::PfcEnableMask": "pfc=",
    "ns3::EthNetDevice::DataRate": "rate= / fabric_rate=",
    "ns3::EthNetDevice::Mtu": "(the run's 1500-byte Ethernet MTU)",
}


def scenarios():
    """The built-in scenarios: a list of dicts with name, description and params."""
    return _cnuas.scenarios()


def describe(name):
    """A built-in scenario's description and parameters with their defaults, as text."""
    for info in _cnuas.scenarios():
        if info["name"] == name:
            lines = [f"{name}: {info['description']}", ""]
            width = max((len(k) for k, _, _ in info["params"]), default=0)
            for key, default, text in info["params"]:
                lines.append(f"  {key.ljust(width)}  {text} (default: {default if default else repr('')})")
            return "\n".join(lines)
    raise ParameterError(f"no scenario '{name}' (cnuas.scenarios() lists them)")


def attribute(name):
    """An ns-3 attribute by its full name, e.g. "ns3::RdmaCcDcqcnPaper::G": a dict of its
    type, accepted values, default and help (which states the unit)."""
    return _cnuas.attribute_info(name)


def attributes(class_name):
    """Every attribute of an ns-3 class (and its parents), e.g. attributes("RdmaCcDcqcnPaper"),
    as a list of dicts; print(cnuas.attributes_text(...)) shows them as a table."""
    return _cnuas.class_attributes(class_name)


def attributes_text(class_name):
    """The attributes of an ns-3 class as readable lines: name = default, type, help."""
    lines = []
    for a in _cnuas.class_attributes(class_name):
        lines.append(f"{a['name']} = {a['default']}  [{a['type'].replace('ns3::', '')}]")
        lines.append(f"    {a['help']}")
    return "\n".join(lines)


def _attribute_value_text(value):
    """A Python value as the string ns-3 parses (True -> "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _check_settings(attributes):
    """Validates {ns-3 attribute: value} and returns [(name, text)], or raises ParameterError."""
    settings = []
    for name, value in (attributes or {}).items():
        text = _attribute_value_text(value)
        problem, declared = _cnuas.check_attribute(name, text)
        if problem:
            raise ParameterError(f"attribute {name}={text}: {problem}")
        if declared in _SET_BY_THE_RUN:
            raise ParameterError(
                f"attribute {name}: the RoCE run sets it itself on every object; "
                f"use {_SET_BY_THE_RUN[declared]} instead")
        settings.append((name, text))
    return settings


class Fabric:
    """A RoCEv2 fabric: topology, link rates, switch buffers and marking, PFC, and the
    congestion control on every NIC.

    topology    any `cnuas` topology spec: "star:hosts=9", "dumbbell:...",
                "leaf-spine:leaves=4,spines=2,hosts=4", "fat-tree:k=4", "file:PATH"
    rate        host link rate ("40Gbps");  fabric_rate: switch-to-switch (default: rate)
    cc          "none", "dcqcn-paper", "dcqcn-mlx", "dctcp", "timely" or "hpcc"
    pfc, ecn    PFC on the RoCE priority; ECN (RED) marking in the switches
    kmin, kmax  RED marking thresholds ("5KB", 200000); pmax: probability at kmax (0..1)
    buffer      shared buffer per switch ("12MiB")
    attributes  {ns-3 attribute: value}, every model attribute by its ns-3 name, as
                `cnuas run --set` takes them, e.g. {"ns3::RdmaCcDcqcnPaper::G": 1/256}.
                cnuas.attributes("RdmaCcDcqcnPaper") lists a class's attributes with units
                and defaults.

    Every value is checked here: an unknown attribute, a value of the wrong type or unit,
    kmin > kmax or a rate that is not positive raise ParameterError (a ValueError).
    """

    def __init__(self, topology="leaf-spine:leaves=4,spines=2,hosts=4", *, rate="40Gbps",
                 fabric_rate=None, cc="dcqcn-paper", pfc=True, ecn=True, kmin=5000,
                 kmax=200000, pmax=0.01, buffer=12 * 1024 * 1024, attributes=None):
        if not isinstance(topology, str) or not topology:
            raise ParameterError("topology: expected a topology spec such as 'star:hosts=9'")
        if cc not in CONGESTION_CONTROL:
            raise ParameterError(f"cc: '{cc}' is not one of {', '.join(CONGESTION_CONTROL)}")
        try:
            self.rate_bps = parse_rate(rate, "rate")
            self.fabric_rate_bps = None if fabric_rate is None else parse_rate(fabric_rate,
                                                                               "fabric_rate")
            self.kmin = parse_bytes(kmin, "kmin")
            self.kmax = parse_bytes(kmax, "kmax")
            self.buffer = parse_bytes(buffer, "buffer")
        except ValueError as e:
            raise ParameterError(str(e)) from None
        if self.kmin > self.kmax:
            raise ParameterError(f"kmin ({self.kmin} bytes) is above kmax ({self.kmax} bytes)")
        if not 0 <= float(pmax) <= 1:
            raise ParameterError(f"pmax: a probability in [0, 1], not {pmax}")
        if self.buffer == 0:
            raise ParameterError("buffer: a switch needs a buffer of at least one byte")
        self.topology = topology
        self.cc = cc
        self.pfc = bool(pfc)
        self.ecn = bool(ecn)
        self.pmax = float(pmax)
        self.settings = _check_settings(attributes)

    def params(self):
        """The roce-fct scenario parameters this fabric stands for."""
        p = {
            "topology": self.topology,
            "rate": format_rate(self.rate_bps),
            "cc": self.cc,
            "pfc": "on" if self.pfc else "off",
            "ecn": "on" if self.ecn else "off",
            "kmin": str(self.kmin),
            "kmax": str(self.kmax),
            "pmax": repr(self.pmax),
            "buffer": str(self.buffer),
        }
        if self.fabric_rate_bps is not None:
            p["fabric-rate"] = format_rate(self.fabric_rate_bps)
        return p

    def __repr__(self):
        return (f"Fabric({self.topology!r}, rate={format_rate(self.rate_bps)!r}, cc={self.cc!r}, "
                f"kmin={self.kmin}, kmax={self.kmax}, pmax={self.pmax})")


class Traffic:
    """What the hosts send. Build one with a class method:

    Traffic.incast(senders=8, size="1MB")             N hosts write `size` into host 0 at t=0
    Traffic.flows([(src, dst, size, start), ...])     an explicit list (start: "10us" or 0)
    Traffic.all_to_all(load=0.3, cdf="websearch.cdf", duration="10ms")
    Traffic.permutation(load=0.3, ...)                Poisson arrivals, sizes from a CDF
    Traffic.incast_load(senders=8, load=0.3, ...)     incast flows at a load of h0's link

    Host numbers are indices in the topology's host order (h0, h1, ...).
    """

    def __init__(self, params, flows=None):
        self._params = params
        self._flows = flows

    @classmethod
    def flows(cls, flows):
        """Explicit flows: (src, dst, size, start) each; size like "1MB", start like "5us"."""
        rows = []
        for i, flow in enumerate(flows):
            try:
                src, dst, size, start = flow
            except (TypeError, ValueError):
                raise ParameterError(f"flow {i}: expected (src, dst, size, start), got {flow!r}")
            try:
                size_bytes = parse_bytes(size, f"flow {i} size")
                start_s = parse_time(start, f"flow {i} start")
            except ValueError as e:
                raise ParameterError(str(e)) from None
            if size_bytes == 0:
                raise ParameterError(f"flow {i}: size must be at least one byte")
            if int(src) < 0 or int(dst) < 0 or int(src) == int(dst):
                raise ParameterError(f"flow {i}: src and dst are two different host indices")
            rows.append((int(src), int(dst), size_bytes, start_s))
        if not rows:
            raise ParameterError("flows: the list is empty")
        return cls({}, rows)

    @classmethod
    def incast(cls, senders=8, size="1MB", receiver=0, start=0):
        """`senders` hosts (the next ones after `receiver`) each write `size` bytes into
        `receiver`, all starting at `start`."""
        if int(senders) < 1:
            raise ParameterError(f"senders: at least 1, not {senders}")
        return cls.flows([(receiver + 1 + i, receiver, size, start) for i in range(int(senders))])

    @classmethod
    def _pattern(cls, pattern, load, cdf, duration, senders=None):
        try:
            parse_time(duration, "duration", allow_zero=False)
        except ValueError as e:
            raise ParameterError(str(e)) from None
        if not 0 < float(load) <= 1:
            raise ParameterError(f"load: a fraction of the link in (0, 1], not {load}")
        p = {"pattern": pattern, "load": repr(float(load)), "cdf": str(cdf),
             "duration": str(duration)}
        if senders is not None:
            p["senders"] = str(int(senders))
        return cls(p)

    @classmethod
    def all_to_all(cls, load=0.3, cdf="websearch.cdf", duration="10ms"):
        """Every host sends to uniformly chosen others; Poisson arrivals at `load` of its link,
        sizes from `cdf` (a file, or websearch.cdf / fb-hadoop.cdf from data/cdf)."""
        return cls._pattern("all-to-all", load, cdf, duration)

    @classmethod
    def permutation(cls, load=0.3, cdf="websearch.cdf", duration="10ms"):
        """Every host sends to one partner (a random derangement), at `load`."""
        return cls._pattern("permutation", load, cdf, duration)

    @classmethod
    def incast_load(cls, senders=8, load=0.3, cdf="websearch.cdf", duration="10ms"):
        """`senders` hosts send to h0, together offering `load` of h0's link."""
        return cls._pattern("incast", load, cdf, duration, senders)

    @property
    def flow_list(self):
        """The explicit flows [(src, dst, bytes, start_seconds)], or None for a pattern."""
        return self._flows

    def flows_file_text(self):
        """The explicit flows as roce-fct's flows-file: `SRC DST BYTES START` lines."""
        lines = ["# src dst bytes start"]
        for src, dst, size, start in self._flows:
            lines.append(f"{src} {dst} {size} {format_time(start)}")
        return "\n".join(lines) + "\n"

    def __repr__(self):
        if self._flows is not None:
            return f"Traffic.flows(<{len(self._flows)} flows>)"
        return f"Traffic({self._params!r})"


class Result:
    """What a run produced.

    flows     dict of numpy arrays, one entry per flow: src, dst, size (bytes), start_ns,
              fct_ns, ideal_fct_ns (alone on its path), slowdown (fct / ideal), ok
              (finished with success; unfinished flows have NaN times)
    traces    dict of numpy arrays sampled every `sample`: time_us, max_queue_bytes (largest
              switch egress queue), pfc_pauses, ecn_marks, cnps (cumulative counts) and
              rate_gbps (flows x samples: what each flow's sender sent per interval)
    counters  run totals (pfc_pauses, ecn_marks, cnps, drops, peak_queue_bytes, ...)
    summary   the summary lines `cnuas run` prints, as (key, value) pairs
    files     the files the run wrote (CSV, pcaps, plots), if it kept an output folder
    """

    def __init__(self, raw, files=()):
        self.flows = raw["flows"]
        self.traces = raw["traces"]
        self.counters = raw["counters"]
        self.summary = raw["summary"]
        self.exit_code = raw["exit_code"]
        self.files = list(files)

    @property
    def fct_ns(self):
        return self.flows["fct_ns"]

    @property
    def slowdown(self):
        return self.flows["slowdown"]

    def fct_percentile(self, q):
        """The q-th percentile (0..100) of the finished flows' FCT, in microseconds."""
        done = self.flows["fct_ns"][self.flows["ok"].astype(bool)]
        return float(np.percentile(done, q) / 1e3) if done.size else float("nan")

    def metrics(self):
        """One flat dict of scalars (what a sweep puts in its table)."""
        ok = self.flows["ok"].astype(bool)
        fct_us = self.flows["fct_ns"][ok] / 1e3
        slow = self.flows["slowdown"][ok]

        def pct(values, q):
            return float(np.percentile(values, q)) if values.size else float("nan")

        m = {
            "flows": int(ok.size),
            "flows_done": int(ok.sum()),
            "fct_mean_us": float(fct_us.mean()) if fct_us.size else float("nan"),
            "fct_p50_us": pct(fct_us, 50),
            "fct_p99_us": pct(fct_us, 99),
            "fct_max_us": float(fct_us.max()) if fct_us.size else float("nan"),
            "slowdown_mean": float(slow.mean()) if slow.size else float("nan"),
            "slowdown_p50": pct(slow, 50),
            "slowdown_p95": pct(slow, 95),
            "slowdown_p99": pct(slow, 99),
        }
        m.update({k: float(v) for k, v in self.counters.items()})
        return m

    def __repr__(self):
        m = self.metrics()
        return (f"Result({m['flows_done']}/{m['flows']} flows done, "
                f"p99 FCT {m['fct_p99_us']:.1f} us, p99 slowdown {m['slowdown_p99']:.2f})")


def _run_scenario(name, params, settings, seed, run, out, pcap, plots, progress):
    """Runs a registered scenario; with out=None in a temporary folder that is removed."""
    keep = out is not None
    out_dir = os.fspath(out) if keep else tempfile.mkdtemp(prefix="cnuas-")
    try:
        raw = _cnuas.run_scenario(name, params, settings, int(seed), int(run), out_dir,
                                  os.fspath(pcap) if pcap else "", bool(plots), bool(progress))
    finally:
        if not keep:
            shutil.rmtree(out_dir, ignore_errors=True)
    return Result(raw, raw["artifacts"] if keep else ())


class Run:
    """One simulation of `traffic` on `fabric`.

    limit    simulated time limit ("50ms"); flows unfinished by then have NaN FCTs
    sample   trace sampling interval ("10us"; 0: no traces)
    seed     random seed (flow arrivals and sizes, ECN marking draws); run: ns-3 run number
    out      a folder to keep the scenario's files in (roce-fct.csv, ...); None: none kept
    pcap     a folder for pcap traces of every host port; None: no pcap
    """

    def __init__(self, fabric, traffic, *, limit="200ms", sample=0, seed=1, run=1, out=None,
                 pcap=None, max_flows=0):
        if not isinstance(fabric, Fabric) or not isinstance(traffic, Traffic):
            raise ParameterError("Run(fabric, traffic): a cnuas.Fabric and a cnuas.Traffic")
        try:
            parse_time(limit, "limit", allow_zero=False)
            parse_time(sample, "sample")
        except ValueError as e:
            raise ParameterError(str(e)) from None
        if not 1 <= int(seed) <= 2**32 - 1:
            raise ParameterError(f"seed: in [1, 4294967295], not {seed}")
        self.fabric = fabric
        self.traffic = traffic
        self.limit = str(limit)
        self.sample = "0s" if sample == 0 else str(sample)
        self.seed = int(seed)
        self.run_number = int(run)
        self.out = out
        self.pcap = pcap
        self.max_flows = int(max_flows)

    def params(self, flows_file=None):
        """The roce-fct parameters of this run (`flows_file`: where explicit flows are)."""
        p = self.fabric.params()
        p.update(self.traffic._params)
        p["limit"] = self.limit
        p["sample"] = self.sample
        if self.max_flows:
            p["max-flows"] = str(self.max_flows)
        if self.traffic.flow_list is not None:
            p["flows-file"] = os.fspath(flows_file or "flows.txt")
        return p

    def command_line(self, flows_file=None):
        """The `cnuas run` command that runs the same simulation (same numbers)."""
        args = ["cnuas", "run", "roce-fct", "--no-progress", "--no-plots", "--seed",
                str(self.seed), "--run", str(self.run_number)]
        for key, value in self.params(flows_file).items():
            args += ["--param", f"{key}={value}"]
        for name, value in self.fabric.settings:
            args += ["--set", f"{name}={value}"]
        return args

    def run(self):
        """Simulates (the GIL is released meanwhile) and returns a Result."""
        scratch = None
        flows_file = None
        if self.traffic.flow_list is not None:
            scratch = tempfile.mkdtemp(prefix="cnuas-flows-")
            flows_file = os.path.join(scratch, "flows.txt")
            with open(flows_file, "w") as f:
                f.write(self.traffic.flows_file_text())
        try:
            return _run_scenario("roce-fct", self.params(flows_file), self.fabric.settings,
                                 self.seed, self.run_number, self.out, self.pcap, False, False)
        finally:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)


def scenario(name, *, seed=1, run=1, out=None, pcap=None, attributes=None, plots=False,
             progress=False, **params):
    """Runs a built-in scenario with its parameters as keywords (dashes as underscores):
    scenario("roce-fairness", flows=2, stagger="500us", kmax=100000). describe(name) lists
    them. Returns a Result (flows and traces where the scenario records them)."""
    text = {}
    for key, value in params.items():
        text[key.replace("_", "-")] = _attribute_value_text(value)
    return _run_scenario(name, text, _check_settings(attributes), seed, run, out, pcap, plots,
                         progress)


_TRAFFIC_KINDS = ("incast", "flows", "all-to-all", "permutation", "incast-load")


def simulate(*, traffic="incast", topology="star:hosts=9", rate="40Gbps", fabric_rate=None,
             cc="dcqcn-paper", pfc=True, ecn=True, kmin=5000, kmax=200000, pmax=0.01,
             buffer=12 * 1024 * 1024, attributes=None, senders=8, size="1MB", flows=None,
             load=0.3, cdf="websearch.cdf", duration="10ms", limit="200ms", sample=0, seed=1,
             run=1, out=None, **ns3_attributes):
    """Fabric, Traffic and Run in one call with flat keywords: what a sweep point is.

    traffic is "incast" (senders, size), "flows" (flows=[(src, dst, size, start)]),
    "all-to-all", "permutation" or "incast-load" (load, cdf, duration, senders). Any other
    keyword that names an ns-3 attribute ("ns3::RdmaCcDcqcnPaper::G") is set like
    attributes=. Returns a Result.
    """
    settings = dict(attributes or {})
    for key, value in ns3_attributes.items():
        if "::" not in key:
            raise ParameterError(f"simulate(): unknown keyword '{key}' (ns-3 attributes are "
                                 "written ns3::Class::Attribute)")
        settings[key] = value
    fabric = Fabric(topology, rate=rate, fabric_rate=fabric_rate, cc=cc, pfc=pfc, ecn=ecn,
                    kmin=kmin, kmax=kmax, pmax=pmax, buffer=buffer, attributes=settings)
    if traffic == "incast":
        t = Traffic.incast(senders=senders, size=size)
    elif traffic == "flows":
        t = Traffic.flows(flows or [])
    elif traffic == "all-to-all":
        t = Traffic.all_to_all(load=load, cdf=cdf, duration=duration)
    elif traffic == "permutation":
        t = Traffic.permutation(load=load, cdf=cdf, duration=duration)
    elif traffic == "incast-load":
        t = Traffic.incast_load(senders=senders, load=load, cdf=cdf, duration=duration)
    else:
        raise ParameterError(f"traffic: '{traffic}' is not one of {', '.join(_TRAFFIC_KINDS)}")
    return Run(fabric, t, limit=limit, sample=sample, seed=seed, run=run, out=out).run()
