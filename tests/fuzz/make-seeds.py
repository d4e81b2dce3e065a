#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/TARGET/) from captures and
input files Cnuas itself produces or ships. Run from the project root, after a build:

    tests/fuzz/make-seeds.py build/bin/cnuas [HPCC_INPUT_DIR]

It runs `cnuas run ib-pair` and `cnuas run roce-fairness` with --pcap to capture an InfiniBand
subnet-manager sweep and data, and RoCEv2 data, ACKs and CNPs; the rest are the example files
and a few hand-written Modbus frames and HTTP heads. The corpora are small on purpose: the
fuzzers mutate from them. Each seed's first byte is the target's control byte (see each
target's header comment)."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def records(path):
    """(linktype, [packet bytes]) of a pcap file."""
    data = open(path, "rb").read()
    linktype = struct.unpack("<I", data[20:24])[0]
    off, out = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack("<I", data[off + 8:off + 12])[0]
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return linktype, out


def pick(packets, key, per_kind):
    """At most `per_kind` packets of each kind key(p) gives, in capture order."""
    seen, out = {}, []
    for p in packets:
        k = key(p)
        if seen.get(k, 0) < per_kind:
            seen[k] = seen.get(k, 0) + 1
            out.append(p)
    return out


def fcs(frame):
    return frame + struct.pack("<I", zlib.crc32(frame) & 0xFFFFFFFF)


def modbus_crc(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return struct.pack("<H", crc)


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def ones_sum(data):
    """The RFC 1071 one's-complement sum of `data`, folded to 16 bits."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def tap_reads():
    """Reads a host's TAP gives with IFF_VNET_HDR: the 10-byte virtio header, then the frame.
    A TSO frame (gso_type TCPV4, gso_size 1448, the checksum partial: the field holds the
    pseudo-header sum), the same with ECN (CWR, gso_type | ECN), a UDP frame with a partial
    checksum, and a plain frame with an empty header."""
    def frame(proto, l4, tos=0):
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, tos, 20 + len(l4), 0x1234, 0x4000, 64, proto, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
        ip = ip[:10] + struct.pack(">H", 0xFFFF ^ ones_sum(ip)) + ip[12:]
        return bytes.fromhex("020000000002020000000001") + b"\x08\x00" + ip + l4

    def partial(proto, length):
        return ones_sum(bytes([10, 0, 0, 1, 10, 0, 0, 2, 0, proto]) + struct.pack(">H", length))

    def vnet(flags, gso, hdr_len, gso_size, start, offset):
        return struct.pack("<BBHHHH", flags, gso, hdr_len, gso_size, start, offset)

    reads = []
    for flags, tos, data in ((0x18, 0, 3000), (0x98, 0x02, 4500)):  # PSH+ACK; CWR+PSH+ACK, ECT(0)
        tcp = struct.pack(">HHIIBBHHH", 40000, 5201, 1000, 1, 0x50, flags, 502, 0, 0)
        tcp = tcp[:16] + struct.pack(">H", partial(6, 20 + data)) + tcp[18:]
        gso = 0x01 | (0x80 if flags & 0x80 else 0)  # VIRTIO_NET_HDR_GSO_TCPV4 (| _ECN)
        reads.append(vnet(1, gso, 54, 1448, 34, 16) + frame(6, tcp + bytes(range(256)) * 
                                                         (data // 256) + bytes(data % 256), tos))
    udp = struct.pack(">HHHH", 40000, 4791, 8 + 64, partial(17, 8 + 64)) + bytes(64)
    reads.append(vnet(1, 0, 0, 0, 34, 6) + frame(17, udp))
    reads.append(vnet(0, 0, 0, 0, 0, 0) + frame(17, udp[:6] + b"\0\0" + bytes(64)))
    return reads


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cnuas = sys.argv[1]
    hpcc = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "..", "shared", "data",
                                                              "hpcc-compat")
    shutil.rmtree(OUT, ignore_errors=True)
    tmp = tempfile.mkdtemp()
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run([cnuas, "run", "ib-pair", "--no-progress", "--no-plots", "--param",
                    "sm=builtin", "--pcap", tmp + "/ib"], **quiet)
    subprocess.run([cnuas, "run", "roce-fairness", "--no-progress", "--no-plots", "--pcap",
                    tmp + "/roce"], **quiet)

    # InfiniBand: ERF records (16-byte header), LRH .. VCRC after it.
    _, recs = records(tmp + "/ib/h0.pcap")
    ib = [r[16:] for r in recs]
    ib = pick(ib, lambda p: (p[1] & 3, len(p) > 400, p[8 + (40 if p[1] & 3 == 3 else 0)]), 3)
    _, fc = records(tmp + "/ib/h0-flow-control.pcap")
    ib += [r[16:] for r in fc[:2]]
    # Reliable-connection requests the capture lacks (ib-pair sends UD): SEND, RDMA WRITE with
    # its RETH, RDMA READ, an atomic, with PSN 0 (what a freshly connected QP expects); LIDs,
    # DestQP and CRCs are the harness's to fix (control bits 2 and 3).
    def rc(opcode, ext, payload):
        body = bytes([opcode, 0, 0xFF, 0xFF, 0, 0, 0, 2, 0x80, 0, 0, 0]) + ext + payload
        words = (8 + len(body) + 4) // 4
        lrh = bytes([0, 0x02, 0, 2, (words >> 8) & 7, words & 0xFF, 0, 1])
        return lrh + body + bytes(6)
    reth = struct.pack(">QII", 0x7F3A12350000, 0, 64)
    atomic = struct.pack(">QIQQ", 0x7F3A12350000, 0, 1, 0)
    ib += [rc(0x04, b"", bytes(range(64))),               # SEND Only
           rc(0x0A, reth, bytes(64)),                     # RDMA WRITE Only
           rc(0x06, reth[:12] + struct.pack(">I", 4096), bytes(256)),  # RDMA WRITE First
           rc(0x0C, reth, b""),                           # RDMA READ Request
           rc(0x14, atomic, b"")]                         # FETCH & ADD

    for i, p in enumerate(ib):
        for control in (0x0C, 0x0D, 0x1C, 0x5C):
            write("ib-wire", "ib-%02d-%02x" % (i, control), bytes([control]) + p)
        write("wire-parsers", "mad-%02d" % i, b"\x02" + p)
        lnh = p[1] & 3
        if lnh >= 2 and len(p) > 14:
            start = 8 + (40 if lnh == 3 else 0)
            write("wire-parsers", "transport-%02d" % i, b"\x01" + p[start:-2])

    # RoCEv2: Ethernet frames as captured (no FCS).
    _, recs = records(tmp + "/roce/h0.pcap")
    roce = pick(recs, lambda p: (len(p), p[12:14]), 2)
    for i, p in enumerate(roce):
        write("wire-parsers", "eth-host-%02d" % i, b"\x00" + p)
        write("wire-parsers", "eth-wire-%02d" % i, b"\x00" + fcs(p.ljust(60, b"\0")))
        for control in (0x0C, 0x1C, 0x5C, 0x2E):
            write("roce-wire", "wire-%02d-%02x" % (i, control),
                  bytes([control]) + fcs(p.ljust(60, b"\0")))
        write("roce-wire", "host-%02d" % i, b"\x0D" + p)

    # The emulated NIC's offloads: reads from a host's TAP.
    for i, r in enumerate(tap_reads()):
        write("wire-parsers", "tap-%02d" % i, b"\x03" + r)

    # Modbus RTU requests a slave receives, responses a master receives, HTTP heads.
    requests = [
        bytes([0x10, 0x03, 0x00, 0x00, 0x00, 0x08]),
        bytes([0x10, 0x04, 0x00, 0x10, 0x00, 0x02]),
        bytes([0x10, 0x06, 0x00, 0x20, 0x12, 0x34]),
        bytes([0x10, 0x10, 0x00, 0x20, 0x00, 0x02, 0x04, 0x00, 0x01, 0x00, 0x02]),
        bytes([0x10, 0x01, 0x00, 0x00, 0x00, 0x10]),
        bytes([0x10, 0x0F, 0x00, 0x00, 0x00, 0x0A, 0x02, 0xFF, 0x03]),
        bytes([0x10, 0x17, 0x00, 0x00, 0x00, 0x02, 0x00, 0x10, 0x00, 0x01, 0x02, 0xAB, 0xCD]),
        bytes([0x10, 0x2B, 0x0E, 0x01, 0x00]),
        bytes([0x10, 0x08, 0x00, 0x00, 0xA5, 0x37]),
    ]
    for i, r in enumerate(requests):
        write("rack-protocols", "request-%02d" % i, b"\x00" + r + modbus_crc(r))
    responses = [
        (requests[0][1:], bytes([0x03, 0x10]) + bytes(range(16))),
        (requests[2][1:], requests[2][1:]),
        (requests[7][1:], bytes([0x2B, 0x0E, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x03]) + b"ABC"),
        (requests[0][1:], bytes([0x83, 0x02])),
    ]
    for i, (req, resp) in enumerate(responses):
        write("rack-protocols", "response-%02d" % i, b"\x01" + bytes([len(req)]) + req + resp)
    heads = [
        b"GET /redfish/v1/ HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"GET /redfish/v1/Chassis/Rack/Power HTTP/1.1\r\nHost: h\r\nConnection: close\r\n"
        b"Accept: application/json\r\n\r\n",
        b"POST /redfish/v1/SessionService/Sessions HTTP/1.1\r\nHost: h\r\n"
        b"Content-Length: 2\r\n\r\n{}",
        b"HEAD /redfish HTTP/1.0\r\n\r\n",
    ]
    for i, h in enumerate(heads):
        write("rack-protocols", "http-%02d" % i, b"\x02" + h)

    # Files users give: topology, scenario, rack, HPCC config / topology / flows, captures.
    def add_file(control, path, name, limit=16384):
        with open(path, "rb") as f:
            write("input-files", name, bytes([control]) + f.read(limit))
    add_file(0, os.path.join(ROOT, "examples/topologies/two-leaf.topo"), "topology")
    add_file(1, os.path.join(ROOT, "examples/scenarios/two-leaf-incast.scn"), "scenario")
    for n in ("dormant-device", "two-shelves"):
        add_file(2, os.path.join(ROOT, "examples/rack/%s.rack" % n), "rack-" + n)
    if os.path.isdir(hpcc):
        add_file(3, os.path.join(hpcc, "config_topology_incast60_dcqcn.txt"), "hpcc-config")
        add_file(4, os.path.join(hpcc, "topology.txt"), "hpcc-topology", 4096)
        add_file(4, os.path.join(hpcc, "incast60.txt"), "hpcc-flows", 4096)
    add_file(5, tmp + "/ib/h0-flow-control.pcap", "pcap-ib")
    write("input-files", "partitions",
          b"\x06# two tenants\nDefault=0x7fff, ipoib, rate=7 : ALL=full, SELF=full ;\n"
          b"TenantA=0x0001, defmember=full : 0x0002c90300000101, 0x12 ;\n"
          b"TenantB=0x0002 : 0x12=limited, ALL_CAS=both, ALL_SWITCHES ;\n")
    with open(tmp + "/roce/h1.pcap", "rb") as f:
        write("input-files", "pcap-roce", b"\x05" + f.read(24 + 8 * (16 + 1082)))
    shutil.rmtree(tmp)
    for t in sorted(os.listdir(OUT)):
        print("%s: %d seeds" % (t, len(os.listdir(os.path.join(OUT, t)))))


if __name__ == "__main__":
    main()
