// Ethernet wire formats: the 802.1Qbb PFC PDU and frame byte for byte, Ethernet/802.1Q/IPv4/UDP
// framing, FCS, wire time, and what a port does with malformed bytes.
#include "test-roce-util.h"

#include "models/roce/eth-frame.h"
#include "models/roce/eth-net-device.h"
#include "models/roce/eth-pfc-header.h"

#include "ns3/packet.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>
#include <random>
#include <zlib.h>

using namespace ns3;
using namespace cnuas_test;

namespace
{
uint32_t
ZlibCrc32(const uint8_t* p, size_t n)
{
    return static_cast<uint32_t>(crc32(0, p, static_cast<uInt>(n)));
}

std::vector<uint8_t>
WithFcs(const EthFrame& f)
{
    std::vector<uint8_t> b;
    f.Materialize(b, true);
    return b;
}

EthFrame
SampleUdp(bool tagged, uint32_t payload)
{
    EthFrame f;
    f.kind = EthFrameKind::Udp;
    f.dstMac = 0x0A0B0C0D0E0FULL;
    f.srcMac = 0x020000000101ULL;
    f.vlanTagged = tagged;
    f.pcp = 5;
    f.vid = 0x123;
    f.srcIp = 0x0A000001;
    f.dstIp = 0x0A000002;
    f.srcPort = 0xC001;
    f.dstPort = 4791;
    f.dscp = 26;
    f.ecn = kEcnEct0;
    f.ttl = 64;
    f.ipId = 0x4242;
    f.payloadBytes = payload;
    std::vector<uint8_t> pl(payload);
    for (uint32_t i = 0; i < payload; ++i)
    {
        pl[i] = static_cast<uint8_t>(i * 7 + 3);
    }
    if (payload)
    {
        f.payload = Create<Packet>(pl.data(), payload);
    }
    f.ComputeSize();
    return f;
}
} // namespace

TEST(RoceWire, PfcPduBytesAsIn8021Qbb)
{
    EthPfcHeader h;
    h.classEnable = 0x0009; // priorities 0 and 3
    h.quanta[0] = 0x1234;
    h.quanta[3] = 0xFFFF;
    uint8_t b[20];
    h.WriteTo(b);
    // 802.1Qbb §36.1.3: opcode 01-01, class-enable vector (priority 0 = least significant
    // bit), then time[0]..time[7], big-endian.
    const uint8_t expect[20] = {0x01, 0x01, 0x00, 0x09, 0x12, 0x34, 0x00, 0x00, 0x00, 0x00,
                                0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    EXPECT_EQ(0, std::memcmp(b, expect, 20));
    // The ns3::Packet path writes the same bytes and reads them back.
    Ptr<Packet> p = Create<Packet>();
    p->AddHeader(h);
    ASSERT_EQ(p->GetSize(), 20u);
    uint8_t viaPacket[20];
    p->CopyData(viaPacket, 20);
    EXPECT_EQ(0, std::memcmp(viaPacket, expect, 20));
    EthPfcHeader back;
    p->RemoveHeader(back);
    EXPECT_EQ(back.classEnable, 0x0009);
    EXPECT_EQ(back.quanta[0], 0x1234);
    EXPECT_EQ(back.quanta[3], 0xFFFF);
}

TEST(RoceWire, PfcFrameIsA64ByteMacControlFrame)
{
    EthFrame f;
    f.kind = EthFrameKind::Pfc;
    f.dstMac = kEthMacControlDst;
    f.srcMac = 0x020000000203ULL;
    f.pfc.classEnable = 0x0008;
    f.pfc.quanta[3] = 0x00FF;
    f.ComputeSize();
    const std::vector<uint8_t> b = WithFcs(f);
    ASSERT_EQ(b.size(), 64u);
    const uint8_t head[] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00,
                            0x02, 0x03, 0x88, 0x08, 0x01, 0x01, 0x00, 0x08};
    EXPECT_EQ(0, std::memcmp(b.data(), head, sizeof(head)));
    EXPECT_EQ(b[14 + 4 + 6], 0x00); // time[3] high
    EXPECT_EQ(b[14 + 4 + 7], 0xFF); // time[3] low
    for (size_t i = 14 + 20; i < 60; ++i)
    {
        EXPECT_EQ(b[i], 0) << "pad byte " << i; // 802.3 §3.2.8: pad to the minimum frame
    }
    // FCS: CRC-32 over the frame, least significant byte first (802.3 §3.2.9); zlib's crc32
    // is the same polynomial and conditioning.
    const uint32_t crc = ZlibCrc32(b.data(), 60);
    EXPECT_EQ(b[60], crc & 0xFF);
    EXPECT_EQ(b[61], (crc >> 8) & 0xFF);
    EXPECT_EQ(b[62], (crc >> 16) & 0xFF);
    EXPECT_EQ(b[63], crc >> 24);
    EXPECT_EQ(EthCrc32(b.data(), 60), crc);
}

TEST(RoceWire, TaggedUdpFrameLayout)
{
    const EthFrame f = SampleUdp(true, 100);
    const std::vector<uint8_t> b = WithFcs(f);
    ASSERT_EQ(b.size(), 14u + 4 + 20 + 8 + 100 + 4);
    EXPECT_EQ(b[12], 0x81);
    EXPECT_EQ(b[13], 0x00);
    // 802.1Q TCI: PCP 5 in the top three bits, DEI 0, VID 0x123.
    EXPECT_EQ(b[14], (5 << 5) | 0x01);
    EXPECT_EQ(b[15], 0x23);
    EXPECT_EQ(b[16], 0x08);
    EXPECT_EQ(b[17], 0x00);
    const uint8_t* ip = b.data() + 18;
    EXPECT_EQ(ip[0], 0x45);
    EXPECT_EQ(ip[1], (26 << 2) | kEcnEct0);
    EXPECT_EQ((ip[2] << 8) | ip[3], 20 + 8 + 100);
    EXPECT_EQ(ip[9], 17);
    EXPECT_EQ(OnesComplementSum(ip, 20), 0xFFFF);
    const uint8_t* udp = ip + 20;
    EXPECT_EQ((udp[0] << 8) | udp[1], 0xC001);
    EXPECT_EQ((udp[2] << 8) | udp[3], 4791);
    EXPECT_EQ((udp[4] << 8) | udp[5], 108);
    for (uint32_t i = 0; i < 100; ++i)
    {
        ASSERT_EQ(udp[8 + i], static_cast<uint8_t>(i * 7 + 3));
    }
    EXPECT_EQ(ZlibCrc32(b.data(), b.size() - 4),
              uint32_t(b[b.size() - 4]) | uint32_t(b[b.size() - 3]) << 8 |
                  uint32_t(b[b.size() - 2]) << 16 | uint32_t(b[b.size() - 1]) << 24);
}

TEST(RoceWire, ShortFramesArePaddedTo64)
{
    const EthFrame f = SampleUdp(false, 0);
    EXPECT_EQ(f.bytes, 64u); // 14 + 20 + 8 + 4 = 46, padded
    const std::vector<uint8_t> b = WithFcs(f);
    ASSERT_EQ(b.size(), 64u);
    for (size_t i = 14 + 28; i < 60; ++i)
    {
        EXPECT_EQ(b[i], 0);
    }
    std::vector<uint8_t> noFcs;
    f.Materialize(noFcs, false);
    EXPECT_EQ(noFcs.size(), 60u);
}

TEST(RoceWire, ParseRoundTrip)
{
    for (bool tagged : {false, true})
    {
        const EthFrame f = SampleUdp(tagged, 333);
        const std::vector<uint8_t> b = WithFcs(f);
        EthFrame g;
        ASSERT_EQ(EthFrame::Parse(b.data(), b.size(), g), EthParseError::None);
        EXPECT_EQ(g.vlanTagged, tagged);
        if (tagged)
        {
            EXPECT_EQ(g.pcp, 5);
            EXPECT_EQ(g.vid, 0x123);
        }
        EXPECT_EQ(g.dstMac, f.dstMac);
        EXPECT_EQ(g.srcMac, f.srcMac);
        EXPECT_EQ(g.srcIp, f.srcIp);
        EXPECT_EQ(g.dstIp, f.dstIp);
        EXPECT_EQ(g.srcPort, f.srcPort);
        EXPECT_EQ(g.dstPort, f.dstPort);
        EXPECT_EQ(g.dscp, 26);
        EXPECT_EQ(g.ecn, kEcnEct0);
        EXPECT_EQ(g.payloadBytes, 333u);
        EXPECT_EQ(g.bytes, f.bytes);
        std::vector<uint8_t> again;
        g.Materialize(again, true);
        EXPECT_EQ(again, b);
    }
}

TEST(RoceWire, WireTimeCountsPreambleGapAndFcs)
{
    EthFabric fab = MakeEthPair("25Gbps");
    Ptr<EthNetDevice> a = fab.HostPort(0);
    // 1000-byte payload: 14 + 20 + 8 + 1000 + 4 = 1046-byte frame, plus 8 preamble/SFD and 12
    // of gap = 1066 bytes = 8528 bits; at 25 Gb/s 341.12 ns.
    EXPECT_EQ(a->WireTime(1046).GetPicoSeconds(), 341120);
    // A pause quantum is 512 bit times: 20.48 ns at 25 Gb/s.
    EXPECT_DOUBLE_EQ(a->QuantumPs(), 20480.0);
    for (const char* rate : {"10Gbps", "40Gbps", "100Gbps", "200Gbps", "400Gbps", "800Gbps"})
    {
        EthFabric f2 = MakeEthPair(rate);
        const double bps = DataRate(rate).GetBitRate();
        EXPECT_EQ(f2.HostPort(0)->WireTime(64).GetPicoSeconds(),
                  std::llround(84 * 8 / bps * 1e12))
            << rate;
    }
    Simulator::Destroy();
}

TEST(RoceWire, MalformedFramesAreDroppedAndCounted)
{
    EthFabric fab = MakeEthPair();
    Ptr<EthNetDevice> b = fab.HostPort(1);
    uint64_t delivered = 0;
    struct Count
    {
        uint64_t* n;
        void Rx(Ptr<EthNetDevice>, const EthFrame&) { (*n)++; }
    } counter{&delivered};
    b->SetEthReceiveCallback(MakeCallback(&Count::Rx, &counter));

    EthFrame good = SampleUdp(false, 200);
    good.dstIp = b->GetIpv4();
    std::vector<uint8_t> bytes = WithFcs(good);
    b->InjectReceivedBytes(bytes.data(), bytes.size());
    EXPECT_EQ(delivered, 1u);

    auto refix = [](std::vector<uint8_t>& v) {
        const uint32_t c = EthCrc32(v.data(), v.size() - 4);
        for (int i = 0; i < 4; ++i)
        {
            v[v.size() - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
        }
    };
    struct Case
    {
        const char* what;
        std::vector<uint8_t> frame;
        EthDropReason reason;
    };
    std::vector<Case> cases;
    cases.push_back({"runt", std::vector<uint8_t>(bytes.begin(), bytes.begin() + 40),
                     EthDropReason::Runt});
    {
        auto v = bytes;
        v[30] ^= 0x10; // a bit flipped on the wire, FCS not recomputed
        cases.push_back({"bad fcs", v, EthDropReason::BadFcs});
    }
    {
        auto v = bytes;
        v[12] = 0x08; // ARP: not modelled
        v[13] = 0x06;
        refix(v);
        cases.push_back({"ethertype", v, EthDropReason::UnknownEthertype});
    }
    {
        auto v = bytes;
        v[14 + 10] ^= 0xFF; // IPv4 header checksum
        refix(v);
        cases.push_back({"ip checksum", v, EthDropReason::BadIpv4});
    }
    {
        auto v = bytes;
        v[14 + 2] = 0x40; // IPv4 total length beyond the frame
        v[14 + 10] = v[14 + 11] = 0;
        const uint16_t ck = static_cast<uint16_t>(~OnesComplementSum(v.data() + 14, 20));
        v[14 + 10] = ck >> 8;
        v[14 + 11] = ck & 0xFF;
        refix(v);
        cases.push_back({"ip length", v, EthDropReason::BadIpv4});
    }
    {
        auto v = bytes;
        v[14 + 20 + 5] ^= 0x01; // UDP length
        refix(v);
        cases.push_back({"udp length", v, EthDropReason::BadUdp});
    }
    {
        EthFrame pause;
        pause.kind = EthFrameKind::Pfc;
        pause.dstMac = kEthMacControlDst;
        pause.pfc.opcode = kMacControlOpcodePause; // 802.3x PAUSE: not modelled
        pause.ComputeSize();
        cases.push_back({"802.3x pause", WithFcs(pause), EthDropReason::BadControl});
    }
    {
        auto v = bytes;
        v[14 + 16 + 3] ^= 0x7F; // destination IP: another host's
        v[14 + 10] = v[14 + 11] = 0;
        const uint16_t ck = static_cast<uint16_t>(~OnesComplementSum(v.data() + 14, 20));
        v[14 + 10] = ck >> 8;
        v[14 + 11] = ck & 0xFF;
        refix(v);
        cases.push_back({"not for us", v, EthDropReason::NotForUs});
    }
    for (const Case& c : cases)
    {
        const uint64_t before = b->GetDropCount(c.reason);
        const uint64_t total = b->GetTotalDrops();
        b->InjectReceivedBytes(c.frame.data(), c.frame.size());
        EXPECT_EQ(b->GetDropCount(c.reason), before + 1) << c.what;
        EXPECT_EQ(b->GetTotalDrops(), total + 1) << c.what;
    }
    EXPECT_EQ(delivered, 1u);

    // Random bytes, some with a correct FCS so they get past the MAC: every one is either
    // delivered or counted, none crashes.
    std::mt19937 rng(7);
    const uint64_t dropsBefore = b->GetTotalDrops();
    const uint64_t deliveredBefore = delivered;
    const int n = 3000;
    for (int i = 0; i < n; ++i)
    {
        std::vector<uint8_t> v = bytes;
        v.resize(rng() % 200);
        for (auto& x : v)
        {
            if (rng() % 8 == 0)
            {
                x = static_cast<uint8_t>(rng());
            }
        }
        if (v.size() >= 64 && rng() % 2)
        {
            refix(v);
        }
        b->InjectReceivedBytes(v.data(), v.size());
    }
    EXPECT_EQ((b->GetTotalDrops() - dropsBefore) + (delivered - deliveredBefore), uint64_t(n));
    Simulator::Destroy();
}

TEST(RoceWire, OversizeDatagramRefusedAndCounted)
{
    EthFabric fab = MakeEthPair();
    Ptr<EthNetDevice> a = fab.HostPort(0);
    EthUdpFlow flow;
    flow.dstIp = fab.HostIp(1);
    // MTU 1500 leaves 1472 bytes of UDP payload (1500 - 20 IPv4 - 8 UDP).
    EXPECT_TRUE(a->SendUdp(flow, 1472));
    EXPECT_FALSE(a->SendUdp(flow, 1473));
    EXPECT_EQ(a->GetDropCount(EthDropReason::Oversize), 1u);
    Simulator::Destroy();
}

namespace
{
EthFrame
SampleUdp6(uint32_t payload)
{
    EthFrame f = SampleUdp(false, payload);
    f.ipv6 = true;
    f.srcIp6 = EthFabricHelper::HostAddress6(0);
    f.dstIp6 = EthFabricHelper::HostAddress6(1);
    f.flowLabel = 0xABCDE;
    f.ComputeSize();
    return f;
}

/// The IPv6 UDP checksum verified independently: the one's-complement sum over the
/// pseudo-header (RFC 8200 §8.1) and the UDP segment, checksum included, is 0xFFFF.
uint16_t
Udp6Sum(const uint8_t* ip)
{
    const uint16_t len = static_cast<uint16_t>(ip[4] << 8 | ip[5]);
    std::vector<uint8_t> buf(ip + 8, ip + 40); // addresses
    buf.push_back(0);
    buf.push_back(0);
    buf.push_back(static_cast<uint8_t>(len >> 8));
    buf.push_back(static_cast<uint8_t>(len));
    buf.push_back(0);
    buf.push_back(0);
    buf.push_back(0);
    buf.push_back(17);
    buf.insert(buf.end(), ip + 40, ip + 40 + len);
    return OnesComplementSum(buf.data(), buf.size());
}
} // namespace

TEST(RoceWire, Ipv6UdpFrameLayoutAndChecksum)
{
    const EthFrame f = SampleUdp6(101); // odd length: the checksum pads with a zero byte
    const std::vector<uint8_t> b = WithFcs(f);
    ASSERT_EQ(b.size(), 14u + 40 + 8 + 101 + 4);
    EXPECT_EQ(b[12], 0x86);
    EXPECT_EQ(b[13], 0xDD);
    const uint8_t* ip = b.data() + 14;
    // Version 6, traffic class = DSCP 26 << 2 | ECT(0) = 0x6A, flow label 0xABCDE.
    EXPECT_EQ(ip[0], 0x66);
    EXPECT_EQ(ip[1], 0xAA);
    EXPECT_EQ(ip[2], 0xBC);
    EXPECT_EQ(ip[3], 0xDE);
    EXPECT_EQ((ip[4] << 8) | ip[5], 8 + 101);
    EXPECT_EQ(ip[6], 17);
    EXPECT_EQ(ip[7], 64);
    EXPECT_EQ(ip[8], 0xFD);
    EXPECT_EQ(ip[23], 1);
    EXPECT_EQ(ip[39], 2);
    EXPECT_NE((ip[46] << 8) | ip[47], 0); // never zero over IPv6
    EXPECT_EQ(Udp6Sum(ip), 0xFFFF);

    EthFrame g;
    ASSERT_EQ(EthFrame::Parse(b.data(), b.size(), g), EthParseError::None);
    EXPECT_TRUE(g.ipv6);
    EXPECT_EQ(g.srcIp6, f.srcIp6);
    EXPECT_EQ(g.dstIp6, f.dstIp6);
    EXPECT_EQ(g.flowLabel, 0xABCDEu);
    EXPECT_EQ(g.dscp, 26);
    EXPECT_EQ(g.ecn, kEcnEct0);
    EXPECT_EQ(g.payloadBytes, 101u);
    std::vector<uint8_t> again;
    g.Materialize(again, true);
    EXPECT_EQ(again, b);
}

TEST(RoceWire, MalformedIpv6Counted)
{
    EthFabric fab = MakeEthPair();
    Ptr<EthNetDevice> b = fab.HostPort(1);
    uint64_t delivered = 0;
    struct Count
    {
        uint64_t* n;
        void Rx(Ptr<EthNetDevice>, const EthFrame&) { (*n)++; }
    } counter{&delivered};
    b->SetEthReceiveCallback(MakeCallback(&Count::Rx, &counter));
    const std::vector<uint8_t> good = WithFcs(SampleUdp6(200));
    b->InjectReceivedBytes(good.data(), good.size());
    EXPECT_EQ(delivered, 1u);
    auto refix = [](std::vector<uint8_t>& v) {
        const uint32_t c = EthCrc32(v.data(), v.size() - 4);
        for (int i = 0; i < 4; ++i)
        {
            v[v.size() - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
        }
    };
    auto expectDrop = [&](std::vector<uint8_t> v, EthDropReason r, const char* what) {
        refix(v);
        const uint64_t before = b->GetDropCount(r);
        b->InjectReceivedBytes(v.data(), v.size());
        EXPECT_EQ(b->GetDropCount(r), before + 1) << what;
    };
    {
        auto v = good;
        v[14 + 40 + 8] ^= 1; // payload byte changed: UDP checksum no longer matches
        expectDrop(v, EthDropReason::BadUdp, "checksum");
    }
    {
        auto v = good;
        v[14 + 46] = v[14 + 47] = 0; // zero checksum is not allowed over IPv6
        expectDrop(v, EthDropReason::BadUdp, "zero checksum");
    }
    {
        auto v = good;
        v[14 + 6] = 0; // hop-by-hop options header: not modelled
        expectDrop(v, EthDropReason::BadIpv6, "extension header");
    }
    {
        auto v = good;
        v[14 + 4] = 0x10; // payload length beyond the frame
        expectDrop(v, EthDropReason::BadIpv6, "length");
    }
    {
        auto v = good;
        v[14 + 39] = 9; // another host's address (checksum fixed up below)
        const uint16_t old = static_cast<uint16_t>(v[14 + 46] << 8 | v[14 + 47]);
        // One's-complement update (RFC 1624): the low address byte went from 2 to 9.
        uint32_t s = static_cast<uint16_t>(~old) + 0xFFFF - 0x0002 + 0x0009;
        while (s >> 16)
        {
            s = (s & 0xFFFF) + (s >> 16);
        }
        const uint16_t ck = static_cast<uint16_t>(~s);
        v[14 + 46] = ck >> 8;
        v[14 + 47] = ck & 0xFF;
        expectDrop(v, EthDropReason::NotForUs, "not for us");
    }
    EXPECT_EQ(delivered, 1u);
    Simulator::Destroy();
}
