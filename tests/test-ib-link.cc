// InfiniBand link layer: port states, credits, incast, congestion spreading, bad input.
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/ib/ib-traffic-run.h"
#include "models/ib/ib-switch.h"
#include "helpers/formats/topology.h"
#include "models/ib/ib-channel.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-net-device.h"
#include "helpers/ib/ib-packet-source.h"
#include "models/ib/ib-switch.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/string.h"
#include "ns3/double.h"
#include "ns3/error-model.h"
#include "ns3/pointer.h"
#include "ns3/string.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

using namespace ns3;

namespace
{

/// A fabric with its static subnet and the sink traffic runs into.
struct SubnetRun
{
    IbFabric fabric;
    IbStaticSubnetHelper subnet;
    Ptr<IbPacketSink> sink;
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

/// A star of three hosts with a static subnet: h0 and h1 send greedily to h2 from 5 us until
/// `stop`; the sink is h2's.
SubnetRun
TwoSourcesIntoOneSink(Time stop)
{
    SubnetRun r;
    r.fabric = IbFabricHelper().Build(MakeStar(3));
    r.subnet.Configure(r.fabric.nodes);
    const uint16_t dst = r.subnet.GetLid(r.fabric.hosts.Get(2));
    AddSource(r.fabric.hosts.Get(0), dst, MicroSeconds(5), stop);
    AddSource(r.fabric.hosts.Get(1), dst, MicroSeconds(5), stop);
    r.sink = AddSink(r.fabric.hosts.Get(2));
    return r;
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

// IbFabric::HostPort(i) is host i's port in topology order, whatever order the topology lists
// hosts and switches in (the fabric keeps the host indices instead of recomputing them).
TEST(IbLink, HostPortFollowsTheTopologysHostOrder)
{
    Topology t;
    t.name = "switch-first";
    const uint32_t s1 = t.AddNode("s1", TopoNodeKind::Switch, 3);
    const uint32_t hA = t.AddNode("ha", TopoNodeKind::Host, 1);
    const uint32_t s2 = t.AddNode("s2", TopoNodeKind::Switch, 3);
    const uint32_t hB = t.AddNode("hb", TopoNodeKind::Host, 1);
    const uint32_t hC = t.AddNode("hc", TopoNodeKind::Host, 1);
    t.AddLink(hA, 1, s1, 1);
    t.AddLink(s1, 2, s2, 1);
    t.AddLink(hB, 1, s2, 2);
    t.AddLink(hC, 1, s1, 3);
    IbFabric f = IbFabricHelper().Build(t);
    const std::vector<uint32_t> hosts = t.Hosts();
    ASSERT_EQ(hosts, (std::vector<uint32_t>{hA, hB, hC}));
    ASSERT_EQ(f.hosts.GetN(), 3u);
    for (uint32_t i = 0; i < hosts.size(); ++i)
    {
        EXPECT_EQ(f.HostPort(i), f.Port(hosts[i], 1)) << "host " << i;
        EXPECT_EQ(f.HostPort(i)->GetNode(), f.hosts.Get(i)) << "host " << i;
    }
    EXPECT_EQ(f.HostPort(3), nullptr);
    Simulator::Destroy();
}

namespace
{
/// Packets h0 sends to h1 through one switch, as h1's node's protocol handler and (if `withSink`)
/// an IbPacketSink at h1 see them.
std::pair<uint64_t, uint64_t>
NodeAndSinkDeliveries(bool withSink)
{
    IbFabric f = IbFabricHelper().Build(MakeTwoHostsOneSwitch());
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    Ptr<Node> a = f.hosts.Get(0);
    Ptr<Node> b = f.hosts.Get(1);
    uint64_t atNode = 0;
    b->RegisterProtocolHandler(
        Node::ProtocolHandler([&atNode](Ptr<NetDevice>, Ptr<const Packet>, uint16_t,
                                        const Address&, const Address&,
                                        NetDevice::PacketType) { atNode++; }),
        0, f.HostPort(1));
    AddSource(a, subnet.GetLid(b), MicroSeconds(5), Seconds(1), 20 * 4096);
    Ptr<IbPacketSink> sink = withSink ? AddSink(b) : nullptr;
    Simulator::Stop(MicroSeconds(100));
    Simulator::Run();
    const uint64_t atSink = sink ? sink->GetTotalPackets() : 0;
    Simulator::Destroy();
    return {atNode, atSink};
}
} // namespace

// The generic NetDevice receive path (the node's protocol handlers) gets a CA port's packets
// when nothing InfiniBand-specific consumes them; once a consumer owns the data path (a sink,
// an RDMA engine), it alone does, and no ns-3 Packet is built for the node.
TEST(IbLink, TheNodeReceivesOnlyWhatNoInfiniBandConsumerTakes)
{
    const auto [nodeAlone, sinkAlone] = NodeAndSinkDeliveries(false);
    EXPECT_EQ(nodeAlone, 20u);
    EXPECT_EQ(sinkAlone, 0u);
    const auto [nodeWithSink, sinkWithSink] = NodeAndSinkDeliveries(true);
    EXPECT_EQ(nodeWithSink, 0u);
    EXPECT_EQ(sinkWithSink, 20u);
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
    // data packets plus their delimiters vs. 200 Gb/s, in steady state (flow-control packets
    // on the same wire are not counted, so this is a lower bound).
    Ptr<IbNetDevice> bottleneck = f.HostPort(8)->GetPeer();
    const double rate = bottleneck->GetActiveRate().DataRate();
    EXPECT_DOUBLE_EQ(rate, 200e9);
    const Time from = MicroSeconds(50);
    const Time to = MicroSeconds(200);
    const double bytes = sink->GetWireBytesBetween(from, to);
    const double packets = bytes / 4130.0;
    const double wireBits = (bytes + packets * 2) * 8; // + start/end delimiters
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

// Congestion spreading (the effect credit flow control is known for): h0 and h1 share the
// inter-switch link of a dumbbell; h0 sends to a hot spot that seven local senders also load, so
// the hot spot holds h0 to 1/8 of its link. h1 sends to an idle host. Max-min fairness would
// give h1 the rest of the shared link (175 Gb/s); head-of-line blocking in the input buffer it
// shares with h0's throttled packets holds it near h0's rate instead.
TEST(IbLink, CreditFlowControlSpreadsCongestionToAVictimFlow)
{
    IbTrafficSpec spec;
    spec.topology = "dumbbell:left=2,right=9";
    spec.pattern = IbTrafficSpec::Pattern::Incast;
    spec.duration = MicroSeconds(200);
    spec.senders = 0; // the victim alone
    IbTrafficStats alone = RunIbTraffic(spec);
    spec.senders = 8;
    IbTrafficStats hot = RunIbTraffic(spec);
    ASSERT_EQ(hot.flows.size(), 9u);
    const double h0 = hot.flows.front().gbps;
    const double fair = 200.0 - h0;
    std::cout << "victim alone " << alone.victimGbps << " Gb/s; beside the hot spot "
              << hot.victimGbps << " Gb/s (max-min fair share " << fair << ", h0 " << h0
              << ", hot spot " << hot.hotGbps << ")" << std::endl;
    RecordProperty("victim_alone_gbps", std::to_string(alone.victimGbps));
    RecordProperty("victim_with_hotspot_gbps", std::to_string(hot.victimGbps));
    EXPECT_EQ(alone.drops + hot.drops, 0u);
    EXPECT_EQ(hot.packetsReceived, hot.packetsSent);
    // Every transmitter wake-up is accounted for once by what it sent; under this load some
    // send data queued behind a packet, and some a flow-control packet first (the data then
    // waits for the next).
    EXPECT_EQ(hot.wakeData + hot.wakeFlowControl + hot.wakeManagement + hot.wakeNothing,
              hot.wakeEvents);
    EXPECT_GT(hot.wakeData, 0u);
    EXPECT_GT(hot.wakeFlowControl, 0u);
    EXPECT_EQ(hot.wakeManagement, 0u); // a static subnet: no SMPs
    EXPECT_GT(alone.victimGbps, 0.98 * 200);       // a free path runs at the data rate
    EXPECT_GT(hot.hotGbps, 0.98 * 200);            // the hot spot's link stays saturated
    EXPECT_NEAR(h0, 200.0 / 8, 0.1 * 200.0 / 8);   // fair share at the hot spot
    EXPECT_LT(hot.victimGbps, 0.5 * fair);         // the victim loses most of its fair share
    EXPECT_GT(hot.victimGbps, 0.05 * fair);
}

namespace
{
/// A well-formed LRH + BTH + payload packet with correct ICRC and VCRC, addressed to `dlid`.
std::vector<uint8_t>
GoodPacket(uint16_t dlid, uint16_t slid, uint32_t payload)
{
    std::vector<uint8_t> b(IbLrhHeader::kSize + 12 + payload + kIbIcrcBytes + kIbVcrcBytes, 0);
    IbLrhHeader lrh;
    lrh.SetDlid(dlid);
    lrh.SetSlid(slid);
    lrh.SetLnh(IbLnh::IbaLocal);
    lrh.SetPktLenWords(static_cast<uint16_t>((b.size() - kIbVcrcBytes) / 4));
    lrh.WriteTo(b.data());
    b[8] = 0x64; // BTH opcode: UD SEND Only
    b[10] = 0xFF;
    b[11] = 0xFF;
    IbFillCrcs(b.data(), b.size());
    return b;
}

struct BadInputFixture
{
    IbFabric f;
    IbStaticSubnetHelper subnet;
    Ptr<IbNetDevice> ca;
    Ptr<IbPacketSink> sink;
    BadInputFixture()
    {
        IbFabricHelper h;
        f = h.Build(MakeTwoHostsOneSwitch());
        subnet.Configure(f.nodes);
        ca = f.HostPort(1);
        sink = AddSink(f.hosts.Get(1));
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run(); // ports Active
    }
    ~BadInputFixture() { Simulator::Destroy(); }
};
} // namespace

// Corrupt, truncated or malformed packets from outside the model are dropped and counted as
// IBA vol. 1 §7.8 and §16.1.3.5 say (PortRcvErrors, SymbolErrorCounter), never crash.
TEST(IbLink, BadPacketsAreDroppedAndCounted)
{
    BadInputFixture fx;
    const uint16_t lid = fx.ca->GetLid();
    ASSERT_NE(lid, 0);

    auto good = GoodPacket(lid, 1, 64);
    fx.ca->InjectReceivedBytes(good.data(), good.size());
    EXPECT_EQ(fx.sink->GetTotalPackets(), 1u);
    EXPECT_EQ(fx.ca->GetCounters().portRcvErrors, 0);

    auto badVcrc = good;
    badVcrc.back() ^= 0x01;
    fx.ca->InjectReceivedBytes(badVcrc.data(), badVcrc.size());
    EXPECT_EQ(fx.ca->GetDropCount(IbDropReason::BadVcrc), 1u);
    EXPECT_EQ(fx.ca->GetCounters().symbolErrorCounter, 1);

    auto badLen = good;
    badLen[5] ^= 0x02; // PktLen no longer matches the bytes
    IbFillCrcs(badLen.data(), badLen.size());
    fx.ca->InjectReceivedBytes(badLen.data(), badLen.size());
    EXPECT_EQ(fx.ca->GetDropCount(IbDropReason::Malformed), 1u);

    auto truncated = good;
    truncated.resize(7);
    fx.ca->InjectReceivedBytes(truncated.data(), truncated.size());
    fx.ca->InjectReceivedBytes(nullptr, 0);
    EXPECT_EQ(fx.ca->GetDropCount(IbDropReason::Malformed), 3u);

    auto badLver = good;
    badLver[0] |= 0x01;
    IbFillCrcs(badLver.data(), badLver.size());
    fx.ca->InjectReceivedBytes(badLver.data(), badLver.size());
    EXPECT_EQ(fx.ca->GetDropCount(IbDropReason::Malformed), 4u);

    auto raw = good;
    raw[1] = (raw[1] & 0xFC) | 0x00; // LNH 0: raw packet, not taken by this CA
    raw.resize(raw.size() - kIbIcrcBytes);
    IbLrhHeader lrh;
    lrh.ReadFrom(raw.data());
    lrh.SetPktLenWords(static_cast<uint16_t>((raw.size() - kIbVcrcBytes) / 4));
    lrh.WriteTo(raw.data());
    IbFillCrcs(raw.data(), raw.size());
    fx.ca->InjectReceivedBytes(raw.data(), raw.size());
    EXPECT_EQ(fx.ca->GetDropCount(IbDropReason::UnsupportedLnh), 1u);

    auto badIcrc = good;
    badIcrc[20] ^= 0xFF; // payload corrupted, VCRC recomputed as a switch would
    IbStoreVcrc(badIcrc.data() + badIcrc.size() - 2,
                IbComputeVcrc(badIcrc.data(), badIcrc.size() - 2));
    fx.ca->InjectReceivedBytes(badIcrc.data(), badIcrc.size());
    EXPECT_EQ(fx.ca->GetDropCount(IbDropReason::BadIcrc), 1u);

    auto otherLid = GoodPacket(lid + 7, 1, 64);
    fx.ca->InjectReceivedBytes(otherLid.data(), otherLid.size());
    EXPECT_EQ(fx.ca->GetDropCount(IbDropReason::DlidMismatch), 1u);

    // Every one of them counted in PortRcvErrors; only the good one reached the consumer.
    EXPECT_EQ(fx.ca->GetCounters().portRcvErrors, 8);
    EXPECT_EQ(fx.sink->GetTotalPackets(), 1u);
    // Random garbage of every length never crashes and never reaches the consumer.
    uint32_t state = 12345;
    for (int len = 0; len < 300; ++len)
    {
        std::vector<uint8_t> junk(len);
        for (auto& byte : junk)
        {
            state = state * 1103515245 + 12345;
            byte = static_cast<uint8_t>(state >> 16);
        }
        fx.ca->InjectReceivedBytes(junk.data(), junk.size());
    }
    EXPECT_EQ(fx.sink->GetTotalPackets(), 1u);
}

// A corrupted packet crossing a switch: the switch checks the VCRC and drops it there.
TEST(IbLink, SwitchDropsBadVcrcAndRelaysUnroutable)
{
    BadInputFixture fx;
    Ptr<IbNetDevice> swPort = fx.f.HostPort(0)->GetPeer();
    auto bad = GoodPacket(fx.ca->GetLid(), 1, 128);
    bad[30] ^= 0x10;
    swPort->InjectReceivedBytes(bad.data(), bad.size());
    EXPECT_EQ(swPort->GetCounters().portRcvErrors, 1);
    // A good packet to a LID no LFT entry covers: PortRcvSwitchRelayErrors.
    auto unroutable = GoodPacket(999, 1, 128);
    swPort->InjectReceivedBytes(unroutable.data(), unroutable.size());
    EXPECT_EQ(swPort->GetCounters().portRcvSwitchRelayErrors, 1);
    // A good packet to the CA goes through.
    auto good = GoodPacket(fx.ca->GetLid(), 1, 128);
    swPort->InjectReceivedBytes(good.data(), good.size());
    Simulator::Stop(MicroSeconds(5));
    Simulator::Run();
    EXPECT_EQ(fx.sink->GetTotalPackets(), 1u);
    EXPECT_EQ(swPort->GetReceiveBufferUsed(0), 0u);
}

// The credit loop: FCTBS and FCCL advance, and a sender stalled for credit resumes exactly when
// the flow-control packet that returns it arrives.
TEST(IbLink, StalledSenderResumesExactlyWhenCreditReturns)
{
    Config::SetDefault("ns3::IbNetDevice::VlBufferBytes", UintegerValue(8 * 4160));
    IbFabricHelper h;
    IbFabric f = h.Build(MakeStar(3));
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    // Two senders into one destination: each sender's switch input buffer fills.
    for (int i = 0; i < 2; ++i)
    {
        AddSource(f.hosts.Get(i), subnet.GetLid(f.hosts.Get(2)), MicroSeconds(5), MicroSeconds(50));
    }
    AddSink(f.hosts.Get(2));
    Ptr<IbNetDevice> sender = f.HostPort(0);
    std::vector<std::pair<Time, uint16_t>> fcRx;       // (time, FCCL)
    std::vector<std::pair<Time, uint32_t>> txAfterStall; // transmissions that end a stall
    std::vector<Time> stallEnds;
    std::vector<uint16_t> fctbs;
    sender->TraceConnectWithoutContext(
        "FlowControlRx",
        MakeCallback(+[](std::vector<std::pair<Time, uint16_t>>* v, uint8_t op, uint8_t vl,
                         uint16_t, uint16_t fccl) { v->emplace_back(Simulator::Now(), fccl); })
            .Bind(&fcRx));
    sender->TraceConnectWithoutContext(
        "CreditStall",
        MakeCallback(+[](std::vector<Time>* v, uint8_t, Time) { v->push_back(Simulator::Now()); })
            .Bind(&stallEnds));
    sender->TraceConnectWithoutContext(
        "FlowControlTx",
        MakeCallback(+[](std::vector<uint16_t>* v, uint8_t, uint8_t, uint16_t fctbs, uint16_t) {
            v->push_back(fctbs);
        }).Bind(&fctbs));
    Simulator::Stop(MicroSeconds(60));
    Simulator::Run();
    ASSERT_GT(stallEnds.size(), 10u);
    // Each stall ends at the instant a flow-control packet arrived (same simulated time).
    size_t matched = 0;
    for (Time t : stallEnds)
    {
        for (auto& [at, fccl] : fcRx)
        {
            if (at == t)
            {
                matched++;
                break;
            }
        }
    }
    EXPECT_EQ(matched, stallEnds.size());
    // FCCL advances (mod 4096) over the run, FCTBS too.
    uint32_t advances = 0;
    for (size_t i = 1; i < fcRx.size(); ++i)
    {
        advances += fcRx[i].second != fcRx[i - 1].second;
    }
    EXPECT_GT(advances, 10u);
    ASSERT_GT(fctbs.size(), 2u);
    EXPECT_NE(fctbs.front(), fctbs.back());
    Simulator::Destroy();
    Config::Reset();
}

// Bit errors on a link: corrupted packets are dropped at the VCRC check and counted; the blocks
// they had been charged are repaired by the next flow-control packet (ABR := FCTBS), so no
// credit leaks and the link keeps running at full credit.
TEST(IbLink, CorruptedPacketsAreCountedAndTheirCreditRepaired)
{
    IbFabricHelper h;
    IbFabric f = h.Build(MakeTwoHostsOneSwitch());
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    Ptr<IbNetDevice> swIn = f.HostPort(0)->GetPeer();
    Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
    em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
    em->SetAttribute("ErrorRate", DoubleValue(0.05));
    em->AssignStreams(7);
    swIn->SetAttribute("ReceiveErrorModel", PointerValue(em));
    auto src = AddSource(f.hosts.Get(0), subnet.GetLid(f.hosts.Get(1)), MicroSeconds(5),
                         MicroSeconds(105));
    auto sink = AddSink(f.hosts.Get(1));
    Simulator::Stop(MicroSeconds(300));
    Simulator::Run();
    const uint64_t bad = swIn->GetDropCount(IbDropReason::BadVcrc);
    EXPECT_GT(bad, 10u);
    EXPECT_EQ(swIn->GetCounters().portRcvErrors, bad);
    EXPECT_EQ(sink->GetTotalPackets() + bad, src->GetPacketsSent());
    // Credit fully restored after the traffic: the sender may fill the whole buffer again.
    Ptr<IbNetDevice> sender = f.HostPort(0);
    EXPECT_EQ(sender->GetCreditsAvailable(0), swIn->GetReceiveBufferBlocks());
    // And throughput stayed near the lossless rate minus the corrupted share.
    const double gbps = sink->GetWireBytesBetween(MicroSeconds(30), MicroSeconds(100)) * 8 /
                        70e-6 / 1e9;
    EXPECT_GT(gbps, 0.9 * 200 * (1 - 0.05) - 10);
    Simulator::Destroy();
}

namespace
{
/// Share of VL1 traffic (from h1, SL1) at h2 when h0 (SL0 -> VL0) and h1 (SL1 -> VL1) both
/// send greedily through one switch output arbitrated by the given tables.
double
Vl1Share(std::vector<IbVlArbEntry> high, std::vector<IbVlArbEntry> low, uint8_t limit)
{
    IbFabricHelper h;
    IbFabric f = h.Build(MakeStar(3));
    IbStaticSubnetHelper subnet;
    subnet.SetOperationalVls(2);
    subnet.Configure(f.nodes);
    std::array<uint8_t, 16> slToVl{};
    slToVl[1] = 1;
    f.HostPort(1)->SetSlToVl(slToVl);
    f.HostPort(0)->SetSlToVl(slToVl);
    Ptr<IbNetDevice> out = f.HostPort(2)->GetPeer();
    out->GetVlArbiter().SetTables(high, low, limit);
    const uint16_t dst = subnet.GetLid(f.hosts.Get(2));
    AddSource(f.hosts.Get(0), dst, MicroSeconds(5), MicroSeconds(205));
    auto s1 = AddSource(f.hosts.Get(1), dst, MicroSeconds(5), MicroSeconds(205));
    s1->SetAttribute("ServiceLevel", UintegerValue(1));
    auto sink = AddSink(f.hosts.Get(2));
    Simulator::Stop(MicroSeconds(210));
    Simulator::Run();
    const Time from = MicroSeconds(50);
    const Time to = MicroSeconds(200);
    double vl1 = sink->GetWireBytesBetween(from, to, subnet.GetLid(f.hosts.Get(1)));
    double all = sink->GetWireBytesBetween(from, to);
    EXPECT_EQ(TotalDrops(f), 0u);
    Simulator::Destroy();
    return vl1 / all;
}
} // namespace

namespace
{
/// What a sink at h2 records of two greedy sources (h0, h1) through one switch.
struct SinkRecord
{
    std::vector<std::pair<Time, uint64_t>> series;
    std::map<uint16_t, std::pair<uint64_t, uint64_t>> perSource; // packets, wire bytes
    std::map<uint16_t, uint64_t> perSourceSeriesBytes; // without per-source totals only
    uint64_t totalPackets = 0;
    uint64_t totalBytes = 0;
};

SinkRecord
RecordTwoSourcesAtASink(bool perSourceSeries, bool perSourceTotals = true)
{
    SubnetRun run = TwoSourcesIntoOneSink(MicroSeconds(40));
    Ptr<IbPacketSink> sink = run.sink;
    sink->SetAttribute("PerSourceSeries", BooleanValue(perSourceSeries));
    sink->SetAttribute("PerSourceTotals", BooleanValue(perSourceTotals));
    Simulator::Stop(MicroSeconds(45));
    Simulator::Run();
    SinkRecord r;
    r.series = sink->GetSeries();
    r.totalPackets = sink->GetTotalPackets();
    r.totalBytes = sink->GetTotalWireBytes();
    if (!perSourceTotals)
    {
        if (perSourceSeries)
        {
            for (uint32_t h = 0; h < 2; ++h)
            {
                const uint16_t lid = run.subnet.GetLid(run.fabric.hosts.Get(h));
                uint64_t bytes = 0;
                for (const auto& [start, binBytes] : sink->GetSeries(lid))
                {
                    bytes += binBytes;
                }
                r.perSourceSeriesBytes[lid] = bytes;
            }
        }
        Simulator::Destroy();
        return r;
    }
    uint64_t packets = 0;
    uint64_t bytes = 0;
    for (const auto& [lid, flow] : sink->GetFlows())
    {
        r.perSource[lid] = {flow.packets, flow.wireBytes};
        packets += flow.packets;
        bytes += flow.wireBytes;
    }
    // The sink keeps its totals as it counts (a drain loop asks for them after every step):
    // they must be what its flows add up to, and its series too.
    EXPECT_EQ(sink->GetTotalPackets(), packets);
    EXPECT_EQ(sink->GetTotalWireBytes(), bytes);
    uint64_t seriesBytes = 0;
    for (const auto& [start, binBytes] : r.series)
    {
        seriesBytes += binBytes;
    }
    EXPECT_EQ(seriesBytes, bytes);
    if (perSourceSeries)
    {
        // The per-source series add up to the total one.
        std::vector<uint64_t> sum(r.series.size(), 0);
        for (const auto& [lid, flow] : sink->GetFlows())
        {
            const auto one = sink->GetSeries(lid);
            for (size_t i = 0; i < one.size() && i < sum.size(); ++i)
            {
                sum[i] += one[i].second;
            }
        }
        for (size_t i = 0; i < sum.size(); ++i)
        {
            EXPECT_EQ(sum[i], r.series[i].second) << "bin " << i;
        }
    }
    Simulator::Destroy();
    return r;
}
} // namespace

// IbPacketSink's PerSourceSeries=false (ib-fat-tree's all-to-all: hosts squared series) drops
// only the per-source series: the total series and every source's totals are the same.
TEST(IbLink, ASinkWithoutPerSourceSeriesKeepsTheSameTotals)
{
    const SinkRecord with = RecordTwoSourcesAtASink(true);
    const SinkRecord without = RecordTwoSourcesAtASink(false);
    ASSERT_EQ(with.perSource.size(), 2u);
    EXPECT_GT(with.perSource.begin()->second.first, 100u);
    EXPECT_EQ(with.series, without.series);
    EXPECT_EQ(with.perSource, without.perSource);
}

// PerSourceTotals=false (ib-fat-tree: no per-source records, a cache miss per packet at scale)
// drops only GetFlows' records: the sink's totals, its series and the per-source series are the
// same, and asking for the records that were not kept is an error, not an empty answer.
TEST(IbLink, ASinkWithoutPerSourceTotalsKeepsTheSameSeriesAndTotals)
{
    const SinkRecord with = RecordTwoSourcesAtASink(true);
    const SinkRecord without = RecordTwoSourcesAtASink(true, false);
    ASSERT_EQ(with.perSource.size(), 2u);
    EXPECT_EQ(with.series, without.series);
    EXPECT_EQ(with.totalPackets, without.totalPackets);
    EXPECT_EQ(with.totalBytes, without.totalBytes);
    ASSERT_EQ(without.perSourceSeriesBytes.size(), 2u);
    for (const auto& [lid, packetsAndBytes] : with.perSource)
    {
        ASSERT_EQ(without.perSourceSeriesBytes.count(lid), 1u) << "LID " << lid;
        EXPECT_EQ(without.perSourceSeriesBytes.at(lid), packetsAndBytes.second) << "LID " << lid;
    }
    EXPECT_DEATH(
        {
            Ptr<IbPacketSink> sink = CreateObject<IbPacketSink>();
            sink->SetAttribute("PerSourceTotals", BooleanValue(false));
            sink->GetFlows();
        },
        "PerSourceTotals is false");
}

// VL arbitration, IBA vol. 1 §7.6.9: weights split the output; the high-priority table wins
// while LimitOfHighPriority allows.
TEST(IbLink, VlArbitrationWeightsAndPriority)
{
    double equal = Vl1Share({}, {{0, 64}, {1, 64}}, 255);
    double oneToThree = Vl1Share({}, {{0, 192}, {1, 64}}, 255);
    double highUnlimited = Vl1Share({{1, 64}}, {{0, 64}}, 255);
    double highOnePacket = Vl1Share({{1, 64}}, {{0, 64}}, 0);
    std::cout << "VL1 share: equal " << equal << ", 1:3 " << oneToThree << ", high "
              << highUnlimited << ", high limited to one packet " << highOnePacket << std::endl;
    EXPECT_NEAR(equal, 0.5, 0.02);
    EXPECT_NEAR(oneToThree, 0.25, 0.02);
    EXPECT_GT(highUnlimited, 0.97);
    EXPECT_NEAR(highOnePacket, 0.5, 0.02);
}

// Port state machine (IBA vol. 1 §7.2): only Init->Armed->Active by request; a link that goes
// down drops to Down, counts LinkDowned, and retrains to Init (not Active) when it comes back.
TEST(IbLink, PortStateMachineAndLinkDown)
{
    IbFabricHelper h;
    IbFabric f = h.Build(MakeTwoHostsOneSwitch());
    Ptr<IbNetDevice> ca = f.HostPort(0);
    EXPECT_EQ(ca->GetPortState(), IbPortState::Down); // not trained yet
    Simulator::Stop(MicroSeconds(5));
    Simulator::Run();
    EXPECT_EQ(ca->GetPortState(), IbPortState::Init);
    EXPECT_FALSE(ca->SetPortState(IbPortState::Active)); // Init -> Active is not allowed
    EXPECT_EQ(ca->GetPortState(), IbPortState::Init);
    EXPECT_TRUE(ca->SetPortState(IbPortState::Armed));
    EXPECT_FALSE(ca->SetOperationalVls(2)); // not while Armed
    EXPECT_FALSE(ca->SetPortState(IbPortState::Armed));
    EXPECT_TRUE(ca->SetPortState(IbPortState::Active));
    EXPECT_EQ(ca->GetPortState(), IbPortState::Active);

    ca->SetPhysicalLinkDown();
    EXPECT_EQ(ca->GetPortState(), IbPortState::Down);
    EXPECT_EQ(ca->GetPeer()->GetPortState(), IbPortState::Down);
    EXPECT_EQ(ca->GetCounters().linkDownedCounter, 1);
    EXPECT_EQ(ca->GetPeer()->GetCounters().linkDownedCounter, 1);
    EXPECT_FALSE(ca->IsLinkUp());
    ca->SetPhysicalLinkUp();
    Simulator::Stop(MicroSeconds(5));
    Simulator::Run();
    EXPECT_TRUE(ca->IsLinkUp());
    EXPECT_EQ(ca->GetPortState(), IbPortState::Init);
    EXPECT_EQ(ca->GetPeer()->GetPortState(), IbPortState::Init);
    Simulator::Destroy();
}

// A link that fails under traffic: the packets queued for it are discarded and counted, the
// rest of the fabric keeps working, nothing crashes or hangs.
TEST(IbLink, LinkFailureUnderLoadDiscardsAndCounts)
{
    SubnetRun run = TwoSourcesIntoOneSink(MicroSeconds(100));
    IbFabric& f = run.fabric;
    IbStaticSubnetHelper& subnet = run.subnet;
    Ptr<IbPacketSink> sink = run.sink;
    Ptr<IbNetDevice> cut = f.HostPort(1);
    Simulator::Schedule(MicroSeconds(40), &IbNetDevice::SetPhysicalLinkDown, cut);
    Simulator::Stop(MicroSeconds(150));
    Simulator::Run();
    EXPECT_GT(sink->GetFlows().size(), 0u);
    EXPECT_GT(cut->GetCounters().portXmitDiscards, 10); // h1's queued packets
    EXPECT_EQ(cut->GetPeer()->GetDropCount(IbDropReason::BufferOverrun), 0u);
    // h0 kept sending after the cut: its traffic reached the sink until the end.
    auto it = sink->GetFlows().find(subnet.GetLid(f.hosts.Get(0)));
    ASSERT_NE(it, sink->GetFlows().end());
    EXPECT_GT(it->second.last, MicroSeconds(95));
    Simulator::Destroy();
}

namespace
{
/// One-way latency of a single packet h0 -> switch -> h1, measured at the sink.
Time
SinglePacketLatency(const std::string& mode, uint32_t payload, double lateCableMeters = 0)
{
    Config::SetDefault("ns3::IbSwitch::ForwardingMode", StringValue(mode));
    IbFabricHelper h;
    IbFabric f = h.Build(MakeTwoHostsOneSwitch());
    if (lateCableMeters > 0)
    {
        // Every cable made longer after both of its ports attached.
        for (const Ptr<IbChannel>& cable : f.cables)
        {
            cable->SetAttribute("Length", DoubleValue(lateCableMeters));
        }
    }
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    auto src = AddSource(f.hosts.Get(0), subnet.GetLid(f.hosts.Get(1)), MicroSeconds(5),
                         Seconds(1), payload);
    src->SetAttribute("PayloadBytes", UintegerValue(payload));
    auto sink = AddSink(f.hosts.Get(1));
    Simulator::Stop(MicroSeconds(20));
    Simulator::Run();
    Time t = sink->GetFlows().begin()->second.first - MicroSeconds(5);
    Simulator::Destroy();
    Config::Reset();
    return t;
}
} // namespace

// The timing of one packet through one switch, worked out by hand from the model's rules:
// a 4096-byte UD payload is 8 LRH + 12 BTH + 8 DETH + 4096 + 4 ICRC + 2 VCRC = 4130 bytes,
// 4132 on the wire with delimiters; at 4x HDR (50 Gb/s per lane, 4 lanes) that is 1033 lane
// columns of 160 ps = 165.28 ns. Cables are 2 m at 5 ns/m = 10 ns; the switch adds 100 ns.
TEST(IbLink, SinglePacketLatencyMatchesHandArithmetic)
{
    const Time wire = PicoSeconds(1033 * 160);
    const Time cable = NanoSeconds(10);
    const Time sw = NanoSeconds(100);
    // Store-and-forward: the whole packet in, the latency, the whole packet out.
    EXPECT_EQ(SinglePacketLatency("StoreAndForward", 4096), wire + cable + sw + wire + cable);
    // Cut-through: routing starts once LRH and start delimiter are in (9 bytes: 3 columns), the
    // output cannot finish before the input does, so the tail trails the head by one wire time.
    const Time head = PicoSeconds(3 * 160) + cable + sw;
    EXPECT_EQ(SinglePacketLatency("CutThrough", 4096), head + wire + cable);
}

// A port keeps its cable's delay and generation (IbNetDevice::SyncCable); a cable lengthened
// after both ports attached must delay every packet as one built that long.
TEST(IbLink, ACableLengthenedAfterAttachingDelaysPacketsByItsNewLength)
{
    const Time wire = PicoSeconds(1033 * 160);
    const Time cable = NanoSeconds(100); // 20 m at 5 ns/m
    const Time sw = NanoSeconds(100);
    EXPECT_EQ(SinglePacketLatency("StoreAndForward", 4096, 20.0), wire + cable + sw + wire + cable);
}

// A link flap under load on a long cable (1 km: packets are still on it when it comes back up,
// since training takes 1 us and the cable 5 us): packets on the cable are lost with the link,
// none of them disturbs the new link's credit accounting, and a greedy sender resumes.
TEST(IbLink, LinkFlapOnALongCableLeaksNoCreditAndTrafficResumes)
{
    Topology t = MakeTwoHostsOneSwitch();
    t.links[0].lengthMeters = 1000;
    IbFabricHelper h;
    IbFabric f = h.Build(t);
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    auto src = AddSource(f.hosts.Get(0), subnet.GetLid(f.hosts.Get(1)), MicroSeconds(5),
                         MicroSeconds(200));
    auto sink = AddSink(f.hosts.Get(1));
    Ptr<IbNetDevice> ca = f.HostPort(0);
    Simulator::Schedule(MicroSeconds(40), &IbNetDevice::SetPhysicalLinkDown, ca);
    Simulator::Schedule(MicroSeconds(41), &IbNetDevice::SetPhysicalLinkUp, ca);
    // Re-arm and activate the retrained ports, as a subnet manager's next sweep would.
    Ptr<IbNetDevice> peer = ca->GetPeer();
    Simulator::Schedule(MicroSeconds(50), [ca, peer]() {
        for (auto& p : {ca, peer})
        {
            p->SetPortState(IbPortState::Armed);
            p->SetPortState(IbPortState::Active);
        }
    });
    Simulator::Stop(MicroSeconds(300));
    Simulator::Run();
    EXPECT_EQ(ca->GetPortState(), IbPortState::Active);
    // Traffic resumed after the flap and ran to the end.
    auto it = sink->GetFlows().find(subnet.GetLid(f.hosts.Get(0)));
    ASSERT_NE(it, sink->GetFlows().end());
    EXPECT_GT(it->second.last, MicroSeconds(195));
    // At the same rate as before the flap (on 1 km the credit round trip, not the link, limits
    // it: 64 KiB of buffer per 10 us round trip is about 52 Gb/s).
    const double before = sink->GetWireBytesBetween(MicroSeconds(20), MicroSeconds(40)) * 8 / 20e-6;
    const double after = sink->GetWireBytesBetween(MicroSeconds(100), MicroSeconds(190)) * 8 / 90e-6;
    EXPECT_NEAR(after, before, 0.03 * before);
    EXPECT_LT(after, 60e9);
    // All credit is back once the traffic has drained: nothing stale was counted.
    EXPECT_EQ(ca->GetCreditsAvailable(0), ca->GetPeer()->GetReceiveBufferBlocks());
    EXPECT_EQ(ca->GetPeer()->GetReceiveBufferUsed(0), 0u);
    EXPECT_GT(ca->GetPeer()->GetDropCount(IbDropReason::LinkDown), 0u);
    EXPECT_EQ(ca->GetPeer()->GetCounters().portXmitDiscards, 0); // it transmitted nothing
    Simulator::Destroy();
}

// Before any subnet manager: ports are Init with LID 0, data cannot pass, but management
// packets on VL15 do (IBA vol. 1 §7.2): they are how a subnet manager will reach the ports.
TEST(IbLink, Vl15ManagementPassesWhilePortsAreInit)
{
    IbFabricHelper h;
    IbFabric f = h.Build(MakeTwoHostsOneSwitch());
    Ptr<IbNetDevice> ca = f.HostPort(0);
    Ptr<IbSwitch> sw = f.switches.Get(0)->GetObject<IbSwitch>();
    std::vector<std::pair<uint8_t, uint32_t>> got; // (arrival port, bytes)
    sw->SetManagementCallback(MakeCallback(
        +[](std::vector<std::pair<uint8_t, uint32_t>>* v, Ptr<IbNetDevice> in,
            const IbFrame& frame) { v->emplace_back(in->GetPortNumber(), frame.bytes); })
                                  .Bind(&got));
    Simulator::Stop(MicroSeconds(5));
    Simulator::Run();
    ASSERT_EQ(ca->GetPortState(), IbPortState::Init);
    EXPECT_FALSE(ca->SendIb(Create<Packet>(256), 1, 0));          // data: refused
    EXPECT_TRUE(ca->SendManagement(Create<Packet>(12 + 256), 0xFFFF)); // a 256-byte MAD
    Simulator::Stop(MicroSeconds(5));
    Simulator::Run();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].first, 1);                              // it came in on switch port 1
    EXPECT_EQ(got[0].second, 8u + 12 + 256 + 4 + 2);         // LRH BTH MAD ICRC VCRC
    EXPECT_EQ(ca->GetPeer()->GetCounters().portRcvPkts, 1u); // counted as received
    EXPECT_EQ(ca->GetFctbs(0), 0);                           // and no data credit was used
    Simulator::Destroy();
}

// SL-to-VL tables a subnet manager set stay in place when the switch gains ports later.
TEST(IbLink, SwitchSlToVlTablesSurviveAddingPorts)
{
    Ptr<IbSwitch> sw = CreateObject<IbSwitch>();
    for (int i = 0; i < 2; ++i)
    {
        sw->AddPort(CreateObject<IbNetDevice>());
    }
    std::array<uint8_t, 16> table{};
    table[3] = 0;
    table[5] = 0;
    sw->SetSlToVl(1, 2, table);
    sw->AddPort(CreateObject<IbNetDevice>());
    sw->GetPort(2)->SetOperationalVls(8);
    EXPECT_EQ(sw->MapSlToVl(1, 2, 5), 0); // the table set before the third port
    EXPECT_EQ(sw->MapSlToVl(3, 2, 5), 5); // an unset pair: SL 5 folds onto 8 VLs as VL 5
}

// A receive buffer smaller than a packet (VlBufferBytes below the packet's credit blocks) can
// never grant that packet credit: it is discarded at the port and counted (PortXmitDiscards,
// drop reason ExceedsPeerBuffer), instead of holding up its VL for ever; packets that fit pass.
TEST(IbLink, APacketLargerThanThePeersVlBufferIsDiscardedAndCountedNotStalled)
{
    Config::SetDefault("ns3::IbNetDevice::VlBufferBytes", UintegerValue(2048)); // 32 blocks
    IbFabricHelper h;
    IbFabric f = h.Build(MakeTwoHostsOneSwitch());
    IbStaticSubnetHelper subnet;
    subnet.Configure(f.nodes);
    Ptr<Node> a = f.hosts.Get(0);
    Ptr<Node> b = f.hosts.Get(1);
    // 4 KiB payloads (65 blocks with their headers) first, then 1 KiB ones (17 blocks).
    auto big = AddSource(a, subnet.GetLid(b), MicroSeconds(5), Seconds(1), 10 * 4096);
    auto small = AddSource(a, subnet.GetLid(b), MicroSeconds(6), Seconds(1), 50 * 1024);
    small->SetAttribute("PayloadBytes", UintegerValue(1024));
    auto sink = AddSink(b);
    Simulator::Stop(MicroSeconds(200));
    Simulator::Run();
    EXPECT_EQ(big->GetPacketsSent(), 10u);
    EXPECT_EQ(small->GetPacketsSent(), 50u);
    EXPECT_EQ(sink->GetTotalPackets(), 50u);
    Ptr<IbNetDevice> port = f.HostPort(0);
    EXPECT_EQ(port->GetDropCount(IbDropReason::ExceedsPeerBuffer), 10u);
    EXPECT_EQ(port->GetCounters().portXmitDiscards, 10u);
    EXPECT_EQ(port->GetCounters().portXmitPkts, 50u);
    Simulator::Destroy();
    Config::Reset();
}
