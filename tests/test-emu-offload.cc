// Unit tests of the emulated NIC's offloads (models/emu/tap-offload.h) on synthetic frames: the
// segmentation of TSO frames the host's kernel hands over, checksum completion, and the
// coalescing of segments for the host by the kernel's GRO rules. Checksums are verified here
// with a byte-by-byte RFC 1071 sum written for the test, not with the code under test.
#include "models/emu/tap-offload.h"

#include "models/common/big-endian.h"
#include "models/roce/eth-frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

using namespace ns3;

namespace
{

using Bytes = std::vector<uint8_t>;

constexpr uint32_t kL3 = 14;              // Ethernet header
constexpr uint32_t kL4 = kL3 + 20;        // IPv4 without options
constexpr uint32_t kTcpWithTs = 32;       // TCP header with NOP NOP TIMESTAMP (RFC 7323 §3)
constexpr uint32_t kHeaders = kL4 + kTcpWithTs;
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kPsh = 0x08, kAck = 0x10, kCwr = 0x80;

/// RFC 1071 by the book: 16-bit big-endian words, a zero byte after an odd last one, folded.
uint32_t
ReferenceSum(const uint8_t* p, size_t len, uint32_t sum = 0)
{
    for (size_t i = 0; i < len; i += 2)
    {
        sum += static_cast<uint32_t>(p[i]) << 8 | (i + 1 < len ? p[i + 1] : 0);
    }
    while (sum >> 16)
    {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return sum;
}

bool
Ipv4HeaderChecksumOk(const uint8_t* frame)
{
    return ReferenceSum(frame + kL3, 20) == 0xFFFF;
}

uint32_t
ReferencePseudo(const uint8_t* frame, uint32_t tcpLength)
{
    return ReferenceSum(frame + kL3 + 12, 8, 6 + tcpLength);
}

bool
TcpChecksumOk(const uint8_t* frame)
{
    const uint32_t tcpLength = LoadBe16(frame + kL3 + 2) - 20u;
    return ReferenceSum(frame + kL4, tcpLength, ReferencePseudo(frame, tcpLength)) == 0xFFFF;
}

/// An Ethernet/IPv4/TCP frame with the timestamp option and `payload` patterned bytes,
/// correct checksums. `tos` is the whole TOS octet (DSCP and ECN).
Bytes
TcpFrame(uint32_t seq, uint32_t payload, uint8_t flags, uint16_t ipId, uint8_t tos = 0x02,
         uint32_t tsVal = 1000, uint16_t srcPort = 40000, uint32_t patternFrom = 0)
{
    Bytes b(kHeaders + payload, 0);
    for (int i = 0; i < 6; ++i)
    {
        b[i] = static_cast<uint8_t>(0x02 + i);
        b[6 + i] = static_cast<uint8_t>(0x12 + i);
    }
    StoreBe16(&b[12], kEthTypeIpv4);
    uint8_t* ip = &b[kL3];
    ip[0] = 0x45;
    ip[1] = tos;
    StoreBe16(ip + 2, static_cast<uint16_t>(20 + kTcpWithTs + payload));
    StoreBe16(ip + 4, ipId);
    StoreBe16(ip + 6, 0x4000); // DF
    ip[8] = 64;
    ip[9] = kIpProtoTcp;
    StoreBe32(ip + 12, 0x0A000001);
    StoreBe32(ip + 16, 0x0A000002);
    StoreBe16(ip + 10, static_cast<uint16_t>(~ReferenceSum(ip, 20)));
    uint8_t* tcp = &b[kL4];
    StoreBe16(tcp, srcPort);
    StoreBe16(tcp + 2, 5201);
    StoreBe32(tcp + 4, seq);
    StoreBe32(tcp + 8, 0x11223344);
    tcp[12] = (kTcpWithTs / 4) << 4;
    tcp[13] = flags;
    StoreBe16(tcp + 14, 502); // window
    tcp[20] = 1;
    tcp[21] = 1;
    tcp[22] = 8;
    tcp[23] = 10;
    StoreBe32(tcp + 24, tsVal);
    StoreBe32(tcp + 28, 777);
    for (uint32_t i = 0; i < payload; ++i)
    {
        b[kHeaders + i] = static_cast<uint8_t>((patternFrom + i) * 31 + 7);
    }
    const uint32_t tcpLength = kTcpWithTs + payload;
    StoreBe16(tcp + 16, static_cast<uint16_t>(~ReferenceSum(tcp, tcpLength,
                                                        ReferencePseudo(b.data(), tcpLength))));
    return b;
}

/// What the kernel hands a TAP with TSO: the virtio header, then the large frame with its TCP
/// checksum left partial (the pseudo-header sum in the field).
Bytes
TsoRead(Bytes frame, uint16_t mss, uint8_t gsoType = VirtioNetHeader::kGsoTcpV4)
{
    const uint32_t tcpLength = static_cast<uint32_t>(frame.size()) - kL4;
    StoreBe16(&frame[kL4 + 16], static_cast<uint16_t>(ReferencePseudo(frame.data(), tcpLength)));
    VirtioNetHeader h;
    h.flags = VirtioNetHeader::kFlagNeedsCsum;
    h.gsoType = gsoType;
    h.hdrLen = kHeaders;
    h.gsoSize = mss;
    h.csumStart = kL4;
    h.csumOffset = 16;
    Bytes out(VirtioNetHeader::kSize);
    h.WriteTo(out.data());
    out.insert(out.end(), frame.begin(), frame.end());
    return out;
}

struct Segmented
{
    TapOffloadError error;
    uint32_t segments = 0;
    uint64_t filled = 0;
    std::vector<Bytes> frames;
};

Segmented
Segment(TapSegmenter& s, const Bytes& read)
{
    Segmented r;
    r.error = s.Process(
        read.data(),
        static_cast<uint32_t>(read.size()),
        [&r](const uint8_t* f, uint32_t n) { r.frames.emplace_back(f, f + n); },
        &r.segments,
        &r.filled);
    return r;
}

struct Written
{
    VirtioNetHeader header;
    Bytes frame;
    uint32_t frames;
};

/// A coalescer whose writes are kept.
struct Coalescing
{
    std::vector<Written> writes;
    TapCoalescer c{[this](std::vector<uint8_t>& b, uint32_t frames) {
        Written w;
        w.header.ReadFrom(b.data());
        w.frame.assign(b.begin() + VirtioNetHeader::kSize, b.end());
        b.assign(3, 0xEE); // as TapPort may: a different buffer back
        w.frames = frames;
        writes.push_back(std::move(w));
    }};
    void Offer(const Bytes& f, int64_t now = 0)
    {
        c.Offer(f.data(), static_cast<uint32_t>(f.size()), now);
    }
};

/// The segments of one 64 KB-class send: `n` segments of `mss`, flags on the last only.
std::vector<Bytes>
Burst(uint32_t n, uint32_t mss, uint32_t seq0 = 5000, uint16_t id0 = 100, uint8_t lastFlags = 0)
{
    std::vector<Bytes> v;
    for (uint32_t i = 0; i < n; ++i)
    {
        v.push_back(TcpFrame(seq0 + i * mss, mss, kAck | (i + 1 == n ? lastFlags : 0),
                             static_cast<uint16_t>(id0 + i), 0x02, 1000, 40000, i * mss));
    }
    return v;
}

} // namespace

TEST(EmuOffload, OnesComplementSumAgreesWithTheByteWiseDefinition)
{
    std::mt19937 rng(12);
    for (size_t len : {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 20, 1499, 1500, 9001, 65535})
    {
        Bytes b(len);
        for (auto& x : b)
        {
            x = static_cast<uint8_t>(rng());
        }
        for (uint16_t init : {0, 1, 0x8000, 0xFFFE})
        {
            EXPECT_EQ(OnesComplementSum(b.data(), len, init), ReferenceSum(b.data(), len, init))
                << "length " << len << ", initial " << init;
        }
    }
    Bytes ones(64, 0xFF);
    EXPECT_EQ(OnesComplementSum(ones.data(), ones.size()), 0xFFFF);
}

TEST(EmuOffload, TsoFrameIsCutIntoWireSegmentsAsTheKernelsGsoWould)
{
    // 10,000 bytes from a sequence number about to wrap, MSS 1448, CWR+PSH+FIN on the frame.
    const uint32_t seq0 = 0xFFFFF000u;
    const Bytes big = TcpFrame(seq0, 10000, kAck | kPsh | kFin | kCwr, 0xFFFE, 0x02);
    TapSegmenter s;
    const Segmented r =
        Segment(s, TsoRead(big, 1448, VirtioNetHeader::kGsoTcpV4 | VirtioNetHeader::kGsoEcn));
    ASSERT_EQ(r.error, TapOffloadError::None);
    ASSERT_EQ(r.segments, 7u); // 6 x 1448 + 1312
    ASSERT_EQ(r.frames.size(), 7u);
    EXPECT_EQ(r.filled, 7u);
    Bytes payload;
    for (uint32_t i = 0; i < 7; ++i)
    {
        const Bytes& f = r.frames[i];
        const uint32_t chunk = i < 6 ? 1448 : 1312;
        SCOPED_TRACE("segment " + std::to_string(i));
        ASSERT_EQ(f.size(), kHeaders + chunk);
        EXPECT_LE(f.size() - kL3, 1500u) << "an IP datagram within the MTU";
        EXPECT_EQ(LoadBe16(&f[kL3 + 2]), 20 + kTcpWithTs + chunk);
        EXPECT_EQ(LoadBe16(&f[kL3 + 4]), static_cast<uint16_t>(0xFFFE + i)) << "IP ID, wrapping";
        EXPECT_TRUE(Ipv4HeaderChecksumOk(f.data()));
        EXPECT_TRUE(TcpChecksumOk(f.data()));
        EXPECT_EQ(LoadBe32(&f[kL4 + 4]), seq0 + i * 1448) << "sequence number, wrapping";
        EXPECT_EQ(LoadBe32(&f[kL4 + 8]), 0x11223344u);
        const uint8_t flags = f[kL4 + 13];
        EXPECT_EQ((flags & kCwr) != 0, i == 0) << "CWR on the first segment only";
        EXPECT_EQ((flags & kPsh) != 0, i == 6) << "PSH on the last only";
        EXPECT_EQ((flags & kFin) != 0, i == 6) << "FIN on the last only";
        EXPECT_NE(flags & kAck, 0);
        EXPECT_EQ(0, std::memcmp(&f[0], &big[0], kL3)) << "Ethernet header copied";
        EXPECT_EQ(0, std::memcmp(&f[kL4 + 20], &big[kL4 + 20], 12)) << "options copied";
        EXPECT_EQ(f[kL3 + 1], 0x02) << "TOS kept";
        payload.insert(payload.end(), f.begin() + kHeaders, f.end());
        // And the port takes it as a host frame.
        EthFrame parsed;
        EXPECT_EQ(EthFrame::ParseFromHost(f.data(), static_cast<uint32_t>(f.size()), parsed),
                  EthParseError::None);
    }
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), big.begin() + kHeaders));
}

TEST(EmuOffload, TheSegmentsOfATsoFrameAndTheirClassAreKnownBeforeCutting)
{
    // What the bridge checks against the port's queue before it takes a TSO frame.
    uint8_t tc = 0xFF;
    const Bytes af31 = TcpFrame(1, 10000, kAck, 1, 26 << 2 | 0x02); // DSCP 26: class 3
    EXPECT_EQ(TapSegmenter::CountTsoSegments(TsoRead(af31, 1448).data(),
                                             static_cast<uint32_t>(TsoRead(af31, 1448).size()),
                                             &tc),
              7u);
    EXPECT_EQ(tc, 3);
    const Bytes exact = TcpFrame(1, 2896, kAck, 1);
    const Bytes read = TsoRead(exact, 1448);
    EXPECT_EQ(TapSegmenter::CountTsoSegments(read.data(), static_cast<uint32_t>(read.size()), &tc),
              2u);
    EXPECT_EQ(tc, 0);
    const Bytes plain = TsoRead(exact, 0, VirtioNetHeader::kGsoNone);
    EXPECT_EQ(TapSegmenter::CountTsoSegments(plain.data(), static_cast<uint32_t>(plain.size()), &tc),
              0u)
        << "not a TSO frame";
    TapSegmenter s;
    EXPECT_EQ(Segment(s, read).frames.size(), 2u);
}

TEST(EmuOffload, PartialChecksumsAreCompletedAndPlainFramesPassUnchanged)
{
    TapSegmenter s;
    // A small TCP segment with NEEDS_CSUM and no GSO.
    Bytes tcp = TcpFrame(1, 100, kAck | kPsh, 7);
    const Bytes expected = tcp;
    Bytes read = TsoRead(tcp, 0, VirtioNetHeader::kGsoNone);
    Segmented r = Segment(s, read);
    ASSERT_EQ(r.error, TapOffloadError::None);
    ASSERT_EQ(r.frames.size(), 1u);
    EXPECT_EQ(r.filled, 1u);
    EXPECT_EQ(r.frames[0], expected) << "the checksum the kernel would have computed";
    // A UDP datagram with NEEDS_CSUM (csum_offset 6, RFC 768).
    Bytes udp(kL4 + 8 + 33, 0);
    std::memcpy(udp.data(), expected.data(), kL4);
    StoreBe16(&udp[kL3 + 2], 8 + 33 + 20);
    udp[kL3 + 9] = kIpProtoUdp;
    StoreBe16(&udp[kL3 + 10], 0);
    StoreBe16(&udp[kL3 + 10], static_cast<uint16_t>(~ReferenceSum(&udp[kL3], 20)));
    StoreBe16(&udp[kL4], 5353);
    StoreBe16(&udp[kL4 + 2], 9);
    StoreBe16(&udp[kL4 + 4], 8 + 33);
    for (int i = 0; i < 33; ++i)
    {
        udp[kL4 + 8 + i] = static_cast<uint8_t>(i * 3);
    }
    const uint32_t pseudo = ReferenceSum(&udp[kL3 + 12], 8, kIpProtoUdp + 41);
    StoreBe16(&udp[kL4 + 6], static_cast<uint16_t>(pseudo));
    VirtioNetHeader h;
    h.flags = VirtioNetHeader::kFlagNeedsCsum;
    h.csumStart = kL4;
    h.csumOffset = 6;
    Bytes uread(VirtioNetHeader::kSize);
    h.WriteTo(uread.data());
    uread.insert(uread.end(), udp.begin(), udp.end());
    r = Segment(s, uread);
    ASSERT_EQ(r.error, TapOffloadError::None);
    ASSERT_EQ(r.frames.size(), 1u);
    const Bytes& u = r.frames[0];
    EXPECT_EQ(ReferenceSum(&u[kL4], 41, ReferenceSum(&u[kL3 + 12], 8, kIpProtoUdp + 41)), 0xFFFF);
    EXPECT_NE(LoadBe16(&u[kL4 + 6]), 0) << "UDP: zero would mean no checksum";
    // No flags, no GSO: the frame as read, nothing computed.
    Bytes plain(VirtioNetHeader::kSize, 0);
    plain.insert(plain.end(), expected.begin(), expected.end());
    r = Segment(s, plain);
    ASSERT_EQ(r.error, TapOffloadError::None);
    EXPECT_EQ(r.filled, 0u);
    ASSERT_EQ(r.frames.size(), 1u);
    EXPECT_EQ(r.frames[0], expected);
}

TEST(EmuOffload, APartialTcpChecksumThatComesToZeroStaysZero)
{
    // One segment in 65,535 has the checksum 0x0000. TCP sends it as computed (UDP alone turns
    // a zero into 0xFFFF); 0xFFFF would still pass a receiver's sum, but Wireshark marks it bad.
    uint32_t seq = 1;
    Bytes tcp = TcpFrame(seq, 100, kAck | kPsh, 7);
    while (LoadBe16(&tcp[kL4 + 16]) != 0)
    {
        tcp = TcpFrame(++seq, 100, kAck | kPsh, 7);
        ASSERT_LT(seq, 1000000u);
    }
    ASSERT_TRUE(TcpChecksumOk(tcp.data()));
    TapSegmenter s;
    Segmented r = Segment(s, TsoRead(tcp, 0, VirtioNetHeader::kGsoNone));
    ASSERT_EQ(r.error, TapOffloadError::None);
    ASSERT_EQ(r.frames.size(), 1u);
    EXPECT_EQ(LoadBe16(&r.frames[0][kL4 + 16]), 0u);
    EXPECT_EQ(r.frames[0], tcp);
}

TEST(EmuOffload, MalformedOffloadRequestsAreRefusedWithTheirReason)
{
    TapSegmenter s;
    const Bytes good = TcpFrame(1, 3000, kAck, 1);
    auto refused = [&s](const Bytes& read) {
        Segmented r = Segment(s, read);
        EXPECT_TRUE(r.frames.empty()) << "nothing emitted for a refused read";
        return r.error;
    };
    EXPECT_EQ(refused(Bytes(5, 0)), TapOffloadError::Runt);
    EXPECT_EQ(refused(TsoRead(good, 1448, 3 /* UDP (UFO) */)), TapOffloadError::UnsupportedGso);
    EXPECT_EQ(refused(TsoRead(good, 1448, 4 /* TCPv6 */)), TapOffloadError::UnsupportedGso);
    EXPECT_EQ(refused(TsoRead(good, 0)), TapOffloadError::BadGsoSize);
    EXPECT_EQ(refused(TsoRead(good, 1)), TapOffloadError::BadGsoSize) << "3000 segments";
    Bytes frag = good;
    StoreBe16(&frag[kL3 + 6], 0x2000); // MF
    EXPECT_EQ(refused(TsoRead(frag, 1448)), TapOffloadError::BadGsoFrame);
    Bytes udp = good;
    udp[kL3 + 9] = kIpProtoUdp;
    EXPECT_EQ(refused(TsoRead(udp, 1448)), TapOffloadError::BadGsoFrame);
    Bytes longer = good;
    StoreBe16(&longer[kL3 + 2], 60000); // past the end of the read
    EXPECT_EQ(refused(TsoRead(longer, 1448)), TapOffloadError::BadGsoFrame);
    Bytes arp(VirtioNetHeader::kSize + 42, 0);
    arp[1] = VirtioNetHeader::kGsoTcpV4;
    StoreBe16(&arp[VirtioNetHeader::kSize + 12], kEthTypeArp);
    arp[4] = 100; // gso_size
    EXPECT_EQ(refused(arp), TapOffloadError::BadGsoFrame);
    Bytes span = TsoRead(good, 0, VirtioNetHeader::kGsoNone);
    span[6] = 0xF0; // csum_start far past the frame
    span[7] = 0xFF;
    EXPECT_EQ(refused(span), TapOffloadError::BadChecksumSpan);
}

TEST(EmuOffload, InOrderSegmentsOfAFlowAreMergedIntoOneGsoWrite)
{
    const auto burst = Burst(7, 1448, 0xFFFFF800u, 200, kPsh);
    Coalescing k;
    for (const auto& f : burst)
    {
        k.Offer(f);
    }
    ASSERT_EQ(k.writes.size(), 1u) << "PSH on the last segment flushed the merge";
    EXPECT_FALSE(k.c.HasPending());
    const Written& w = k.writes[0];
    EXPECT_EQ(w.frames, 7u);
    EXPECT_EQ(w.header.flags, VirtioNetHeader::kFlagNeedsCsum);
    EXPECT_EQ(w.header.gsoType, VirtioNetHeader::kGsoTcpV4);
    EXPECT_EQ(w.header.gsoSize, 1448);
    EXPECT_EQ(w.header.hdrLen, kHeaders);
    EXPECT_EQ(w.header.csumStart, kL4);
    EXPECT_EQ(w.header.csumOffset, 16);
    ASSERT_EQ(w.frame.size(), kHeaders + 7 * 1448);
    EXPECT_EQ(LoadBe16(&w.frame[kL3 + 2]), 20 + kTcpWithTs + 7 * 1448);
    EXPECT_EQ(LoadBe16(&w.frame[kL3 + 4]), 200) << "the first segment's IP ID";
    EXPECT_TRUE(Ipv4HeaderChecksumOk(w.frame.data()));
    EXPECT_EQ(LoadBe32(&w.frame[kL4 + 4]), 0xFFFFF800u);
    EXPECT_EQ(w.frame[kL4 + 13], kAck | kPsh) << "PSH of the last segment carried over";
    // The checksum field holds the pseudo-header sum: completing it as a device would gives a
    // valid checksum over the merged segment.
    const uint32_t tcpLength = kTcpWithTs + 7 * 1448;
    EXPECT_EQ(LoadBe16(&w.frame[kL4 + 16]), ReferencePseudo(w.frame.data(), tcpLength));
    Bytes completed = w.frame;
    // (the device's sum runs from csum_start to the end, the field with its partial sum in it)
    StoreBe16(&completed[kL4 + 16], static_cast<uint16_t>(~ReferenceSum(&completed[kL4], tcpLength)));
    EXPECT_TRUE(TcpChecksumOk(completed.data()));
    for (uint32_t i = 0; i < 7 * 1448; ++i)
    {
        ASSERT_EQ(w.frame[kHeaders + i], static_cast<uint8_t>(i * 31 + 7)) << "payload byte " << i;
    }
    // Segmenting the merged write again gives back the wire segments byte for byte.
    Bytes again(VirtioNetHeader::kSize);
    w.header.WriteTo(again.data());
    again.insert(again.end(), w.frame.begin(), w.frame.end());
    TapSegmenter s;
    const Segmented r = Segment(s, again);
    ASSERT_EQ(r.error, TapOffloadError::None);
    ASSERT_EQ(r.frames.size(), burst.size());
    for (size_t i = 0; i < burst.size(); ++i)
    {
        EXPECT_EQ(r.frames[i], burst[i]) << "segment " << i;
    }
    EXPECT_EQ(k.c.GetCounters().coalescedWrites, 1u);
    EXPECT_EQ(k.c.GetCounters().coalescedSegments, 7u);
}

TEST(EmuOffload, ACeMarkedSegmentIsNeverMergedWithUnmarkedOnes)
{
    auto burst = Burst(7, 1000);
    // Segment 3 was marked CE by a switch (its header checksum rewritten, as the switch does).
    burst[3][kL3 + 1] = 0x03;
    StoreBe16(&burst[3][kL3 + 10], 0);
    StoreBe16(&burst[3][kL3 + 10], static_cast<uint16_t>(~ReferenceSum(&burst[3][kL3], 20)));
    Coalescing k;
    for (const auto& f : burst)
    {
        k.Offer(f);
    }
    k.c.Flush();
    ASSERT_EQ(k.writes.size(), 3u);
    EXPECT_EQ(k.writes[0].frames, 3u);
    EXPECT_EQ(k.writes[1].frames, 1u);
    EXPECT_EQ(k.writes[1].frame, burst[3]) << "the CE segment reaches the host as it came";
    EXPECT_EQ(k.writes[1].header.gsoType, VirtioNetHeader::kGsoNone);
    EXPECT_EQ(k.writes[2].frames, 3u);
    uint32_t ce = 0;
    for (const auto& w : k.writes)
    {
        ce += (w.frame[kL3 + 1] & 3) == 3 ? w.frames : 0;
    }
    EXPECT_EQ(ce, 1u);
}

TEST(EmuOffload, MergesEndAtGapsOtherFlowsAndSegmentsGroWouldNotTake)
{
    const auto b = Burst(6, 1000);
    Coalescing k;
    // A gap (segment 2 lost): 0-1 merged, 3-5 merged.
    for (size_t i : {0u, 1u, 3u, 4u, 5u})
    {
        k.Offer(b[i]);
    }
    k.c.Flush();
    ASSERT_EQ(k.writes.size(), 2u);
    EXPECT_EQ(k.writes[0].frames, 2u);
    EXPECT_EQ(k.writes[1].frames, 3u);
    EXPECT_EQ(LoadBe32(&k.writes[1].frame[kL4 + 4]), 5000u + 3000u);

    // Another flow between them, a pure ACK, a SYN: each flushes and is written alone.
    k.writes.clear();
    const Bytes other = TcpFrame(9, 1000, kAck, 1, 0x02, 1000, 40001);
    const Bytes pureAck = TcpFrame(5000 + 2000, 0, kAck, 102);
    const Bytes syn = TcpFrame(1, 0, kSyn, 1);
    k.Offer(b[0]);
    k.Offer(b[1]);
    k.Offer(other);
    k.Offer(pureAck);
    k.Offer(syn);
    k.c.Flush();
    ASSERT_EQ(k.writes.size(), 4u);
    EXPECT_EQ(k.writes[0].frames, 2u);
    EXPECT_EQ(k.writes[1].frame, other) << "held alone, then flushed by the ACK";
    EXPECT_EQ(k.writes[2].frame, pureAck);
    EXPECT_EQ(k.writes[3].frame, syn);

    // Different timestamps, a larger payload than the first, a corrupt checksum, CWR.
    k.writes.clear();
    const Bytes laterTs = TcpFrame(6000, 1000, kAck, 101, 0x02, 1001, 40000, 1000);
    k.Offer(b[0]);
    k.Offer(laterTs);
    k.c.Flush();
    ASSERT_EQ(k.writes.size(), 2u) << "options (TSval) differ";
    k.writes.clear();
    const Bytes small = TcpFrame(5000, 500, kAck, 100);
    const Bytes bigger = TcpFrame(5500, 1000, kAck, 101, 0x02, 1000, 40000, 500);
    k.Offer(small);
    k.Offer(bigger);
    k.c.Flush();
    ASSERT_EQ(k.writes.size(), 2u) << "a segment larger than the first's";
    k.writes.clear();
    Bytes corrupt = b[1];
    corrupt[kHeaders + 10] ^= 0x40;
    k.Offer(b[0]);
    k.Offer(corrupt);
    k.Offer(b[2]);
    k.c.Flush();
    ASSERT_EQ(k.writes.size(), 3u);
    EXPECT_EQ(k.writes[1].frame, corrupt) << "handed on alone for the kernel to drop";
    EXPECT_EQ(k.writes[1].header.flags, 0) << "not claimed as verified";
    k.writes.clear();
    Bytes cwr = TcpFrame(6000, 1000, kAck | kCwr, 101, 0x02, 1000, 40000, 1000);
    k.Offer(b[0]);
    k.Offer(cwr);
    k.Offer(b[2]);
    k.c.Flush();
    ASSERT_EQ(k.writes.size(), 2u) << "a CWR segment starts a merge of its own";
    EXPECT_EQ(k.writes[1].frames, 2u);
    EXPECT_EQ(k.writes[1].header.gsoType, VirtioNetHeader::kGsoTcpV4 | VirtioNetHeader::kGsoEcn);
    EXPECT_NE(k.writes[1].frame[kL4 + 13] & kCwr, 0);
}

TEST(EmuOffload, AMergeStaysWithinOneIpv4DatagramAndPshAloneIsNotHeld)
{
    Coalescing k;
    for (const auto& f : Burst(50, 1448))
    {
        k.Offer(f);
    }
    k.c.Flush();
    ASSERT_EQ(k.writes.size(), 2u);
    EXPECT_EQ(k.writes[0].frames, 45u); // 45 x 1448 + 52 <= 65535 < 46 x 1448 + 52
    EXPECT_LE(LoadBe16(&k.writes[0].frame[kL3 + 2]), 65535);
    EXPECT_EQ(k.writes[0].frame.size(), kL3 + 20 + kTcpWithTs + 45 * 1448);
    EXPECT_EQ(k.writes[1].frames, 5u);
    k.writes.clear();
    k.Offer(TcpFrame(1, 100, kAck | kPsh, 1));
    EXPECT_FALSE(k.c.HasPending());
    ASSERT_EQ(k.writes.size(), 1u);
}

TEST(EmuOffload, AHeldMergeIsFlushedWhenIdleOrAtTheHoldTime)
{
    const auto b = Burst(3, 1000);
    Coalescing k;
    k.Offer(b[0], 1000);
    k.Offer(b[1], 2000);
    EXPECT_TRUE(k.c.HasPending());
    EXPECT_EQ(k.c.PendingSinceNs(), 1000);
    // Next event due in 1 us, held for 4 us: keep it (gap 10 us, hold 50 us).
    EXPECT_FALSE(k.c.FlushIfDue(5000, 1000, 10000, 50000));
    // Nothing due for 20 us: flushed.
    EXPECT_TRUE(k.c.FlushIfDue(6000, 20000, 10000, 50000));
    ASSERT_EQ(k.writes.size(), 1u);
    EXPECT_EQ(k.writes[0].frames, 2u);
    EXPECT_EQ(k.c.GetCounters().flushIdle, 1u);
    // Busy all the time (next event always due at once) but held 50 us: flushed.
    k.Offer(b[2], 100000);
    EXPECT_FALSE(k.c.FlushIfDue(149999, 0, 10000, 50000));
    EXPECT_TRUE(k.c.FlushIfDue(150000, 0, 10000, 50000));
    ASSERT_EQ(k.writes.size(), 2u);
    EXPECT_EQ(k.c.GetCounters().flushHold, 0u) << "a lone segment is not a merge";
    EXPECT_FALSE(k.c.FlushIfDue(200000, 1000000, 10000, 50000)) << "nothing held";
}
