// InfiniBand link layer: port states, credits, incast, congestion spreading, bad input.
#include "helpers/ib-fabric-helper.h"
#include "helpers/topology.h"
#include "models/ib/ib-channel.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-packet-source.h"
#include "models/ib/ib-switch.h"

#include "ns3/config.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

using namespace ns3;

namespace
{

struct Run
{
    IbFabric fabric;
    IbStaticSubnetHelper subnet;
};

Ptr<IbPacketSource>
AddSource(Ptr<Node> node, uint16_t dlid, Time start, Time stop, uint64_t maxBytes = 0)
{
    Ptr<IbPacketSource> s = CreateObject<IbPacketSource>();
    s->SetAttribute("DestinationLid", UintegerValue(dlid));
    s->SetAttribute("MaxBytes", UintegerValue(maxBytes));
    node->AddApplication(s);
    s->SetStartTime(start);
    s->SetStopTime(stop);
    return s;
}

uint64_t
TotalDrops(const IbFabric& f)
{
    uint64_t n = 0;
    for (auto& p : f.AllPorts())
    {
        for (int r = 0; r <= static_cast<int>(IbDropReason::LinkDown); ++r)
        {
            n += p->GetDropCount(static_cast<IbDropReason>(r));
        }
    }
    return n;
}

Ptr<IbPacketSink>
AddSink(Ptr<Node> node)
{
    Ptr<IbPacketSink> s = CreateObject<IbPacketSink>();
    node->AddApplication(s);
    s->SetStartTime(Seconds(0));
    return s;
}

} // namespace

TEST(IbLink, PortsStayInitWithLidZeroWithoutSubnetManager)
{
    IbFabricHelper h;
    IbFabric f = h.Build(MakeTwoHostsOneSwitch());
    Simulator::Stop(MicroSeconds(50));
    Simulator::Run();
    for (auto& p : f.AllPorts())
    {
        EXPECT_EQ(p->GetPortState(), IbPortState::Init);
        EXPECT_EQ(p->GetPhysState(), IbPhysState::LinkUp);
        EXPECT_EQ(p->GetLid(), 0);
    }
    // No data passes a port that is not Active.
    Ptr<Packet> pkt = Create<Packet>(64);
    EXPECT_FALSE(f.HostPort(0)->SendIb(pkt, 2, 0));
    EXPECT_EQ(f.HostPort(0)->GetCounters().portXmitDiscards, 1);
    Simulator::Destroy();
}

TEST(IbLink, TwoHostsThroughSwitchDeliverEverything)
{
    IbFabricHelper h;
    IbFabric f = h.Build(MakeTwoHostsOneSwitch());
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    Ptr<Node> a = f.hosts.Get(0);
    Ptr<Node> b = f.hosts.Get(1);
    auto src = AddSource(a, subnet.GetLid(b), MicroSeconds(5), Seconds(1), 100 * 4096);
    auto sink = AddSink(b);
    Simulator::Stop(MicroSeconds(200));
    Simulator::Run();
    EXPECT_EQ(src->GetPacketsSent(), 100u);
    EXPECT_EQ(sink->GetTotalPackets(), 100u);
    for (auto& p : f.AllPorts())
    {
        EXPECT_EQ(p->GetPortState(), IbPortState::Active);
        EXPECT_EQ(p->GetCounters().portRcvErrors, 0);
        EXPECT_EQ(p->GetCounters().portXmitDiscards, 0);
    }
    // Every packet crossed two cables: CA -> switch -> CA.
    EXPECT_EQ(f.HostPort(0)->GetCounters().portXmitPkts, 100u);
    EXPECT_EQ(f.HostPort(1)->GetCounters().portRcvPkts, 100u);
    EXPECT_EQ(subnet.GetRouteHops(subnet.GetLid(a), subnet.GetLid(b)), 2);
    EXPECT_EQ(TotalDrops(f), 0u);
    Simulator::Destroy();
}

// 8-to-1 incast over 4x HDR: lossless, buffers within capacity, bottleneck saturated.
TEST(IbLink, IncastEightToOneIsLosslessAndSaturatesTheBottleneck)
{
    IbFabricHelper h;
    h.SetDefaultRate("4xHDR");
    IbFabric f = h.Build(MakeStar(9));
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    Ptr<Node> dst = f.hosts.Get(8);
    const uint16_t dlid = subnet.GetLid(dst);
    std::vector<Ptr<IbPacketSource>> sources;
    for (int i = 0; i < 8; ++i)
    {
        sources.push_back(AddSource(f.hosts.Get(i), dlid, MicroSeconds(5), MicroSeconds(205)));
    }
    auto sink = AddSink(dst);
    Simulator::Stop(MicroSeconds(400));
    Simulator::Run();

    uint64_t sent = 0;
    for (auto& s : sources)
    {
        sent += s->GetPacketsSent();
        EXPECT_GT(s->GetPacketsSent(), 0u);
    }
    // Every byte sent arrived: credit flow control never lets a buffer overflow.
    EXPECT_EQ(sink->GetTotalPackets(), sent);
    EXPECT_EQ(TotalDrops(f), 0u);
    for (auto& p : f.AllPorts())
    {
        EXPECT_LE(p->GetMaxReceiveBufferUsed(0), p->GetReceiveBufferBlocks());
        EXPECT_EQ(p->GetCounters().excessiveBufferOverrunErrors, 0);
    }
    // The bottleneck (switch -> destination) carries data at its effective rate: wire bytes of
    // data packets plus delimiters and flow-control packets vs. 200 Gb/s, in steady state.
    Ptr<IbNetDevice> bottleneck = f.HostPort(8)->GetPeer();
    const double rate = bottleneck->GetActiveRate().DataRate();
    EXPECT_DOUBLE_EQ(rate, 200e9);
    const Time from = MicroSeconds(50);
    const Time to = MicroSeconds(200);
    const double bytes = sink->GetWireBytesBetween(from, to);
    const double packets = bytes / 4126.0;
    const double wireBits = (bytes + packets * 2) * 8; // + delimiters
    const double utilisation = wireBits / (rate * (to - from).GetSeconds());
    RecordProperty("bottleneck_utilisation", std::to_string(utilisation));
    std::cout << "incast bottleneck utilisation " << utilisation << std::endl;
    EXPECT_GE(utilisation, 0.98);
    // Packets are binned by tail arrival, so the window may hold up to one packet more.
    EXPECT_LE(utilisation, 1.0 + 4128.0 * 8 / (rate * (to - from).GetSeconds()));
    // The senders were throttled by credit, not by loss: each waited for credit.
    Ptr<IbNetDevice> upstream = f.HostPort(0);
    EXPECT_GT(upstream->GetCreditStallTime(0), MicroSeconds(10));
    Simulator::Destroy();
}

namespace
{
/// Victim throughput (Gb/s) from h8 to h10 across a dumbbell whose right switch also feeds a
/// hot spot h9 that h0..h7 send to (when `hotSpot`).
double
VictimThroughput(bool hotSpot, uint64_t* drops)
{
    IbFabricHelper h;
    IbFabric f = h.Build(MakeDumbbell(9, 2));
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    Ptr<Node> hot = f.hosts.Get(9);
    Ptr<Node> victimDst = f.hosts.Get(10);
    if (hotSpot)
    {
        for (int i = 0; i < 8; ++i)
        {
            AddSource(f.hosts.Get(i), subnet.GetLid(hot), MicroSeconds(5), MicroSeconds(305));
        }
        AddSink(hot);
    }
    auto vs = AddSource(f.hosts.Get(8), subnet.GetLid(victimDst), MicroSeconds(5), MicroSeconds(305));
    auto sink = AddSink(victimDst);
    Simulator::Stop(MicroSeconds(400));
    Simulator::Run();
    double bytes = sink->GetWireBytesBetween(MicroSeconds(100), MicroSeconds(300));
    *drops = TotalDrops(f);
    Simulator::Destroy();
    return bytes * 8 / 200e-6 / 1e9;
}
} // namespace

// Congestion spreading: a flow to an idle destination loses most of its throughput because it
// shares an inter-switch link (and the input buffer behind it) with traffic to a hot spot.
TEST(IbLink, CreditFlowControlSpreadsCongestionToAVictimFlow)
{
    uint64_t dropsAlone = 0;
    uint64_t dropsHot = 0;
    double alone = VictimThroughput(false, &dropsAlone);
    double withHotSpot = VictimThroughput(true, &dropsHot);
    std::cout << "victim flow alone " << alone << " Gb/s, beside an 8-to-1 hot spot "
              << withHotSpot << " Gb/s" << std::endl;
    RecordProperty("victim_alone_gbps", std::to_string(alone));
    RecordProperty("victim_with_hotspot_gbps", std::to_string(withHotSpot));
    EXPECT_EQ(dropsAlone, 0u);
    EXPECT_EQ(dropsHot, 0u);
    // Alone it runs at the data rate less header overhead.
    EXPECT_GT(alone, 190.0);
    // Beside the hot spot, head-of-line blocking in the shared input buffer holds it near the
    // 1/9 share that round-robin arbitration gives it of a link draining at the hot spot's rate.
    EXPECT_LT(withHotSpot, 0.5 * alone);
    EXPECT_GT(withHotSpot, 0.05 * alone);
}
