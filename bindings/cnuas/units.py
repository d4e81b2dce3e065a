"""Quantities with units, as researchers write them: "100Gbps", "5us", "32MB".

Every keyword argument of the cnuas API that has a unit goes through one of these parsers, so
that a wrong unit or a negative value is a ValueError naming the argument, before anything
reaches ns-3 (which aborts the whole process on a value it cannot take).
"""

import math
import re

__all__ = ["parse_bytes", "parse_rate", "parse_time", "format_time", "format_bytes"]

_NUMBER = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"

# Decimal prefixes as the network world counts bytes (a "32MB" buffer is 32e6 bytes); the
# binary ones when a researcher means them (KiB, MiB, GiB).
_BYTE_UNITS = {
    "": 1, "b": 1, "B": 1,
    "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9,
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
}
# ns-3's DataRate spellings: bps, kbps, Kbps, Mbps, Gbps, with "b/s" forms too.
_RATE_UNITS = {
    "bps": 1, "b/s": 1,
    "kbps": 1e3, "Kbps": 1e3, "kb/s": 1e3, "Kb/s": 1e3,
    "Mbps": 1e6, "Mb/s": 1e6, "Gbps": 1e9, "Gb/s": 1e9, "Tbps": 1e12, "Tb/s": 1e12,
}
_TIME_UNITS = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}


def _split(text, what, units):
    match = re.fullmatch(_NUMBER + r"\s*([A-Za-z/]*)", str(text).strip())
    if not match:
        raise ValueError(f"{what}: '{text}' is not a number with a unit")
    value, unit = float(match.group(1)), match.group(2)
    if unit not in units:
        known = ", ".join(u for u in units if u)
        raise ValueError(f"{what}: unknown unit '{unit}' in '{text}' (use one of: {known})")
    if not math.isfinite(value):
        raise ValueError(f"{what}: '{text}' is not finite")
    return value, units[unit]


def parse_bytes(value, what="size"):
    """A byte count: an int, or a string such as "32MB", "64KiB", "1500" (bytes, >= 0)."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a byte count, got {value!r}")
    if isinstance(value, (int, float)):
        number, scale = float(value), 1
    else:
        number, scale = _split(value, what, _BYTE_UNITS)
    result = number * scale
    if result < 0:
        raise ValueError(f"{what}: must not be negative, got '{value}'")
    if abs(result - round(result)) > 1e-6:
        raise ValueError(f"{what}: '{value}' is not a whole number of bytes")
    return int(round(result))


def parse_rate(value, what="rate"):
    """A data rate in bit/s: a number, or a string such as "100Gbps", "40Gb/s" (> 0)."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a data rate, got {value!r}")
    if isinstance(value, (int, float)):
        number, scale = float(value), 1
    else:
        number, scale = _split(value, what, _RATE_UNITS)
    result = number * scale
    if result <= 0:
        raise ValueError(f"{what}: a data rate must be positive, got '{value}'")
    return result


def parse_time(value, what="time", allow_zero=True):
    """A duration in seconds from a string with its unit ("5us", "10ms"); 0 may go bare.

    A bare number is refused (except 0): ns-3 would read "5" as five seconds, which a
    researcher who meant microseconds discovers after a very long run.
    """
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a time, got {value!r}")
    if isinstance(value, (int, float)):
        if value != 0:
            raise ValueError(f"{what}: give a unit, e.g. '{value}us' (a bare number is ambiguous)")
        seconds = 0.0
    else:
        number, scale = _split(value, what, {**_TIME_UNITS, "": None})
        if scale is None:
            if number != 0:
                raise ValueError(f"{what}: give a unit, e.g. '{value}us'")
            scale = 1
        seconds = number * scale
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{what}: must be {'>= 0' if allow_zero else '> 0'}, got '{value}'")
    return seconds


def format_time(seconds):
    """The shortest exact ns-3 time string for `seconds` ("5us", "1500ns", "0s")."""
    picoseconds = round(seconds * 1e12)
    for unit, scale in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if picoseconds % scale == 0:
            return f"{picoseconds // scale}{unit}"
    return f"{picoseconds}ps"


def format_rate(bps):
    """An ns-3 DataRate string for `bps` bit/s ("40Gbps")."""
    for unit, scale in (("Gbps", 1e9), ("Mbps", 1e6), ("Kbps", 1e3)):
        if bps >= scale and float(bps / scale).is_integer():
            return f"{int(bps / scale)}{unit}"
    return f"{int(round(bps))}bps"


def format_bytes(count):
    """A byte count as a plain integer string (what scenario parameters read)."""
    return str(int(count))
