// InfiniBand congestion control (IBA vol. 1 annex A10): the CC class attribute layouts, the
// switch's FECN marking rules, the CA's CCTI arithmetic and timers, the packet gap the CCT
// gives, and the whole loop on a fabric (FECN -> BECN -> throttled source).
#include "rdma-engine-fixture.h"

#include "helpers/mgmt/ib-cc-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "models/ib/ib-cc-switch-marker.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-cc-agent.h"
#include "models/mgmt/ib-cc-attributes.h"
#include "models/mgmt/ib-mad-header.h"
#include "models/rdma/ib-wire-bytes.h"
#include "models/rdma/rdma-cc-iba.h"

#include "ns3/boolean.h"
#include "ns3/nstime.h"
#include "ns3/uinteger.h"

#include <map>

using namespace ns3;
using namespace cnuas_test;

// ---- CC class attributes: byte positions from the annex's tables (bit offsets as libibmad's
// field table gives them: SwitchCongestionSetting Threshold at bit 544, etc.) -------------------

TEST(IbCcMad, SwitchCongestionSettingBytes)
{
    IbSwitchCongestionSettingAttr a;
    a.s.controlMap = 0x0000001F;
    IbCcSwitchSetting::SetPortBit(a.s.victimMask, 0, true);
    IbCcSwitchSetting::SetPortBit(a.s.victimMask, 9, true);
    IbCcSwitchSetting::SetPortBit(a.s.creditMask, 255, true);
    a.s.threshold = 0xA;
    a.s.packetSize = 0x21;
    a.s.csThreshold = 0x5;
    a.s.csReturnDelay = 0xBEEF;
    a.s.markingRate = 0x0102;
    uint8_t b[IbSwitchCongestionSettingAttr::kSize];
    a.WriteTo(b);
    EXPECT_EQ(b[0], 0x00);
    EXPECT_EQ(b[3], 0x1F);
    // Victim_Mask is bytes 4..35, a 256-bit big-endian number: port 0 = LSB of byte 35, port 9
    // = bit 1 of byte 34.
    EXPECT_EQ(b[35], 0x01);
    EXPECT_EQ(b[34], 0x02);
    EXPECT_EQ(b[4], 0x00);
    // Credit_Mask bytes 36..67: port 255 is the MSB of byte 36.
    EXPECT_EQ(b[36], 0x80);
    EXPECT_EQ(b[67], 0x00);
    EXPECT_EQ(b[68], 0xA0); // Threshold: bits 544..547, the high nibble
    EXPECT_EQ(b[69], 0x21); // Packet_Size
    EXPECT_EQ(b[70], 0x50); // CS_Threshold high nibble
    EXPECT_EQ(b[71], 0x00);
    EXPECT_EQ(b[72], 0xBE); // CS_ReturnDelay bits 576..591
    EXPECT_EQ(b[73], 0xEF);
    EXPECT_EQ(b[74], 0x01); // Marking_Rate bits 592..607
    EXPECT_EQ(b[75], 0x02);
    IbSwitchCongestionSettingAttr back;
    back.ReadFrom(b);
    EXPECT_TRUE(back.s.PortBit(back.s.victimMask, 9));
    EXPECT_FALSE(back.s.PortBit(back.s.victimMask, 8));
    EXPECT_EQ(back.s.threshold, 0xA);
    EXPECT_EQ(back.s.markingRate, 0x0102);
    EXPECT_EQ(back.s.csReturnDelay, 0xBEEF);
}

TEST(IbCcMad, SwitchPortCongestionSettingElements)
{
    IbSwitchPortCongestionSettingAttr a;
    a.ports[3].valid = true;
    a.ports[3].controlType = 1;
    a.ports[3].threshold = 0x7;
    a.ports[3].packetSize = 0x10;
    a.ports[3].markingRate = 0x0304;
    uint8_t b[IbSwitchPortCongestionSettingAttr::kSize];
    a.WriteTo(b);
    // Element 3 at byte 12: Valid bit 0 (MSB), Control_Type bit 1, Threshold bits 4..7.
    EXPECT_EQ(b[12], 0x80 | 0x40 | 0x07);
    EXPECT_EQ(b[13], 0x10);
    EXPECT_EQ(b[14], 0x03);
    EXPECT_EQ(b[15], 0x04);
    EXPECT_EQ(b[8], 0x00);
    EXPECT_EQ(b[16], 0x00);
    IbSwitchPortCongestionSettingAttr back;
    back.ReadFrom(b);
    EXPECT_TRUE(back.ports[3].valid);
    EXPECT_EQ(back.ports[3].controlType, 1);
    EXPECT_EQ(back.ports[3].threshold, 7);
    EXPECT_FALSE(back.ports[2].valid);
}

TEST(IbCcMad, CaCongestionSettingAndCctBytes)
{
    IbCaCongestionSettingAttr ca;
    ca.portControl = 0x0001;
    ca.controlMap = 0x8001;
    ca.entries[15].cctiTimer = 0x1234;
    ca.entries[15].cctiIncrease = 5;
    ca.entries[15].triggerThreshold = 6;
    ca.entries[15].cctiMin = 7;
    uint8_t b[IbCaCongestionSettingAttr::kSize];
    ca.WriteTo(b);
    EXPECT_EQ(b[0], 0x00);
    EXPECT_EQ(b[1], 0x01);
    EXPECT_EQ(b[2], 0x80);
    EXPECT_EQ(b[3], 0x01);
    const uint32_t e = 4 + 8 * 15; // entries of 64 bits after the 32-bit header
    EXPECT_EQ(b[e], 0x12);
    EXPECT_EQ(b[e + 1], 0x34);
    EXPECT_EQ(b[e + 2], 5);
    EXPECT_EQ(b[e + 3], 6);
    EXPECT_EQ(b[e + 4], 7);
    EXPECT_EQ(e + 8, IbCaCongestionSettingAttr::kSize);

    IbCongestionControlTableAttr t;
    t.cctiLimit = 0x007F;
    t.entries[0] = {3, 0x3FFF};
    t.entries[63] = {1, 0x0005};
    uint8_t c[IbCongestionControlTableAttr::kSize];
    t.WriteTo(c);
    EXPECT_EQ(c[0], 0x00);
    EXPECT_EQ(c[1], 0x7F);
    // CCT_Shift is the top 2 bits, CCT_Multiplier the low 14.
    EXPECT_EQ(c[4], 0xFF);
    EXPECT_EQ(c[5], 0xFF);
    EXPECT_EQ(c[130], 0x40);
    EXPECT_EQ(c[131], 0x05);
    IbCongestionControlTableAttr back;
    back.ReadFrom(c);
    EXPECT_EQ(back.entries[63].shift, 1);
    EXPECT_EQ(back.entries[63].multiplier, 5);
    EXPECT_EQ(back.entries[0].multiplier, 0x3FFF);
}

TEST(IbCcMad, KeyInfoAndCongestionInfoBytes)
{
    IbCongestionKeyInfoAttr k;
    k.ccKey = 0x0102030405060708ULL;
    k.protectBit = true;
    k.leasePeriod = 0x0A0B;
    k.violations = 0x0C0D;
    uint8_t b[IbCongestionKeyInfoAttr::kSize];
    k.WriteTo(b);
    EXPECT_EQ(b[0], 0x01);
    EXPECT_EQ(b[7], 0x08);
    EXPECT_EQ(b[8], 0x80); // CC_KeyProtectBit: bit 64
    EXPECT_EQ(b[10], 0x0A); // CC_KeyLeasePeriod: bits 80..95
    EXPECT_EQ(b[12], 0x0C); // CC_KeyViolations: bits 96..111
    EXPECT_EQ(b[13], 0x0D);
    IbCongestionInfoAttr i;
    i.congestionInfo = 0x0001;
    i.controlTableCap = 2;
    uint8_t c[IbCongestionInfoAttr::kSize];
    i.WriteTo(c);
    EXPECT_EQ(c[1], 0x01);
    EXPECT_EQ(c[2], 2);
    EXPECT_EQ(IbCc::kDataOffset + IbCc::kDataSize, 256u);
}

// ---- the CC agent: Set then Get through raw 256-byte MADs -----------------------------------

namespace
{
std::vector<uint8_t>
CcMad(uint8_t method, uint16_t attr, uint32_t mod, uint64_t key = 0)
{
    std::vector<uint8_t> m(kIbMadBytes, 0);
    IbMadHeader h;
    h.SetMgmtClass(IbCc::kMgmtClass);
    h.SetClassVersion(IbCc::kClassVersion);
    h.SetMethod(method);
    h.SetAttributeId(attr);
    h.SetAttributeModifier(mod);
    h.SetTransactionId(0x1234);
    h.WriteTo(m.data());
    IbWireStore64(m.data() + IbCc::kCcKeyOffset, key);
    return m;
}

uint16_t
StatusOf(const std::vector<uint8_t>& m)
{
    IbMadHeader h;
    h.ReadFrom(m.data());
    EXPECT_EQ(h.GetMethod(), IbMadMethod::GetResp);
    return h.GetStatus();
}
} // namespace

TEST(IbCcAgentTest, SwitchSettingsSetThenGet)
{
    Ptr<IbCcSwitchMarker> marker = CreateObject<IbCcSwitchMarker>();
    Ptr<IbCcAgent> agent = CreateObject<IbCcAgent>();
    agent->InstallSwitch(nullptr, marker);
    auto set = CcMad(IbMadMethod::Set, IbCc::kSwitchCongestionSetting, 0);
    IbSwitchCongestionSettingAttr a;
    a.s.threshold = 9;
    a.s.markingRate = 4;
    a.s.packetSize = 8;
    a.WriteTo(set.data() + IbCc::kDataOffset);
    ASSERT_TRUE(agent->Answer(set.data()));
    EXPECT_EQ(StatusOf(set), IbMadStatus::Ok);
    EXPECT_EQ(marker->GetSwitchSetting().threshold, 9);
    EXPECT_EQ(marker->GetSwitchSetting().markingRate, 4);
    auto get = CcMad(IbMadMethod::Get, IbCc::kSwitchCongestionSetting, 0);
    ASSERT_TRUE(agent->Answer(get.data()));
    EXPECT_EQ(get[IbCc::kDataOffset + 68], 0x90);
    EXPECT_EQ(get[IbCc::kDataOffset + 69], 8);
    // A CA attribute on a switch is refused.
    auto ca = CcMad(IbMadMethod::Get, IbCc::kCaCongestionSetting, 0);
    ASSERT_TRUE(agent->Answer(ca.data()));
    EXPECT_EQ(StatusOf(ca), IbMadStatus::UnsupportedMethodAttr);
    // A method CC agents do not serve.
    auto send = CcMad(IbMadMethod::Send, IbCc::kSwitchCongestionSetting, 0);
    ASSERT_TRUE(agent->Answer(send.data()));
    EXPECT_EQ(StatusOf(send), IbMadStatus::UnsupportedMethod);
}

TEST(IbCcAgentTest, CaSettingsAndTableBlocksReachThePolicy)
{
    Ptr<RdmaCcIba> policy = CreateObject<RdmaCcIba>();
    Ptr<IbCcAgent> agent = CreateObject<IbCcAgent>(); // ControlTableCap 2: 128 entries
    agent->InstallCa(nullptr, policy);
    auto set = CcMad(IbMadMethod::Set, IbCc::kCaCongestionSetting, 0);
    IbCaCongestionSettingAttr ca;
    ca.controlMap = 0x0003;
    ca.entries[1].cctiIncrease = 4;
    ca.entries[1].cctiTimer = 77;
    ca.WriteTo(set.data() + IbCc::kDataOffset);
    ASSERT_TRUE(agent->Answer(set.data()));
    EXPECT_EQ(StatusOf(set), IbMadStatus::Ok);
    EXPECT_EQ(policy->GetControlMap(), 0x0003);
    EXPECT_EQ(policy->GetCaEntry(1).cctiIncrease, 4);
    EXPECT_EQ(policy->GetCaEntry(1).cctiTimer, 77);

    auto t = CcMad(IbMadMethod::Set, IbCc::kCongestionControlTable, 1);
    IbCongestionControlTableAttr tab;
    tab.cctiLimit = 100;
    tab.entries[0] = {1, 300}; // index 64
    tab.entries[36] = {2, 9};  // index 100
    tab.WriteTo(t.data() + IbCc::kDataOffset);
    ASSERT_TRUE(agent->Answer(t.data()));
    EXPECT_EQ(StatusOf(t), IbMadStatus::Ok);
    EXPECT_EQ(policy->GetCctiLimit(), 100);
    EXPECT_EQ(policy->GetCctEntry(64).multiplier, 300);
    EXPECT_EQ(policy->GetCctEntry(100).shift, 2);
    // Block 2 (indices 128..191) is beyond ControlTableCap, and so is a limit of 128.
    auto beyond = CcMad(IbMadMethod::Get, IbCc::kCongestionControlTable, 2);
    ASSERT_TRUE(agent->Answer(beyond.data()));
    EXPECT_EQ(StatusOf(beyond), IbMadStatus::InvalidField);
    tab.cctiLimit = 128;
    auto big = CcMad(IbMadMethod::Set, IbCc::kCongestionControlTable, 0);
    tab.WriteTo(big.data() + IbCc::kDataOffset);
    ASSERT_TRUE(agent->Answer(big.data()));
    EXPECT_EQ(StatusOf(big), IbMadStatus::InvalidField);
    EXPECT_EQ(policy->GetCctiLimit(), 100);
}

TEST(IbCcAgentTest, AWrongCcKeyGetsNoAnswerAndCountsAViolation)
{
    Ptr<IbCcAgent> agent = CreateObject<IbCcAgent>();
    agent->InstallSwitch(nullptr, CreateObject<IbCcSwitchMarker>());
    auto set = CcMad(IbMadMethod::Set, IbCc::kCongestionKeyInfo, 0);
    IbCongestionKeyInfoAttr k;
    k.ccKey = 0xC0FFEE;
    k.WriteTo(set.data() + IbCc::kDataOffset);
    ASSERT_TRUE(agent->Answer(set.data()));
    EXPECT_EQ(agent->GetCcKey(), 0xC0FFEEu);
    auto wrong = CcMad(IbMadMethod::Get, IbCc::kSwitchCongestionSetting, 0, 0xBAD);
    EXPECT_FALSE(agent->Answer(wrong.data()));
    EXPECT_EQ(agent->GetKeyViolations(), 1);
    auto right = CcMad(IbMadMethod::Get, IbCc::kSwitchCongestionSetting, 0, 0xC0FFEE);
    EXPECT_TRUE(agent->Answer(right.data()));
    EXPECT_EQ(StatusOf(right), IbMadStatus::Ok);
}

// ---- FECN and BECN are outside the ICRC (IBA vol. 1 §7.8.1) ------------------------------

TEST(IbCcWire, FecnAndBecnDoNotChangeTheIcrc)
{
    // LRH (LNH 2: IBA local) + BTH + 16 payload bytes.
    std::vector<uint8_t> p = {0x00, 0x02, 0x00, 0x05, 0x00, 0x0A, 0x00, 0x03, // LRH
                              0x04, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, // BTH
                              0x80, 0x00, 0x00, 0x07};
    for (int i = 0; i < 16; ++i)
    {
        p.push_back(static_cast<uint8_t>(i * 7));
    }
    const uint32_t icrc = IbComputeIcrc(p.data(), p.size());
    p[12] |= 0x80; // FECN
    EXPECT_EQ(IbComputeIcrc(p.data(), p.size()), icrc);
    p[12] |= 0x40; // BECN
    EXPECT_EQ(IbComputeIcrc(p.data(), p.size()), icrc);
    p[13] ^= 0x01; // DestQP: covered
    EXPECT_NE(IbComputeIcrc(p.data(), p.size()), icrc);
}

// ---- the switch's marking rules, exact -------------------------------------------------------

TEST(IbCcMarker, ThresholdMapsToAFractionOfTheVlBuffer)
{
    Ptr<IbCcSwitchMarker> m = CreateObject<IbCcSwitchMarker>();
    IbCcSwitchSetting s;
    for (uint8_t t : {0, 1, 8, 15})
    {
        s.threshold = t;
        m->SetSwitchSetting(s);
        const uint32_t expected = t == 0 ? UINT32_MAX : 512u * (16 - t) / 16;
        EXPECT_EQ(m->ThresholdBlocks(1, 512), expected) << int(t);
    }
    // A valid per-port element overrides the switch-wide threshold for its port only.
    IbCcSwitchPortSetting p;
    p.valid = true;
    p.threshold = 12;
    m->SetPortSetting(4, p);
    EXPECT_EQ(m->ThresholdBlocks(4, 512), 512u * 4 / 16);
    EXPECT_EQ(m->ThresholdBlocks(5, 512), 512u * 1 / 16);
}

TEST(IbCcMarker, MarksOnlyAboveTheThresholdAtTheMarkingRate)
{
    Ptr<IbCcSwitchMarker> m = CreateObject<IbCcSwitchMarker>();
    IbCcSwitchSetting s;
    s.threshold = 8; // half of a 64-block buffer: congested above 32 blocks
    s.markingRate = 2; // mark one, skip two
    s.packetSize = 4;  // packets under 4 blocks (256 bytes) never marked
    m->SetSwitchSetting(s);
    // 12 departures with the queue levels below (blocks, including the departing packet).
    const uint32_t levels[] = {10, 32, 33, 40, 50, 60, 70, 20, 33, 34, 35, 36};
    std::vector<int> marked;
    for (int i = 0; i < 12; ++i)
    {
        if (m->ShouldMark(1, 0, levels[i], 64, false, 16))
        {
            marked.push_back(i);
        }
    }
    // Above 32: indices 2,3,4,5,6 then 8,9,10,11. Mark, skip 2: 2, 5, (skip 6, 8) 9.
    EXPECT_EQ(marked, (std::vector<int>{2, 5, 9}));
    EXPECT_EQ(m->GetCongestedDepartures(), 9u);
    // Small packets are never marked, even congested (and do not use up the skip count).
    Ptr<IbCcSwitchMarker> m2 = CreateObject<IbCcSwitchMarker>();
    m2->SetSwitchSetting(s);
    EXPECT_FALSE(m2->ShouldMark(1, 0, 60, 64, false, 3));
    EXPECT_TRUE(m2->ShouldMark(1, 0, 60, 64, false, 4));
    // Marking rate counts per port and VL.
    EXPECT_TRUE(m2->ShouldMark(1, 1, 60, 64, false, 4));
    EXPECT_TRUE(m2->ShouldMark(2, 0, 60, 64, false, 4));
    EXPECT_FALSE(m2->ShouldMark(1, 0, 60, 64, false, 4));
}

TEST(IbCcMarker, AVictimPortMarksOnlyWithItsVictimMaskBit)
{
    Ptr<IbCcSwitchMarker> m = CreateObject<IbCcSwitchMarker>();
    IbCcSwitchSetting s;
    s.threshold = 15;
    IbCcSwitchSetting::SetPortBit(s.victimMask, 3, true);
    m->SetSwitchSetting(s);
    EXPECT_FALSE(m->ShouldMark(2, 0, 60, 64, true, 16)); // victim, mask bit clear
    EXPECT_TRUE(m->ShouldMark(2, 0, 60, 64, false, 16)); // root
    EXPECT_TRUE(m->ShouldMark(3, 0, 60, 64, true, 16));  // victim, mask bit set
    EXPECT_EQ(m->GetMarked(), 2u);
}

// ---- the CA: CCTI arithmetic and timers ------------------------------------------------------

namespace
{
Ptr<RdmaCcIba>
MakeIbaPolicy(uint16_t timer, uint8_t increase, uint8_t min, uint16_t limit)
{
    Ptr<RdmaCcIba> cc = CreateObject<RdmaCcIba>();
    cc->SetLinearCct(limit + 1, 10);
    IbCaCongestionEntry e;
    e.cctiTimer = timer;
    e.cctiIncrease = increase;
    e.cctiMin = min;
    cc->SetCaEntry(0, e);
    cc->SetCaEntry(1, e);
    cc->SetControlMap(0x0001); // SL 0 only
    return cc;
}
} // namespace

TEST(IbCcPolicy, BecnRaisesTheIndexToTheLimitAndTheTimerLowersItToTheMinimum)
{
    // CCTI_Timer 10 = 10.24 us, CCTI_Increase 3, CCTI_Min 1, CCTI_Limit 10.
    Ptr<RdmaCcIba> cc = MakeIbaPolicy(10, 3, 1, 10);
    cc->SetQpSl(8, 1);
    cc->OnQpStart(7, 200000000000ULL);
    cc->OnQpStart(8, 200000000000ULL);
    EXPECT_EQ(cc->GetCcti(7), 1); // starts at CCTI_Min
    std::map<int, uint16_t> seen;
    Simulator::Schedule(MicroSeconds(1), [cc]() {
        cc->OnBecn(7);
        EXPECT_EQ(cc->GetCcti(7), 4);
        cc->OnBecn(7);
        cc->OnBecn(7);
        EXPECT_EQ(cc->GetCcti(7), 10); // 1 + 9 = 10 = the limit
        cc->OnBecn(7);
        EXPECT_EQ(cc->GetCcti(7), 10); // saturates
        cc->OnBecn(8);                 // SL 1: not in Control_Map
    });
    // The timer starts with the first raise (t = 1 us) and fires every 10.24 us after it.
    for (int k = 0; k <= 12; ++k)
    {
        Simulator::Schedule(PicoSeconds(1000000 + 10240000LL * k + 500000),
                            [&seen, cc, k]() { seen[k] = cc->GetCcti(7); });
    }
    Simulator::Stop(MicroSeconds(200));
    Simulator::Run();
    for (int k = 0; k <= 12; ++k)
    {
        EXPECT_EQ(seen[k], std::max(1, 10 - k)) << "after " << k << " expiries";
    }
    EXPECT_EQ(cc->GetCcti(8), 1);
    Simulator::Destroy();
}

TEST(IbCcPolicy, ThePacketGapIsTheLineTimePlusTheCctEntrysDelay)
{
    Ptr<RdmaCcIba> cc = CreateObject<RdmaCcIba>();
    cc->SetAttribute("IrdUnit", TimeValue(NanoSeconds(2)));
    cc->SetCctiLimit(3);
    cc->SetCctEntries(0, {{0, 0}, {0, 7}, {2, 5}, {3, 100}});
    IbCaCongestionEntry e;
    e.cctiIncrease = 1;
    cc->SetCaEntry(0, e);
    cc->SetControlMap(1);
    cc->OnQpStart(1, 100000000000ULL); // 100 Gb/s: 1250 bytes take 100 ns
    EXPECT_EQ(cc->GetPacketGap(1, 1250), Time(0)); // CCTI 0: no limit
    const int64_t expectNs[] = {0, 100 + 7 * 2, 100 + (5 << 2) * 2, 100 + (100 << 3) * 2};
    for (int i = 1; i <= 3; ++i)
    {
        cc->OnBecn(1);
        ASSERT_EQ(cc->GetCcti(1), i);
        EXPECT_EQ(cc->GetPacketGap(1, 1250), NanoSeconds(expectNs[i])) << i;
    }
    Simulator::Destroy();
}

// ---- the requester enforces the policy's packet gap ----------------------------------------

namespace
{
/// Imposes a fixed gap between packet starts.
class GapCc : public RdmaCcNone
{
  public:
    Time gap;
    Time GetPacketGap(uint32_t, uint32_t) const override
    {
        return gap;
    }
};
} // namespace

static void
NoteSend(std::vector<Time>* v, uint32_t, uint8_t op, uint32_t, uint32_t, bool)
{
    if (op <= IbOpcode::kRcRdmaWriteOnlyWithImm)
    {
        v->push_back(Simulator::Now());
    }
}

class IbCcEngine : public RdmaPairTest
{
};

TEST_F(IbCcEngine, PacketsLeaveAtThePolicysGap)
{
    Setup();
    Ptr<GapCc> cc = CreateObject<GapCc>();
    cc->gap = MicroSeconds(1); // far above a 1 KiB packet's 41 ns at 200 Gb/s
    a.hca.engine->SetCongestionControl(cc);
    std::vector<Time> sent;
    a.hca.engine->TraceConnectWithoutContext("PacketSent", MakeBoundCallback(&NoteSend, &sent));
    ASSERT_EQ(a.qp->PostSend([&] {
                  RdmaSendWr w = Wr(1, RdmaWrOpcode::RDMA_WRITE, {a.Sge(0, 10 * 1024)});
                  w.rdma.remote_addr = kRegionBase;
                  w.rdma.rkey = b.mr->GetRkey();
                  return w;
              }()),
              0);
    RunFor(MicroSeconds(50));
    ASSERT_EQ(sent.size(), 10u);
    for (size_t i = 1; i < sent.size(); ++i)
    {
        EXPECT_EQ(sent[i] - sent[i - 1], MicroSeconds(1)) << i;
    }
}

// ---- the loop on a fabric: the ib-incast dumbbell with RDMA WRITE flows -----------------------

namespace
{
/// Bytes received per QP number at one engine, inside a measurement window.
struct RxMeter
{
    Time from;
    Time to;
    std::map<uint32_t, uint64_t> bytes;
};

void
NoteRx(RxMeter* m, uint32_t qpn, uint8_t, uint32_t, uint32_t bytes)
{
    const Time now = Simulator::Now();
    if (now >= m->from && now < m->to)
    {
        m->bytes[qpn] += bytes;
    }
}

/// The figures one run gives (Gb/s over the window).
struct IncastResult
{
    double victim = 0;
    double h0 = 0;
    double hotSpot = 0;
    uint64_t fecnMarked = 0;
    uint64_t victimMarked = 0;
    uint16_t victimCcti = 0;
    uint16_t h0Ccti = 0;
};
} // namespace

/**
 * dumbbell:left=2,right=9 as in `cnuas run ib-incast`: h0 and h2..h8 write to the hot spot h10,
 * the victim h1 writes to h9. Every flow is an RC QP posting 64 KiB RDMA WRITEs back to back.
 */
class IbCcIncast : public RdmaPairTest
{
  protected:
    IncastResult Run(bool cc)
    {
        RdmaHelper helper;
        if (cc)
        {
            helper.SetCongestionControl("ns3::RdmaCcIba");
            helper.SetCongestionControlAttribute("ControlMap", UintegerValue(0xFFFF));
            helper.SetCongestionControlAttribute("CctiLimit", UintegerValue(127));
            helper.SetCongestionControlAttribute("CctStep", UintegerValue(64));
            helper.SetCongestionControlAttribute("CctiIncrease", UintegerValue(kIncrease));
            helper.SetCongestionControlAttribute("CctiTimer", UintegerValue(kTimer));
            // Annex A10: a BECN for every FECN (no CNP pacing as RoCE's DCQCN has).
            helper.SetEngineAttribute("CnpInterval", TimeValue(Time(0)));
            helper.SetEngineAttribute("IbBecnByCnp", BooleanValue(true));
        }
        fabric = IbFabricHelper().Build(BuildTopologyFromSpec("dumbbell:left=2,right=9"));
        subnet.Configure(fabric.nodes);
        hcas = helper.Install(fabric);
        RunFor(MicroSeconds(10));
        if (cc)
        {
            IbCcSwitchSetting s;
            s.threshold = kThreshold;
            for (uint32_t i = 0; i < fabric.switches.GetN(); ++i)
            {
                Ptr<IbCcSwitchMarker> m = CreateObject<IbCcSwitchMarker>();
                m->SetSwitchSetting(s);
                fabric.switches.Get(i)->GetObject<IbSwitch>()->SetCcMarker(m);
            }
        }
        QpOptions o;
        o.mtu = RdmaMtu::MTU_4096;
        o.sqDepth = 256;
        const uint32_t n = fabric.hosts.GetN();
        sides.resize(n);
        for (uint32_t h = 0; h < n; ++h)
        {
            MakeSide(sides[h], h, o);
        }
        // Flows: sender -> (receiver host, receiver QP).
        std::vector<std::pair<uint32_t, uint32_t>> flows = {{1, 9}, {0, 10}};
        for (uint32_t h = 2; h <= 8; ++h)
        {
            flows.push_back({h, 10});
        }
        std::map<uint32_t, Ptr<RdmaQp>> rxQp; // sender -> its QP at the receiver
        for (auto [src, dst] : flows)
        {
            Ptr<RdmaQp> r = dst == 9 ? sides[9].qp : CreateQp(sides[dst], o);
            rxQp[src] = r;
            Connect(sides[src].qp, sides[dst].lid, r->GetQpNum(), o.sqPsn, o);
            Connect(r, sides[src].lid, sides[src].qp->GetQpNum(), o.sqPsn, o);
            for (uint32_t w = 0; w < o.sqDepth; ++w)
            {
                RdmaSendWr wr = Wr(w, RdmaWrOpcode::RDMA_WRITE, {sides[src].Sge(0, 65536)});
                wr.send_flags = 0;
                wr.rdma.remote_addr = kRegionBase + 65536 * (src % 32);
                wr.rdma.rkey = sides[dst].mr->GetRkey();
                sides[src].qp->PostSend(wr);
            }
        }
        RxMeter m9{kFrom, kTo, {}};
        RxMeter m10{kFrom, kTo, {}};
        hcas[9].engine->TraceConnectWithoutContext("PacketReceived",
                                                   MakeBoundCallback(&NoteRx, &m9));
        hcas[10].engine->TraceConnectWithoutContext("PacketReceived",
                                                    MakeBoundCallback(&NoteRx, &m10));
        RunFor(kTo);
        const double secs = (kTo - kFrom).GetSeconds();
        IncastResult r;
        r.victim = m9.bytes[sides[9].qp->GetQpNum()] * 8 / secs / 1e9;
        r.h0 = m10.bytes[rxQp[0]->GetQpNum()] * 8 / secs / 1e9;
        for (auto& [qpn, b] : m10.bytes)
        {
            r.hotSpot += b * 8 / secs / 1e9;
        }
        for (uint32_t i = 0; i < fabric.switches.GetN(); ++i)
        {
            r.fecnMarked += fabric.switches.Get(i)->GetObject<IbSwitch>()->GetFecnMarked();
        }
        if (cc)
        {
            auto ccAt = [&](uint32_t h) {
                Ptr<RdmaCcIba> p = DynamicCast<RdmaCcIba>(hcas[h].engine->GetCongestionControl());
                return p;
            };
            r.victimMarked = ccAt(9)->GetFecnCount();
            r.victimCcti = ccAt(1)->GetCcti(sides[1].qp->GetQpNum());
            r.h0Ccti = ccAt(0)->GetCcti(sides[0].qp->GetQpNum());
        }
        std::cout << (cc ? "cc=iba" : "cc=none") << ": victim " << r.victim << " Gb/s, h0 "
                  << r.h0 << ", hot spot " << r.hotSpot << ", FECN marked " << r.fecnMarked
                  << ", victim FECN " << r.victimMarked << ", CCTI victim " << r.victimCcti
                  << " h0 " << r.h0Ccti << std::endl;
        return r;
    }

    static constexpr uint8_t kThreshold = 14;
    static constexpr uint32_t kIncrease = 1;
    static constexpr uint32_t kTimer = 2;
    // The buffers filled before the first BECN take a few hundred microseconds to drain
    // (docs/ib-congestion-control.md §3): measure after that.
    const Time kFrom = MicroSeconds(500);
    const Time kTo = MicroSeconds(800);
    std::vector<Side> sides;
};

TEST_F(IbCcIncast, CongestionControlGivesTheVictimItsShareBack)
{
    const IncastResult off = Run(false);
    TearDown();
    const IncastResult on = Run(true);
    // Without CC: congestion spreading holds the victim to h0's share of the hot spot (1/8 of
    // the link), far below its max-min fair share of 200 - 25 = 175 Gb/s; nothing is marked.
    EXPECT_EQ(off.fecnMarked, 0u);
    EXPECT_GT(off.hotSpot, 190.0);
    EXPECT_LT(off.victim, 0.2 * 175.0);
    // With CC: the hot-spot flows are throttled (h0's index is up) and the victim gets several
    // times its CC-off rate while the hot spot stays busy. (The victim is marked too, now and
    // then: once the buffers have drained, the inter-switch link it shares with h0 is a real
    // bottleneck whenever both want more than its 200 Gb/s.)
    EXPECT_GT(on.fecnMarked, 0u);
    EXPECT_GT(on.h0Ccti, 0);
    EXPECT_GT(on.victim, 2 * off.victim);
    EXPECT_GT(on.victim, 0.8 * 175.0);
    EXPECT_GT(on.hotSpot, 0.75 * 200.0);
}

// ---- the manager: after the SM's sweep, every node holds the profile it sent ------------------

TEST(IbCcManagerTest, AfterTheSweepEverySwitchAndCaHoldsTheProfile)
{
    IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("dumbbell:left=2,right=3"));
    Ptr<IbSubnetManager> sm = IbSmHelper().Install(f, f.hosts.Get(0), MicroSeconds(2));
    RdmaHelper rh;
    rh.SetCongestionControl("ns3::RdmaCcIba");
    std::vector<RdmaHca> hcas = rh.Install(f);
    IbCcHelper ch;
    ch.SetManagerAttribute("Threshold", UintegerValue(11));
    ch.SetManagerAttribute("MarkingRate", UintegerValue(3));
    ch.SetManagerAttribute("CctiTimer", UintegerValue(5));
    ch.SetManagerAttribute("CctiIncrease", UintegerValue(2));
    ch.SetManagerAttribute("CctiLimit", UintegerValue(100));
    ch.SetManagerAttribute("CctStep", UintegerValue(7));
    EXPECT_EQ(ch.InstallAgents(f, hcas), f.switches.GetN() + f.hosts.GetN());
    Ptr<IbCcManager> mgr = ch.InstallManager(f.hosts.Get(0));
    Simulator::Stop(MilliSeconds(2));
    Simulator::Run();
    ASSERT_GE(sm->GetLastSubnetUp(), Seconds(0));
    // Per heavy sweep: one Set per switch; two CCT blocks (101 entries) and a
    // CACongestionSetting per CA port.
    EXPECT_GT(mgr->GetMadsSent(), 0u);
    EXPECT_EQ(mgr->GetMadsSent() % (f.switches.GetN() + 3 * f.hosts.GetN()), 0u);
    EXPECT_EQ(mgr->GetSendFailures(), 0u);
    for (uint32_t i = 0; i < f.switches.GetN(); ++i)
    {
        Ptr<IbCcSwitchMarker> m = f.switches.Get(i)->GetObject<IbSwitch>()->GetCcMarker();
        ASSERT_TRUE(m);
        EXPECT_EQ(m->GetSwitchSetting().threshold, 11) << "switch " << i;
        EXPECT_EQ(m->GetSwitchSetting().markingRate, 3);
    }
    for (uint32_t h = 0; h < f.hosts.GetN(); ++h)
    {
        Ptr<RdmaCcIba> p = DynamicCast<RdmaCcIba>(hcas[h].engine->GetCongestionControl());
        ASSERT_TRUE(p);
        EXPECT_EQ(p->GetControlMap(), 0xFFFF) << "host " << h;
        EXPECT_EQ(p->GetCaEntry(3).cctiTimer, 5);
        EXPECT_EQ(p->GetCaEntry(15).cctiIncrease, 2);
        EXPECT_EQ(p->GetCctiLimit(), 100);
        EXPECT_EQ(p->GetCctEntry(100).multiplier, 700); // second block, entry 36
        EXPECT_EQ(p->GetCctEntry(1).multiplier, 7);
    }
    Simulator::Destroy();
}
