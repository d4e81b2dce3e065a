"""Cnuas from Python: RoCE and InfiniBand fabrics, traffic, congestion control and their results
as numpy arrays.

A run is a fabric, the traffic on it and how long to simulate::

    import cnuas
    fabric = cnuas.Fabric("star:hosts=9", rate="40Gbps", cc="dcqcn-paper", kmax="100KB")
    traffic = cnuas.Traffic.incast(senders=8, size="1MB")
    result = cnuas.Run(fabric, traffic, limit="20ms", sample="10us").run()
    result.flows["fct_ns"], result.traces["max_queue_bytes"], result.metrics()

A RoCE fabric runs the built-in scenario `roce-fct`, an InfiniBand one (Fabric(kind="ib"))
`ib-fct`, HPCC-simulator inputs (Fabric.from_hpcc, Traffic.from_hpcc) `roce-hpcc`: the
scenarios `cnuas run` runs, so `Run.command_line()` prints the command that gives the same
numbers. Any other built-in scenario runs with `cnuas.scenario(NAME, **params)`;
`cnuas.scenarios()` lists them.

ns-3 keeps one simulator per process: one run at a time per process (a second concurrent one
raises BusyError). `python3 -m cnuas.sweep` fans a parameter grid out over processes.
"""

import os
import re
import shutil
import tempfile

from typing import Any, Literal, Mapping

import numpy as np

from . import _cnuas
from .units import format_rate, format_time, parse_bytes, parse_rate, parse_time

# For signatures: a rate ("40Gbps"; InfiniBand "4xHDR"), a size ("64KiB" or bytes), a path.
Rate = str
Size = str | int
PathLike = str | os.PathLike

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

# Attributes a run sets on every object it builds from its own arguments: a default set through
# `attributes=` would be silently overridden, so Fabric refuses them and names the keyword that
# does the job (the scenarios refuse them too, naming their parameter).
_SET_BY_THE_RUN = {
    "roce": {
        "ns3::SharedBufferMmu::BufferBytes": "buffer=",
        "ns3::SharedBufferMmu::KminBytes": "kmin=",
        "ns3::SharedBufferMmu::KmaxBytes": "kmax=",
        "ns3::SharedBufferMmu::Pmax": "pmax=",
        "ns3::SharedBufferMmu::EcnMode": "ecn=",
        "ns3::EthNetDevice::PfcEnableMask": "pfc=",
        "ns3::EthNetDevice::DataRate": "rate= / fabric_rate=",
        "ns3::EthNetDevice::Mtu": "(the run's 1500-byte Ethernet MTU)",
    },
    "ib": {
        "ns3::IbNetDevice::VlBufferBytes": "buffer=",
        "ns3::IbNetDevice::LinkWidth": "rate=",
        "ns3::IbNetDevice::LinkSpeed": "rate=",
        "ns3::IbSubnetManager::OperationalVls": "vls=",
        "ns3::IbSubnetManager::RoutingEngine": "routing=",
        "ns3::IbCcManager::Threshold": "threshold=",
        "ns3::IbCcManager::MarkingRate": "marking_rate=",
        "ns3::IbCcManager::CctiTimer": "ccti_timer=",
        "ns3::IbCcManager::CctiIncrease": "ccti_increase=",
        "ns3::IbCcManager::CctiLimit": "ccti_limit=",
        "ns3::IbCcManager::CctStep": "cct_step=",
    },
    "hpcc": {},
}

# The fabrics and their keywords with defaults (None: the fabric's default, given here).
FABRIC_KINDS = {"roce": "RoCEv2", "ib": "InfiniBand", "hpcc": "HPCC-simulator input"}
_KEYWORDS = {
    "roce": {"rate": "40Gbps", "fabric_rate": None, "cc": "dcqcn-paper", "pfc": True,
             "ecn": True, "kmin": 5000, "kmax": 200000, "pmax": 0.01,
             "buffer": 12 * 1024 * 1024},
    "ib": {"rate": "4xHDR", "vls": 1, "buffer": 65536, "mtu": 4096, "sm": "builtin",
           "routing": "updown", "cc": "none", "threshold": 14, "marking_rate": 0,
           "ccti_timer": 2, "ccti_increase": 1, "ccti_limit": 127, "cct_step": 64},
    "hpcc": {"cc": None},
}
# IB congestion control's parameters: they only mean something with cc="iba".
_IB_CC_KEYWORDS = {"threshold": (0, 15), "marking_rate": (0, 65535), "ccti_timer": (0, 65535),
                   "ccti_increase": (0, 255), "ccti_limit": (0, 127), "cct_step": (0, 65535)}
_IB_RATE = re.compile(r"^(1|2|4|8|12)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)$", re.IGNORECASE)
IB_CONGESTION_CONTROL = ("none", "iba")


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


def _check_settings(attributes, kind=None):
    """Validates {ns-3 attribute: value} and returns [(name, text)], or raises ParameterError.
    `kind`: the fabric whose run sets some attributes itself (refused, naming the keyword)."""
    settings = []
    for name, value in (attributes or {}).items():
        text = _attribute_value_text(value)
        problem, declared = _cnuas.check_attribute(name, text)
        if problem:
            raise ParameterError(f"attribute {name}={text}: {problem}")
        owned = _SET_BY_THE_RUN.get(kind, {})
        if declared in owned:
            raise ParameterError(
                f"attribute {name}: the {FABRIC_KINDS[kind]} run sets it itself on every "
                f"object; use {owned[declared]} instead")
        settings.append((name, text))
    return settings


def _hpcc_file(path, what, directory):
    """An HPCC input file as an absolute path (relative ones inside `directory`, else the
    current directory); ParameterError if it is not there."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise ParameterError(f"{what}: expected the path of an HPCC-format file")
    path = os.fspath(path)
    if not os.path.isabs(path) and directory is not None:
        path = os.path.join(os.fspath(directory), path)
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise ParameterError(f"{what}: no such file '{path}'")
    return path


class Fabric:
    """A fabric: its topology, links, switches and the congestion control on every host.

    topology    any `cnuas` topology spec: "star:hosts=9", "dumbbell:left=4,right=4",
                "leaf-spine:leaves=4,spines=2,hosts=4", "fat-tree:k=4", "file:PATH"
    kind        "roce" (RoCEv2 over Ethernet with PFC and ECN, the default) or "ib"
                (InfiniBand with credit flow control); Fabric.from_hpcc() reads HPCC files.
    attributes  {ns-3 attribute: value}, every model attribute by its ns-3 name, as
                `cnuas run --set` takes them, e.g. {"ns3::RdmaCcDcqcnPaper::G": 1/256} or
                {"ns3::IbSwitch::Latency": "200ns"}. cnuas.attributes("IbNetDevice") lists a
                class's attributes with units and defaults.

    RoCE keywords (kind="roce"; default in brackets):
    rate        host link rate ["40Gbps"];  fabric_rate: switch-to-switch [rate]
    cc          "none", "dcqcn-paper", "dcqcn-mlx", "dctcp", "timely", "hpcc" ["dcqcn-paper"]
    pfc, ecn    PFC on the RoCE priority; ECN (RED) marking in the switches [True, True]
    kmin, kmax  RED marking thresholds [5000, 200000 bytes]; pmax: probability at kmax [0.01]
    buffer      shared buffer per switch [12 MiB]

    InfiniBand keywords (kind="ib"):
    rate        link rate WIDTHxSPEED, "4xHDR", "4xNDR", "1xSDR" ["4xHDR", 200 Gb/s data]
    vls         operational data VLs: 1, 2, 4, 8 or 15 [1] (the flows use VL 0)
    buffer      receive buffer per VL and port: the credits a sender gets, a multiple of
                64 bytes up to 128 KiB, at least one packet of the MTU [65536]
    mtu         path MTU, bytes: 256 .. 4096 [4096]
    sm          "builtin" (the subnet manager on h0 sweeps the fabric with SMPs) or "static"
                (LIDs and routes set directly) ["builtin"]
    routing     the built-in SM's routing engine: "updown" or "minhop" ["updown"]
    cc          "none" or "iba": IB congestion control (IBA annex A10: FECN marking, BECN,
                CCT throttling), configured by the CC manager's MADs ["none"]
    threshold, marking_rate, ccti_timer (units of 1.024 us), ccti_increase, ccti_limit,
    cct_step (ns per CCT entry): the CC manager's profile, with cc="iba"
                [14, 0, 2, 1, 127, 64]

    A keyword of the other fabric raises ParameterError naming the fabric, as does every
    value that is wrong: an unknown attribute, a value of the wrong type or unit, kmin > kmax,
    a rate that is not positive, a buffer that is not whole credits.
    """

    def __init__(self, topology: str = "leaf-spine:leaves=4,spines=2,hosts=4", *,
                 kind: Literal["roce", "ib"] = "roce", rate: Rate | None = None,
                 fabric_rate: Rate | None = None, cc: str | None = None,
                 pfc: bool | None = None, ecn: bool | None = None, kmin: Size | None = None,
                 kmax: Size | None = None, pmax: float | None = None,
                 buffer: Size | None = None, vls: int | None = None, mtu: int | None = None,
                 sm: Literal["builtin", "static"] | None = None,
                 routing: Literal["updown", "minhop"] | None = None,
                 threshold: int | None = None, marking_rate: int | None = None,
                 ccti_timer: int | None = None, ccti_increase: int | None = None,
                 ccti_limit: int | None = None, cct_step: int | None = None,
                 attributes: Mapping[str, Any] | None = None) -> None:
        if kind not in ("roce", "ib"):
            hint = " (HPCC files: Fabric.from_hpcc)" if kind == "hpcc" else ""
            raise ParameterError(f"kind: 'roce' or 'ib', not {kind!r}{hint}")
        if not isinstance(topology, str) or not topology:
            raise ParameterError("topology: expected a topology spec such as 'star:hosts=9'")
        given = {k: v for k, v in dict(
            rate=rate, fabric_rate=fabric_rate, cc=cc, pfc=pfc, ecn=ecn, kmin=kmin, kmax=kmax,
            pmax=pmax, buffer=buffer, vls=vls, mtu=mtu, sm=sm, routing=routing,
            threshold=threshold, marking_rate=marking_rate, ccti_timer=ccti_timer,
            ccti_increase=ccti_increase, ccti_limit=ccti_limit, cct_step=cct_step).items()
            if v is not None}
        self._init(kind, topology, given, attributes)

    def _init(self, kind, topology, given, attributes):
        foreign = [k for k in given if k not in _KEYWORDS[kind]]
        if foreign:
            raise ParameterError(
                f"{', '.join(foreign)}: not a keyword of a{'n' if kind == 'ib' else ''} "
                f"{FABRIC_KINDS[kind]} fabric (kind={kind!r}); its keywords are "
                f"{', '.join(_KEYWORDS[kind])}")
        self.kind = kind
        self.topology = topology
        self.options = dict(_KEYWORDS[kind])
        self.options.update(given)
        if kind == "roce":
            self._check_roce()
        elif kind == "ib":
            self._check_ib(given)
        self.settings = _check_settings(attributes, kind)

    def _check_roce(self):
        o = self.options
        if o["cc"] not in CONGESTION_CONTROL:
            raise ParameterError(
                f"cc: '{o['cc']}' is not one of {', '.join(CONGESTION_CONTROL)}")
        try:
            self.rate_bps = parse_rate(o["rate"], "rate")
            self.fabric_rate_bps = (None if o["fabric_rate"] is None
                                    else parse_rate(o["fabric_rate"], "fabric_rate"))
            self.kmin = parse_bytes(o["kmin"], "kmin")
            self.kmax = parse_bytes(o["kmax"], "kmax")
            self.buffer = parse_bytes(o["buffer"], "buffer")
        except ValueError as e:
            raise ParameterError(str(e)) from None
        if self.kmin > self.kmax:
            raise ParameterError(f"kmin ({self.kmin} bytes) is above kmax ({self.kmax} bytes)")
        if not 0 <= float(o["pmax"]) <= 1:
            raise ParameterError(f"pmax: a probability in [0, 1], not {o['pmax']}")
        if self.buffer == 0:
            raise ParameterError("buffer: a switch needs a buffer of at least one byte")
        self.cc = o["cc"]
        self.pfc = bool(o["pfc"])
        self.ecn = bool(o["ecn"])
        self.pmax = float(o["pmax"])

    def _check_ib(self, given):
        o = self.options
        if not isinstance(o["rate"], str) or not _IB_RATE.match(o["rate"]):
            raise ParameterError(
                f"rate: an InfiniBand link rate WIDTHxSPEED such as '4xHDR' or '4xNDR' "
                f"(widths 1 2 4 8 12; SDR DDR QDR FDR10 FDR EDR HDR NDR XDR), not {o['rate']!r}")
        if o["vls"] not in (1, 2, 4, 8, 15):
            raise ParameterError(f"vls: 1, 2, 4, 8 or 15 data VLs (PortInfo.OperationalVLs), "
                                 f"not {o['vls']!r}")
        try:
            self.buffer = parse_bytes(o["buffer"], "buffer")
        except ValueError as e:
            raise ParameterError(str(e)) from None
        if not 64 <= self.buffer <= 131072 or self.buffer % 64:
            raise ParameterError(f"buffer: whole 64-byte credits from 64 bytes to 128 KiB per "
                                 f"VL, not {self.buffer} bytes")
        if o["mtu"] not in (256, 512, 1024, 2048, 4096):
            raise ParameterError(f"mtu: 256, 512, 1024, 2048 or 4096 bytes, not {o['mtu']!r}")
        # The largest packet (LRH, BTH, RETH, payload, ICRC, VCRC) in whole credits: a smaller
        # VL buffer never gives it credit and the flows would hang.
        largest = (8 + 12 + 16 + o["mtu"] + 4 + 2 + 63) // 64 * 64
        if self.buffer < largest:
            raise ParameterError(f"buffer: {self.buffer} bytes per VL is less than one packet of "
                                 f"the {o['mtu']}-byte MTU ({largest} bytes of credit): nothing "
                                 f"could ever be sent; give more, or a smaller mtu")
        if o["sm"] not in ("builtin", "static"):
            raise ParameterError(f"sm: 'builtin' or 'static', not {o['sm']!r}")
        if o["routing"] not in ("updown", "minhop"):
            raise ParameterError(f"routing: 'updown' or 'minhop', not {o['routing']!r}")
        if o["sm"] == "static" and "routing" in given:
            raise ParameterError("routing: the built-in subnet manager's (sm='builtin'); "
                                 "sm='static' programs min-hop routes itself")
        if o["cc"] not in IB_CONGESTION_CONTROL:
            raise ParameterError(f"cc: on InfiniBand 'none' or 'iba', not {o['cc']!r}")
        if o["cc"] == "iba" and o["sm"] != "builtin":
            raise ParameterError("cc='iba' needs sm='builtin': the CC manager beside the subnet "
                                 "manager configures switches and HCAs with CC MADs")
        for key, (low, high) in _IB_CC_KEYWORDS.items():
            if key in given and o["cc"] != "iba":
                raise ParameterError(f"{key}: a parameter of IB congestion control, which is "
                                     f"off (cc={o['cc']!r}); give cc='iba'")
            value = o[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ParameterError(f"{key}: a whole number in [{low}, {high}], not {value!r}")
        self.cc = o["cc"]

    @classmethod
    def roce(cls, topology: str = "leaf-spine:leaves=4,spines=2,hosts=4",
             **keywords: Any) -> "Fabric":
        """A RoCEv2 fabric: Fabric(topology, kind="roce", **keywords)."""
        return cls(topology, kind="roce", **keywords)

    @classmethod
    def ib(cls, topology: str = "leaf-spine:leaves=4,spines=2,hosts=4",
           **keywords: Any) -> "Fabric":
        """An InfiniBand fabric: Fabric(topology, kind="ib", **keywords)."""
        return cls(topology, kind="ib", **keywords)

    @classmethod
    def from_hpcc(cls, topology: PathLike, *, config: PathLike | None = None,
                  cc: str | None = None, directory: PathLike | None = None,
                  unknown_keys: Literal["error", "warn"] = "error",
                  attributes: Mapping[str, Any] | None = None) -> "Fabric":
        """A RoCE fabric from HPCC-simulator files (docs/roce.md, the HPCC-compatible mode):
        `topology` its topology file, `config` its KEY VALUE configuration (buffer, ECN,
        PFC, congestion control and its constants; None: Cnuas's defaults), `cc` an
        override of the configuration's congestion control ("dcqcn-mlx", "hpcc", ...).
        Relative paths are read in `directory` (else the current one). Runs with
        Traffic.from_hpcc(): the same simulation as cnuas.scenario("roce-hpcc", ...)."""
        self = cls.__new__(cls)
        if cc is not None and cc not in CONGESTION_CONTROL:
            raise ParameterError(f"cc: '{cc}' is not one of {', '.join(CONGESTION_CONTROL)}")
        if unknown_keys not in ("error", "warn"):
            raise ParameterError(f"unknown_keys: 'error' or 'warn', not {unknown_keys!r}")
        self.kind = "hpcc"
        self.topology = _hpcc_file(topology, "topology", directory)
        self.config = None if config is None else _hpcc_file(config, "config", directory)
        self.cc = cc
        self.unknown_keys = unknown_keys
        self.options = {"cc": cc}
        self.settings = _check_settings(attributes, "hpcc")
        return self

    @property
    def scenario(self):
        """The built-in scenario a run on this fabric is."""
        return {"roce": "roce-fct", "ib": "ib-fct", "hpcc": "roce-hpcc"}[self.kind]

    def params(self):
        """The scenario parameters this fabric stands for (Fabric.scenario names it)."""
        o = self.options
        if self.kind == "hpcc":
            p = {"dir": "", "topology-file": self.topology,
                 "config-file": self.config or "", "config-unknown-keys": self.unknown_keys}
            if self.cc is not None:
                p["cc"] = self.cc
            return p
        if self.kind == "ib":
            p = {"topology": self.topology, "rate": o["rate"], "vls": str(o["vls"]),
                 "buffer": str(self.buffer), "mtu": str(o["mtu"]), "sm": o["sm"],
                 "routing": o["routing"], "cc": o["cc"]}
            for key in _IB_CC_KEYWORDS:
                p[key.replace("_", "-")] = str(o[key])
            return p
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
        if self.kind == "hpcc":
            return f"Fabric.from_hpcc({self.topology!r}, config={self.config!r}, cc={self.cc!r})"
        if self.kind == "ib":
            o = self.options
            return (f"Fabric({self.topology!r}, kind='ib', rate={o['rate']!r}, vls={o['vls']}, "
                    f"buffer={self.buffer}, cc={o['cc']!r})")
        return (f"Fabric({self.topology!r}, rate={format_rate(self.rate_bps)!r}, cc={self.cc!r}, "
                f"kmin={self.kmin}, kmax={self.kmax}, pmax={self.pmax})")


class Traffic:
    """What the hosts send. Build one with a class method:

    Traffic.incast(senders=8, size="1MB")             N hosts write `size` into host 0 at t=0
    Traffic.flows([(src, dst, size, start), ...])     an explicit list (start: "10us" or 0)
    Traffic.all_to_all(load=0.3, cdf="websearch.cdf", duration="10ms")
    Traffic.permutation(load=0.3, ...)                Poisson arrivals, sizes from a CDF
    Traffic.incast_load(senders=8, load=0.3, ...)     incast flows at a load of h0's link

    Traffic.from_hpcc(flows="ws30_5ms.txt")           an HPCC-simulator flow file

    Host numbers are indices in the topology's host order (h0, h1, ...). Every kind runs on a
    RoCE and on an InfiniBand fabric alike; an HPCC flow file on Fabric.from_hpcc().
    """

    def __init__(self, params, flows=None, hpcc=False):
        self._params = params
        self._flows = flows
        self._hpcc = hpcc

    @classmethod
    def from_hpcc(cls, flows: PathLike, *, time_offset: float = 2.0,
                  directory: PathLike | None = None) -> "Traffic":
        """The flows of an HPCC-simulator flow file (`N`, then `SRC DST PRIORITY PORT BYTES
        START_SECONDS` lines; node numbers of the HPCC topology file), for a
        Fabric.from_hpcc() fabric. `time_offset` seconds are taken off every start time (the
        simulator's flow files start at 2 s). Relative paths are read in `directory`."""
        try:
            offset = float(time_offset)
        except (TypeError, ValueError):
            raise ParameterError(f"time_offset: seconds, a number, not {time_offset!r}") from None
        if not 0 <= offset <= 1e6:
            raise ParameterError(f"time_offset: seconds in [0, 1e6], not {time_offset!r}")
        return cls({"flow-file": _hpcc_file(flows, "flows", directory),
                    "time-offset": repr(offset)}, hpcc=True)

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
        if self._hpcc:
            return f"Traffic.from_hpcc({self._params['flow-file']!r})"
        if self._flows is not None:
            return f"Traffic.flows(<{len(self._flows)} flows>)"
        return f"Traffic({self._params!r})"


class Result:
    """What a run produced.

    flows     dict of numpy arrays, one entry per flow: src, dst, size (bytes), start_ns,
              fct_ns, ideal_fct_ns (alone on its path), slowdown (fct / ideal), ok
              (finished with success; unfinished flows have NaN times)
    traces    dict of numpy arrays sampled every `sample` (docs/python.md lists them with their
              units):
              time_us           sample times (InfiniBand: since the traffic start)
              rate_gbps         flows x samples: what each flow's sender sent per interval
              max_queue_bytes   largest switch queue (RoCE: egress, IB: a port's input buffer)
              ports             the port names the per-port arrays have rows for, "h0:1",
                                "sw0:3": every port, host ports first, then switch ports
              port_queue_bytes  ports x samples: RoCE egress queue on the RoCE priority; IB
                                receive buffer in use, all data VLs
              RoCE: pfc_pauses, ecn_marks, cnps (running totals)
              IB:   credits_blocks (ports x VLs x samples: transmit credits available, 64-byte
                    blocks), credit_stall_us (ports x VLs x samples: time data waited for
                    credit so far), fecn_marks, cnps (BECN notifications; running totals)
    counters  run totals (RoCE: pfc_pauses, ecn_marks, cnps, drops, peak_queue_bytes, ...;
              IB: fecn_marks, cnps, credit_stall_us, drops, peak_queue_bytes, ...)
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

    def port(self, name: str) -> int:
        """The row of port `name` ("sw0:3") in the per-port traces (ValueError if none)."""
        try:
            return self.traces["ports"].index(name)
        except ValueError:
            raise ValueError(f"no port '{name}' in the traces (ports: "
                             f"{', '.join(self.traces['ports'][:8])}...)") from None

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

    limit    simulated time limit ("50ms"; on InfiniBand counted from the traffic start,
             after the subnet manager's bring-up); flows unfinished by then have NaN FCTs
    sample   trace sampling interval ("10us"; 0: no traces)
    seed     random seed (flow arrivals and sizes, ECN marking draws); run: ns-3 run number
    out      a folder to keep the scenario's files in (roce-fct.csv, ib-fct.csv, ...)
    pcap     a folder for pcap traces of every host port; None: no pcap
    max_flows  run only the first N flows (0: all)
    """

    def __init__(self, fabric, traffic, *, limit="200ms", sample=0, seed=1, run=1, out=None,
                 pcap=None, max_flows=0):
        if not isinstance(fabric, Fabric) or not isinstance(traffic, Traffic):
            raise ParameterError("Run(fabric, traffic): a cnuas.Fabric and a cnuas.Traffic")
        if (fabric.kind == "hpcc") != traffic._hpcc:
            raise ParameterError(
                "Fabric.from_hpcc() and Traffic.from_hpcc() go together: an HPCC flow file "
                "numbers the nodes of its HPCC topology file"
                if traffic._hpcc else
                "a Fabric.from_hpcc() fabric runs the flows of Traffic.from_hpcc()")
        try:
            parse_time(limit, "limit", allow_zero=False)
            parse_time(sample, "sample")
        except ValueError as e:
            raise ParameterError(str(e)) from None
        if not 1 <= int(seed) <= 2**32 - 1:
            raise ParameterError(f"seed: in [1, 4294967295], not {seed}")
        if int(max_flows) < 0:
            raise ParameterError(f"max_flows: 0 (all) or more, not {max_flows}")
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
        """The scenario parameters of this run (`flows_file`: where explicit flows are)."""
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
        args = ["cnuas", "run", self.fabric.scenario, "--no-progress", "--no-plots", "--seed",
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
            return _run_scenario(self.fabric.scenario, self.params(flows_file),
                                 self.fabric.settings, self.seed, self.run_number, self.out,
                                 self.pcap, False, False)
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


def simulate(*, traffic="incast", topology="star:hosts=9", fabric="roce", rate=None,
             fabric_rate=None, cc=None, pfc=None, ecn=None, kmin=None, kmax=None, pmax=None,
             buffer=None, vls=None, mtu=None, sm=None, routing=None, threshold=None,
             marking_rate=None, ccti_timer=None, ccti_increase=None, ccti_limit=None,
             cct_step=None, attributes=None, senders=8, size="1MB", flows=None, load=0.3,
             cdf="websearch.cdf", duration="10ms", limit="200ms", sample=0, seed=1, run=1,
             out=None, **ns3_attributes):
    """Fabric, Traffic and Run in one call with flat keywords: what a sweep point is.

    fabric is "roce" or "ib" (Fabric's kind; its keywords as Fabric takes them, None for the
    fabric's default). traffic is "incast" (senders, size), "flows"
    (flows=[(src, dst, size, start)]), "all-to-all", "permutation" or "incast-load" (load,
    cdf, duration, senders). Any other keyword that names an ns-3 attribute
    ("ns3::RdmaCcDcqcnPaper::G") is set like attributes=. Returns a Result.
    """
    settings = dict(attributes or {})
    for key, value in ns3_attributes.items():
        if "::" not in key:
            raise ParameterError(f"simulate(): unknown keyword '{key}' (ns-3 attributes are "
                                 "written ns3::Class::Attribute)")
        settings[key] = value
    f = Fabric(topology, kind=fabric, rate=rate, fabric_rate=fabric_rate, cc=cc, pfc=pfc,
               ecn=ecn, kmin=kmin, kmax=kmax, pmax=pmax, buffer=buffer, vls=vls, mtu=mtu, sm=sm,
               routing=routing, threshold=threshold, marking_rate=marking_rate,
               ccti_timer=ccti_timer, ccti_increase=ccti_increase, ccti_limit=ccti_limit,
               cct_step=cct_step, attributes=settings)
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
    return Run(f, t, limit=limit, sample=sample, seed=seed, run=run, out=out).run()
