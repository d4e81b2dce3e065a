// One Ethernet link: PFC quanta honoured at every speed, re-pause and XON, per-priority pause,
// strict and DWRR scheduling, link failure.
#include "test-roce-util.h"

#include "helpers/roce/eth-traffic-run.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/error-model.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <gtest/gtest.h>
#include <cmath>
#include <map>

using namespace ns3;
using namespace cnuas_test;

namespace
{

/// Keeps a host port's queues of several priorities full, all to one destination.
struct MultiClassSource
{
    Ptr<EthNetDevice> port;
    uint32_t dst = 0;
    std::vector<uint8_t> classes;
    uint32_t payload = 1000;
    int64_t stopPs = 0;
    std::map<uint8_t, uint64_t> sent;

    void Start()
    {
        port->SetTxReadyCallback(MakeCallback(&MultiClassSource::Ready, this));
        for (uint8_t c : classes)
        {
            Fill(c);
        }
    }
    void Ready(Ptr<EthNetDevice>, uint8_t c) { Fill(c); }
    void Fill(uint8_t c)
    {
        while (Simulator::Now().GetPicoSeconds() < stopPs && port->CanSend(c))
        {
            EthUdpFlow f;
            f.dstIp = dst;
            f.priority = c;
            f.dscp = static_cast<uint8_t>(c << 3);
            port->SendUdp(f, payload);
            sent[c]++;
        }
    }
};

/// Start times of data frames a port sends, per priority.
struct TxLog
{
    std::vector<std::pair<int64_t, uint8_t>> starts;
    uint64_t bytes[8] = {};
    void Tx(const EthFrame& f)
    {
        if (f.kind == EthFrameKind::Udp)
        {
            starts.push_back({Simulator::Now().GetPicoSeconds(), f.priority});
            bytes[f.priority] += f.bytes;
        }
    }
};

std::vector<uint8_t>
PfcBytes(uint16_t cev, uint8_t prio, uint16_t quanta)
{
    EthFrame f;
    f.kind = EthFrameKind::Pfc;
    f.dstMac = kEthMacControlDst;
    f.srcMac = 0x02AABBCCDDEEULL;
    f.pfc.classEnable = cev;
    f.pfc.quanta[prio] = quanta;
    f.ComputeSize();
    std::vector<uint8_t> b;
    f.Materialize(b, true);
    return b;
}

void
Inject(Ptr<EthNetDevice> port, std::vector<uint8_t> bytes)
{
    port->InjectReceivedBytes(bytes.data(), bytes.size());
}

/// First start at or after `t` (ps) of priority `prio`; -1 if none.
int64_t
FirstStartAfter(const TxLog& log, int64_t t, int prio = -1)
{
    for (auto& [s, p] : log.starts)
    {
        if (s >= t && (prio < 0 || p == prio))
        {
            return s;
        }
    }
    return -1;
}

} // namespace

TEST(RoceLink, PauseQuantaHonouredAtEverySpeed)
{
    for (const char* rate : {"10Gbps", "25Gbps", "40Gbps", "100Gbps", "400Gbps", "800Gbps"})
    {
        EthFabric fab = MakeEthPair(rate);
        Ptr<EthNetDevice> a = fab.HostPort(0);
        MultiClassSource src;
        src.port = a;
        src.dst = fab.HostIp(1);
        src.classes = {3};
        src.stopPs = MicroSeconds(200).GetPicoSeconds();
        TxLog log;
        a->TraceConnectWithoutContext("Tx", MakeCallback(&TxLog::Tx, &log));
        std::vector<Time> pausedLengths;
        struct Paused
        {
            std::vector<Time>* v;
            void Cb(uint8_t, Time d) { v->push_back(d); }
        } pcb{&pausedLengths};
        a->TraceConnectWithoutContext("PausedDuration", MakeCallback(&Paused::Cb, &pcb));
        Simulator::Schedule(Time(0), &MultiClassSource::Start, &src);
        // A PFC frame for priority 3 with 1000 quanta arrives at 10.0003 us (mid-frame).
        const uint16_t quanta = 1000;
        const Time at = NanoSeconds(10000) + PicoSeconds(300);
        Simulator::Schedule(at, &Inject, a, PfcBytes(0x08, 3, quanta));
        Simulator::Stop(MicroSeconds(300));
        Simulator::Run();

        const double bps = DataRate(rate).GetBitRate();
        const int64_t pausePs = std::llround(quanta * 512.0 / bps * 1e12);
        const int64_t atPs = at.GetPicoSeconds();
        // 802.1Qbb §36.2: no frame of the priority starts for quanta x 512 bit times after the
        // PFC frame is received; the frame already on the wire completes.
        const int64_t next = FirstStartAfter(log, atPs);
        EXPECT_EQ(next, atPs + pausePs) << rate;
        ASSERT_GE(pausedLengths.size(), 1u) << rate;
        EXPECT_EQ(pausedLengths[0].GetPicoSeconds(), pausePs) << rate;
        EXPECT_EQ(a->GetPausedTime(3).GetPicoSeconds(), pausePs) << rate;
        EXPECT_EQ(a->GetCounters().pauseReceived[3], 1u);
        // And before the pause, frames went back to back: the start before `at` is less than
        // one frame time before it.
        int64_t before = -1;
        for (auto& [s, p] : log.starts)
        {
            if (s < atPs)
            {
                before = s;
            }
        }
        EXPECT_GT(before, atPs - a->WireTime(1046).GetPicoSeconds()) << rate;
        Simulator::Destroy();
    }
}

TEST(RoceLink, RepauseRestartsTimerAndXonResumesAtOnce)
{
    EthFabric fab = MakeEthPair("100Gbps");
    Ptr<EthNetDevice> a = fab.HostPort(0);
    MultiClassSource src;
    src.port = a;
    src.dst = fab.HostIp(1);
    src.classes = {3};
    src.stopPs = MicroSeconds(100).GetPicoSeconds();
    TxLog log;
    a->TraceConnectWithoutContext("Tx", MakeCallback(&TxLog::Tx, &log));
    Simulator::Schedule(Time(0), &MultiClassSource::Start, &src);
    // Pause 2000 quanta (10.24 us) at 5 us; re-pause 1000 quanta at 8 us: the timer restarts,
    // so frames resume at 8 + 5.12 us, not at 15.24 us.
    Simulator::Schedule(MicroSeconds(5), &Inject, a, PfcBytes(0x08, 3, 2000));
    Simulator::Schedule(MicroSeconds(8), &Inject, a, PfcBytes(0x08, 3, 1000));
    // Pause for the maximum (65535 quanta = 335.5 us) at 30 us, XON (quanta 0) at 31 us.
    Simulator::Schedule(MicroSeconds(30), &Inject, a, PfcBytes(0x08, 3, 65535));
    Simulator::Schedule(MicroSeconds(31), &Inject, a, PfcBytes(0x08, 3, 0));
    Simulator::Stop(MicroSeconds(150));
    Simulator::Run();
    const int64_t us = 1000000;
    EXPECT_EQ(FirstStartAfter(log, 5 * us + 1), 8 * us + 5120000);
    EXPECT_EQ(FirstStartAfter(log, 30 * us + 1), 31 * us);
    EXPECT_EQ(a->GetCounters().pauseReceived[3], 3u);
    EXPECT_EQ(a->GetCounters().resumeReceived[3], 1u);
    // Paused: from 5 us to 13.12 us, and from 30 to 31 us (the frame in progress at 5 us and
    // 30 us does not count: it was already started).
    EXPECT_EQ(a->GetPausedTime(3).GetPicoSeconds(), 8 * us + 120000 + 1 * us);
    Simulator::Destroy();
}

TEST(RoceLink, PauseStopsOnlyTheNamedPriority)
{
    EthFabric fab = MakeEthPair("100Gbps", 2.0, 0x0A); // PFC on priorities 1 and 3
    Ptr<EthNetDevice> a = fab.HostPort(0);
    MultiClassSource src;
    src.port = a;
    src.dst = fab.HostIp(1);
    src.classes = {1, 3};
    src.stopPs = MicroSeconds(60).GetPicoSeconds();
    TxLog log;
    a->TraceConnectWithoutContext("Tx", MakeCallback(&TxLog::Tx, &log));
    Simulator::Schedule(Time(0), &MultiClassSource::Start, &src);
    Simulator::Schedule(MicroSeconds(10), &Inject, a, PfcBytes(0x08, 3, 4000)); // 20.48 us
    // A PFC for priority 5, which is not PFC-enabled here: ignored and counted.
    Simulator::Schedule(MicroSeconds(12), &Inject, a, PfcBytes(0x20, 5, 4000));
    Simulator::Stop(MicroSeconds(80));
    Simulator::Run();
    const int64_t from = MicroSeconds(10).GetPicoSeconds();
    const int64_t to = from + 20480000;
    uint64_t p1 = 0;
    uint64_t p3 = 0;
    for (auto& [s, p] : log.starts)
    {
        if (s > from && s < to)
        {
            (p == 1 ? p1 : p3)++;
        }
    }
    EXPECT_EQ(p3, 0u);
    // Priority 1 has the link to itself: 20.48 us / 85.28 ns per 1066-byte slot = 240 frames.
    EXPECT_GE(p1, 239u);
    EXPECT_LE(p1, 241u);
    // Priority 3 may go again from `to`; DWRR lets priority 1 finish its current quantum
    // (9216 bytes) first, plus the frame that was on the wire at `to`.
    const int64_t resume3 = FirstStartAfter(log, from + 1, 3);
    EXPECT_GE(resume3, to);
    EXPECT_LE(resume3,
              to + a->WireTime(9216).GetPicoSeconds() + a->WireTime(1046).GetPicoSeconds());
    EXPECT_EQ(a->GetCounters().pfcIgnored, 1u);
    Simulator::Destroy();
}

TEST(RoceLink, StrictPriorityAndDwrrShares)
{
    // Strict: class 5 strict over DWRR classes 0 and 2: while 5 has frames, nothing else goes.
    {
        EthFabricHelper h;
        h.SetPortAttribute("StrictPriorityMask", UintegerValue(0x20));
        EthFabric fab = MakeEthPair("100Gbps", 2.0, 0, &h);
        Ptr<EthNetDevice> a = fab.HostPort(0);
        MultiClassSource src;
        src.port = a;
        src.dst = fab.HostIp(1);
        src.classes = {0, 2, 5};
        src.stopPs = MicroSeconds(20).GetPicoSeconds();
        TxLog log;
        a->TraceConnectWithoutContext("Tx", MakeCallback(&TxLog::Tx, &log));
        Simulator::Schedule(Time(0), &MultiClassSource::Start, &src);
        Simulator::Run();
        // Until the source stops refilling class 5, only class-5 frames start (the first
        // frame may belong to any class: it started before all queues were filled).
        for (size_t i = 1; i < log.starts.size(); ++i)
        {
            if (log.starts[i].first < src.stopPs)
            {
                ASSERT_EQ(log.starts[i].second, 5) << "frame " << i;
            }
        }
        EXPECT_EQ(log.bytes[5] / 1046, src.sent[5]);
        Simulator::Destroy();
    }
    // DWRR weights 1 : 3 between classes 1 and 4: bytes share 1 : 3.
    {
        EthFabricHelper h;
        h.SetPortAttribute("DwrrWeights", StringValue("1,1,1,1,3,1,1,1"));
        EthFabric fab = MakeEthPair("100Gbps", 2.0, 0, &h);
        Ptr<EthNetDevice> a = fab.HostPort(0);
        MultiClassSource src;
        src.port = a;
        src.dst = fab.HostIp(1);
        src.classes = {1, 4};
        src.stopPs = MicroSeconds(500).GetPicoSeconds();
        TxLog log;
        a->TraceConnectWithoutContext("Tx", MakeCallback(&TxLog::Tx, &log));
        Simulator::Schedule(Time(0), &MultiClassSource::Start, &src);
        Simulator::Stop(MicroSeconds(400)); // both classes still backlogged
        Simulator::Run();
        const double share = double(log.bytes[4]) / double(log.bytes[1] + log.bytes[4]);
        // One round = 9216 + 3 x 9216 bytes of quantum; over ~4700 frames the share is 3/4
        // within one frame per round.
        EXPECT_NEAR(share, 0.75, 0.01);
        Simulator::Destroy();
    }
}

TEST(RoceLink, LinkDownLosesOnlyCountedFrames)
{
    Topology t = MakeTwoHostsOneSwitch();
    EthFabricHelper h;
    EthFabric fab = h.Build(t);
    Ptr<EthNetDevice> a = fab.HostPort(0);
    Ptr<EthNetDevice> b = fab.HostPort(1);
    EthUdpFlow flow;
    flow.dscp = 26;
    flow.priority = 3;
    EthGreedySource src(a, {fab.HostIp(1)}, flow, 1000, MicroSeconds(60));
    uint64_t got = 0;
    int64_t lastRx = 0;
    struct Rx
    {
        uint64_t* n;
        int64_t* last;
        void Cb(Ptr<EthNetDevice>, const EthFrame&)
        {
            (*n)++;
            *last = Simulator::Now().GetPicoSeconds();
        }
    } rx{&got, &lastRx};
    b->SetEthReceiveCallback(MakeCallback(&Rx::Cb, &rx));
    Simulator::Schedule(Time(0), &EthGreedySource::Start, &src);
    Ptr<EthChannel> cable = b->GetEthChannel();
    Simulator::Schedule(MicroSeconds(20), &EthChannel::SetUp, cable, false);
    Simulator::Schedule(MicroSeconds(30), &EthChannel::SetUp, cable, true);
    Simulator::Stop(MilliSeconds(1));
    Simulator::Run();
    uint64_t drops = 0;
    uint64_t linkDown = 0;
    for (auto& p : fab.AllPorts())
    {
        drops += p->GetTotalDrops();
        linkDown += p->GetDropCount(EthDropReason::LinkDown);
    }
    EXPECT_GT(linkDown, 0u);
    EXPECT_EQ(drops, linkDown);
    EXPECT_EQ(src.GetSent(), got + drops);
    EXPECT_GT(lastRx, MicroSeconds(30).GetPicoSeconds()); // traffic came back
    Simulator::Destroy();
}

TEST(RoceLink, FramesDamagedOnTheWireAreCountedAsBadFcs)
{
    Topology t = MakeTwoHostsOneSwitch();
    EthFabricHelper h;
    EthFabric fab = h.Build(t);
    Ptr<EthNetDevice> a = fab.HostPort(0);
    Ptr<EthNetDevice> b = fab.HostPort(1);
    // 2 % of the frames reaching the switch and the receiver are damaged.
    for (Ptr<EthNetDevice> port : {fab.Switch(2)->GetPort(1), b})
    {
        Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
        em->SetAttribute("ErrorUnit", EnumValue(RateErrorModel::ERROR_UNIT_PACKET));
        em->SetAttribute("ErrorRate", DoubleValue(0.02));
        em->AssignStreams(port == b ? 21 : 22);
        port->SetAttribute("ReceiveErrorModel", PointerValue(em));
    }
    EthUdpFlow flow;
    flow.priority = 3;
    flow.dscp = 26;
    EthGreedySource src(a, {fab.HostIp(1)}, flow, 1000, MicroSeconds(100));
    uint64_t got = 0;
    cnuas_test::CountEthRx(b, &got);
    Simulator::Schedule(Time(0), &EthGreedySource::Start, &src);
    Simulator::Run();
    uint64_t drops = 0;
    uint64_t badFcs = 0;
    for (auto& p : fab.AllPorts())
    {
        drops += p->GetTotalDrops();
        badFcs += p->GetDropCount(EthDropReason::BadFcs);
    }
    EXPECT_EQ(drops, badFcs);
    EXPECT_EQ(src.GetSent(), got + drops);
    // Two independent 2 % losses over ~1,170 frames: about 46 lost; 5 sigma either way.
    const double expectLost = src.GetSent() * (1 - 0.98 * 0.98);
    EXPECT_NEAR(double(drops), expectLost, 5 * std::sqrt(expectLost));
    Simulator::Destroy();
}

namespace
{

/// When one UDP frame sent at 0 by port 0 of a two-host pair arrives at port 1 (ps), with the
/// cable's length set after it was attached when `lateMeters` > 0.
int64_t
OneFrameArrivalPs(double builtMeters, double lateMeters)
{
    EthFabric fab = MakeEthPair("100Gbps", builtMeters);
    Ptr<EthNetDevice> a = fab.HostPort(0);
    Ptr<EthNetDevice> b = fab.HostPort(1);
    if (lateMeters > 0)
    {
        b->GetEthChannel()->SetAttribute("Length", DoubleValue(lateMeters));
    }
    struct Rx
    {
        int64_t at = -1;
        void Cb(Ptr<EthNetDevice>, const EthFrame&) { at = Simulator::Now().GetPicoSeconds(); }
    } rx;
    b->SetEthReceiveCallback(MakeCallback(&Rx::Cb, &rx));
    EthUdpFlow flow;
    flow.dstIp = fab.HostIp(1);
    Simulator::Schedule(Time(0), [a, flow]() { a->SendUdp(flow, 1000); });
    Simulator::Run();
    Simulator::Destroy();
    return rx.at;
}

} // namespace

// The ports keep a copy of their cable's state (up, generation, delay) for the per-frame path;
// the channel must push every change to it, including a length set after both ends attached.
TEST(RoceLink, PortsFollowTheirCablesStateAfterAttaching)
{
    const int64_t direct = OneFrameArrivalPs(200.0, 0);
    const int64_t lengthenedLater = OneFrameArrivalPs(2.0, 200.0);
    const int64_t shortCable = OneFrameArrivalPs(2.0, 0);
    ASSERT_GT(direct, 0);
    EXPECT_EQ(lengthenedLater, direct);
    EXPECT_EQ(direct - shortCable, 198 * 5000); // 198 m more at 5 ns/m

    EthFabric fab = MakeEthPair();
    Ptr<EthNetDevice> a = fab.HostPort(0);
    Ptr<EthNetDevice> b = fab.HostPort(1);
    Ptr<EthChannel> cable = a->GetEthChannel();
    EXPECT_TRUE(a->IsLinkUp());
    EXPECT_TRUE(b->IsLinkUp());
    cable->SetUp(false);
    EXPECT_FALSE(a->IsLinkUp());
    EXPECT_FALSE(b->LinkUp());
    cable->SetUp(true);
    EXPECT_TRUE(a->LinkUp());
    EXPECT_TRUE(b->IsLinkUp());
    Simulator::Destroy();
}
