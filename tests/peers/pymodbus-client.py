#!/usr/bin/python3
"""A pymodbus 3.0 serial master for the pty-bridge tests: reads a span of holding registers,
closes the port and does it again OPENS times (a new ModbusSerialClient each time).

usage: pymodbus-client.py PORT BAUD PARITY SLAVE START COUNT OPENS [STRICT]
STRICT (default 1) is pymodbus's `strict` option: with it, connect() configures the port a second
time (inter-character timeout), which a Linux pty refuses with EINVAL when parity is on (the
pty drops PARENB, glibc then reports "nothing changed"; see docs/rack.md).
Prints "open K: v v v ..." or "open K: error ..." per open; exits 0 if every open connected.
"""
import sys

from pymodbus.client import ModbusSerialClient


def main():
    if len(sys.argv) not in (8, 9):
        print(__doc__, file=sys.stderr)
        return 1
    port, baud, parity = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    slave, start, count, opens = (int(a) for a in sys.argv[4:8])
    strict = len(sys.argv) < 9 or sys.argv[8] != "0"
    status = 0
    for k in range(opens):
        client = ModbusSerialClient(port=port, baudrate=baud, parity=parity, stopbits=1,
                                    bytesize=8, timeout=1, strict=strict)
        if not client.connect():
            print(f"open {k}: error connect", flush=True)
            status = 2
            continue
        rr = client.read_holding_registers(start, count, slave=slave)
        if rr.isError():
            print(f"open {k}: error {rr}", flush=True)
        else:
            print(f"open {k}: " + " ".join(str(v) for v in rr.registers), flush=True)
        client.close()
    return status


if __name__ == "__main__":
    sys.exit(main())
