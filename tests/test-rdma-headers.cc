// RDMA transport headers: the extension headers byte-exact against layouts written out by hand
// from the spec, the opcode table against the spec's table written out again by hand, the
// message-sequence rule against an independent list of allowed successors, the parser against
// malformed and random input, and tshark's decoding of packets built with all of it.
#include "header-test-util.h"
#include "ib-test-packets.h"

#include "helpers/trace/ib-pcap-writer.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-lrh-header.h"
#include "models/rdma/ib-aeth-header.h"
#include "models/rdma/ib-atomic-ack-eth-header.h"
#include "models/rdma/ib-atomic-eth-header.h"
#include "models/rdma/ib-ieth-header.h"
#include "models/rdma/ib-immdt-header.h"
#include "models/rdma/ib-opcode.h"
#include "models/rdma/ib-qp-type.h"
#include "models/rdma/ib-reth-header.h"
#include "models/rdma/ib-transport-headers.h"

#include "ns3/nstime.h"
#include "ns3/packet.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ns3;
using cnuas_test::Raw;
using cnuas_test::ViaPacket;
using cnuas_test::Payload;
using cnuas_test::RunCommand;

namespace
{

using Bytes = std::vector<uint8_t>;

/// Parse through an ns3::Packet (RemoveHeader) and through ReadFrom; both must agree.
template <typename H>
H
Parse(const Bytes& raw)
{
    EXPECT_EQ(raw.size(), H::kSize);
    Ptr<Packet> p = Create<Packet>(raw.data(), raw.size());
    H viaPacket;
    EXPECT_EQ(p->RemoveHeader(viaPacket), H::kSize);
    H direct;
    direct.ReadFrom(raw.data());
    EXPECT_EQ(Raw(viaPacket), Raw(direct));
    return direct;
}

template <typename H>
std::string
Printed(const H& h)
{
    std::ostringstream os;
    h.Print(os);
    return os.str();
}

std::string
TempPath(const std::string& name)
{
    return std::string(CNUAS_BINARY_DIR) + "/test-rdma-headers-" + std::to_string(getpid()) +
           "-" + name;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Extension headers, IBA vol. 1 §9.3

TEST(IbRethHeader, ByteExactAgainstSpecLayout)
{
    IbRethHeader reth;
    reth.SetVirtualAddress(0x0123456789ABCDEFULL);
    reth.SetRkey(0xDEADBEEF);
    reth.SetDmaLength(0x00102030);
    // §9.3.3: VA (8), R_Key (4), DMA Length (4), big-endian.
    const Bytes expected = {0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,
                            0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x10, 0x20, 0x30};
    ASSERT_EQ(IbRethHeader::kSize, 16u);
    EXPECT_EQ(reth.GetSerializedSize(), 16u);
    EXPECT_EQ(Raw(reth), expected);
    EXPECT_EQ(ViaPacket(reth), expected);

    const IbRethHeader back = Parse<IbRethHeader>(expected);
    EXPECT_EQ(back.GetVirtualAddress(), 0x0123456789ABCDEFULL);
    EXPECT_EQ(back.GetRkey(), 0xDEADBEEFu);
    EXPECT_EQ(back.GetDmaLength(), 0x00102030u);
    EXPECT_NE(Printed(back).find("R_Key=0xdeadbeef"), std::string::npos) << Printed(back);
}

TEST(IbAtomicEthHeader, ByteExactAgainstSpecLayout)
{
    IbAtomicEthHeader a;
    a.SetVirtualAddress(0x1122334455667788ULL);
    a.SetRkey(0x99AABBCC);
    a.SetSwapAddData(0x0102030405060708ULL);
    a.SetCompareData(0xF0E0D0C0B0A09080ULL);
    // §9.3.4: VA (8), R_Key (4), Swap/Add data (8), Compare data (8).
    const Bytes expected = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA,
                            0xBB, 0xCC, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                            0xF0, 0xE0, 0xD0, 0xC0, 0xB0, 0xA0, 0x90, 0x80};
    ASSERT_EQ(IbAtomicEthHeader::kSize, 28u);
    EXPECT_EQ(Raw(a), expected);
    EXPECT_EQ(ViaPacket(a), expected);

    const IbAtomicEthHeader back = Parse<IbAtomicEthHeader>(expected);
    EXPECT_EQ(back.GetVirtualAddress(), 0x1122334455667788ULL);
    EXPECT_EQ(back.GetRkey(), 0x99AABBCCu);
    EXPECT_EQ(back.GetSwapAddData(), 0x0102030405060708ULL);
    EXPECT_EQ(back.GetCompareData(), 0xF0E0D0C0B0A09080ULL);
}

TEST(IbAtomicAckEthHeader, ByteExactAgainstSpecLayout)
{
    IbAtomicAckEthHeader a;
    a.SetOriginalRemoteData(0x8877665544332211ULL);
    // §9.3.6: original remote data (8).
    const Bytes expected = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
    ASSERT_EQ(IbAtomicAckEthHeader::kSize, 8u);
    EXPECT_EQ(Raw(a), expected);
    EXPECT_EQ(ViaPacket(a), expected);
    EXPECT_EQ(Parse<IbAtomicAckEthHeader>(expected).GetOriginalRemoteData(),
              0x8877665544332211ULL);
}

TEST(IbImmDtHeader, ByteExactAgainstSpecLayout)
{
    IbImmDtHeader imm;
    imm.SetImmediateData(0xCAFEF00D);
    const Bytes expected = {0xCA, 0xFE, 0xF0, 0x0D};
    ASSERT_EQ(IbImmDtHeader::kSize, 4u);
    EXPECT_EQ(Raw(imm), expected);
    EXPECT_EQ(ViaPacket(imm), expected);
    EXPECT_EQ(Parse<IbImmDtHeader>(expected).GetImmediateData(), 0xCAFEF00Du);
}

TEST(IbIethHeader, ByteExactAgainstSpecLayout)
{
    IbIethHeader ieth;
    ieth.SetRkey(0x00ABCDEF);
    const Bytes expected = {0x00, 0xAB, 0xCD, 0xEF};
    ASSERT_EQ(IbIethHeader::kSize, 4u);
    EXPECT_EQ(Raw(ieth), expected);
    EXPECT_EQ(ViaPacket(ieth), expected);
    EXPECT_EQ(Parse<IbIethHeader>(expected).GetRkey(), 0x00ABCDEFu);
}

TEST(IbRdmaHeaders, TypeIdsAreRegistered)
{
    for (const char* name : {"ns3::IbRethHeader",
                             "ns3::IbAethHeader",
                             "ns3::IbAtomicEthHeader",
                             "ns3::IbAtomicAckEthHeader",
                             "ns3::IbImmDtHeader",
                             "ns3::IbIethHeader"})
    {
        TypeId tid;
        EXPECT_TRUE(TypeId::LookupByNameFailSafe(name, &tid)) << name;
    }
    EXPECT_EQ(IbAethHeader().GetInstanceTypeId(), IbAethHeader::GetTypeId());
}

// ---------------------------------------------------------------------------------------------
// AETH, IBA vol. 1 §9.3.5 and §9.7.5.2

TEST(IbAethHeader, ByteExactAgainstSpecLayout)
{
    // Syndrome: bit 7 reserved, bits 6:5 = 00 ACK / 01 RNR NAK / 11 NAK, bits 4:0 value; MSN 24.
    struct Case
    {
        IbAethHeader h;
        Bytes wire;
    };
    const std::vector<Case> cases = {
        {IbAethHeader::MakeAck(0x123456, 0x1F), {0x1F, 0x12, 0x34, 0x56}},
        {IbAethHeader::MakeAck(1, 0), {0x00, 0x00, 0x00, 0x01}},
        {IbAethHeader::MakeAck(0xFFFFFF, 10), {0x0A, 0xFF, 0xFF, 0xFF}},
        {IbAethHeader::MakeRnrNak(0x000102, 14), {0x2E, 0x00, 0x01, 0x02}},
        {IbAethHeader::MakeRnrNak(7, 0), {0x20, 0x00, 0x00, 0x07}},
        {IbAethHeader::MakeNak(9, IbNakCode::PsnSequenceError), {0x60, 0x00, 0x00, 0x09}},
        {IbAethHeader::MakeNak(9, IbNakCode::InvalidRequest), {0x61, 0x00, 0x00, 0x09}},
        {IbAethHeader::MakeNak(9, IbNakCode::RemoteAccessError), {0x62, 0x00, 0x00, 0x09}},
        {IbAethHeader::MakeNak(9, IbNakCode::RemoteOperationalError), {0x63, 0x00, 0x00, 0x09}},
        {IbAethHeader::MakeNak(9, IbNakCode::InvalidRdRequest), {0x64, 0x00, 0x00, 0x09}},
    };
    for (const Case& c : cases)
    {
        SCOPED_TRACE(Printed(c.h));
        EXPECT_EQ(Raw(c.h), c.wire);
        EXPECT_EQ(ViaPacket(c.h), c.wire);
        const IbAethHeader back = Parse<IbAethHeader>(c.wire);
        EXPECT_EQ(back.GetSyndrome(), c.wire[0]);
        EXPECT_EQ(back.GetMsn(), c.h.GetMsn());
        EXPECT_EQ(back.GetKind(), c.h.GetKind());
    }

    const IbAethHeader ack = Parse<IbAethHeader>({0x0A, 0xFF, 0xFF, 0xFF});
    EXPECT_TRUE(ack.IsAck());
    EXPECT_FALSE(ack.IsNak());
    EXPECT_FALSE(ack.IsRnrNak());
    EXPECT_EQ(ack.GetCreditCode(), 10);
    EXPECT_EQ(ack.GetCredits(), 32u);
    EXPECT_EQ(ack.GetMsn(), 0xFFFFFFu);

    const IbAethHeader rnr = Parse<IbAethHeader>({0x2E, 0x00, 0x01, 0x02});
    EXPECT_TRUE(rnr.IsRnrNak());
    EXPECT_EQ(rnr.GetKind(), IbAethKind::RnrNak);
    EXPECT_EQ(rnr.GetRnrTimerCode(), 14);
    EXPECT_EQ(rnr.GetRnrDelay(), MicroSeconds(1280));
    EXPECT_EQ(rnr.GetMsn(), 0x102u);

    const IbAethHeader nak = Parse<IbAethHeader>({0x62, 0x00, 0x00, 0x09});
    EXPECT_TRUE(nak.IsNak());
    EXPECT_EQ(nak.GetNakCode(), IbNakCode::RemoteAccessError);
    EXPECT_NE(Printed(nak).find("remote access error"), std::string::npos) << Printed(nak);
    EXPECT_STREQ(IbNakCodeName(IbNakCode::PsnSequenceError), "PSN sequence error");
    EXPECT_STREQ(IbNakCodeName(static_cast<IbNakCode>(5)), "reserved");

    // Syndrome 0x40 (bits 6:5 = 10) is the reserved kind.
    EXPECT_EQ(Parse<IbAethHeader>({0x45, 0, 0, 0}).GetKind(), IbAethKind::Reserved);
}

TEST(IbAethHeader, ReservedBitAndFieldWidths)
{
    // The reserved syndrome bit is ignored on read and written as zero.
    const IbAethHeader h = Parse<IbAethHeader>({0xE0, 0x00, 0x00, 0x05});
    EXPECT_TRUE(h.IsNak());
    EXPECT_EQ(h.GetSyndrome(), 0x60);
    EXPECT_EQ(Raw(h), (Bytes{0x60, 0x00, 0x00, 0x05}));

    IbAethHeader w;
    w.SetSyndrome(0xFF);
    w.SetMsn(0xAB123456);
    EXPECT_EQ(w.GetSyndrome(), 0x7F);
    EXPECT_EQ(w.GetMsn(), 0x123456u);
    EXPECT_EQ(Raw(w), (Bytes{0x7F, 0x12, 0x34, 0x56}));

    // Values wider than 5 bits do not leak into the kind.
    EXPECT_EQ(IbAethHeader::MakeAck(0, 0xFF).GetSyndrome(), 0x1F);
    EXPECT_EQ(IbAethHeader::MakeRnrNak(0, 0xE1).GetSyndrome(), 0x21);
    EXPECT_EQ(IbAethHeader::MakeNak(0x1000000, static_cast<IbNakCode>(0x24)).GetSyndrome(), 0x64);
    EXPECT_EQ(IbAethHeader::MakeNak(0x1000000, IbNakCode::InvalidRequest).GetMsn(), 0u);
}

TEST(IbAethHeader, CreditCountEncoding)
{
    // IBA vol. 1 §9.7.5.2, credit count encoding, written out again by hand.
    const uint32_t counts[31] = {0,    1,    2,    3,    4,    6,     8,     12,   16,   24,  32,
                                 48,   64,   96,   128,  192,  256,   384,   512,  768,  1024, 1536,
                                 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
    for (uint8_t code = 0; code < 31; ++code)
    {
        EXPECT_EQ(IbAethHeader::CreditCodeToCount(code), counts[code]) << +code;
        EXPECT_EQ(IbAethHeader::CountToCreditCode(counts[code]), code) << +code;
        EXPECT_EQ(IbAethHeader::MakeAck(0, code).GetCredits(), counts[code]);
    }
    EXPECT_EQ(IbAethHeader::CreditCodeToCount(31), IbAethHeader::kUnlimitedCredits);
    EXPECT_EQ(IbAethHeader::MakeAck(0).GetCredits(), IbAethHeader::kUnlimitedCredits);
    EXPECT_EQ(IbAethHeader::MakeAck(0).GetCreditCode(), IbAethHeader::kInvalidCreditCode);
    EXPECT_NE(Printed(IbAethHeader::MakeAck(3)).find("invalid"), std::string::npos);

    // Encoding rounds down: never advertise more receive WQEs than there are.
    EXPECT_EQ(IbAethHeader::CountToCreditCode(5), 4);   // 4
    EXPECT_EQ(IbAethHeader::CountToCreditCode(7), 5);   // 6
    EXPECT_EQ(IbAethHeader::CountToCreditCode(100), 13); // 96
    EXPECT_EQ(IbAethHeader::CountToCreditCode(32767), 29);
    EXPECT_EQ(IbAethHeader::CountToCreditCode(32768), 30);
    EXPECT_EQ(IbAethHeader::CountToCreditCode(0xFFFFFFFF), 30);
    for (uint32_t n = 0; n < 40000; ++n)
    {
        const uint8_t code = IbAethHeader::CountToCreditCode(n);
        ASSERT_LE(IbAethHeader::CreditCodeToCount(code), n);
        if (code < 30)
        {
            ASSERT_GT(IbAethHeader::CreditCodeToCount(code + 1), n);
        }
    }
}

TEST(IbAethHeader, RnrTimerEncoding)
{
    // IBA vol. 1 §9.7.5.2, RNR NAK timer field encoding, in ms as the spec lists it.
    const double ms[32] = {655.36, 0.01,  0.02,  0.03,  0.04,   0.06,   0.08,   0.12,
                           0.16,   0.24,  0.32,  0.48,  0.64,   0.96,   1.28,   1.92,
                           2.56,   3.84,  5.12,  7.68,  10.24,  15.36,  20.48,  30.72,
                           40.96,  61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};
    for (uint8_t code = 0; code < 32; ++code)
    {
        const auto us = static_cast<uint32_t>(ms[code] * 1000 + 0.5);
        EXPECT_EQ(IbAethHeader::RnrTimerMicroSeconds(code), us) << +code;
        EXPECT_EQ(IbAethHeader::MakeRnrNak(0, code).GetRnrDelay(), MicroSeconds(us));
        EXPECT_EQ(IbAethHeader::RnrTimerCodeAtLeast(MicroSeconds(us)), code) << +code;
    }
    EXPECT_EQ(IbAethHeader::RnrTimerMicroSeconds(32 + 14), 1280u); // modulo 32
    EXPECT_EQ(IbAethHeader::RnrTimerCodeAtLeast(Seconds(0)), 1);
    EXPECT_EQ(IbAethHeader::RnrTimerCodeAtLeast(MicroSeconds(1000)), 14); // 0.96 < 1 <= 1.28
    EXPECT_EQ(IbAethHeader::RnrTimerCodeAtLeast(MicroSeconds(491521)), 0);
    EXPECT_EQ(IbAethHeader::RnrTimerCodeAtLeast(Seconds(5)), 0); // longest there is
}

// ---------------------------------------------------------------------------------------------
// Opcode table, IBA vol. 1 §9.2 table 36

namespace
{

/// The spec's table as a test writes it out again: opcode, Wireshark's name, header sequence
/// after the BTH (D DETH, R RETH, A AtomicETH, K AETH, C AtomicAckETH, I ImmDt, V IETH,
/// P payload, X 16 reserved bytes).
struct SpecRow
{
    uint8_t opcode;
    const char* name;
    const char* headers;
};

const std::vector<SpecRow> kSpecRows = {
    {0x00, "RC Send First", "P"},
    {0x01, "RC Send Middle", "P"},
    {0x02, "RC Send Last", "P"},
    {0x03, "RC Send Last Immediate", "IP"},
    {0x04, "RC Send Only", "P"},
    {0x05, "RC Send Only Immediate", "IP"},
    {0x06, "RC RDMA Write First", "RP"},
    {0x07, "RC RDMA Write Middle", "P"},
    {0x08, "RC RDMA Write Last", "P"},
    {0x09, "RC RDMA Write Last Immediate", "IP"},
    {0x0A, "RC RDMA Write Only", "RP"},
    {0x0B, "RC RDMA Write Only Immediate", "RIP"},
    {0x0C, "RC RDMA Read Request", "R"},
    {0x0D, "RC RDMA Read Response First", "KP"},
    {0x0E, "RC RDMA Read Response Middle", "P"},
    {0x0F, "RC RDMA Read Response Last", "KP"},
    {0x10, "RC RDMA Read Response Only", "KP"},
    {0x11, "RC Acknowledge", "K"},
    {0x12, "RC Atomic Acknowledge", "KC"},
    {0x13, "RC Compare Swap", "A"},
    {0x14, "RC Fetch Add", "A"},
    {0x16, "RC Send Last Invalidate", "VP"},
    {0x17, "RC Send Only Invalidate", "VP"},
    {0x20, "UC Send First", "P"},
    {0x21, "UC Send Middle", "P"},
    {0x22, "UC Send Last", "P"},
    {0x23, "UC Send Last Immediate", "IP"},
    {0x24, "UC Send Only", "P"},
    {0x25, "UC Send Only Immediate", "IP"},
    {0x26, "UC RDMA Write First", "RP"},
    {0x27, "UC RDMA Write Middle", "P"},
    {0x28, "UC RDMA Write Last", "P"},
    {0x29, "UC RDMA Write Last Immediate", "IP"},
    {0x2A, "UC RDMA Write Only", "RP"},
    {0x2B, "UC RDMA Write Only Immediate", "RIP"},
    {0x64, "UD Send Only", "DP"},
    {0x65, "UD Send Only Immediate", "DIP"},
    {0x81, "CNP", "X"},
};

const std::map<char, std::pair<IbExtHeader, uint32_t>> kLetters = {
    {'D', {IbExtHeader::Deth, 8}},
    {'R', {IbExtHeader::Reth, 16}},
    {'A', {IbExtHeader::AtomicEth, 28}},
    {'K', {IbExtHeader::Aeth, 4}},
    {'C', {IbExtHeader::AtomicAckEth, 8}},
    {'I', {IbExtHeader::ImmDt, 4}},
    {'V', {IbExtHeader::Ieth, 4}},
};

const IbOpcodeInfo&
Info(uint8_t opcode)
{
    const IbOpcodeInfo* info = IbOpcodeLookup(opcode);
    EXPECT_NE(info, nullptr) << +opcode;
    static const IbOpcodeInfo none{};
    return info != nullptr ? *info : none;
}

} // namespace

TEST(IbOpcodeTable, EveryDefinedOpcodeAndNothingElse)
{
    std::set<uint8_t> defined;
    for (const SpecRow& r : kSpecRows)
    {
        SCOPED_TRACE(r.name);
        defined.insert(r.opcode);
        const IbOpcodeInfo* info = IbOpcodeLookup(r.opcode);
        ASSERT_NE(info, nullptr);
        EXPECT_EQ(info->opcode, r.opcode);
        EXPECT_STREQ(info->name, r.name);
        EXPECT_STREQ(IbOpcodeName(r.opcode), r.name);

        // Headers, their offsets and the total length, from the hand-written sequence.
        uint32_t offset = 0;
        std::set<IbExtHeader> carried;
        for (const char* c = r.headers; *c != '\0'; ++c)
        {
            if (*c == 'P')
            {
                EXPECT_TRUE(info->Has(IbOpFlag::kPayload));
                continue;
            }
            if (*c == 'X')
            {
                offset += 16;
                continue;
            }
            const auto [header, size] = kLetters.at(*c);
            carried.insert(header);
            EXPECT_TRUE(info->Carries(header)) << IbExtHeaderName(header);
            EXPECT_TRUE(info->Has(IbExtHeaderFlag(header))) << IbExtHeaderName(header);
            EXPECT_EQ(info->offsetAfterBth[static_cast<size_t>(header)], offset)
                << IbExtHeaderName(header);
            EXPECT_EQ(info->OffsetFromBth(header), 12 + offset) << IbExtHeaderName(header);
            EXPECT_EQ(IbExtHeaderSize(header), size);
            offset += size;
        }
        for (const auto& [letter, def] : kLetters)
        {
            if (carried.count(def.first) == 0)
            {
                EXPECT_FALSE(info->Carries(def.first)) << IbExtHeaderName(def.first);
                EXPECT_FALSE(info->Has(IbExtHeaderFlag(def.first))) << IbExtHeaderName(def.first);
                EXPECT_EQ(info->offsetAfterBth[static_cast<size_t>(def.first)],
                          IbOpcodeInfo::kAbsent);
            }
        }
        if (std::string(r.headers).find('P') == std::string::npos)
        {
            EXPECT_FALSE(info->Has(IbOpFlag::kPayload));
        }
        EXPECT_EQ(info->headerLength, 12 + offset);
        EXPECT_EQ(IbTransportHeaderLength(r.opcode), 12 + offset);
    }
    for (unsigned op = 0; op < 256; ++op)
    {
        if (defined.count(static_cast<uint8_t>(op)) == 0)
        {
            EXPECT_EQ(IbOpcodeLookup(static_cast<uint8_t>(op)), nullptr) << op;
            EXPECT_EQ(IbTransportHeaderLength(static_cast<uint8_t>(op)), 0u) << op;
            EXPECT_STREQ(IbOpcodeName(static_cast<uint8_t>(op)), "Unknown OpCode");
        }
    }
    EXPECT_EQ(defined.size(), 38u);
}

TEST(IbOpcodeTable, HeaderLengthsByHand)
{
    using namespace IbOpcode;
    EXPECT_EQ(IbTransportHeaderLength(kRcRdmaWriteOnly), 12u + 16);
    EXPECT_EQ(IbTransportHeaderLength(kRcRdmaWriteOnlyWithImm), 12u + 16 + 4);
    EXPECT_EQ(IbTransportHeaderLength(kRcAcknowledge), 12u + 4);
    EXPECT_EQ(IbTransportHeaderLength(kRcAtomicAcknowledge), 12u + 4 + 8);
    EXPECT_EQ(IbTransportHeaderLength(kRcCompareSwap), 12u + 28);
    EXPECT_EQ(IbTransportHeaderLength(kRcFetchAdd), 12u + 28);
    EXPECT_EQ(IbTransportHeaderLength(kUdSendOnlyWithImm), 12u + 8 + 4);
    EXPECT_EQ(IbTransportHeaderLength(kUdSendOnly), 12u + 8);
    EXPECT_EQ(IbTransportHeaderLength(kRcSendFirst), 12u);
    EXPECT_EQ(IbTransportHeaderLength(kRcRdmaReadRequest), 12u + 16);
    EXPECT_EQ(IbTransportHeaderLength(kRcRdmaReadResponseMiddle), 12u);
    EXPECT_EQ(IbTransportHeaderLength(kRcRdmaReadResponseOnly), 12u + 4);
    EXPECT_EQ(IbTransportHeaderLength(kRcSendOnlyWithInvalidate), 12u + 4);
    EXPECT_EQ(IbTransportHeaderLength(kUcRdmaWriteOnlyWithImm), 12u + 16 + 4);
    EXPECT_EQ(IbTransportHeaderLength(kCnp), 12u + 16);
    // Where the second header of a two-header opcode starts, from the first BTH byte.
    EXPECT_EQ(Info(kRcRdmaWriteOnlyWithImm).OffsetFromBth(IbExtHeader::ImmDt), 28u);
    EXPECT_EQ(Info(kRcAtomicAcknowledge).OffsetFromBth(IbExtHeader::AtomicAckEth), 16u);
    EXPECT_EQ(Info(kUdSendOnlyWithImm).OffsetFromBth(IbExtHeader::ImmDt), 20u);
    EXPECT_EQ(Info(kUdSendOnlyWithImm).OffsetFromBth(IbExtHeader::Deth), 12u);
}

TEST(IbOpcodeTable, FlagsAreConsistent)
{
    using namespace IbOpFlag;
    for (const SpecRow& r : kSpecRows)
    {
        SCOPED_TRACE(r.name);
        const IbOpcodeInfo& info = Info(r.opcode);
        const auto popcount = [](uint32_t v) { return __builtin_popcount(v); };
        if (r.opcode == IbOpcode::kCnp)
        {
            EXPECT_EQ(info.flags, kCnp);
            continue;
        }
        EXPECT_FALSE(info.Has(kCnp));
        EXPECT_EQ(popcount(info.flags & kPositionMask), 1);
        EXPECT_EQ(popcount(info.flags & kDirectionMask), 1);
        EXPECT_LE(popcount(info.flags & kOperationMask), 1);
        // Only the plain ACK is of no operation.
        EXPECT_EQ(popcount(info.flags & kOperationMask) == 0,
                  r.opcode == IbOpcode::kRcAcknowledge);
        // The transport prefix and the QP types agree; AckReq belongs to RC requests.
        const uint8_t prefix = r.opcode & IbOpcode::kPrefixMask;
        const IbQpType type = prefix == IbOpcode::kRcPrefix   ? IbQpType::Rc
                              : prefix == IbOpcode::kUcPrefix ? IbQpType::Uc
                                                              : IbQpType::Ud;
        EXPECT_EQ(info.qpTypes, IbQpTypeBit(type));
        EXPECT_EQ(info.Has(kAckReq), type == IbQpType::Rc && info.Has(kRequest));
        // Names start with the service, as Wireshark's do.
        EXPECT_EQ(std::string(r.name).substr(0, 3), std::string(IbQpTypeName(type)) + " ");
        // Responses are RC only, and so are READ and atomics.
        if (info.Has(kResponse) || info.Has(kRead) || info.Has(kAtomic))
        {
            EXPECT_EQ(type, IbQpType::Rc);
        }
        // Unreliable datagrams are single-packet messages.
        if (type == IbQpType::Ud)
        {
            EXPECT_TRUE(info.Has(kOnly | kDeth));
        }
    }
    // Spot checks against the spec, one flag at a time.
    const IbOpcodeInfo& sendFirst = Info(IbOpcode::kRcSendFirst);
    EXPECT_TRUE(sendFirst.Has(kRequest | kFirst | kSend | kPayload | kAckReq));
    EXPECT_FALSE(sendFirst.Has(kResponse));
    const IbOpcodeInfo& ack = Info(IbOpcode::kRcAcknowledge);
    EXPECT_TRUE(ack.Has(kResponse | kOnly | kAeth));
    EXPECT_FALSE(ack.Has(kPayload));
    const IbOpcodeInfo& readMiddle = Info(IbOpcode::kRcRdmaReadResponseMiddle);
    EXPECT_TRUE(readMiddle.Has(kResponse | kMiddle | kRead | kPayload));
    EXPECT_FALSE(readMiddle.Has(kAeth));
    EXPECT_FALSE(Info(IbOpcode::kUcRdmaWriteFirst).Has(kAckReq));
    EXPECT_TRUE(Info(IbOpcode::kRcRdmaReadRequest).Has(kRequest | kRead | kReth));
    EXPECT_FALSE(Info(IbOpcode::kRcRdmaReadRequest).Has(kPayload));
}

TEST(IbOpcodeTable, AllowedQpTypes)
{
    using namespace IbOpcode;
    const std::vector<IbQpType> all = {IbQpType::Rc, IbQpType::Uc, IbQpType::Rd, IbQpType::Ud};
    const std::map<uint8_t, std::set<IbQpType>> expected = {
        {kRcSendFirst, {IbQpType::Rc}},
        {kRcRdmaReadRequest, {IbQpType::Rc}},
        {kRcCompareSwap, {IbQpType::Rc}},
        {kRcAcknowledge, {IbQpType::Rc}},
        {kRcSendOnlyWithInvalidate, {IbQpType::Rc}},
        {kUcSendFirst, {IbQpType::Uc}},
        {kUcRdmaWriteOnlyWithImm, {IbQpType::Uc}},
        {kUdSendOnly, {IbQpType::Ud}},
        {kUdSendOnlyWithImm, {IbQpType::Ud}},
        {kCnp, {IbQpType::Rc, IbQpType::Uc, IbQpType::Ud}},
        {0x15, {}}, // RC reserved
        {0x40, {}}, // RD SEND First: RD is not modelled
        {0x66, {}},
        {0xFF, {}},
    };
    for (const auto& [op, types] : expected)
    {
        for (IbQpType t : all)
        {
            EXPECT_EQ(IbOpcodeAllowed(op, t), types.count(t) == 1)
                << "opcode 0x" << std::hex << +op << " " << IbQpTypeName(t);
        }
    }
    EXPECT_EQ(IbQpTypeBit(IbQpType::Rc), 1);
    EXPECT_EQ(IbQpTypeBit(IbQpType::Ud), 8);
}

// ---------------------------------------------------------------------------------------------
// Message sequence, IBA vol. 1 §9.8.3.1

TEST(IbOpcodeSequence, Cases)
{
    using namespace IbOpcode;
    const std::vector<std::pair<uint8_t, uint8_t>> valid = {
        {kRcSendFirst, kRcSendMiddle},
        {kRcSendFirst, kRcSendLast},
        {kRcSendMiddle, kRcSendMiddle},
        {kRcSendMiddle, kRcSendLastWithImm},
        {kRcSendMiddle, kRcSendLastWithInvalidate},
        {kRcRdmaWriteFirst, kRcRdmaWriteLastWithImm},
        {kRcRdmaWriteMiddle, kRcRdmaWriteMiddle},
        {kRcSendLast, kRcRdmaWriteFirst},
        {kRcSendOnly, kRcRdmaReadRequest},
        {kRcRdmaReadRequest, kRcCompareSwap},
        {kRcFetchAdd, kRcSendOnlyWithImm},
        {kRcRdmaWriteOnly, kRcSendFirst},
        {kRcRdmaReadResponseFirst, kRcRdmaReadResponseMiddle},
        {kRcRdmaReadResponseMiddle, kRcRdmaReadResponseLast},
        {kRcAcknowledge, kRcRdmaReadResponseFirst},
        {kRcRdmaReadResponseLast, kRcAtomicAcknowledge},
        {kRcAcknowledge, kRcAcknowledge},
        {kUcSendFirst, kUcSendLast},
        {kUcRdmaWriteLast, kUcSendOnly},
        {kUdSendOnly, kUdSendOnlyWithImm},
    };
    for (const auto& [prev, next] : valid)
    {
        EXPECT_TRUE(IbOpcodeSequenceValid(prev, next))
            << IbOpcodeName(prev) << " -> " << IbOpcodeName(next);
    }
    const std::vector<std::pair<uint8_t, uint8_t>> invalid = {
        {kRcSendFirst, kRcSendFirst},          // a new message before the last one ended
        {kRcSendFirst, kRcSendOnly},
        {kRcSendFirst, kRcRdmaWriteMiddle},    // another operation's middle
        {kRcSendMiddle, kRcRdmaReadRequest},   // interleaving
        {kRcRdmaWriteFirst, kRcSendLast},
        {kRcSendLast, kRcSendMiddle},          // middle without a first
        {kRcSendOnly, kRcSendLast},
        {kRcRdmaReadResponseFirst, kRcAcknowledge},
        {kRcAcknowledge, kRcRdmaReadResponseMiddle},
        {kRcSendOnly, kRcAcknowledge},         // request stream vs response stream
        {kRcAcknowledge, kRcSendOnly},
        {kRcSendFirst, kUcSendMiddle},         // another transport
        {kUcSendFirst, kRcSendLast},
        {kUcSendFirst, kUcRdmaWriteLast},
        {kUdSendOnly, kRcSendOnly},
        {kCnp, kRcSendOnly},                   // CNPs are in no stream
        {kRcSendOnly, kCnp},
        {0x15, kRcSendOnly},                   // unknown opcodes
        {kRcSendOnly, 0x15},
    };
    for (const auto& [prev, next] : invalid)
    {
        EXPECT_FALSE(IbOpcodeSequenceValid(prev, next))
            << IbOpcodeName(prev) << " -> " << IbOpcodeName(next);
    }
}

TEST(IbOpcodeSequence, AllPairsAgainstHandWrittenSuccessors)
{
    // An independent statement of the rule: the successors of every First/Middle listed by
    // opcode, and the opcodes that may start a message in each stream.
    const std::map<uint8_t, std::set<uint8_t>> continuation = {
        {0x00, {0x01, 0x02, 0x03, 0x16}}, {0x01, {0x01, 0x02, 0x03, 0x16}},
        {0x06, {0x07, 0x08, 0x09}},       {0x07, {0x07, 0x08, 0x09}},
        {0x0D, {0x0E, 0x0F}},             {0x0E, {0x0E, 0x0F}},
        {0x20, {0x21, 0x22, 0x23}},       {0x21, {0x21, 0x22, 0x23}},
        {0x26, {0x27, 0x28, 0x29}},       {0x27, {0x27, 0x28, 0x29}},
    };
    const std::vector<std::set<uint8_t>> streams = {
        {0x00, 0x02, 0x03, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14, 0x16,
         0x17},                                    // RC requests (ends and starts)
        {0x0D, 0x0F, 0x10, 0x11, 0x12},            // RC responses
        {0x20, 0x22, 0x23, 0x24, 0x25, 0x26, 0x28, 0x29, 0x2A, 0x2B}, // UC
        {0x64, 0x65},                              // UD
    };
    const std::set<uint8_t> starters = {0x00, 0x04, 0x05, 0x06, 0x0A, 0x0B, 0x0C, 0x13, 0x14,
                                        0x17, 0x0D, 0x10, 0x11, 0x12, 0x20, 0x24, 0x25, 0x26,
                                        0x2A, 0x2B, 0x64, 0x65};
    size_t validPairs = 0;
    for (unsigned p = 0; p < 256; ++p)
    {
        for (unsigned n = 0; n < 256; ++n)
        {
            bool expected = false;
            const auto cont = continuation.find(static_cast<uint8_t>(p));
            if (cont != continuation.end())
            {
                expected = cont->second.count(static_cast<uint8_t>(n)) == 1;
            }
            else
            {
                for (const auto& s : streams)
                {
                    expected = expected || (s.count(static_cast<uint8_t>(p)) == 1 &&
                                            s.count(static_cast<uint8_t>(n)) == 1 &&
                                            starters.count(static_cast<uint8_t>(n)) == 1);
                }
            }
            ASSERT_EQ(IbOpcodeSequenceValid(static_cast<uint8_t>(p), static_cast<uint8_t>(n)),
                      expected)
                << IbOpcodeName(static_cast<uint8_t>(p)) << " -> "
                << IbOpcodeName(static_cast<uint8_t>(n));
            validPairs += expected ? 1 : 0;
        }
    }
    // RC requests: 13 ends x 10 starts + 2 x 4 + 2 x 3 continuations; RC responses: 4 x 4 +
    // 2 x 2; UC: 8 x 6 + 4 x 3; UD: 2 x 2.
    EXPECT_EQ(validPairs, 13u * 10 + 2 * 4 + 2 * 3 + 4 * 4 + 2 * 2 + 8 * 6 + 4 * 3 + 2 * 2);
}

// ---------------------------------------------------------------------------------------------
// IbTransportHeaders

namespace
{

/// Transport headers with every extension header filled in with recognisable values, for
/// writing any opcode.
IbTransportHeaders
FullHeaders(uint8_t opcode)
{
    IbTransportHeaders h;
    h.bth.SetOpCode(opcode);
    h.bth.SetPkey(0x8001);
    h.bth.SetDestQp(0x00ABCD);
    h.bth.SetPsn(0x123456);
    h.bth.SetAckReq(true);
    IbDethHeader deth;
    deth.SetQkey(0x11223344);
    deth.SetSrcQp(0x000042);
    h.deth = deth;
    IbRethHeader reth;
    reth.SetVirtualAddress(0x00007F0012345678ULL);
    reth.SetRkey(0x1234ABCD);
    reth.SetDmaLength(4096);
    h.reth = reth;
    IbAtomicEthHeader atomic;
    atomic.SetVirtualAddress(0x00007F00DEADBEE8ULL);
    atomic.SetRkey(0x55667788);
    atomic.SetSwapAddData(0x0102030405060708ULL);
    atomic.SetCompareData(0x1112131415161718ULL);
    h.atomicEth = atomic;
    h.aeth = IbAethHeader::MakeAck(0x000777, 10);
    IbAtomicAckEthHeader atomicAck;
    atomicAck.SetOriginalRemoteData(0xA1A2A3A4A5A6A7A8ULL);
    h.atomicAckEth = atomicAck;
    IbImmDtHeader imm;
    imm.SetImmediateData(0xCAFEF00D);
    h.immDt = imm;
    IbIethHeader ieth;
    ieth.SetRkey(0x0BADCAFE);
    h.ieth = ieth;
    return h;
}

/// BTH .. payload pad ICRC (icrcSize bytes of 0xEE), PadCnt set from the payload.
Bytes
TransportPacket(IbTransportHeaders h, const Bytes& payload, size_t icrcSize = 4)
{
    const size_t pad = (4 - payload.size() % 4) % 4;
    h.bth.SetPadCnt(static_cast<uint8_t>(pad));
    Bytes out(IbTransportHeaderLength(h.bth.GetOpCode()));
    EXPECT_EQ(h.Write(out.data(), out.size()), out.size());
    out.insert(out.end(), payload.begin(), payload.end());
    out.insert(out.end(), pad, 0);
    out.insert(out.end(), icrcSize, 0xEE);
    return out;
}

/// Parse bytes from an exactly-sized heap copy, so a sanitizer build catches any read past
/// the end.
bool
ParseExact(IbTransportHeaders& h, const Bytes& bytes, size_t icrcSize)
{
    std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), copy.get());
    return h.Parse(copy.get(), bytes.size(), icrcSize);
}

} // namespace

TEST(IbTransportHeaders, ParseHandBuiltPacket)
{
    // RC RDMA WRITE Only with Immediate, 5 bytes of payload, written out byte by byte.
    const Bytes pkt = {
        0x0B, 0x30, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x80, 0x00, 0x00, 0x07, // BTH, pad 3
        0x00, 0x00, 0x7F, 0x00, 0x12, 0x34, 0x56, 0x78, // RETH VA
        0x12, 0x34, 0xAB, 0xCD,                         // R_Key
        0x00, 0x00, 0x00, 0x05,                         // DMA length
        0xCA, 0xFE, 0xF0, 0x0D,                         // ImmDt
        'h',  'e',  'l',  'l',  'o',  0x00, 0x00, 0x00, // payload + 3 pad bytes
        0x01, 0x02, 0x03, 0x04,                         // ICRC
    };
    IbTransportHeaders h;
    ASSERT_TRUE(ParseExact(h, pkt, 4)) << IbParseErrorName(h.error);
    EXPECT_EQ(h.error, IbParseError::None);
    ASSERT_NE(h.info, nullptr);
    EXPECT_EQ(h.info->opcode, IbOpcode::kRcRdmaWriteOnlyWithImm);
    EXPECT_EQ(h.bth.GetDestQp(), 0x11u);
    EXPECT_TRUE(h.bth.GetAckReq());
    EXPECT_EQ(h.bth.GetPsn(), 7u);
    ASSERT_TRUE(h.reth.has_value());
    EXPECT_EQ(h.reth->GetVirtualAddress(), 0x00007F0012345678ULL);
    EXPECT_EQ(h.reth->GetRkey(), 0x1234ABCDu);
    EXPECT_EQ(h.reth->GetDmaLength(), 5u);
    ASSERT_TRUE(h.immDt.has_value());
    EXPECT_EQ(h.immDt->GetImmediateData(), 0xCAFEF00Du);
    EXPECT_FALSE(h.deth || h.atomicEth || h.aeth || h.atomicAckEth || h.ieth);
    EXPECT_EQ(h.payloadOffset, 32u);
    EXPECT_EQ(h.payloadLength, 5u);
    EXPECT_EQ(std::string(pkt.begin() + h.payloadOffset,
                          pkt.begin() + h.payloadOffset + h.payloadLength),
              "hello");

    // The same bytes without their ICRC.
    const Bytes noIcrc(pkt.begin(), pkt.end() - 4);
    ASSERT_TRUE(ParseExact(h, noIcrc, 0));
    EXPECT_EQ(h.payloadLength, 5u);

    // RC ACK: BTH + AETH, nothing else.
    const Bytes ack = {0x11, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00, 0x09,
                       0x61, 0x00, 0x00, 0x03, 0xAA, 0xBB, 0xCC, 0xDD};
    ASSERT_TRUE(ParseExact(h, ack, 4)) << IbParseErrorName(h.error);
    ASSERT_TRUE(h.aeth.has_value());
    EXPECT_EQ(h.aeth->GetNakCode(), IbNakCode::InvalidRequest);
    EXPECT_EQ(h.aeth->GetMsn(), 3u);
    EXPECT_FALSE(h.reth.has_value()); // cleared from the previous parse
    EXPECT_EQ(h.payloadOffset, 16u);
    EXPECT_EQ(h.payloadLength, 0u);
}

TEST(IbTransportHeaders, WriteThenParseEveryOpcode)
{
    for (unsigned op = 0; op < 256; ++op)
    {
        const IbOpcodeInfo* info = IbOpcodeLookup(static_cast<uint8_t>(op));
        if (info == nullptr)
        {
            continue;
        }
        SCOPED_TRACE(info->name);
        const IbTransportHeaders full = FullHeaders(info->opcode);
        for (size_t n : {0u, 1u, 2u, 3u, 4u, 255u})
        {
            const Bytes payload = info->Has(IbOpFlag::kPayload) ? Payload(n, 3) : Bytes{};
            const Bytes pkt = TransportPacket(full, payload);
            IbTransportHeaders h;
            ASSERT_TRUE(ParseExact(h, pkt, 4)) << IbParseErrorName(h.error) << " n=" << n;
            EXPECT_EQ(h.info, info);
            EXPECT_EQ(h.payloadOffset, info->headerLength);
            EXPECT_EQ(h.payloadLength, payload.size());
            EXPECT_EQ(Bytes(pkt.begin() + h.payloadOffset,
                            pkt.begin() + h.payloadOffset + h.payloadLength),
                      payload);
            EXPECT_EQ(h.deth.has_value(), info->Carries(IbExtHeader::Deth));
            EXPECT_EQ(h.reth.has_value(), info->Carries(IbExtHeader::Reth));
            EXPECT_EQ(h.atomicEth.has_value(), info->Carries(IbExtHeader::AtomicEth));
            EXPECT_EQ(h.aeth.has_value(), info->Carries(IbExtHeader::Aeth));
            EXPECT_EQ(h.atomicAckEth.has_value(), info->Carries(IbExtHeader::AtomicAckEth));
            EXPECT_EQ(h.immDt.has_value(), info->Carries(IbExtHeader::ImmDt));
            EXPECT_EQ(h.ieth.has_value(), info->Carries(IbExtHeader::Ieth));
            if (h.reth)
            {
                EXPECT_EQ(Raw(*h.reth), Raw(*full.reth));
            }
            if (h.atomicEth)
            {
                EXPECT_EQ(Raw(*h.atomicEth), Raw(*full.atomicEth));
            }
            if (h.aeth)
            {
                EXPECT_EQ(Raw(*h.aeth), Raw(*full.aeth));
            }
            if (h.deth)
            {
                EXPECT_EQ(Raw(*h.deth), Raw(*full.deth));
            }
            if (h.immDt)
            {
                EXPECT_EQ(h.immDt->GetImmediateData(), 0xCAFEF00Du);
            }
            // Writing the parsed headers gives the same header bytes back.
            Bytes again(info->headerLength);
            EXPECT_EQ(h.Write(again.data(), again.size()), info->headerLength);
            EXPECT_EQ(again, Bytes(pkt.begin(), pkt.begin() + info->headerLength));
            if (!info->Has(IbOpFlag::kPayload))
            {
                break;
            }
        }
    }
    // The CNP's 16 reserved bytes are written as zeros.
    const Bytes cnp = TransportPacket(FullHeaders(IbOpcode::kCnp), {});
    ASSERT_EQ(cnp.size(), 12u + 16 + 4);
    EXPECT_EQ(Bytes(cnp.begin() + 12, cnp.begin() + 28), Bytes(16, 0));
}

TEST(IbTransportHeaders, WriteRefusesWhatItCannotWrite)
{
    uint8_t buf[64];
    std::fill(std::begin(buf), std::end(buf), 0x5A);
    IbTransportHeaders h = FullHeaders(0x15); // reserved opcode
    EXPECT_EQ(h.Write(buf, sizeof(buf)), 0u);
    h = FullHeaders(IbOpcode::kRcRdmaWriteOnlyWithImm);
    h.immDt.reset();
    EXPECT_EQ(h.Write(buf, sizeof(buf)), 0u); // a header it needs is missing
    h = FullHeaders(IbOpcode::kRcCompareSwap);
    EXPECT_EQ(h.Write(buf, 39), 0u); // 40 needed
    EXPECT_EQ(buf[0], 0x5A);         // nothing written by any refusal
    EXPECT_EQ(buf[38], 0x5A);
    EXPECT_EQ(h.Write(buf, 40), 40u);
    // Headers the opcode does not carry are not needed.
    h = IbTransportHeaders();
    h.bth.SetOpCode(IbOpcode::kRcSendMiddle);
    EXPECT_EQ(h.Write(buf, 12), 12u);
}

TEST(IbTransportHeaders, RejectsMalformedPackets)
{
    using namespace IbOpcode;
    auto expectError = [](const Bytes& pkt, size_t icrc, IbParseError e, const char* what) {
        IbTransportHeaders h;
        EXPECT_FALSE(ParseExact(h, pkt, icrc)) << what;
        EXPECT_EQ(h.error, e) << what << ": got " << IbParseErrorName(h.error);
    };
    const Bytes write = TransportPacket(FullHeaders(kRcRdmaWriteOnly), Payload(8));
    ASSERT_EQ(write.size(), 28u + 8 + 4);

    expectError({}, 0, IbParseError::Truncated, "empty");
    expectError(Bytes(write.begin(), write.begin() + 11), 0, IbParseError::Truncated, "short BTH");
    expectError(Bytes(write.begin(), write.begin() + 12), 4, IbParseError::Truncated,
                "BTH but no room for the ICRC");
    expectError(Bytes(write.begin(), write.begin() + 27), 0, IbParseError::Truncated,
                "RETH cut short");
    expectError(Bytes(write.begin(), write.begin() + 28), 4, IbParseError::Truncated,
                "RETH but no ICRC");
    expectError(write, write.size() + 1, IbParseError::Truncated, "ICRC longer than the packet");
    expectError(write, static_cast<size_t>(-1), IbParseError::Truncated, "absurd ICRC size");

    for (uint8_t op : {uint8_t{0x15}, uint8_t{0x18}, uint8_t{0x1F}, uint8_t{0x2C}, uint8_t{0x40},
                       uint8_t{0x60}, uint8_t{0x80}, uint8_t{0xA0}, uint8_t{0xFF}})
    {
        Bytes bad = write;
        bad[0] = op;
        expectError(bad, 4, IbParseError::UnknownOpcode, "unknown opcode");
    }

    Bytes tver = write;
    tver[1] |= 0x01;
    expectError(tver, 4, IbParseError::UnsupportedTver, "TVer 1");

    Bytes odd = write;
    odd.push_back(0);
    expectError(odd, 4, IbParseError::Misaligned, "one byte too many");

    // 8 payload bytes claim 3 pad bytes: fine (5 + 3). An empty payload area with pad 1 is not.
    Bytes pad = write;
    pad[1] |= 0x30;
    IbTransportHeaders h;
    ASSERT_TRUE(ParseExact(h, pad, 4));
    EXPECT_EQ(h.payloadLength, 5u);
    const Bytes empty = TransportPacket(FullHeaders(kRcRdmaWriteOnly), {});
    Bytes emptyPad = empty;
    emptyPad[1] |= 0x10;
    expectError(emptyPad, 4, IbParseError::BadPadCount, "pad without payload");

    const Bytes ack = TransportPacket(FullHeaders(kRcAcknowledge), {});
    ASSERT_TRUE(ParseExact(h, ack, 4));
    Bytes ackPad = ack;
    ackPad[1] |= 0x20;
    expectError(ackPad, 4, IbParseError::BadPadCount, "pad on an ACK");
    Bytes ackData = ack;
    ackData.insert(ackData.end() - 4, {1, 2, 3, 4});
    expectError(ackData, 4, IbParseError::UnexpectedPayload, "data after an ACK");
    const Bytes cnp = TransportPacket(FullHeaders(IbOpcode::kCnp), {});
    Bytes cnpShort(cnp.begin(), cnp.begin() + 24);
    expectError(cnpShort, 0, IbParseError::Truncated, "CNP without all reserved bytes");

    // A failed parse leaves nothing of an earlier success behind.
    ASSERT_TRUE(ParseExact(h, write, 4));
    EXPECT_TRUE(h.reth.has_value());
    EXPECT_FALSE(ParseExact(h, tver, 4));
    EXPECT_FALSE(h.reth.has_value());
    EXPECT_EQ(h.payloadLength, 0u);
    EXPECT_FALSE(h.Parse(nullptr, 0, 0));
    EXPECT_EQ(h.error, IbParseError::Truncated);
}

TEST(IbTransportHeaders, FuzzNeverCrashesOrLies)
{
    // Every length 0..300, random bytes and random bytes with a plausible first word (a known
    // opcode, TVer 0), ICRC of 0 or 4 bytes. Inputs live in exactly-sized heap buffers so the
    // sanitizer build catches any read past the end. Successful parses must be self-consistent.
    std::mt19937 rng(20240601);
    std::vector<uint8_t> known;
    for (unsigned op = 0; op < 256; ++op)
    {
        if (IbOpcodeLookup(static_cast<uint8_t>(op)) != nullptr)
        {
            known.push_back(static_cast<uint8_t>(op));
        }
    }
    std::map<IbParseError, size_t> outcomes;
    for (size_t len = 0; len <= 300; ++len)
    {
        for (int iter = 0; iter < 60; ++iter)
        {
            std::unique_ptr<uint8_t[]> buf(new uint8_t[len]);
            for (size_t i = 0; i < len; ++i)
            {
                buf[i] = static_cast<uint8_t>(rng());
            }
            if (iter % 2 == 1 && len >= 2)
            {
                buf[0] = known[rng() % known.size()];
                buf[1] = static_cast<uint8_t>(buf[1] & 0xF0); // TVer 0
                if (iter % 4 == 1)
                {
                    buf[1] = static_cast<uint8_t>(buf[1] & 0xC0); // and PadCnt 0
                }
            }
            const size_t icrc = (iter % 3 == 0) ? 0 : 4;
            IbTransportHeaders h;
            const bool ok = h.Parse(buf.get(), len, icrc);
            ++outcomes[h.error];
            ASSERT_EQ(ok, h.error == IbParseError::None);
            if (!ok)
            {
                continue;
            }
            ASSERT_NE(h.info, nullptr);
            ASSERT_EQ(h.info->opcode, buf[0]);
            ASSERT_EQ(h.bth.GetTver(), 0);
            ASSERT_EQ(h.payloadOffset, h.info->headerLength);
            ASSERT_EQ(h.payloadOffset + h.payloadLength + h.bth.GetPadCnt() + icrc, len);
            ASSERT_EQ((len - icrc) % 4, 0u);
            if (!h.info->Has(IbOpFlag::kPayload))
            {
                ASSERT_EQ(h.payloadLength, 0u);
            }
            ASSERT_EQ(h.reth.has_value(), h.info->Carries(IbExtHeader::Reth));
            ASSERT_EQ(h.aeth.has_value(), h.info->Carries(IbExtHeader::Aeth));
            if (h.aeth)
            {
                const uint8_t* at = buf.get() + h.info->OffsetFromBth(IbExtHeader::Aeth);
                ASSERT_EQ(h.aeth->GetSyndrome(), at[0] & 0x7F);
                ASSERT_EQ(h.aeth->GetMsn(), (uint32_t{at[1]} << 16) | (at[2] << 8) | at[3]);
            }
            // What parsed writes back as the same header bytes (reserved bits aside).
            Bytes again(h.info->headerLength);
            ASSERT_EQ(h.Write(again.data(), again.size()), h.info->headerLength);
            ASSERT_EQ(again[0], buf[0]);
            ASSERT_EQ(again[11], buf[11]); // PSN low byte
        }
    }
    // The fuzzing reached every outcome, success included.
    for (IbParseError e : {IbParseError::None,
                           IbParseError::Truncated,
                           IbParseError::UnknownOpcode,
                           IbParseError::UnsupportedTver,
                           IbParseError::Misaligned,
                           IbParseError::BadPadCount,
                           IbParseError::UnexpectedPayload})
    {
        EXPECT_GT(outcomes[e], 0u) << IbParseErrorName(e);
    }
    EXPECT_GT(outcomes[IbParseError::None], 1000u);
}

// ---------------------------------------------------------------------------------------------
// tshark decodes what the headers write

namespace
{

/// LRH (LNH 2) + transport headers + payload + pad + ICRC + VCRC, both CRCs filled in.
Bytes
IbPacket(IbTransportHeaders h, const Bytes& payload)
{
    const Bytes transport = TransportPacket(h, payload);
    const size_t len = IbLrhHeader::kSize + transport.size() + kIbVcrcSize;
    IbLrhHeader lrh;
    lrh.SetLnh(IbLnh::IbaLocal);
    lrh.SetDlid(0x21);
    lrh.SetSlid(0x12);
    lrh.SetPktLenWords(static_cast<uint16_t>((len - kIbVcrcSize) / 4));
    Bytes pkt(IbLrhHeader::kSize);
    lrh.WriteTo(pkt.data());
    pkt.insert(pkt.end(), transport.begin(), transport.end());
    pkt.insert(pkt.end(), kIbVcrcSize, 0);
    IbFillCrcs(pkt.data(), pkt.size());
    return pkt;
}

std::vector<std::vector<std::string>>
TsharkRows(const std::string& path, const std::vector<std::string>& fields)
{
    int status = -1;
    auto rows = cnuas_test::TsharkFieldRows(path, fields, "--disable-protocol rpcordma", &status);
    EXPECT_EQ(status, 0) << "tshark on " << path;
    return rows;
}

std::string
Hex(uint64_t v, int width)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "0x%0*llx", width, static_cast<unsigned long long>(v));
    return buf;
}

std::string
WritePcap(const std::string& name, const std::vector<Bytes>& pkts)
{
    const std::string path = TempPath(name);
    IbErfPcapWriter w;
    EXPECT_TRUE(w.Open(path));
    for (size_t i = 0; i < pkts.size(); ++i)
    {
        w.Write(MicroSeconds(static_cast<int64_t>(10 * (i + 1))),
                pkts[i].data(),
                static_cast<uint32_t>(pkts[i].size()));
    }
    w.Close();
    return path;
}

bool
TsharkAvailable()
{
    int status = -1;
    RunCommand("tshark --version >/dev/null 2>&1", &status);
    return status == 0;
}

} // namespace

TEST(IbRdmaHeadersTshark, DecodesWhatWasWritten)
{
    ASSERT_TRUE(TsharkAvailable())
        << "tshark is required for this test (Debian package tshark, 4.0.x); install it";
    using namespace IbOpcode;

    struct Sample
    {
        IbTransportHeaders h;
        Bytes payload;
    };
    std::vector<Sample> samples;
    auto add = [&samples](uint8_t op, uint32_t psn, const Bytes& payload) -> IbTransportHeaders& {
        Sample s{FullHeaders(op), payload};
        s.h.bth.SetPsn(psn);
        samples.push_back(s);
        return samples.back().h;
    };
    add(kRcSendFirst, 100, Payload(256, 1));
    add(kRcSendMiddle, 101, Payload(256, 2));
    add(kRcSendLast, 102, Payload(77, 3)); // 3 pad bytes
    add(kRcRdmaWriteOnlyWithImm, 103, Payload(40, 4)).reth->SetDmaLength(40);
    add(kRcRdmaReadRequest, 104, {}).reth->SetDmaLength(64);
    add(kRcRdmaReadResponseOnly, 104, Payload(64, 5)).aeth = IbAethHeader::MakeAck(5, 0x1F);
    add(kRcAcknowledge, 105, {}).aeth = IbAethHeader::MakeAck(6, 10);
    add(kRcAcknowledge, 106, {}).aeth = IbAethHeader::MakeNak(6, IbNakCode::PsnSequenceError);
    add(kRcAcknowledge, 106, {}).aeth = IbAethHeader::MakeRnrNak(6, 14);
    add(kRcCompareSwap, 107, {});
    add(kRcAtomicAcknowledge, 107, {}).aeth = IbAethHeader::MakeAck(7, 1);
    add(kRcSendOnlyWithInvalidate, 108, Payload(9, 6));
    add(kUdSendOnlyWithImm, 0, Payload(30, 7));

    std::vector<Bytes> pkts;
    for (const Sample& s : samples)
    {
        pkts.push_back(IbPacket(s.h, s.payload));
    }
    const std::string path = WritePcap("decode.pcap", pkts);

    const auto rows = TsharkRows(path,
                                 {"infiniband.bth.opcode",
                                  "infiniband.bth.padcnt",
                                  "infiniband.bth.destqp",
                                  "infiniband.bth.psn",
                                  "infiniband.reth.va",
                                  "infiniband.reth.r_key",
                                  "infiniband.reth.dmalen",
                                  "infiniband.aeth.syndrome",
                                  "infiniband.aeth.msn",
                                  "infiniband.atomiceth.swapdt",
                                  "infiniband.atomiceth.cmpdt",
                                  "infiniband.atomicacketh.origremdt",
                                  "infiniband.immdt",
                                  "infiniband.ieth",
                                  "infiniband.deth.srcqp",
                                  "data.data",
                                  "_ws.col.Info"});
    ASSERT_EQ(rows.size(), samples.size());
    for (size_t i = 0; i < samples.size(); ++i)
    {
        const IbTransportHeaders& h = samples[i].h;
        const IbOpcodeInfo& info = Info(h.bth.GetOpCode());
        const auto& row = rows[i];
        SCOPED_TRACE("frame " + std::to_string(i + 1) + " " + info.name);
        ASSERT_EQ(row.size(), 17u);
        EXPECT_EQ(row[0], std::to_string(info.opcode));
        EXPECT_EQ(row[1], std::to_string((4 - samples[i].payload.size() % 4) % 4));
        EXPECT_EQ(row[2], Hex(h.bth.GetDestQp(), 6));
        EXPECT_EQ(row[3], std::to_string(h.bth.GetPsn()));
        // AtomicETH's VA and R_Key are shown with RETH's fields.
        if (info.Carries(IbExtHeader::Reth))
        {
            EXPECT_EQ(row[4], Hex(h.reth->GetVirtualAddress(), 16));
            EXPECT_EQ(row[5], Hex(h.reth->GetRkey(), 8));
            EXPECT_EQ(row[6], std::to_string(h.reth->GetDmaLength()));
        }
        else if (info.Carries(IbExtHeader::AtomicEth))
        {
            EXPECT_EQ(row[4], Hex(h.atomicEth->GetVirtualAddress(), 16));
            EXPECT_EQ(row[5], Hex(h.atomicEth->GetRkey(), 8));
            EXPECT_EQ(row[9], std::to_string(h.atomicEth->GetSwapAddData()));
            EXPECT_EQ(row[10], std::to_string(h.atomicEth->GetCompareData()));
        }
        else
        {
            EXPECT_EQ(row[4], "");
            EXPECT_EQ(row[9], "");
        }
        if (info.Carries(IbExtHeader::Aeth))
        {
            EXPECT_EQ(row[7], std::to_string(h.aeth->GetSyndrome()));
            EXPECT_EQ(row[8], std::to_string(h.aeth->GetMsn()));
        }
        else
        {
            EXPECT_EQ(row[7], "");
        }
        EXPECT_EQ(row[11],
                  info.Carries(IbExtHeader::AtomicAckEth)
                      ? std::to_string(h.atomicAckEth->GetOriginalRemoteData())
                      : "");
        EXPECT_EQ(row[12], info.Carries(IbExtHeader::ImmDt) ? "cafef00d" : "");
        EXPECT_EQ(row[13], info.Carries(IbExtHeader::Ieth) ? "0badcafe" : "");
        EXPECT_EQ(row[14], info.Carries(IbExtHeader::Deth) ? Hex(0x42, 8) : "");
        // Wireshark hands the payload, pad bytes included, to its Data dissector.
        if (!samples[i].payload.empty())
        {
            Bytes padded = samples[i].payload;
            padded.resize(padded.size() + (4 - padded.size() % 4) % 4, 0);
            EXPECT_EQ(row[15], cnuas_test::ToHex(padded.data(), padded.size()));
        }
        else
        {
            EXPECT_EQ(row[15], "");
        }
        // The Info column starts with the table's name for the opcode.
        EXPECT_EQ(row[16].rfind(info.name, 0), 0u) << row[16];
    }
    // Spot checks of what the AETH syndromes decode to: ACK credit 10, NAK PSN sequence error,
    // RNR NAK timer 14.
    EXPECT_EQ(rows[6][7], "10");
    EXPECT_EQ(rows[7][7], "96");
    EXPECT_EQ(rows[8][7], "46");
    const auto aeth = TsharkRows(path,
                                 {"infiniband.aeth.syndrome.opcode",
                                  "infiniband.aeth.syndrome.credit_count",
                                  "infiniband.aeth.syndrome.error_code",
                                  "infiniband.aeth.syndrome.timer"});
    ASSERT_EQ(aeth.size(), samples.size());
    EXPECT_EQ(aeth[6], (std::vector<std::string>{"0", "10", "", ""}));
    EXPECT_EQ(aeth[7], (std::vector<std::string>{"3", "", "0", ""}));
    EXPECT_EQ(aeth[8], (std::vector<std::string>{"1", "", "", "14"}));

    // No malformed packets or other errors, and every CRC checks out.
    int status = -1;
    const std::string expert =
        RunCommand("tshark -r '" + path + "' --disable-protocol rpcordma -q -z expert,error 2>&1",
                   &status);
    EXPECT_EQ(status, 0) << expert;
    EXPECT_EQ(expert.find("Malformed"), std::string::npos) << expert;
    EXPECT_EQ(expert.find("Errors"), std::string::npos) << expert;
    const std::string check =
        RunCommand(std::string(CNUAS_BINARY_DIR) + "/bin/cnuas pcap check '" + path + "' 2>&1",
                   &status);
    EXPECT_EQ(status, 0) << check;
    EXPECT_NE(check.find(std::to_string(samples.size()) + " packets"), std::string::npos)
        << check;
    EXPECT_NE(check.find("all CRCs good"), std::string::npos) << check;
    std::remove(path.c_str());
}

TEST(IbRdmaHeadersTshark, OpcodeNamesAreWiresharks)
{
    ASSERT_TRUE(TsharkAvailable())
        << "tshark is required for this test (Debian package tshark, 4.0.x); install it";
    // One packet of every opcode Wireshark 4.0 knows (all of the table but the RoCEv2 CNP): its
    // Info column names the opcode as the table does and nothing is malformed.
    std::vector<Bytes> pkts;
    std::vector<const IbOpcodeInfo*> infos;
    for (unsigned op = 0; op < 256; ++op)
    {
        const IbOpcodeInfo* info = IbOpcodeLookup(static_cast<uint8_t>(op));
        if (info == nullptr || info->opcode == IbOpcode::kCnp)
        {
            continue;
        }
        infos.push_back(info);
        pkts.push_back(IbPacket(FullHeaders(info->opcode),
                                info->Has(IbOpFlag::kPayload) ? Payload(20, 9) : Bytes{}));
    }
    const std::string path = WritePcap("names.pcap", pkts);
    const auto rows = TsharkRows(path, {"infiniband.bth.opcode", "_ws.col.Info"});
    ASSERT_EQ(rows.size(), infos.size());
    for (size_t i = 0; i < infos.size(); ++i)
    {
        ASSERT_EQ(rows[i].size(), 2u);
        EXPECT_EQ(rows[i][0], std::to_string(infos[i]->opcode));
        EXPECT_EQ(rows[i][1].rfind(infos[i]->name, 0), 0u)
            << "table: \"" << infos[i]->name << "\", Wireshark: \"" << rows[i][1] << "\"";
    }
    int status = -1;
    const std::string expert =
        RunCommand("tshark -r '" + path + "' --disable-protocol rpcordma -q -z expert,error 2>&1",
                   &status);
    EXPECT_EQ(status, 0) << expert;
    EXPECT_EQ(expert.find("Malformed"), std::string::npos) << expert;
    std::remove(path.c_str());
}
