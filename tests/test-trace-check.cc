// The trace checker (helpers/trace/trace-check), `cnuas pcap check`, and tshark's view of the traces
// the ERF-in-pcap writer produces.
#include "ib-test-packets.h"
#include "test-text-files.h"

#include "helpers/trace/ib-pcap-writer.h"
#include "helpers/trace/modbus-pcap-writer.h"
#include "helpers/trace/trace-check.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-flow-control-header.h"
#include "models/rack/modbus-rtu.h"

#include "ns3/nstime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ns3;
using cnuas_test::BuildPacket;
using cnuas_test::HardwareCnpFrame;
using cnuas_test::Payload;
using cnuas_test::RunCommand;
using cnuas_test::TestPacketSpec;

namespace
{

using Bytes = std::vector<uint8_t>;

std::string
TempPath(const std::string& name)
{
    return std::string(CNUAS_BINARY_DIR) + "/test-trace-check-" + std::to_string(getpid()) + "-" +
           name;
}

void
WriteFile(const std::string& path, const Bytes& b)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void
PutLe32(Bytes& b, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
    {
        b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
}

/// A pcap file assembled byte by byte (independent of ns-3 and of the writer under test), so
/// tests can produce records the writer never would.
class RawPcap
{
  public:
    explicit RawPcap(uint32_t linkType)
    {
        PutLe32(m_bytes, 0xA1B23C4D); // nanosecond magic
        m_bytes.push_back(2);         // version 2.4
        m_bytes.push_back(0);
        m_bytes.push_back(4);
        m_bytes.push_back(0);
        PutLe32(m_bytes, 0);     // thiszone
        PutLe32(m_bytes, 0);     // sigfigs
        PutLe32(m_bytes, 65535); // snaplen
        PutLe32(m_bytes, linkType);
    }

    /// A record; origLen defaults to the captured length.
    void Add(uint32_t sec, uint32_t nsec, const Bytes& data, uint32_t origLen = 0)
    {
        PutLe32(m_bytes, sec);
        PutLe32(m_bytes, nsec);
        PutLe32(m_bytes, static_cast<uint32_t>(data.size()));
        PutLe32(m_bytes, origLen ? origLen : static_cast<uint32_t>(data.size()));
        m_bytes.insert(m_bytes.end(), data.begin(), data.end());
    }

    /// An ERF record of the given type around pkt, stamped t (ERF and pcap times agree).
    void AddErf(Time t, uint8_t erfType, const Bytes& pkt)
    {
        Bytes rec(16);
        IbErfPcapWriter::EncodeErfHeader(rec.data(), t, erfType, static_cast<uint16_t>(pkt.size()));
        rec.insert(rec.end(), pkt.begin(), pkt.end());
        const int64_t ns = t.GetNanoSeconds();
        Add(static_cast<uint32_t>(ns / 1000000000), static_cast<uint32_t>(ns % 1000000000), rec);
    }

    const Bytes& GetBytes() const { return m_bytes; }

    std::string Save(const std::string& name) const
    {
        const std::string path = TempPath(name);
        WriteFile(path, m_bytes);
        return path;
    }

  private:
    Bytes m_bytes;
};

/// Write packets with the writer under test at 1 us spacing.
std::string
WriteTrace(const std::string& name, const std::vector<Bytes>& pkts)
{
    const std::string path = TempPath(name);
    IbErfPcapWriter w;
    EXPECT_TRUE(w.Open(path));
    for (size_t i = 0; i < pkts.size(); ++i)
    {
        w.Write(MicroSeconds(static_cast<int64_t>(i + 1)), pkts[i].data(),
                static_cast<uint32_t>(pkts[i].size()));
    }
    w.Close();
    return path;
}

std::vector<Bytes>
MixedPackets(size_t n)
{
    std::vector<Bytes> pkts;
    for (size_t i = 0; i < n; ++i)
    {
        TestPacketSpec s;
        s.global = (i % 2 == 1);
        s.vl = static_cast<uint8_t>(i % 8);
        s.psn = static_cast<uint32_t>(100 + i);
        s.payload = Payload((i * 397) % 4097, static_cast<uint8_t>(i));
        pkts.push_back(BuildPacket(s));
    }
    return pkts;
}

Bytes
FlowControlPacket(IbFlowControlOp op, uint16_t fctbs, uint8_t vl, uint16_t fccl)
{
    IbFlowControlHeader fc;
    fc.SetOp(op);
    fc.SetFctbs(fctbs);
    fc.SetVl(vl);
    fc.SetFccl(fccl);
    Bytes b(IbFlowControlHeader::kSize);
    fc.WriteTo(b.data());
    return b;
}

bool
HasProblemContaining(const TraceCheckReport& r, const std::string& text)
{
    for (const auto& p : r.firstProblems)
    {
        if (p.find(text) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

std::string
Describe(const TraceCheckReport& r)
{
    std::string s = r.Summary();
    for (const auto& p : r.firstProblems)
    {
        s += "\n  " + p;
    }
    return s;
}

/// Only the listed kinds (with these counts) were reported.
void
ExpectOnly(const TraceCheckReport& r, const std::map<std::string, uint64_t>& kinds)
{
    EXPECT_EQ(r.errorsByKind, kinds) << Describe(r);
    uint64_t total = 0;
    for (const auto& [k, n] : kinds)
    {
        total += n;
    }
    EXPECT_EQ(r.errors, total);
    EXPECT_FALSE(r.ok());
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Writer -> checker

TEST(TraceCheck, WriterOutputPasses)
{
    const auto pkts = MixedPackets(12);
    const std::string path = WriteTrace("good.pcap", pkts);
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_TRUE(r.ok()) << Describe(r);
    EXPECT_EQ(r.packets, 12u);
    EXPECT_EQ(r.crcsChecked, 24u); // ICRC + VCRC each
    EXPECT_EQ(r.linkType, "ERF (197)");
    EXPECT_EQ(r.Summary(), path + ": 12 packets, linktype ERF (197), all CRCs good (24 checked)");
    std::remove(path.c_str());
}

TEST(TraceCheck, FlippedVcrcBit)
{
    auto pkts = MixedPackets(3);
    pkts[1].back() ^= 0x20;
    const std::string path = WriteTrace("vcrc.pcap", pkts);
    const TraceCheckReport r = CheckTrace(path);
    ExpectOnly(r, {{"vcrc", 1}});
    ASSERT_EQ(r.firstProblems.size(), 1u);
    EXPECT_EQ(r.firstProblems[0].rfind("packet 2: VCRC mismatch", 0), 0u) << r.firstProblems[0];
    EXPECT_NE(r.Summary().find("1 error (vcrc: 1)"), std::string::npos) << r.Summary();
    std::remove(path.c_str());
}

TEST(TraceCheck, PayloadCorruptionWithFreshVcrcIsAnIcrcError)
{
    // What a faulty switch that recomputes the VCRC would produce: only the ICRC can tell.
    auto pkts = MixedPackets(4);
    for (size_t i : {0u, 3u})
    {
        Bytes& p = pkts[i];
        p[p.size() - 10] ^= 0x01;
        IbStoreVcrc(p.data() + p.size() - 2, IbComputeVcrc(p.data(), p.size() - 2));
    }
    const std::string path = WriteTrace("icrc.pcap", pkts);
    const TraceCheckReport r = CheckTrace(path);
    ExpectOnly(r, {{"icrc", 2}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 1: ICRC mismatch"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 4: ICRC mismatch"));
    std::remove(path.c_str());
}

TEST(TraceCheck, VariantFieldsMayChangeInFlight)
{
    // VL (per hop), FECN/BECN (switches), and for global packets the GRH's TClass, FlowLabel,
    // HopLmt and the whole LRH (routers) change in flight; with a fresh VCRC all is well.
    auto pkts = MixedPackets(4);
    for (size_t i = 0; i < pkts.size(); ++i)
    {
        Bytes& p = pkts[i];
        const bool global = (p[1] & 0x03) == 3;
        p[0] = static_cast<uint8_t>((p[0] & 0x0F) | 0xE0);
        if (global)
        {
            p[2] ^= 0x33; // DLID rewritten by a router
            p[9] ^= 0x42; // TClass/FlowLabel
            p[15] -= 1;   // HopLmt
            p[52] |= 0x80;
        }
        else
        {
            p[12] |= 0x40; // BECN
        }
        IbStoreVcrc(p.data() + p.size() - 2, IbComputeVcrc(p.data(), p.size() - 2));
    }
    const std::string path = WriteTrace("variant.pcap", pkts);
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_TRUE(r.ok()) << Describe(r);
    std::remove(path.c_str());
}

TEST(TraceCheck, WrongPktLen)
{
    TestPacketSpec s;
    s.payload = Payload(40);
    Bytes p = BuildPacket(s);
    const uint16_t words = static_cast<uint16_t>(((p[4] & 0x07) << 8) | p[5]);
    p[5] = static_cast<uint8_t>(words + 1); // one word too many, CRCs refreshed
    IbFillCrcs(p.data(), p.size());
    const std::string path = WriteTrace("pktlen.pcap", {BuildPacket(s), p});
    const TraceCheckReport r = CheckTrace(path);
    ExpectOnly(r, {{"lrh.pktlen", 1}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 2: LRH PktLen"));
    std::remove(path.c_str());
}

TEST(TraceCheck, GrhAndBthFieldChecks)
{
    TestPacketSpec s;
    s.global = true;
    s.payload = Payload(8);
    Bytes payLen = BuildPacket(s);
    payLen[8 + 5] ^= 0x04; // GRH PayLen
    IbFillCrcs(payLen.data(), payLen.size());
    Bytes nxtHdr = BuildPacket(s);
    nxtHdr[8 + 6] = 0x11;
    IbFillCrcs(nxtHdr.data(), nxtHdr.size());
    Bytes tver = BuildPacket(s);
    tver[8 + 40 + 1] |= 0x01;
    IbFillCrcs(tver.data(), tver.size());
    Bytes lver = BuildPacket(s);
    lver[0] |= 0x02;
    IbFillCrcs(lver.data(), lver.size());
    const std::string path = WriteTrace("fields.pcap", {payLen, nxtHdr, tver, lver});
    const TraceCheckReport r = CheckTrace(path);
    ExpectOnly(r, {{"grh.paylen", 1}, {"grh.nxthdr", 1}, {"bth.tver", 1}, {"lrh.lver", 1}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 1: GRH PayLen"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 2: GRH NxtHdr"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 3: BTH TVer"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 4: LRH LVer"));
    std::remove(path.c_str());
}

TEST(TraceCheck, TooShortForItsLnh)
{
    // LRH says LNH 3 (GRH follows) but the packet only has room for LRH + BTH.
    TestPacketSpec s;
    s.withDeth = false;
    Bytes p = BuildPacket(s); // 8 + 12 + 4 + 2 = 26 bytes
    p[1] = static_cast<uint8_t>((p[1] & 0xFC) | 0x03);
    IbFillCrcs(p.data(), p.size());
    RawPcap pc(197);
    pc.AddErf(NanoSeconds(5), 21, p);
    pc.AddErf(NanoSeconds(6), 21, Bytes{0x00, 0x02, 0x00, 0x01}); // 4 bytes
    const std::string path = pc.Save("short.pcap");
    const TraceCheckReport r = CheckTrace(path);
    ExpectOnly(r, {{"lrh.lnh", 1}, {"lrh.length", 1}});
    std::remove(path.c_str());
}

// ---------------------------------------------------------------------------------------------
// ERF and pcap framing

TEST(TraceCheck, TruncatedFile)
{
    const auto pkts = MixedPackets(3);
    const std::string path = WriteTrace("trunc.pcap", pkts);
    Bytes f = ReadBytes(path);
    f.resize(f.size() - 7);
    WriteFile(path, f);
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_EQ(r.packets, 2u);
    ExpectOnly(r, {{"pcap.record", 1}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 3: unreadable record")) << Describe(r);
    std::remove(path.c_str());
}

TEST(TraceCheck, EveryTruncationPointIsHandled)
{
    // Cutting the file anywhere is an error unless the cut falls on a record boundary.
    const auto pkts = MixedPackets(3);
    const std::string src = WriteTrace("cut-src.pcap", pkts);
    const Bytes full = ReadBytes(src);
    std::vector<size_t> boundaries = {24};
    for (const auto& p : pkts)
    {
        boundaries.push_back(boundaries.back() + 16 + 16 + p.size());
    }
    ASSERT_EQ(boundaries.back(), full.size());
    const std::string path = TempPath("cut.pcap");
    for (size_t len = 0; len <= full.size(); len += (len < 200 ? 1 : 37))
    {
        WriteFile(path, Bytes(full.begin(), full.begin() + len));
        const TraceCheckReport r = CheckTrace(path);
        const bool boundary =
            std::find(boundaries.begin(), boundaries.end(), len) != boundaries.end();
        EXPECT_EQ(r.ok(), boundary) << "cut at " << len << ": " << Describe(r);
    }
    std::remove(path.c_str());
    std::remove(src.c_str());
}

TEST(TraceCheck, ErfHeaderProblems)
{
    TestPacketSpec s;
    s.payload = Payload(12);
    const Bytes pkt = BuildPacket(s);
    auto erf = [&](Time t) {
        Bytes rec(16);
        IbErfPcapWriter::EncodeErfHeader(rec.data(), t, 21, static_cast<uint16_t>(pkt.size()));
        rec.insert(rec.end(), pkt.begin(), pkt.end());
        return rec;
    };
    RawPcap pc(197);
    Bytes rlen = erf(Seconds(1));
    rlen[11] ^= 0x08; // rlen off
    pc.Add(1, 0, rlen);
    Bytes wlen = erf(Seconds(2));
    wlen[15] = static_cast<uint8_t>(wlen[15] + 4); // claims 4 more bytes than the record holds
    pc.Add(2, 0, wlen);
    Bytes type = erf(Seconds(3));
    type[8] = 2; // Ethernet record in an IB trace
    pc.Add(3, 0, type);
    Bytes flags = erf(Seconds(4));
    flags[9] |= 0x08; // truncated flag
    pc.Add(4, 0, flags);
    Bytes lctr = erf(Seconds(5));
    lctr[13] = 3;
    pc.Add(5, 0, lctr);
    pc.Add(6, 500000, erf(Seconds(6))); // pcap time 0.5 ms after the ERF time
    const Bytes cut = erf(Seconds(7));
    pc.Add(7, 0, Bytes(cut.begin(), cut.begin() + 10)); // ERF header cut short
    const std::string path = pc.Save("erf.pcap");
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_EQ(r.packets, 7u);
    ExpectOnly(r, {{"erf.rlen", 1},
                   {"erf.wlen", 1},
                   {"erf.type", 1},
                   {"erf.flags", 1},
                   {"erf.lctr", 1},
                   {"erf.ts", 1},
                   {"erf.header", 1}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 1: ERF rlen"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 2: ERF wlen"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 3: unsupported ERF record type 2"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 4: ERF flags"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 5: ERF lctr 3"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 6: ERF timestamp"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 7: record of 10 bytes"));
    std::remove(path.c_str());
}

TEST(TraceCheck, ErfExtensionHeadersAndPadding)
{
    TestPacketSpec s;
    s.payload = Payload(3);
    const Bytes pkt = BuildPacket(s);
    // Two 8-byte extension headers (type byte bit 7, then "more" bit in the first one) and
    // 4 bytes of alignment padding after the packet, as DAG cards write.
    Bytes rec(16);
    IbErfPcapWriter::EncodeErfHeader(rec.data(), Seconds(1), 21, static_cast<uint16_t>(pkt.size()));
    rec[8] |= 0x80;
    Bytes ext1(8, 0);
    ext1[0] = 0x80 | 0x05;
    Bytes ext2(8, 0);
    ext2[0] = 0x05;
    rec.insert(rec.end(), ext1.begin(), ext1.end());
    rec.insert(rec.end(), ext2.begin(), ext2.end());
    rec.insert(rec.end(), pkt.begin(), pkt.end());
    rec.insert(rec.end(), 4, 0);
    const uint16_t rlen = static_cast<uint16_t>(rec.size());
    rec[10] = static_cast<uint8_t>(rlen >> 8);
    rec[11] = static_cast<uint8_t>(rlen);
    RawPcap pc(197);
    pc.Add(1, 0, rec);
    // And one whose extension-header chain runs off the end.
    Bytes bad(16);
    IbErfPcapWriter::EncodeErfHeader(bad.data(), Seconds(2), 21, 0);
    bad[8] |= 0x80;
    bad.push_back(0x80);
    bad[11] = static_cast<uint8_t>(bad.size());
    pc.Add(2, 0, bad);
    const std::string path = pc.Save("ext.pcap");
    const TraceCheckReport r = CheckTrace(path);
    ExpectOnly(r, {{"erf.ext", 1}});
    EXPECT_EQ(r.crcsChecked, 2u);
    std::remove(path.c_str());
}

TEST(TraceCheck, SnapshotTruncation)
{
    TestPacketSpec s;
    s.payload = Payload(64);
    const Bytes pkt = BuildPacket(s);
    Bytes rec(16);
    IbErfPcapWriter::EncodeErfHeader(rec.data(), Seconds(1), 21, static_cast<uint16_t>(pkt.size()));
    rec.insert(rec.end(), pkt.begin(), pkt.begin() + 30);
    RawPcap pc(197);
    pc.Add(1, 0, rec, static_cast<uint32_t>(16 + pkt.size()));
    const std::string path = pc.Save("snap.pcap");
    const TraceCheckReport r = CheckTrace(path);
    ExpectOnly(r, {{"pcap.snaplen", 1}});
    std::remove(path.c_str());
}

TEST(TraceCheck, FlowControlRecords)
{
    RawPcap pc(197);
    pc.AddErf(NanoSeconds(10), 25, FlowControlPacket(IbFlowControlOp::Init, 0, 0, 2048));
    pc.AddErf(NanoSeconds(20), 25, FlowControlPacket(IbFlowControlOp::Normal, 77, 1, 300));
    Bytes badCrc = FlowControlPacket(IbFlowControlOp::Normal, 78, 1, 300);
    badCrc[3] ^= 0x01; // FCCL changed after the LPCRC was computed
    pc.AddErf(NanoSeconds(30), 25, badCrc);
    Bytes reserved = FlowControlPacket(IbFlowControlOp::Normal, 1, 2, 3);
    reserved[0] |= 0x70; // Op 7
    reserved[4] = 0;
    IbStoreVcrc(reserved.data() + 4, IbComputeLpcrc(reserved.data()));
    pc.AddErf(NanoSeconds(40), 25, reserved);
    Bytes longer = FlowControlPacket(IbFlowControlOp::Normal, 1, 2, 3);
    longer.push_back(0);
    pc.AddErf(NanoSeconds(50), 25, longer);
    const std::string path = pc.Save("fc.pcap");
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_EQ(r.packets, 5u);
    ExpectOnly(r, {{"lpcrc", 1}, {"fc.op", 1}, {"fc.length", 1}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 3: LPCRC mismatch"));
    EXPECT_EQ(r.crcsChecked, 4u);

    RawPcap ok(197);
    ok.AddErf(NanoSeconds(10), 25, FlowControlPacket(IbFlowControlOp::Normal, 4095, 15, 4095));
    const std::string okPath = ok.Save("fc-ok.pcap");
    EXPECT_TRUE(CheckTrace(okPath).ok());
    std::remove(path.c_str());
    std::remove(okPath.c_str());
}

// ---------------------------------------------------------------------------------------------
// Other link types

TEST(TraceCheck, LinkType247RawInfiniband)
{
    RawPcap pc(247);
    const auto pkts = MixedPackets(3);
    for (const auto& p : pkts)
    {
        pc.Add(0, 0, p);
    }
    Bytes bad = pkts[0];
    bad[bad.size() - 2] ^= 0xFF;
    pc.Add(0, 0, bad);
    const std::string path = pc.Save("lt247.pcap");
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_EQ(r.packets, 4u);
    EXPECT_EQ(r.linkType, "INFINIBAND (247)");
    ExpectOnly(r, {{"vcrc", 1}});
    std::remove(path.c_str());
}

TEST(TraceCheck, UnsupportedLinkType)
{
    RawPcap pc(105); // IEEE 802.11
    pc.Add(0, 0, Bytes(30, 0));
    pc.Add(0, 1, Bytes(30, 0));
    const std::string path = pc.Save("lt105.pcap");
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_EQ(r.packets, 2u);
    ExpectOnly(r, {{"linktype", 1}});
    EXPECT_EQ(r.firstProblems.at(0), "unsupported link type 105");
    std::remove(path.c_str());
}

// Issue 15: `cnuas pcap check` refused the Modbus RTU traces the rack model writes (link type
// 252, exported PDUs to Wireshark's "mbrtu" dissector) as "unsupported link type 252".
TEST(TraceCheck, ModbusRtuUpperPdu)
{
    using Dir = ModbusPcapWriter::Direction;
    const Bytes good = ModbusRtuBuildAdu(1, {0x03, 0x00, 0x00, 0x00, 0x02});
    // The writer's own output: every frame framed and its CRC-16 good.
    const std::string written = TempPath("modbus-writer.pcap");
    {
        ModbusPcapWriter w;
        ASSERT_TRUE(w.Open(written));
        w.Write(MicroSeconds(1), good.data(), good.size(), Dir::Request);
        const Bytes answer = ModbusRtuBuildAdu(1, {0x03, 0x04, 0x12, 0x34, 0x56, 0x78});
        w.Write(MicroSeconds(900), answer.data(), answer.size(), Dir::Response);
        w.Write(MicroSeconds(2000), good.data(), good.size(), Dir::Unknown);
        w.Close();
    }
    const TraceCheckReport ok = CheckTrace(written);
    EXPECT_TRUE(ok.ok()) << (ok.firstProblems.empty() ? "" : ok.firstProblems[0]);
    EXPECT_EQ(ok.packets, 3u);
    EXPECT_EQ(ok.crcsChecked, 3u);
    EXPECT_EQ(ok.Summary(),
              written + ": 3 packets, linktype WIRESHARK_UPPER_PDU (252), all CRCs good (3 "
                        "checked)");
    std::remove(written.c_str());

    // What a broken writer or a damaged file would hold.
    RawPcap pc(252);
    auto record = [](const Bytes& frame) {
        return ModbusPcapWriter::EncodeRecord(frame.data(), frame.size(), Dir::Request);
    };
    pc.Add(0, 1, record(good));
    Bytes badCrc = good;
    badCrc.back() ^= 0x01;
    pc.Add(0, 2, record(badCrc));
    pc.Add(0, 3, record({0x01, 0x03, 0x00})); // shorter than address + FC + CRC
    pc.Add(0, 4, record(ModbusRtuBuildAdu(250, {0x03, 0x00, 0x00, 0x00, 0x01})));
    pc.Add(0, 5, Bytes{0x00, 0x0C, 0x00, 0x20, 'm', 'b'}); // a tag longer than the record
    const std::string path = pc.Save("modbus-bad.pcap");
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_EQ(r.packets, 5u);
    EXPECT_EQ(r.crcsChecked, 3u);
    ExpectOnly(r, {{"modbus.crc", 1}, {"modbus.length", 1}, {"modbus.address", 1},
                   {"exppdu.tags", 1}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 2: Modbus RTU CRC mismatch"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 3: Modbus RTU frame of 3 bytes"));
    EXPECT_TRUE(HasProblemContaining(r, "packet 4: slave address 250 is reserved"));
    std::remove(path.c_str());
}

TEST(TraceCheck, EthernetRoceV2)
{
    Bytes cnp = HardwareCnpFrame();
    ASSERT_EQ(cnp.size(), 74u);

    // Variant fields changed in flight: TTL, ECN bits, IPv4 checksum; still a good ICRC.
    Bytes hop = cnp;
    hop[14 + 8] -= 3;
    hop[14 + 1] |= 0x03;
    hop[14 + 10] ^= 0x5A;
    // Invariant field changed: destination QP.
    Bytes corrupt = cnp;
    corrupt[14 + 20 + 8 + 7] ^= 0x01;
    // VLAN-tagged copy.
    Bytes tagged(cnp.begin(), cnp.begin() + 12);
    const Bytes tag = {0x81, 0x00, 0x20, 0x05};
    tagged.insert(tagged.end(), tag.begin(), tag.end());
    tagged.insert(tagged.end(), cnp.begin() + 12, cnp.end());
    // A UDP frame to another port: counted, nothing to check.
    Bytes dns = cnp;
    dns[14 + 22] = 0x00;
    dns[14 + 23] = 0x35;
    // IPv4 total length beyond the frame.
    Bytes longIp = cnp;
    longIp[14 + 3] = 0x50;
    // Ethernet padding after the IP packet (frame padded to a minimum size) is not the ICRC.
    Bytes padded = cnp;
    padded.insert(padded.end(), 6, 0);

    RawPcap pc(1);
    for (const Bytes* f : {&cnp, &hop, &corrupt, &tagged, &dns, &longIp, &padded})
    {
        pc.Add(1, 0, *f);
    }
    const std::string path = pc.Save("roce.pcap");
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_EQ(r.packets, 7u);
    EXPECT_EQ(r.linkType, "EN10MB (1)");
    ExpectOnly(r, {{"icrc", 1}, {"ipv4.length", 1}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 3: RoCEv2 ICRC mismatch"));
    EXPECT_EQ(r.crcsChecked, 5u);
    std::remove(path.c_str());

    RawPcap plain(1);
    plain.Add(1, 0, dns);
    const std::string plainPath = plain.Save("udp.pcap");
    const TraceCheckReport p = CheckTrace(plainPath);
    EXPECT_TRUE(p.ok());
    EXPECT_EQ(p.Summary(),
              plainPath + ": 1 packet, linktype EN10MB (1), no errors (no CRC-carrying packets)");
    std::remove(plainPath.c_str());
}

TEST(TraceCheck, EthernetRoceV2Ipv6)
{
    // Eth + IPv6 + UDP 4791 + BTH (RC SEND Only) + 8 bytes + ICRC.
    Bytes f(14, 0);
    f[12] = 0x86;
    f[13] = 0xDD;
    Bytes ip(40 + 8 + 12 + 8 + 4, 0);
    ip[0] = 0x60;
    ip[4] = 0;
    ip[5] = 8 + 12 + 8 + 4;
    ip[6] = 17;
    ip[7] = 64;
    for (int i = 0; i < 32; ++i)
    {
        ip[8 + i] = static_cast<uint8_t>(0xA0 + i);
    }
    ip[42] = 0x12;
    ip[43] = 0xB7;
    ip[45] = 8 + 12 + 8 + 4;
    ip[48] = 0x04;
    ip[50] = ip[51] = 0xFF;
    ip[55] = 0x42;
    IbStoreIcrc(ip.data() + ip.size() - 4, IbComputeRoceIcrc(ip.data(), ip.size() - 4));
    f.insert(f.end(), ip.begin(), ip.end());
    Bytes hop = f;
    hop[14 + 7] = 3;     // hop limit
    hop[14 + 1] ^= 0x0F; // flow label
    Bytes bad = f;
    bad[14 + 60] ^= 0x80; // payload
    RawPcap pc(1);
    pc.Add(0, 0, f);
    pc.Add(0, 0, hop);
    pc.Add(0, 0, bad);
    const std::string path = pc.Save("roce6.pcap");
    const TraceCheckReport r = CheckTrace(path);
    ExpectOnly(r, {{"icrc", 1}});
    EXPECT_TRUE(HasProblemContaining(r, "packet 3:"));
    std::remove(path.c_str());
}

// ---------------------------------------------------------------------------------------------
// Garbage in, report out

TEST(TraceCheck, NonPcapAndMissingFiles)
{
    const std::string text = TempPath("notes.txt");
    {
        std::ofstream f(text);
        f << "this is not a capture file\n";
    }
    for (const std::string& path : {text, TempPath("does-not-exist.pcap")})
    {
        const TraceCheckReport r = CheckTrace(path);
        ExpectOnly(r, {{"file", 1}});
        EXPECT_TRUE(r.linkType.empty());
        EXPECT_EQ(r.packets, 0u);
        EXPECT_NE(r.Summary().find("cannot read as pcap"), std::string::npos) << r.Summary();
    }
    std::remove(text.c_str());
}

TEST(TraceCheck, RandomBytesNeverCrash)
{
    std::mt19937 rng(20240601);
    const std::string path = TempPath("random.bin");
    for (size_t size : {0u, 1u, 23u, 24u, 25u, 100u, 5000u, 70000u})
    {
        Bytes b(size);
        for (auto& x : b)
        {
            x = static_cast<uint8_t>(rng());
        }
        WriteFile(path, b);
        EXPECT_FALSE(CheckTrace(path).ok()) << "size " << size;
    }
    // A valid pcap header followed by random records, for each supported link type.
    for (uint32_t lt : {1u, 197u, 247u})
    {
        for (int round = 0; round < 20; ++round)
        {
            RawPcap pc(lt);
            Bytes b = pc.GetBytes();
            const size_t n = 16 + rng() % 3000;
            for (size_t i = 0; i < n; ++i)
            {
                b.push_back(static_cast<uint8_t>(rng()));
            }
            WriteFile(path, b);
            const TraceCheckReport r = CheckTrace(path);
            EXPECT_FALSE(r.ok()) << "linktype " << lt << " round " << round;
        }
    }
    std::remove(path.c_str());
}

TEST(TraceCheck, MutatedTracesNeverCrash)
{
    // Random byte mutations of a valid trace and of a RoCE trace: headers, lengths and
    // CRCs all get hit. Nothing may crash (ASan/UBSan watch this in Debug builds), and any
    // mutation inside a packet's CRC coverage must be reported.
    std::mt19937 rng(7);
    const std::string src = WriteTrace("mut-src.pcap", MixedPackets(6));
    const Bytes good = ReadBytes(src);
    const std::string path = TempPath("mut.pcap");
    for (int round = 0; round < 300; ++round)
    {
        Bytes b = good;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < flips; ++i)
        {
            const size_t at = rng() % b.size();
            b[at] = static_cast<uint8_t>(b[at] ^ (1 + rng() % 255));
        }
        WriteFile(path, b);
        (void)CheckTrace(path);
    }
    // Single flips within the first packet's bytes (after the ERF header) are always caught.
    const size_t pktStart = 24 + 16 + 16;
    const size_t pktLen = MixedPackets(1)[0].size();
    for (size_t at = pktStart; at < pktStart + pktLen; ++at)
    {
        Bytes b = good;
        b[at] ^= 0x01;
        WriteFile(path, b);
        EXPECT_FALSE(CheckTrace(path).ok()) << "flip at " << at;
    }
    std::remove(path.c_str());
    std::remove(src.c_str());
}

TEST(TraceCheck, ProblemListIsCapped)
{
    auto pkts = MixedPackets(150);
    for (auto& p : pkts)
    {
        p.back() ^= 1;
    }
    const std::string path = WriteTrace("many.pcap", pkts);
    const TraceCheckReport r = CheckTrace(path);
    EXPECT_EQ(r.errors, 150u);
    EXPECT_EQ(r.firstProblems.size(), TraceCheckReport::kMaxProblems);
    std::remove(path.c_str());
}

// ---------------------------------------------------------------------------------------------
// tshark

namespace
{
bool
TsharkAvailable()
{
    int status = -1;
    RunCommand("tshark --version >/dev/null 2>&1", &status);
    return status == 0;
}

std::vector<std::vector<std::string>>
TsharkFields(const std::string& path, const std::vector<std::string>& fields)
{
    int status = -1;
    auto rows = cnuas_test::TsharkFieldRows(path, fields, "", &status);
    EXPECT_EQ(status, 0) << "tshark on " << path;
    return rows;
}

/// Frames tshark flags as malformed or with an error-severity expert item.
std::string
TsharkProblems(const std::string& path)
{
    int status = -1;
    const std::string out = RunCommand("tshark -r '" + path +
                                           "' -Y '_ws.malformed || _ws.expert.severity >= "
                                           "0x00800000' 2>/dev/null",
                                       &status);
    EXPECT_EQ(status, 0);
    return out;
}

std::string
HexField(uint64_t v, int width)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "0x%0*llx", width, static_cast<unsigned long long>(v));
    return buf;
}

std::string
Ipv6Text(const IbGid& gid)
{
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, gid.data(), buf, sizeof(buf));
    return buf;
}
} // namespace

TEST(TraceCheck, TsharkDecodesWhatWasWritten)
{
    ASSERT_TRUE(TsharkAvailable())
        << "tshark is required for this test (Debian package tshark, 4.0.x); install it";

    std::vector<TestPacketSpec> specs;
    for (uint32_t i = 0; i < 3; ++i)
    {
        // UD SEND Only, LRH + BTH + DETH + payload. SrcQP/DestQP other than 0 and 1: Wireshark
        // decodes the payload of QP0/QP1 traffic as a MAD.
        TestPacketSpec s;
        s.dlid = static_cast<uint16_t>(0x10 + i);
        s.slid = static_cast<uint16_t>(0x200 + i);
        s.opCode = 0x64;
        s.destQp = 0x000100 + i;
        s.psn = 0xABC000 + i;
        s.qkey = 0x11110000 + i;
        s.srcQp = 0x42 + i;
        s.payload = Payload(13 + 50 * i, static_cast<uint8_t>(i));
        specs.push_back(s);
    }
    for (uint32_t i = 0; i < 2; ++i)
    {
        // LRH + GRH + BTH (RC RDMA WRITE Last, opcode 0x08: BTH only) + payload.
        TestPacketSpec s;
        s.global = true;
        s.withDeth = false;
        s.dlid = 0x30;
        s.slid = static_cast<uint16_t>(0x31 + i);
        s.opCode = 0x08;
        s.destQp = 0x777;
        s.psn = 5 + i;
        s.tClass = 0x20;
        s.flowLabel = 0x54321 + i;
        s.hopLmt = static_cast<uint8_t>(255 - i);
        s.sgid = IbMakeGid(kIbDefaultSubnetPrefix, 0x0002C90300001000ULL + i);
        s.dgid = IbMakeGid(0xFEC0000000000000ULL, 0x0002C90300002000ULL);
        s.payload = Payload(64 + i, static_cast<uint8_t>(9 + i));
        specs.push_back(s);
    }
    std::vector<Bytes> pkts;
    for (const auto& s : specs)
    {
        pkts.push_back(BuildPacket(s));
    }
    const std::string path = TempPath("tshark.pcap");
    {
        IbErfPcapWriter w;
        ASSERT_TRUE(w.Open(path));
        for (size_t i = 0; i < pkts.size(); ++i)
        {
            w.Write(Seconds(1) + NanoSeconds(static_cast<int64_t>(123 + 1000 * i)),
                    pkts[i].data(),
                    static_cast<uint32_t>(pkts[i].size()));
        }
    }
    ASSERT_TRUE(CheckTrace(path).ok());

    const auto rows = TsharkFields(path,
                                   {"frame.time_epoch",
                                    "erf.types.type",
                                    "infiniband.lrh.lnh",
                                    "infiniband.lrh.dlid",
                                    "infiniband.lrh.slid",
                                    "infiniband.lrh.pktlen",
                                    "infiniband.bth.opcode",
                                    "infiniband.bth.padcnt",
                                    "infiniband.bth.destqp",
                                    "infiniband.bth.psn",
                                    "infiniband.deth.q_key",
                                    "infiniband.deth.srcqp",
                                    "infiniband.grh.sgid",
                                    "infiniband.grh.dgid",
                                    "infiniband.grh.flowlabel",
                                    "infiniband.grh.hoplmt",
                                    "infiniband.grh.paylen",
                                    "infiniband.invariant.crc",
                                    "infiniband.variant.crc"});
    ASSERT_EQ(rows.size(), pkts.size());
    for (size_t i = 0; i < pkts.size(); ++i)
    {
        const auto& s = specs[i];
        const Bytes& p = pkts[i];
        const auto& row = rows[i];
        ASSERT_EQ(row.size(), 19u) << "frame " << i + 1;
        SCOPED_TRACE("frame " + std::to_string(i + 1));
        char ts[32];
        std::snprintf(ts, sizeof(ts), "1.%09d", static_cast<int>(123 + 1000 * i));
        EXPECT_EQ(row[0], ts);
        EXPECT_EQ(row[1], "21");
        EXPECT_EQ(row[2], s.global ? "0x03" : "0x02");
        EXPECT_EQ(row[3], std::to_string(s.dlid));
        EXPECT_EQ(row[4], std::to_string(s.slid));
        EXPECT_EQ(row[5], std::to_string((p.size() - 2) / 4));
        EXPECT_EQ(row[6], std::to_string(s.opCode));
        EXPECT_EQ(row[7], std::to_string((4 - s.payload.size() % 4) % 4));
        EXPECT_EQ(row[8], HexField(s.destQp, 6));
        EXPECT_EQ(row[9], std::to_string(s.psn));
        if (s.withDeth)
        {
            EXPECT_EQ(row[10], HexField(s.qkey, 16));
            EXPECT_EQ(row[11], HexField(s.srcQp, 8));
        }
        else
        {
            EXPECT_EQ(row[10], "");
        }
        if (s.global)
        {
            EXPECT_EQ(row[12], Ipv6Text(s.sgid));
            EXPECT_EQ(row[13], Ipv6Text(s.dgid));
            EXPECT_EQ(row[14], std::to_string(s.flowLabel));
            EXPECT_EQ(row[15], std::to_string(s.hopLmt));
            EXPECT_EQ(row[16], std::to_string(p.size() - 8 - 40 - 2));
        }
        else
        {
            EXPECT_EQ(row[12], "");
        }
        // Wireshark shows the CRC fields as big-endian numbers of the wire bytes; ours are
        // little-endian, so tshark's numbers are the byte-swapped CRC values.
        const uint32_t icrc = IbLoadIcrc(p.data() + p.size() - 6);
        const uint16_t vcrc = IbLoadVcrc(p.data() + p.size() - 2);
        EXPECT_EQ(row[17], HexField(__builtin_bswap32(icrc), 8));
        EXPECT_EQ(row[18], HexField(__builtin_bswap16(vcrc), 4));
    }

    EXPECT_EQ(TsharkProblems(path), "") << "tshark flags malformed packets";

    // The malformed-packet probe itself works: Wireshark 4.0 mis-dissects flow-control records
    // (ERF type 25) as "[Malformed Packet: InfiniBand Link]".
    RawPcap fc(197);
    fc.AddErf(NanoSeconds(1), 25, FlowControlPacket(IbFlowControlOp::Init, 0, 0, 100));
    const std::string fcPath = fc.Save("tshark-fc.pcap");
    EXPECT_NE(TsharkProblems(fcPath), "");
    std::remove(fcPath.c_str());
    std::remove(path.c_str());
}

// ---------------------------------------------------------------------------------------------
// cnuas pcap check

namespace
{
std::string
Cnuas(const std::string& args, int* status)
{
    return RunCommand(std::string(CNUAS_BINARY_DIR) + "/bin/cnuas " + args + " 2>&1", status);
}
} // namespace

TEST(CnuasPcapCommand, ExitCodesAndOutput)
{
    const std::string good = WriteTrace("cli-good.pcap", MixedPackets(5));
    auto badPkts = MixedPackets(30);
    for (auto& p : badPkts)
    {
        p.back() ^= 1;
    }
    const std::string bad = WriteTrace("cli-bad.pcap", badPkts);

    int st = -1;
    std::string out = Cnuas("pcap check '" + good + "'", &st);
    EXPECT_EQ(st, 0) << out;
    EXPECT_EQ(out, good + ": 5 packets, linktype ERF (197), all CRCs good (10 checked)\n");

    out = Cnuas("pcap check '" + good + "' '" + bad + "'", &st);
    EXPECT_EQ(st, 1) << out;
    EXPECT_NE(out.find(good + ": 5 packets"), std::string::npos) << out;
    EXPECT_NE(out.find(bad + ": 30 packets, linktype ERF (197), 30 errors (vcrc: 30)"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("  packet 1: VCRC mismatch"), std::string::npos) << out;
    EXPECT_NE(out.find("  packet 20: VCRC mismatch"), std::string::npos) << out;
    EXPECT_EQ(out.find("  packet 21: VCRC mismatch"), std::string::npos) << out; // max 20
    EXPECT_NE(out.find("10 more"), std::string::npos) << out;

    // A file that cannot be read is an input error, not a trace that failed its checks.
    out = Cnuas("pcap check /nonexistent/file.pcap", &st);
    EXPECT_EQ(st, 3) << out;

    out = Cnuas("pcap --help", &st);
    EXPECT_EQ(st, 0) << out;
    EXPECT_NE(out.find("cnuas pcap check FILE..."), std::string::npos) << out;
    for (const char* args : {"pcap", "pcap check", "pcap frobnicate x.pcap"})
    {
        out = Cnuas(args, &st);
        EXPECT_EQ(st, 2) << args << ": " << out;
        EXPECT_NE(out.find("usage"), std::string::npos) << out;
    }
    std::remove(good.c_str());
    std::remove(bad.c_str());
}
