// Wire formats of InfiniBand: headers byte-exact against layouts written out by hand from the
// spec, the CRCs against independent computations, and the ERF-in-pcap writer.
#include "header-test-util.h"
#include "ib-test-packets.h"
#include "test-text-files.h"

#include "helpers/trace/ib-pcap-writer.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-flow-control-header.h"
#include "models/ib/ib-gid.h"
#include "models/ib/ib-grh-header.h"
#include "models/ib/ib-lrh-header.h"
#include "models/rdma/ib-bth-header.h"
#include "models/rdma/ib-deth-header.h"

#include "ns3/nstime.h"
#include "ns3/packet.h"

#include <boost/crc.hpp>
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <zlib.h>

#include <array>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ns3;
using cnuas_test::Raw;
using cnuas_test::ViaPacket;
using cnuas_test::BuildPacket;
using cnuas_test::Payload;
using cnuas_test::TestPacketSpec;

namespace
{

using Bytes = std::vector<uint8_t>;

/// Parse bytes through an ns3::Packet (RemoveHeader).
template <typename H>
H
FromPacket(const Bytes& raw)
{
    Ptr<Packet> p = Create<Packet>(raw.data(), raw.size());
    H h;
    EXPECT_EQ(p->RemoveHeader(h), raw.size());
    return h;
}

/// The VCRC's CRC-16 computed by Boost.CRC, an implementation independent of ours.
uint16_t
BoostCrc16(const uint8_t* p, size_t n)
{
    boost::crc_optimal<16, 0x100B, 0xFFFF, 0xFFFF, true, true> crc;
    crc.process_bytes(p, n);
    return crc.checksum();
}

uint32_t
ZlibCrc32(const Bytes& b)
{
    return static_cast<uint32_t>(crc32(0, b.data(), static_cast<uInt>(b.size())));
}

std::string
TempPath(const std::string& name)
{
    return std::string(CNUAS_BINARY_DIR) + "/test-ib-wire-" + std::to_string(getpid()) + "-" +
           name;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// GID

TEST(IbGid, BuildAndFormat)
{
    const IbGid gid = IbMakeGid(kIbDefaultSubnetPrefix, 0x0002C90300ABCDEFULL);
    const IbGid expected = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xab, 0xcd,
                            0xef};
    EXPECT_EQ(gid, expected);
    EXPECT_EQ(IbGidToString(gid), "fe80:0000:0000:0000:0002:c903:00ab:cdef");
    EXPECT_EQ(IbGidSubnetPrefix(gid), kIbDefaultSubnetPrefix);
    EXPECT_EQ(IbGidGuid(gid), 0x0002C90300ABCDEFULL);
}

// ---------------------------------------------------------------------------------------------
// GRH, IBA vol. 1 §8.3

TEST(IbGrhHeader, ByteExactAgainstSpecLayout)
{
    IbGrhHeader grh;
    grh.SetTClass(0xA5);
    grh.SetFlowLabel(0x12345);
    grh.SetPayLen(0x0102);
    grh.SetHopLmt(0x40);
    grh.SetSgid(IbMakeGid(0xFE80000000000000ULL, 0x0011223344556677ULL));
    grh.SetDgid(IbMakeGid(0xFEC0000000000001ULL, 0x8899AABBCCDDEEFFULL));
    // IPVer 6 | TClass 0xA5 | FlowLabel 0x12345 = 0x6A512345; PayLen 0x0102; NxtHdr 0x1B.
    const Bytes expected = {0x6A, 0x51, 0x23, 0x45, 0x01, 0x02, 0x1B, 0x40,
                            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
                            0x66, 0x77, 0xfe, 0xc0, 0, 0, 0, 0, 0, 1, 0x88, 0x99, 0xaa, 0xbb,
                            0xcc, 0xdd, 0xee, 0xff};
    ASSERT_EQ(expected.size(), IbGrhHeader::kSize);
    EXPECT_EQ(Raw(grh), expected);
    EXPECT_EQ(ViaPacket(grh), expected);
    EXPECT_EQ(grh.GetSerializedSize(), 40u);

    for (const IbGrhHeader& back : {FromPacket<IbGrhHeader>(expected), [&] {
                                        IbGrhHeader h;
                                        h.ReadFrom(expected.data());
                                        return h;
                                    }()})
    {
        EXPECT_EQ(back.GetIpVer(), 6);
        EXPECT_EQ(back.GetTClass(), 0xA5);
        EXPECT_EQ(back.GetFlowLabel(), 0x12345u);
        EXPECT_EQ(back.GetPayLen(), 0x0102);
        EXPECT_EQ(back.GetNxtHdr(), 0x1B);
        EXPECT_EQ(back.GetHopLmt(), 0x40);
        EXPECT_EQ(back.GetSgid(), grh.GetSgid());
        EXPECT_EQ(back.GetDgid(), grh.GetDgid());
        EXPECT_EQ(Raw(back), expected);
    }
}

TEST(IbGrhHeader, FieldWidthsAreEnforced)
{
    IbGrhHeader grh;
    grh.SetFlowLabel(0xFFFFFFFF);
    grh.SetTClass(0xFF);
    EXPECT_EQ(grh.GetFlowLabel(), 0xFFFFFu);
    const Bytes raw = Raw(grh);
    // The flow label must not spill into TClass or IPVer.
    EXPECT_EQ(raw[0], 0x6F);
    EXPECT_EQ(raw[1], 0xFF);
    EXPECT_EQ(raw[2], 0xFF);
    EXPECT_EQ(raw[3], 0xFF);
}

// ---------------------------------------------------------------------------------------------
// BTH, IBA vol. 1 §9.2

TEST(IbBthHeader, ByteExactAgainstSpecLayout)
{
    IbBthHeader bth;
    bth.SetOpCode(0x64);
    bth.SetSe(true);
    bth.SetMigReq(false);
    bth.SetPadCnt(3);
    bth.SetPkey(0x8001);
    bth.SetFecn(true);
    bth.SetDestQp(0x123456);
    bth.SetAckReq(true);
    bth.SetPsn(0xABCDEF);
    // byte 1: SE(0x80) | M(0) | PadCnt 3 << 4 (0x30) | TVer 0; byte 4 FECN 0x80; byte 8 A 0x80.
    const Bytes expected = {0x64, 0xB0, 0x80, 0x01, 0x80, 0x12, 0x34, 0x56,
                            0x80, 0xAB, 0xCD, 0xEF};
    EXPECT_EQ(Raw(bth), expected);
    EXPECT_EQ(ViaPacket(bth), expected);

    const IbBthHeader back = FromPacket<IbBthHeader>(expected);
    EXPECT_EQ(back.GetOpCode(), 0x64);
    EXPECT_TRUE(back.GetSe());
    EXPECT_FALSE(back.GetMigReq());
    EXPECT_EQ(back.GetPadCnt(), 3);
    EXPECT_EQ(back.GetTver(), 0);
    EXPECT_EQ(back.GetPkey(), 0x8001);
    EXPECT_TRUE(back.GetFecn());
    EXPECT_FALSE(back.GetBecn());
    EXPECT_EQ(back.GetResv8a(), 0x80);
    EXPECT_EQ(back.GetDestQp(), 0x123456u);
    EXPECT_TRUE(back.GetAckReq());
    EXPECT_EQ(back.GetPsn(), 0xABCDEFu);
}

TEST(IbBthHeader, FlagsAndReservedBits)
{
    // M set, BECN only, TVer 0xF, reserved bits after AckReq set on the wire.
    const Bytes wire = {0x04, 0x4F, 0xFF, 0xFF, 0x40, 0x00, 0x00, 0x01,
                        0x7F, 0x00, 0x00, 0x02};
    IbBthHeader bth;
    bth.ReadFrom(wire.data());
    EXPECT_FALSE(bth.GetSe());
    EXPECT_TRUE(bth.GetMigReq());
    EXPECT_EQ(bth.GetPadCnt(), 0);
    EXPECT_EQ(bth.GetTver(), 0x0F);
    EXPECT_FALSE(bth.GetFecn());
    EXPECT_TRUE(bth.GetBecn());
    EXPECT_FALSE(bth.GetAckReq()); // the 7 reserved bits are not AckReq
    // Reserved bits are written as zero.
    const Bytes again = Raw(bth);
    EXPECT_EQ(again[8], 0x00);
    EXPECT_EQ(again[4], 0x40);

    bth.SetBecn(false);
    bth.SetFecn(true);
    bth.SetFecn(false);
    EXPECT_EQ(bth.GetResv8a(), 0x00);
    bth.SetDestQp(0x1FFFFFF);
    bth.SetPsn(0xFF000001);
    EXPECT_EQ(bth.GetDestQp(), 0xFFFFFFu);
    EXPECT_EQ(bth.GetPsn(), 0x000001u);
}

// ---------------------------------------------------------------------------------------------
// DETH, IBA vol. 1 §9.3

TEST(IbDethHeader, ByteExactAgainstSpecLayout)
{
    IbDethHeader deth;
    deth.SetQkey(IbDethHeader::kGsiQkey);
    deth.SetSrcQp(0xA1B2C3);
    const Bytes expected = {0x80, 0x01, 0x00, 0x00, 0x00, 0xA1, 0xB2, 0xC3};
    EXPECT_EQ(Raw(deth), expected);
    EXPECT_EQ(ViaPacket(deth), expected);

    Bytes withReserved = expected;
    withReserved[4] = 0xEE; // reserved byte: ignored
    const IbDethHeader back = FromPacket<IbDethHeader>(withReserved);
    EXPECT_EQ(back.GetQkey(), 0x80010000u);
    EXPECT_EQ(back.GetSrcQp(), 0xA1B2C3u);
    EXPECT_EQ(Raw(back), expected);
}

// ---------------------------------------------------------------------------------------------
// Flow-control packet, IBA vol. 1 §7.9.4

TEST(IbFlowControlHeader, ByteExactWithLpcrc)
{
    IbFlowControlHeader fc;
    fc.SetOp(IbFlowControlOp::Init);
    fc.SetFctbs(0xABC);
    fc.SetVl(3);
    fc.SetFccl(0x123);
    const Bytes fields = {0x1A, 0xBC, 0x31, 0x23};
    const uint16_t lpcrc = BoostCrc16(fields.data(), fields.size());
    // LPCRC in the VCRC's byte order: little-endian.
    const Bytes expected = {0x1A, 0xBC, 0x31, 0x23, static_cast<uint8_t>(lpcrc),
                            static_cast<uint8_t>(lpcrc >> 8)};
    EXPECT_EQ(Raw(fc), expected);
    EXPECT_EQ(ViaPacket(fc), expected);
    EXPECT_EQ(fc.ComputeLpcrc(), lpcrc);
    EXPECT_EQ(IbComputeLpcrc(fields.data()), lpcrc);

    IbFlowControlHeader back = FromPacket<IbFlowControlHeader>(expected);
    EXPECT_EQ(back.GetOp(), IbFlowControlOp::Init);
    EXPECT_EQ(back.GetFctbs(), 0xABC);
    EXPECT_EQ(back.GetVl(), 3);
    EXPECT_EQ(back.GetFccl(), 0x123);
    EXPECT_EQ(back.GetLpcrc(), lpcrc);
    EXPECT_TRUE(back.IsLpcrcValid());

    // Any single flipped bit is caught (a CRC-16 detects all single-bit errors).
    for (size_t bit = 0; bit < 48; ++bit)
    {
        Bytes bad = expected;
        bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        IbFlowControlHeader h;
        h.ReadFrom(bad.data());
        EXPECT_FALSE(h.IsLpcrcValid()) << "bit " << bit;
    }
}

TEST(IbFlowControlHeader, CountersWrapModulo4096)
{
    IbFlowControlHeader fc;
    fc.SetOp(IbFlowControlOp::Normal);
    fc.SetFctbs(4096 + 7);
    fc.SetFccl(8191);
    fc.SetVl(0x1F);
    EXPECT_EQ(fc.GetFctbs(), 7);
    EXPECT_EQ(fc.GetFccl(), 4095);
    EXPECT_EQ(fc.GetVl(), 0x0F);
    const Bytes raw = Raw(fc);
    EXPECT_EQ(raw[0], 0x00);
    EXPECT_EQ(raw[1], 0x07);
    EXPECT_EQ(raw[2], 0xFF);
    EXPECT_EQ(raw[3], 0xFF);
}

// ---------------------------------------------------------------------------------------------
// VCRC / CRC-16, IBA vol. 1 §7.8.2

TEST(IbCrc, VcrcCheckValue)
{
    // Check value of CRC-16 poly 0x100B, init 0xFFFF, refin/refout, xorout 0xFFFF over the
    // standard string "123456789": 0x0A3D (derived with a bit-at-a-time implementation; Boost
    // agrees below).
    const char* check = "123456789";
    const auto* p = reinterpret_cast<const uint8_t*>(check);
    EXPECT_EQ(IbComputeVcrc(p, 9), 0x0A3D);
    EXPECT_EQ(BoostCrc16(p, 9), 0x0A3D);
    EXPECT_EQ(IbComputeVcrc(p, 0), 0x0000); // empty input: init ^ xorout
}

TEST(IbCrc, VcrcMatchesBoostForAllLengths)
{
    // Our slicing-by-8 tables against Boost's table-driven implementation, over every length
    // from 0 to 300 (all head/tail splits of the 8-byte loop) and the large MTUs.
    const Bytes data = Payload(4200, 7);
    for (size_t n = 0; n <= 300; ++n)
    {
        ASSERT_EQ(IbComputeVcrc(data.data(), n), BoostCrc16(data.data(), n)) << "len " << n;
    }
    for (size_t n : {1021u, 2048u, 4096u, 4200u})
    {
        EXPECT_EQ(IbComputeVcrc(data.data(), n), BoostCrc16(data.data(), n)) << "len " << n;
    }
    // Unaligned start.
    EXPECT_EQ(IbComputeVcrc(data.data() + 3, 777), BoostCrc16(data.data() + 3, 777));
}

TEST(IbCrc, VcrcIsLittleEndianOnTheWire)
{
    TestPacketSpec s;
    s.payload = Payload(33);
    const Bytes pkt = BuildPacket(s);
    const size_t vcrcAt = pkt.size() - 2;
    const uint16_t vcrc = IbComputeVcrc(pkt.data(), vcrcAt);
    EXPECT_EQ(pkt[vcrcAt], vcrc & 0xFF);
    EXPECT_EQ(pkt[vcrcAt + 1], vcrc >> 8);
    EXPECT_EQ(IbLoadVcrc(pkt.data() + vcrcAt), vcrc);
    // With the low byte first, the CRC over packet + VCRC is the constant residue of the
    // reflected CRC; that is the property hardware checkers rely on.
    EXPECT_EQ(IbComputeVcrc(pkt.data(), pkt.size()), kIbVcrcResidue);
    EXPECT_EQ(BoostCrc16(pkt.data(), pkt.size()), 0xAA90);

    uint8_t two[2];
    IbStoreVcrc(two, 0x1234);
    EXPECT_EQ(two[0], 0x34);
    EXPECT_EQ(two[1], 0x12);
}

// ---------------------------------------------------------------------------------------------
// ICRC, IBA vol. 1 §7.8.1

TEST(IbCrc, IcrcLocalPacketAgainstHandMaskedZlib)
{
    TestPacketSpec s;
    s.vl = 2;
    s.sl = 3;
    s.fecn = true;
    s.payload = Payload(61);
    const Bytes pkt = BuildPacket(s);
    const size_t icrcAt = pkt.size() - 6;

    // Masked copy built by hand: LRH byte 0 = VL|LVer -> VL nibble ones; BTH byte 4 (Resv8a,
    // at packet offset 8 + 4) -> ones.
    Bytes masked(pkt.begin(), pkt.begin() + icrcAt);
    masked[0] = static_cast<uint8_t>(masked[0] | 0xF0);
    masked[12] = 0xFF;
    const uint32_t expected = ZlibCrc32(masked);
    EXPECT_EQ(IbComputeIcrc(pkt.data(), icrcAt), expected);
    // ICRC bytes on the wire: little-endian.
    EXPECT_EQ(IbLoadIcrc(pkt.data() + icrcAt), expected);
    EXPECT_EQ(pkt[icrcAt], expected & 0xFF);
    EXPECT_EQ(pkt[icrcAt + 3], expected >> 24);
    // Little-endian gives the CRC-32 residue over masked data + ICRC.
    Bytes withIcrc = masked;
    withIcrc.insert(withIcrc.end(), pkt.begin() + icrcAt, pkt.begin() + icrcAt + 4);
    EXPECT_EQ(ZlibCrc32(withIcrc), 0x2144DF1Cu);
}

TEST(IbCrc, IcrcGlobalPacketAgainstHandMaskedZlib)
{
    TestPacketSpec s;
    s.global = true;
    s.tClass = 0x5A;
    s.flowLabel = 0xBEEF1;
    s.hopLmt = 17;
    s.payload = Payload(100);
    const Bytes pkt = BuildPacket(s);
    const size_t icrcAt = pkt.size() - 6;

    Bytes masked(pkt.begin(), pkt.begin() + icrcAt);
    for (int i = 0; i < 8; ++i)
    {
        masked[i] = 0xFF; // whole LRH
    }
    masked[8] = static_cast<uint8_t>(masked[8] | 0x0F); // TClass high nibble (IPVer kept)
    masked[9] = masked[10] = masked[11] = 0xFF;          // TClass low nibble + FlowLabel
    masked[15] = 0xFF;                                   // HopLmt
    masked[8 + 40 + 4] = 0xFF;                           // BTH Resv8a
    EXPECT_EQ(IbComputeIcrc(pkt.data(), icrcAt), ZlibCrc32(masked));
    EXPECT_EQ(IbLoadIcrc(pkt.data() + icrcAt), ZlibCrc32(masked));
}

TEST(IbCrc, IcrcAgainstPythonZlib)
{
    // A third, independent implementation: Python's zlib over masking written in Python.
    TestPacketSpec local;
    local.vl = 1;
    local.payload = Payload(45, 3);
    TestPacketSpec global;
    global.global = true;
    global.flowLabel = 0x12345;
    global.payload = Payload(20, 4);
    for (const Bytes& pkt : {BuildPacket(local), BuildPacket(global)})
    {
        const size_t icrcAt = pkt.size() - 6;
        const std::string script =
            "import sys, zlib\n"
            "b = bytearray(bytes.fromhex(sys.argv[1]))\n"
            "lnh = b[1] & 3\n"
            "if lnh == 2:\n"
            "    b[0] |= 0xF0; b[12] = 0xFF\n"
            "else:\n"
            "    b[0:8] = bytes([255]) * 8; b[8] |= 0x0F; b[9:12] = bytes([255]) * 3\n"
            "    b[15] = 0xFF\n"
            "    b[52] = 0xFF\n"
            "print(zlib.crc32(bytes(b)))\n";
        int status = -1;
        const std::string out = cnuas_test::RunCommand(
            std::string(CNUAS_PYTHON) + " -c '" + script + "' " +
                cnuas_test::ToHex(pkt.data(), icrcAt),
            &status);
        ASSERT_EQ(status, 0) << "python failed: " << out;
        EXPECT_EQ(std::stoul(out), IbComputeIcrc(pkt.data(), icrcAt));
    }
}

TEST(IbCrc, IcrcIgnoresVariantFieldsOnly)
{
    TestPacketSpec base;
    base.payload = Payload(24);
    const Bytes ref = BuildPacket(base);
    const size_t icrcAt = ref.size() - 6;
    const uint32_t icrc = IbComputeIcrc(ref.data(), icrcAt);

    // Local packet: VL and Resv8a are variant ...
    Bytes p = ref;
    p[0] = static_cast<uint8_t>((p[0] & 0x0F) | 0x70); // VL 7
    p[12] = 0xC0;                                        // FECN + BECN
    EXPECT_EQ(IbComputeIcrc(p.data(), icrcAt), icrc);
    // ... SL, DLID, SLID, P_Key, payload are not.
    for (size_t off : {1u, 2u, 3u, 6u, 7u, 10u, 11u, 13u, 20u, 30u})
    {
        Bytes q = ref;
        q[off] ^= 0x10;
        EXPECT_NE(IbComputeIcrc(q.data(), icrcAt), icrc) << "offset " << off;
    }

    // Global packet: the whole LRH, TClass, FlowLabel and HopLmt are variant.
    TestPacketSpec gs = base;
    gs.global = true;
    const Bytes gref = BuildPacket(gs);
    const size_t gIcrcAt = gref.size() - 6;
    const uint32_t gIcrc = IbComputeIcrc(gref.data(), gIcrcAt);
    Bytes g = gref;
    for (int i = 0; i < 8; ++i)
    {
        g[i] ^= 0x58; // every LRH field but LNH (which says a GRH follows)
    }
    g[8] ^= 0x0F;  // TClass high nibble
    g[9] ^= 0xFF;  // TClass low nibble + FlowLabel
    g[11] ^= 0x01; // FlowLabel
    g[15] ^= 0x3C; // HopLmt
    g[52] ^= 0x80; // FECN
    EXPECT_EQ(IbComputeIcrc(g.data(), gIcrcAt), gIcrc);
    for (size_t off : {8u /* IPVer */, 12u /* PayLen */, 14u /* NxtHdr */, 20u /* SGID */,
                       40u /* DGID */, 48u /* OpCode */, 50u /* P_Key */, 55u /* DestQP */})
    {
        Bytes q = gref;
        q[off] ^= (off == 8 ? 0x10 : 0x01);
        EXPECT_NE(IbComputeIcrc(q.data(), gIcrcAt), gIcrc) << "offset " << off;
    }
}

TEST(IbCrc, IcrcOfShortInputsStaysInBounds)
{
    // Degenerate lengths must not read past lenBeforeIcrc (ASan checks this in Debug builds).
    for (size_t n = 0; n < 70; ++n)
    {
        Bytes b(n, 0x03); // LNH bits = 3
        if (n > 1)
        {
            b[1] = 0x03;
        }
        const uint32_t c = IbComputeIcrc(b.data(), n);
        (void)c;
        Bytes ip(n, 0x45);
        (void)IbComputeRoceIcrc(ip.data(), n);
        Bytes ip6(n, 0x60);
        (void)IbComputeRoceIcrc(ip6.data(), n);
    }
    SUCCEED();
}

// ---------------------------------------------------------------------------------------------
// RoCEv2 ICRC, IBA vol. 1 annex A17

namespace
{
const Bytes kConnectX4LxCnp = cnuas_test::HardwareCnpFrame();
} // namespace

TEST(IbCrc, RoceIcrcMatchesRealHardwareCapture)
{
    ASSERT_EQ(kConnectX4LxCnp.size(), 74u);
    const uint8_t* ip = kConnectX4LxCnp.data() + 14;
    const size_t ipLen = 60; // IPv4 total length 0x003c
    const uint32_t hw = IbLoadIcrc(ip + ipLen - 4);
    EXPECT_EQ(hw, 0x2A00FD82u); // bytes 82 fd 00 2a read little-endian
    EXPECT_EQ(IbComputeRoceIcrc(ip, ipLen - 4), hw);
}

TEST(IbCrc, RoceIcrcMasking)
{
    const uint8_t* ip = kConnectX4LxCnp.data() + 14;
    const size_t icrcAt = 56;
    const uint32_t ref = IbComputeRoceIcrc(ip, icrcAt);

    // Hand-built: 8 x 0xFF + IPv4 with TOS, TTL, checksum = ones + UDP checksum ones + Resv8a.
    Bytes masked(8, 0xFF);
    masked.insert(masked.end(), ip, ip + icrcAt);
    masked[8 + 1] = 0xFF;
    masked[8 + 8] = 0xFF;
    masked[8 + 10] = masked[8 + 11] = 0xFF;
    masked[8 + 20 + 6] = masked[8 + 20 + 7] = 0xFF;
    masked[8 + 28 + 4] = 0xFF;
    EXPECT_EQ(ZlibCrc32(masked), ref);

    Bytes p(ip, ip + icrcAt);
    p[1] ^= 0x03;  // ECN bits of TOS (a switch marks CE)
    p[8] -= 1;     // TTL
    p[10] ^= 0xAA; // IPv4 checksum
    p[27] ^= 0x55; // UDP checksum
    p[32] = 0x00;  // BECN cleared
    EXPECT_EQ(IbComputeRoceIcrc(p.data(), icrcAt), ref);
    Bytes q(ip, ip + icrcAt);
    q[16] ^= 0x01; // destination address
    EXPECT_NE(IbComputeRoceIcrc(q.data(), icrcAt), ref);
}

TEST(IbCrc, RoceIcrcIpv6Masking)
{
    // IPv6 + UDP + BTH + 16 bytes, hand-assembled.
    Bytes ip6(40 + 8 + 12 + 16, 0);
    ip6[0] = 0x62; // version 6, traffic class high nibble 2
    ip6[1] = 0x81;
    ip6[2] = 0x23;
    ip6[3] = 0x45;
    ip6[4] = 0x00;
    ip6[5] = 8 + 12 + 16 + 4;
    ip6[6] = 17;
    ip6[7] = 64;
    for (int i = 0; i < 32; ++i)
    {
        ip6[8 + i] = static_cast<uint8_t>(i * 7);
    }
    ip6[40] = 0xC0;
    ip6[42] = 0x12;
    ip6[43] = 0xB7;
    ip6[45] = 8 + 12 + 16 + 4;
    ip6[46] = 0xAB; // UDP checksum
    ip6[48] = 0x0A; // RC RDMA WRITE Only
    ip6[50] = ip6[51] = 0xFF;
    ip6[52] = 0x40;
    const uint32_t ref = IbComputeRoceIcrc(ip6.data(), ip6.size());

    Bytes masked(8, 0xFF);
    masked.insert(masked.end(), ip6.begin(), ip6.end());
    masked[8] |= 0x0F;
    masked[9] = masked[10] = masked[11] = 0xFF;
    masked[8 + 7] = 0xFF;
    masked[8 + 46] = masked[8 + 47] = 0xFF;
    masked[8 + 52] = 0xFF;
    EXPECT_EQ(ZlibCrc32(masked), ref);
}

// ---------------------------------------------------------------------------------------------
// IbFillCrcs / IbCheckCrcs

TEST(IbCrc, FillAndCheck)
{
    TestPacketSpec s;
    s.payload = Payload(256);
    Bytes pkt = BuildPacket(s);
    IbCrcCheck c = IbCheckCrcs(pkt.data(), pkt.size());
    EXPECT_TRUE(c.hasIcrc);
    EXPECT_TRUE(c.icrcOk);
    EXPECT_TRUE(c.vcrcOk);

    // A payload bit flip breaks both CRCs; refilling the VCRC alone leaves the ICRC wrong.
    pkt[40] ^= 0x04;
    c = IbCheckCrcs(pkt.data(), pkt.size());
    EXPECT_FALSE(c.icrcOk);
    EXPECT_FALSE(c.vcrcOk);
    const size_t vcrcAt = pkt.size() - 2;
    IbStoreVcrc(pkt.data() + vcrcAt, IbComputeVcrc(pkt.data(), vcrcAt));
    c = IbCheckCrcs(pkt.data(), pkt.size());
    EXPECT_FALSE(c.icrcOk);
    EXPECT_TRUE(c.vcrcOk);

    // A switch changing the VL only needs a new VCRC (IBA vol. 1 §7.8.2: per hop).
    Bytes hop = BuildPacket(s);
    hop[0] = static_cast<uint8_t>((hop[0] & 0x0F) | 0x30);
    c = IbCheckCrcs(hop.data(), hop.size());
    EXPECT_TRUE(c.icrcOk);
    EXPECT_FALSE(c.vcrcOk);
    IbStoreVcrc(hop.data() + vcrcAt, IbComputeVcrc(hop.data(), vcrcAt));
    c = IbCheckCrcs(hop.data(), hop.size());
    EXPECT_TRUE(c.icrcOk && c.vcrcOk);
}

TEST(IbCrc, RawPacketHasNoIcrc)
{
    // LNH 0 (raw): LRH + 8 bytes + VCRC, no ICRC.
    Bytes pkt = {0x00, 0x00, 0x00, 0x04, 0x00, 0x04, 0x00, 0x05, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0};
    IbFillCrcs(pkt.data(), pkt.size());
    EXPECT_EQ(pkt[8], 1); // payload untouched: no ICRC written
    EXPECT_EQ(pkt[15], 8);
    const IbCrcCheck c = IbCheckCrcs(pkt.data(), pkt.size());
    EXPECT_FALSE(c.hasIcrc);
    EXPECT_TRUE(c.icrcOk);
    EXPECT_TRUE(c.vcrcOk);
    const IbCrcCheck tooShort = IbCheckCrcs(pkt.data(), 9);
    EXPECT_FALSE(tooShort.vcrcOk);
    EXPECT_FALSE(tooShort.hasIcrc);
}

// ---------------------------------------------------------------------------------------------
// ERF-in-pcap writer

TEST(IbErfPcapWriter, ErfTimestampFixedPoint)
{
    EXPECT_EQ(IbErfPcapWriter::ErfTimestamp(Seconds(0)), 0u);
    EXPECT_EQ(IbErfPcapWriter::ErfTimestamp(Seconds(-1)), 0u);
    EXPECT_EQ(IbErfPcapWriter::ErfTimestamp(Seconds(3)), 3ULL << 32);
    EXPECT_EQ(IbErfPcapWriter::ErfTimestamp(MilliSeconds(1500)), (1ULL << 32) | 0x80000000ULL);
    EXPECT_EQ(IbErfPcapWriter::ErfTimestamp(MilliSeconds(250)), 0x40000000ULL);
    // 1 ns = 4.294967296 units of 2^-32 s, rounded to 4.
    EXPECT_EQ(IbErfPcapWriter::ErfTimestamp(NanoSeconds(1)), 4ULL);
    // Sub-nanosecond parts are dropped, as in the pcap record header.
    EXPECT_EQ(IbErfPcapWriter::ErfTimestamp(PicoSeconds(1999)), 4ULL);
}

TEST(IbErfPcapWriter, FileLayoutIsExact)
{
    const std::string path = TempPath("layout.pcap");
    TestPacketSpec s;
    s.payload = Payload(10);
    const Bytes pkt = BuildPacket(s);
    {
        IbErfPcapWriter w;
        ASSERT_TRUE(w.Open(path));
        EXPECT_TRUE(w.IsOpen());
        w.Write(Seconds(1) + NanoSeconds(500000000) + PicoSeconds(700), pkt.data(),
                static_cast<uint32_t>(pkt.size()));
        w.Close();
        EXPECT_FALSE(w.IsOpen());
        w.Write(Seconds(2), pkt.data(), static_cast<uint32_t>(pkt.size())); // ignored
    }
    const Bytes f = ReadBytes(path);
    ASSERT_EQ(f.size(), 24u + 16u + 16u + pkt.size());
    // pcap file header: nanosecond magic a1b23c4d (little-endian host), v2.4, link type 197.
    EXPECT_EQ(Bytes(f.begin(), f.begin() + 4), (Bytes{0x4d, 0x3c, 0xb2, 0xa1}));
    EXPECT_EQ(f[4], 2);
    EXPECT_EQ(f[6], 4);
    EXPECT_EQ(Bytes(f.begin() + 20, f.begin() + 24), (Bytes{197, 0, 0, 0}));
    // Record header: 1 s, 500000000 ns, caplen = len = 16 + packet.
    const uint8_t* r = f.data() + 24;
    EXPECT_EQ(Bytes(r, r + 4), (Bytes{1, 0, 0, 0}));
    EXPECT_EQ(Bytes(r + 4, r + 8), (Bytes{0x00, 0x65, 0xcd, 0x1d})); // 500000000 LE
    const uint8_t recLen = static_cast<uint8_t>(16 + pkt.size());
    EXPECT_EQ(Bytes(r + 8, r + 16), (Bytes{recLen, 0, 0, 0, recLen, 0, 0, 0}));
    // ERF header: ts LE (1 s + 0x80000000), type 21, flags 4, rlen BE, lctr 0, wlen BE.
    const uint8_t* e = r + 16;
    EXPECT_EQ(Bytes(e, e + 8), (Bytes{0x00, 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00}));
    EXPECT_EQ(e[8], 21);
    EXPECT_EQ(e[9], 0x04);
    EXPECT_EQ(Bytes(e + 10, e + 16),
              (Bytes{0, recLen, 0, 0, 0, static_cast<uint8_t>(pkt.size())}));
    EXPECT_EQ(Bytes(e + 16, e + 16 + pkt.size()), pkt);
    std::remove(path.c_str());
}

TEST(IbErfPcapWriter, ReadableByLibpcapWithNanosecondTimes)
{
    const std::string path = TempPath("libpcap.pcap");
    const std::vector<Time> times = {NanoSeconds(0),
                                     NanoSeconds(1),
                                     MicroSeconds(2) + PicoSeconds(3),
                                     Seconds(5) + NanoSeconds(999999999)};
    TestPacketSpec s;
    s.payload = Payload(100);
    const Bytes pkt = BuildPacket(s);
    {
        IbErfPcapWriter w;
        ASSERT_TRUE(w.Open(path));
        for (Time t : times)
        {
            w.Write(t, pkt.data(), static_cast<uint32_t>(pkt.size()));
        }
    } // the destructor closes
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* pc = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO,
                                                         err);
    ASSERT_NE(pc, nullptr) << err;
    EXPECT_EQ(pcap_datalink(pc), 197);
    size_t i = 0;
    pcap_pkthdr* h;
    const u_char* d;
    while (pcap_next_ex(pc, &h, &d) == 1)
    {
        ASSERT_LT(i, times.size());
        const int64_t ns = times[i].GetNanoSeconds();
        EXPECT_EQ(h->ts.tv_sec, ns / 1000000000);
        EXPECT_EQ(h->ts.tv_usec, ns % 1000000000);
        EXPECT_EQ(h->caplen, 16 + pkt.size());
        EXPECT_EQ(Bytes(d + 16, d + h->caplen), pkt);
        ++i;
    }
    EXPECT_EQ(i, times.size());
    pcap_close(pc);
    std::remove(path.c_str());
}

TEST(IbErfPcapWriter, DeterministicOutput)
{
    auto writeRun = [](const std::string& path) {
        IbErfPcapWriter w;
        EXPECT_TRUE(w.Open(path));
        for (uint32_t i = 0; i < 50; ++i)
        {
            TestPacketSpec s;
            s.global = (i % 3 == 0);
            s.psn = i;
            s.payload = Payload(i * 7 % 300, static_cast<uint8_t>(i));
            const Bytes pkt = BuildPacket(s);
            w.Write(NanoSeconds(1000 + 37 * i) + PicoSeconds(i), pkt.data(),
                    static_cast<uint32_t>(pkt.size()));
        }
        w.Close();
    };
    const std::string a = TempPath("det-a.pcap");
    const std::string b = TempPath("det-b.pcap");
    writeRun(a);
    writeRun(b);
    const Bytes fa = ReadBytes(a);
    const Bytes fb = ReadBytes(b);
    EXPECT_GT(fa.size(), 24u);
    EXPECT_EQ(fa, fb);
    std::remove(a.c_str());
    std::remove(b.c_str());
}

TEST(IbErfPcapWriter, OpenFailsOnBadPath)
{
    IbErfPcapWriter w;
    EXPECT_FALSE(w.Open("/nonexistent-dir-cnuas/x.pcap"));
    EXPECT_FALSE(w.IsOpen());
    const uint8_t pkt[10] = {};
    w.Write(Seconds(1), pkt, sizeof(pkt)); // no file: ignored, no crash
}
