// What an IbFrame stores of a packet's bytes (issue 18): the leading bytes up to the last one that
// is not zero, the zeros after them implied; every reader gets exactly the bytes a frame holding
// all of them in a Packet gave.
#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-frame.h"
#include "models/ib/ib-lrh-header.h"
#include "models/ib/ib-net-device.h"

#include "ns3/packet.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace ns3;

namespace
{

constexpr uint32_t kBth = 12;
constexpr uint32_t kDeth = 8;

/// An LRH (VL 0) + BTH (UD SEND Only to QP 0x123, PSN 0x456) + DETH (source QP 0x789) +
/// `payload` + ICRC/VCRC placeholders, all as a frame that held every byte carried them.
std::vector<uint8_t>
UdPacket(const std::vector<uint8_t>& payload, uint16_t dlid = 7, uint16_t slid = 3)
{
    const uint32_t body = kBth + kDeth + static_cast<uint32_t>(payload.size());
    std::vector<uint8_t> b(IbLrhHeader::kSize + body + kIbIcrcBytes + kIbVcrcBytes, 0);
    IbLrhHeader lrh;
    lrh.SetSl(2);
    lrh.SetDlid(dlid);
    lrh.SetSlid(slid);
    lrh.SetLnh(IbLnh::IbaLocal);
    lrh.SetPktLenWords(static_cast<uint16_t>((b.size() - kIbVcrcBytes) / 4));
    lrh.WriteTo(b.data());
    uint8_t* bth = b.data() + IbLrhHeader::kSize;
    bth[0] = 0x64;                         // UD SEND Only (IBA vol. 1 §9.2 table 38)
    bth[2] = 0xFF;                         // P_Key
    bth[3] = 0xFF;
    bth[6] = 0x01;                         // DestQP 0x000123
    bth[7] = 0x23;
    bth[10] = 0x04;                        // PSN 0x000456
    bth[11] = 0x56;
    uint8_t* deth = bth + kBth;
    deth[0] = deth[1] = deth[2] = deth[3] = 0x11; // Q_Key
    deth[6] = 0x07;                               // SrcQP 0x000789
    deth[7] = 0x89;
    std::copy(payload.begin(), payload.end(), deth + kDeth);
    return b;
}

/// `n` bytes of a fixed pseudo-random sequence, none of them zero.
std::vector<uint8_t>
NonZeroBytes(uint32_t n, uint32_t seed)
{
    std::vector<uint8_t> v(n);
    for (auto& byte : v)
    {
        seed = seed * 1103515245 + 12345;
        byte = static_cast<uint8_t>(1 + (seed >> 16) % 255);
    }
    return v;
}

/// A frame of `wire` (LRH..VCRC) as IbNetDevice::Enqueue makes one: the LRH as the lead.
void
Fill(IbFrame& f, const std::vector<uint8_t>& wire)
{
    f.bytes = static_cast<uint32_t>(wire.size());
    f.lnh = IbLnh::IbaLocal;
    f.StoreBytes(wire.data(), IbLrhHeader::kSize, wire.data() + IbLrhHeader::kSize,
                 f.bytes - IbLrhHeader::kSize);
}

/// What the frame's readers see: raw bytes, a Packet, and the bytes as on the wire.
void
ExpectReadsAs(IbFrame& f, const std::vector<uint8_t>& wire, uint8_t vl)
{
    std::vector<uint8_t> raw(f.bytes, 0xAA); // not zeros: the implied ones must be written
    f.CopyBytes(raw.data());
    EXPECT_EQ(raw, wire);
    Ptr<Packet> p = f.ToPacket();
    ASSERT_EQ(p->GetSize(), wire.size());
    std::vector<uint8_t> fromPacket(p->GetSize());
    p->CopyData(fromPacket.data(), p->GetSize());
    EXPECT_EQ(fromPacket, wire);
    // The wire bytes of this hop, computed from all the bytes as Materialize did when a Packet
    // held them: VL into the LRH (IBA vol. 1 §7.6.6), then ICRC and VCRC (§7.8).
    std::vector<uint8_t> expected = wire;
    expected[0] = static_cast<uint8_t>((vl << 4) | (expected[0] & 0x0F));
    IbFillCrcs(expected.data(), expected.size());
    f.vl = vl;
    std::vector<uint8_t> got;
    f.Materialize(got);
    EXPECT_EQ(got, expected);
    IbCrcCheck check = IbCheckCrcs(got.data(), got.size());
    EXPECT_TRUE(check.hasIcrc && check.icrcOk && check.vcrcOk);
}

} // namespace

// A 4 KiB packet of zeros keeps its headers and nothing else, in the frame record: no Packet.
// Its bytes, Packet and wire image are those of the packet with every byte stored.
TEST(IbFrameStorage, LongZeroTailStoresOnlyItsHeadYetMaterializesIdentically)
{
    const auto wire = UdPacket(std::vector<uint8_t>(4096, 0));
    IbFrame f;
    Fill(f, wire);
    EXPECT_EQ(f.storedBytes, IbLrhHeader::kSize + kBth + kDeth); // through the SrcQP's 0x89
    EXPECT_FALSE(f.tail);
    ExpectReadsAs(f, wire, 5);

    // Data, then zeros: stored through the last data byte, the head inline and the rest in the
    // tail; the zeros in the middle stay stored, only those at the end are implied.
    auto payload = NonZeroBytes(1000, 1);
    std::fill(payload.begin() + 300, payload.begin() + 700, 0);
    payload.resize(4096, 0);
    const auto mixed = UdPacket(payload);
    IbFrame g;
    Fill(g, mixed);
    EXPECT_EQ(g.storedBytes, IbLrhHeader::kSize + kBth + kDeth + 1000);
    ASSERT_TRUE(g.tail);
    EXPECT_EQ(g.tail.Size(), g.storedBytes - IbFrame::kInlineBytes);
    ExpectReadsAs(g, mixed, 1);

    // A payload of data to the end stores everything but the CRC placeholders.
    const auto full = UdPacket(NonZeroBytes(4096, 2));
    IbFrame h;
    Fill(h, full);
    EXPECT_EQ(h.storedBytes, h.bytes - kIbIcrcBytes - kIbVcrcBytes);
    ExpectReadsAs(h, full, 0);
}

// A header byte that is an implied zero can be rewritten in place (the switch's FECN marking):
// it becomes stored, and the bytes before it read as the zeros they were.
TEST(IbFrameStorage, RewritingAnImpliedHeaderByteStoresIt)
{
    auto wire = UdPacket(std::vector<uint8_t>(256, 0));
    // A DETH of zeros and a BTH ending in zeros: the frame stores only up to the PSN's 0x56.
    std::fill(wire.begin() + IbLrhHeader::kSize + kBth, wire.begin() + IbLrhHeader::kSize + 28,
              0);
    IbFrame f;
    Fill(f, wire);
    ASSERT_EQ(f.storedBytes, IbLrhHeader::kSize + kBth);
    // A stale byte from the frame's previous life must not leak into the implied range.
    f.head[IbLrhHeader::kSize + kBth] = 0xEE;
    f.head[IbLrhHeader::kSize + kBth + 5] = 0xEE;
    const uint32_t at = IbLrhHeader::kSize + kBth + 6;
    f.HeadByte(at) |= 0x80;
    EXPECT_EQ(f.storedBytes, at + 1);
    wire[at] |= 0x80;
    ExpectReadsAs(f, wire, 2);
}

// Packets whose payload is data cross a switch byte for byte, whatever the zeros in and after
// them: what the destination receives (as a Packet and as a frame) and what a sniffer on either
// cable records are the bytes that were sent, with a correct VCRC and ICRC.
TEST(IbFrameStorage, NonZeroPayloadsSurviveASwitchHopByteExact)
{
    IbFabricHelper helper;
    IbFabric fabric = helper.Build(MakeTwoHostsOneSwitch());
    IbStaticSubnetHelper subnet;
    subnet.Configure(fabric.nodes);
    Simulator::Stop(MicroSeconds(10));
    Simulator::Run(); // ports Active
    Ptr<IbNetDevice> src = fabric.HostPort(0);
    Ptr<IbNetDevice> dst = fabric.HostPort(1);
    Ptr<IbNetDevice> swOut = dst->GetPeer();
    ASSERT_EQ(dst->GetPortState(), IbPortState::Active);

    // Bodies (BTH onwards): data to the end; data with zeros inside and a zero tail; a body
    // whose zeros are passed implicitly (SendIbBytes with fewer bytes stored than sent).
    std::vector<std::vector<uint8_t>> payloads;
    payloads.push_back(NonZeroBytes(4096, 11));
    auto holes = NonZeroBytes(2048, 12);
    std::fill(holes.begin() + 100, holes.begin() + 1500, 0);
    holes.resize(4000, 0);
    payloads.push_back(holes);
    payloads.push_back(NonZeroBytes(64, 13));
    std::vector<std::vector<uint8_t>> sent;
    for (const auto& pl : payloads)
    {
        sent.push_back(UdPacket(pl, dst->GetLid(), src->GetLid()));
    }
    auto implied = NonZeroBytes(200, 14);
    implied.resize(1024, 0);
    sent.push_back(UdPacket(implied, dst->GetLid(), src->GetLid()));
    // The sending port writes its VL for the SL into the LRH; this fabric maps SL 2 to the
    // same VL on every hop.
    const uint8_t vl = src->MapSlToVl(2);
    for (auto& w : sent)
    {
        w[0] = static_cast<uint8_t>((vl << 4) | (w[0] & 0x0F));
    }

    std::vector<std::vector<uint8_t>> sniffedOut;
    std::vector<std::vector<uint8_t>> sniffedIn;
    swOut->AddSniffer(MakeCallback(
        +[](std::vector<std::vector<uint8_t>>* v, Time, const uint8_t* b, uint32_t n, bool tx) {
            if (tx)
            {
                v->emplace_back(b, b + n);
            }
        }).Bind(&sniffedOut));
    dst->AddSniffer(MakeCallback(
        +[](std::vector<std::vector<uint8_t>>* v, Time, const uint8_t* b, uint32_t n, bool tx) {
            if (!tx)
            {
                v->emplace_back(b, b + n);
            }
        }).Bind(&sniffedIn));
    std::vector<std::vector<uint8_t>> received;
    dst->SetIbReceiveCallback(MakeCallback(
        +[](std::vector<std::vector<uint8_t>>* v, Ptr<IbNetDevice>, Ptr<const Packet> p,
            const IbRxInfo&) {
            std::vector<uint8_t> b(p->GetSize());
            p->CopyData(b.data(), p->GetSize());
            v->push_back(b);
        }).Bind(&received));

    for (size_t i = 0; i < payloads.size(); ++i)
    {
        const auto& w = sent[i];
        Ptr<Packet> body = Create<Packet>(w.data() + IbLrhHeader::kSize,
                                          w.size() - IbLrhHeader::kSize - 6);
        ASSERT_TRUE(src->SendIb(body, dst->GetLid(), 2));
    }
    {
        const auto& w = sent.back();
        const uint32_t length = static_cast<uint32_t>(w.size()) - IbLrhHeader::kSize - 6;
        ASSERT_TRUE(src->SendIbBytes(w.data() + IbLrhHeader::kSize, kBth + kDeth + 200, length,
                                     dst->GetLid(), 2));
    }
    Simulator::Stop(MicroSeconds(20));
    Simulator::Run();

    ASSERT_EQ(received.size(), sent.size());
    ASSERT_EQ(sniffedOut.size(), sent.size());
    ASSERT_EQ(sniffedIn.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i)
    {
        SCOPED_TRACE(i);
        // The consumer gets the bytes as the sender's port made them (CRC placeholders zero).
        EXPECT_EQ(received[i], sent[i]);
        std::vector<uint8_t> onWire = sent[i];
        IbFillCrcs(onWire.data(), onWire.size());
        EXPECT_EQ(sniffedOut[i], onWire);
        EXPECT_EQ(sniffedIn[i], onWire);
    }

    // The same packets through the frame callback (the RDMA port's path): the same bytes.
    std::vector<std::vector<uint8_t>> viaFrame;
    dst->SetIbFrameReceiveCallback(MakeCallback(
        +[](std::vector<std::vector<uint8_t>>* v, Ptr<IbNetDevice>, const IbFrame& f,
            const IbRxInfo&) {
            std::vector<uint8_t> b(f.bytes, 0xAA);
            f.CopyBytes(b.data());
            v->push_back(b);
        }).Bind(&viaFrame));
    for (size_t i = 0; i < payloads.size(); ++i)
    {
        const auto& w = sent[i];
        ASSERT_TRUE(src->SendIb(Create<Packet>(w.data() + IbLrhHeader::kSize,
                                               w.size() - IbLrhHeader::kSize - 6),
                                dst->GetLid(),
                                2));
    }
    Simulator::Stop(MicroSeconds(20));
    Simulator::Run();
    ASSERT_EQ(viaFrame.size(), payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i)
    {
        EXPECT_EQ(viaFrame[i], sent[i]) << i;
    }
    EXPECT_EQ(received.size(), sent.size()); // the Packet callback was replaced
    Simulator::Destroy();
}

// A frame the pool hands out again is a fresh one (issue 18: the pool resets it field by field,
// IbFrame::ResetForReuse, rather than assigning IbFrame()): every field as IbFrame() has it, no
// bytes from its previous life readable.
TEST(IbFrameStorage, AReusedFrameIsAFreshOne)
{
    auto wire = UdPacket(std::vector<uint8_t>(256, 0x5A));
    IbFrame* used = IbFramePool::Allocate();
    Fill(*used, wire);
    used->blocks = 5;
    used->dlid = 9;
    used->slid = 10;
    used->sl = 3;
    used->vl = 15;
    used->lnh = IbLnh::IbaGlobal;
    used->verifyBytes = true;
    used->icrcKnown = true;
    used->fromPeer = true;
    used->fctbsAfter = 77;
    used->linkGeneration = 4;
    used->icrc = 0xDEADBEEF;
    used->tailArrivalPs = 123000;
    used->outPort = 6;
    used->outVl = 2;
    used->uid = 99;
    used->ccHead = true;
    ASSERT_GT(used->storedBytes, IbFrame::kInlineBytes); // head and tail both in use
    IbFramePool::Release(used);
    IbFrame* again = IbFramePool::Allocate();
    ASSERT_EQ(again, used); // the free list's last frame comes back first
    const IbFrame fresh{};
    EXPECT_EQ(again->bytes, fresh.bytes);
    EXPECT_EQ(again->blocks, fresh.blocks);
    EXPECT_EQ(again->dlid, fresh.dlid);
    EXPECT_EQ(again->slid, fresh.slid);
    EXPECT_EQ(again->sl, fresh.sl);
    EXPECT_EQ(again->vl, fresh.vl);
    EXPECT_EQ(again->lnh, fresh.lnh);
    EXPECT_EQ(again->verifyBytes, fresh.verifyBytes);
    EXPECT_EQ(again->icrcKnown, fresh.icrcKnown);
    EXPECT_EQ(again->fromPeer, fresh.fromPeer);
    EXPECT_EQ(again->fctbsAfter, fresh.fctbsAfter);
    EXPECT_EQ(again->linkGeneration, fresh.linkGeneration);
    EXPECT_EQ(again->icrc, fresh.icrc);
    EXPECT_EQ(again->tailArrivalPs, fresh.tailArrivalPs);
    EXPECT_EQ(again->outPort, fresh.outPort);
    EXPECT_EQ(again->outVl, fresh.outVl);
    EXPECT_EQ(again->uid, fresh.uid);
    EXPECT_FALSE(again->inPool);
    EXPECT_EQ(again->ccHead, fresh.ccHead);
    EXPECT_EQ(again->storedBytes, 0u);
    EXPECT_FALSE(static_cast<bool>(again->tail));
    // A packet of zeros stored into it reads as zeros, not as the 0x5A of its previous life.
    again->bytes = static_cast<uint32_t>(wire.size());
    std::vector<uint8_t> out(wire.size(), 0xFF);
    again->CopyBytes(out.data());
    EXPECT_EQ(out, std::vector<uint8_t>(wire.size(), 0));
    IbFramePool::Release(again);
    Simulator::Destroy();
}
