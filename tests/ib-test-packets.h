// Builders of complete InfiniBand packets for the wire and trace-check tests.
#ifndef CNUAS_TESTS_IB_TEST_PACKETS_H
#define CNUAS_TESTS_IB_TEST_PACKETS_H

#include "models/ib/ib-crc.h"
#include "models/ib/ib-gid.h"
#include "models/ib/ib-grh-header.h"
#include "models/ib/ib-lrh-header.h"
#include "models/rdma/ib-bth-header.h"
#include "models/rdma/ib-deth-header.h"
#include "test-text-files.h"

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <sys/wait.h>
#include <string>
#include <vector>

namespace cnuas_test
{

/// What goes into a test packet.
struct TestPacketSpec
{
    bool global = false; ///< LNH 3 (LRH + GRH) instead of LNH 2
    bool withDeth = true;
    uint8_t vl = 0;
    uint8_t sl = 0;
    uint16_t dlid = 4;
    uint16_t slid = 5;
    uint8_t opCode = 0x64; ///< UD SEND Only
    uint16_t pkey = 0xFFFF;
    uint32_t destQp = 0x11;
    uint32_t psn = 0;
    bool fecn = false;
    uint32_t qkey = 0x80010000;
    uint32_t srcQp = 1;
    uint8_t tClass = 0;
    uint32_t flowLabel = 0;
    uint8_t hopLmt = 64;
    ns3::IbGid sgid = ns3::IbMakeGid(ns3::kIbDefaultSubnetPrefix, 0x0002C90300000005ULL);
    ns3::IbGid dgid = ns3::IbMakeGid(ns3::kIbDefaultSubnetPrefix, 0x0002C90300000004ULL);
    std::vector<uint8_t> ext; ///< extension headers after BTH [DETH], e.g. a RETH's 16 bytes
    std::vector<uint8_t> payload;
};

/// LRH [GRH] BTH [DETH] [ext] payload pad ICRC VCRC, every length field and both CRCs filled in.
inline std::vector<uint8_t>
BuildPacket(const TestPacketSpec& s)
{
    const size_t pad = (4 - s.payload.size() % 4) % 4; // IBA vol. 1 §9.2: PadCnt to 4 bytes
    const size_t headers = ns3::IbLrhHeader::kSize + (s.global ? ns3::IbGrhHeader::kSize : 0) +
                           ns3::IbBthHeader::kSize + (s.withDeth ? ns3::IbDethHeader::kSize : 0) +
                           s.ext.size();
    const size_t len = headers + s.payload.size() + pad + ns3::kIbIcrcSize + ns3::kIbVcrcSize;
    std::vector<uint8_t> pkt(len, 0);

    ns3::IbLrhHeader lrh;
    lrh.SetVl(s.vl);
    lrh.SetSl(s.sl);
    lrh.SetLnh(s.global ? ns3::IbLnh::IbaGlobal : ns3::IbLnh::IbaLocal);
    lrh.SetDlid(s.dlid);
    lrh.SetSlid(s.slid);
    lrh.SetPktLenWords(static_cast<uint16_t>((len - ns3::kIbVcrcSize) / 4));
    lrh.WriteTo(pkt.data());
    size_t off = ns3::IbLrhHeader::kSize;
    if (s.global)
    {
        ns3::IbGrhHeader grh;
        grh.SetTClass(s.tClass);
        grh.SetFlowLabel(s.flowLabel);
        grh.SetPayLen(static_cast<uint16_t>(len - off - ns3::IbGrhHeader::kSize -
                                            ns3::kIbVcrcSize));
        grh.SetHopLmt(s.hopLmt);
        grh.SetSgid(s.sgid);
        grh.SetDgid(s.dgid);
        grh.WriteTo(pkt.data() + off);
        off += ns3::IbGrhHeader::kSize;
    }
    ns3::IbBthHeader bth;
    bth.SetOpCode(s.opCode);
    bth.SetPadCnt(static_cast<uint8_t>(pad));
    bth.SetPkey(s.pkey);
    bth.SetFecn(s.fecn);
    bth.SetDestQp(s.destQp);
    bth.SetPsn(s.psn);
    bth.WriteTo(pkt.data() + off);
    off += ns3::IbBthHeader::kSize;
    if (s.withDeth)
    {
        ns3::IbDethHeader deth;
        deth.SetQkey(s.qkey);
        deth.SetSrcQp(s.srcQp);
        deth.WriteTo(pkt.data() + off);
        off += ns3::IbDethHeader::kSize;
    }
    for (uint8_t b : s.ext)
    {
        pkt[off++] = b;
    }
    for (uint8_t b : s.payload)
    {
        pkt[off++] = b;
    }
    ns3::IbFillCrcs(pkt.data(), pkt.size());
    return pkt;
}

/// A deterministic payload of n bytes.
inline std::vector<uint8_t>
Payload(size_t n, uint8_t seed = 1)
{
    std::vector<uint8_t> p(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : p)
    {
        x = x * 1103515245u + 12345u;
        b = static_cast<uint8_t>(x >> 16);
    }
    return p;
}

/**
 * A RoCEv2 CNP captured on a Mellanox ConnectX-4 Lx, as an Ethernet frame (hex dump published
 * with scapy's RoCE regression tests, test/contrib/roce.uts). Its last 4 bytes, 82 fd 00 2a, are
 * the ICRC the hardware computed: real-world evidence for the masking and the byte order.
 */
inline std::vector<uint8_t>
HardwareCnpFrame()
{
    const char* hex = "e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2"
                      "003c 718c 4000 4011 9161 0a00 1101 0a00"
                      "1201 0000 12b7 0028 0000 8100 ffff 4000"
                      "0118 0000 0000 0000 0000 0000 0000 0000"
                      "0000 0000 0000 82fd 002a";
    std::vector<uint8_t> b;
    int hi = -1;
    for (const char* c = hex; *c; ++c)
    {
        if (*c == ' ')
        {
            continue;
        }
        const int v = (*c <= '9') ? *c - '0' : *c - 'a' + 10;
        if (hi < 0)
        {
            hi = v;
        }
        else
        {
            b.push_back(static_cast<uint8_t>(hi * 16 + v));
            hi = -1;
        }
    }
    return b;
}

/// Lower-case hex of a byte string (for passing packets to the Python cross-checks).
inline std::string
ToHex(const uint8_t* p, size_t n)
{
    std::string s;
    char buf[3];
    for (size_t i = 0; i < n; ++i)
    {
        std::snprintf(buf, sizeof(buf), "%02x", p[i]);
        s += buf;
    }
    return s;
}

/// Run a shell command and return its standard output; exitStatus gets the exit status.
inline std::string
RunCommand(const std::string& cmd, int* exitStatus = nullptr)
{
    std::string out;
    int st;
    ShellRun(cmd, out, st);
    if (exitStatus)
    {
        *exitStatus = (st >= 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
    }
    return out;
}

/// The tab-separated fields of one line of `tshark -T fields` output.
inline std::vector<std::string>
SplitTabs(const std::string& line)
{
    std::vector<std::string> row;
    size_t start = 0;
    while (true)
    {
        const size_t tab = line.find('\t', start);
        row.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
        if (tab == std::string::npos)
        {
            return row;
        }
        start = tab + 1;
    }
}

/// Runs `tshark -r PATH OPTIONS -T fields -e F...` and splits its output into rows of fields
/// (tab-separated, first occurrence of each field). `exitStatus` receives tshark's status.
inline std::vector<std::vector<std::string>>
TsharkFieldRows(const std::string& path,
                const std::vector<std::string>& fields,
                const std::string& options,
                int* exitStatus)
{
    std::string cmd = "tshark -r '" + path + "' " + options +
                      " -T fields -E separator=/t -E occurrence=f";
    for (const auto& f : fields)
    {
        cmd += " -e " + f;
    }
    const std::string out = RunCommand(cmd + " 2>/dev/null", exitStatus);
    std::vector<std::vector<std::string>> rows;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line))
    {
        rows.push_back(SplitTabs(line));
    }
    return rows;
}

} // namespace cnuas_test

#endif
