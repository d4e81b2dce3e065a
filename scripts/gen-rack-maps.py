#!/usr/bin/python3
"""Writes data/rack/maps/*.map from the register tables of the design note
orv3-register-maps.md (facts from the public rackmon2 maps: addresses, lengths, formats,
scaling, flag bits), adding what the note does not carry: access (RO/RW/WP) and units.
Run once; the .map files are the maintained artefact (users edit or add files by hand).

    scripts/gen-rack-maps.py [NOTE [OUT_DIR]]

NOTE defaults to the design note beside the project (../shared/design/notes/), OUT_DIR to
data/rack/maps; both relative to the project root."""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTE = sys.argv[1] if len(sys.argv) > 1 else \
    os.path.join(ROOT, "..", "shared", "design", "notes", "orv3-register-maps.md")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "data", "rack", "maps")

WANT = {"ORV3_PSU", "ORV3_BBU", "ORV3_HPR_PSU", "ORV3_HPR_BBU",
        "ORV3_HPR_PMM_PSU", "ORV3_HPR_PMM_BBU"}

# Register name -> unit of the raw-decoded value. Chosen per register family: PSU values are
# fixed point in SI units (rackmon precision); ORV3 BBU integers follow the Smart Battery
# convention (mV, 10 mA, deci-Kelvin, mAh, minutes) as phosphor-modbus decodes them.
def unit_for(dev, name, fmt):
    n = name.lower()
    if fmt in ("string", "flags"):
        return ""
    if dev.endswith("_PSU") and "PMM" not in dev:
        if "temp" in n: return "C"
        if "voltage" in n or n.startswith("vin_") or n.startswith("vout_setpoint"): return "V"
        if "current" in n: return "A"
        if "power" in n and "cycle" not in n and "planned" not in n: return "W"
        if "frequency" in n: return "Hz"
        if "rpm" in n: return "rpm"
        if n in ("total_up_time", "time_since_last_on"): return "s"
        return ""
    if "BBU" in dev and "PMM" not in dev:
        if n.startswith("cell_voltage") or n in ("battery_voltage", "shelf_busbar_voltage",
                "design_voltage", "charging_voltage",
                "bbu_discharger_output_voltage_inside_oring"): return "mV"
        if n.startswith("temp") or n.endswith("_temperature"):
            return "C" if fmt == "float" else "dK"
        if n in ("battery_current", "average_current", "charging_current",
                 "discharge_current", "at_rate", "variable_charge_calculated_current"):
            return "mA" if fmt == "float" else "10mA"
        if n in ("remaining_capacity", "full_charge_capacity", "design_capacity"): return "mAh"
        if n in ("relative_state_of_charge", "absolute_state_of_charge", "soh"): return "%"
        if "time_to" in n: return "min"
        if n == "fan_speed": return "rpm"
        return ""
    if n in ("total_up_time", "time_since_last_on"): return "s"
    return ""

def access_for(dev, addr, name, unix_reg):
    n = name.lower()
    if addr == unix_reg: return "RW"
    if "PMM" in dev:
        return "RW" if addr in (121, 122, 123, 124) else "RO"
    if dev.endswith("_PSU"):
        if addr == 94: return "RW"           # PSU_Setting_Register holds the write-enable bit
        if 95 <= addr <= 105 and "fault_counter" not in n and "unix_time" not in n:
            return "WP"
        return "RO"
    if dev.endswith("_BBU"):
        if addr >= 288: return "RW"  # no write-enable bit in the BBU maps
        return "RO"
    return "RO"

def main():
    text = open(NOTE).read()
    sections = re.split(r"^### ", text, flags=re.M)[1:]
    for sec in sections:
        dev = sec.split()[0]
        if dev not in WANT:
            continue
        hdr = json.loads(re.search(r"^header: (\{.*\})$", sec, re.M).group(1))
        unix = hdr["special_handlers"][0]
        lines = [
            "# %s register map (Cnuas rack map format, see docs/rack.md)." % dev,
            "# Addresses, lengths, formats, scaling and flag bits: the public rackmon2 map",
            "# (facebook/openbmc rackmon2 configs/register_map, snapshot 18db06bb), via the",
            "# design note orv3-register-maps.md. Access and units: Cnuas choices (docs/rack.md).",
            "device %s" % dev,
            "baud %d" % hdr["baudrate"],
            "parity even",
            "probe %d" % hdr["probe_register"],
        ]
        for lo, hi in hdr["address_range"]:
            lines.append("range %d %d" % (lo, hi))
        lines.append("unix_time %d %d" % (unix["reg"], unix["period"]))
        if dev.endswith("_PSU") and "PMM" not in dev:
            lines.append("write_enable 94 0")
        lines.append("# reg <address> <length> <format> <access> <name> [key=value ...]")
        for row in re.finditer(r"^\| (\d+) / 0x[0-9a-f]+ \| (\d+) \| (\w+) \| ([^|]+)\|([^|]*)\|",
                               sec, re.M):
            addr, ln, fmt, name, extra = int(row.group(1)), int(row.group(2)), \
                row.group(3).lower(), row.group(4).strip().replace(" ", ""), row.group(5)
            keys = []
            m = re.search(r"(\{.*?\})", extra)
            opts = json.loads(m.group(1)) if m else {}
            if fmt == "float":
                keys.append("precision=%d" % opts.get("precision", 0))
                if "scale" in opts: keys.append("scale=%g" % opts["scale"])
                if "shift" in opts: keys.append("shift=%g" % opts["shift"])
            if opts.get("sign"):
                keys.append("signed")
            u = unit_for(dev, name, fmt)
            if u:
                keys.append("unit=%s" % u)
            if fmt == "flags":
                fm = re.search(r"flags: (.*)$", extra.strip())
                bits = []
                for part in fm.group(1).split(";"):
                    b, nm = part.strip().split("=")
                    bits.append((int(b.strip()[1:]), nm.strip()))
                bits.sort()
            lines.append(" ".join(["reg", str(addr), str(ln), fmt,
                                   access_for(dev, addr, name, unix["reg"]), name] + keys))
            if fmt == "flags":
                lines += ["  bit %d %s" % b for b in bits]
        path = "%s/%s.map" % (OUT, dev.lower())
        open(path, "w").write("\n".join(lines) + "\n")
        print(path, len(lines))

main()
