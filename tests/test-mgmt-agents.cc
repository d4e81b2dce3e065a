// The SMI, SMA and PMA on a simulated fabric: directed-route SMPs through switches before any
// subnet setup, Sets that change a port's LID and state, LID-routed SMPs, PMA counters after
// traffic with the spec's reset rules, traps, and bad input that must be answered with the
// spec's status or counted as a drop, never crash the agent.
#include "ib-test-packets.h"

#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "helpers/trace/ib-trace-helper.h"
#include "helpers/trace/trace-check.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-gmp.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-perf-attributes.h"
#include "models/mgmt/ib-pma-agent.h"
#include "models/mgmt/ib-sm-info.h"
#include "models/mgmt/ib-sma-agent.h"
#include "models/mgmt/ib-smp-attributes.h"

#include "ns3/config.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <random>
#include <set>
#include <unistd.h>
#include <vector>

using namespace ns3;

namespace
{

/// h0 - swL - swR - h1 (a dumbbell of one host a side), agents on every node, and a manager
/// on h0 that records what comes back.
struct Line
{
    IbFabric f;
    Ptr<IbMadDispatcher> h0;
    std::vector<IbReceivedMad> got;
    std::vector<Time> gotAt; ///< when each answer reached h0's manager
    uint64_t tid = 100;

    Line()
    {
        IbFabricHelper fh;
        f = fh.Build(MakeDumbbell(1, 1));
        IbMgmtHelper mh;
        EXPECT_EQ(mh.Install(f), 4u);
        h0 = IbMgmtHelper::GetDispatcher(f.hosts.Get(0));
        h0->SetManagerHandler(Callback<void, const IbReceivedMad&>(
            [this](const IbReceivedMad& m) {
                got.push_back(m);
                gotAt.push_back(Simulator::Now());
            }));
    }
    ~Line() { Simulator::Destroy(); }

    Ptr<Node> SwL() const { return f.switches.Get(0); }
    Ptr<Node> SwR() const { return f.switches.Get(1); }
    Ptr<IbNetDevice> H1Port() const { return f.HostPort(1); }

    /// Runs the simulation until `t` (absolute).
    void RunUntil(Time t)
    {
        Simulator::Stop(t - Simulator::Now());
        Simulator::Run();
    }
    /// Sends a directed-route SMP from h0 at `at` and runs 20 us more.
    void Dr(IbSmp smp, Time at)
    {
        Simulator::Schedule(at - Simulator::Now(), [this, smp]() { h0->SendDirectedSmp(smp); });
        RunUntil(at + MicroSeconds(20));
    }
    IbSmp DrSmp(uint8_t method, uint16_t attr, uint32_t mod, std::vector<uint8_t> path)
    {
        return IbSmp::MakeDirected(method, attr, mod, tid++, path.data(),
                                   static_cast<uint8_t>(path.size()));
    }
    /// As an SM would, on a fresh line: reads h1's PortInfo at 5 us and sets its M_Key and
    /// protection bits at 30 us (widths and speeds left as they are); both answered, the Set
    /// with status 0 (a failure otherwise).
    void SetH1MKey(uint64_t key, uint8_t protectBits);
};

/// h0 -> swL (port 2) -> swR (port 1) -> h1: the path of the dumbbell.
const std::vector<uint8_t> kToH1 = {1, 2, 1};
const std::vector<uint8_t> kToSwR = {1, 2};

void
Line::SetH1MKey(uint64_t key, uint8_t protectBits)
{
    Dr(DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1), MicroSeconds(5));
    ASSERT_EQ(got.size(), 1u);
    IbPortInfo pi;
    pi.ReadFrom(got[0].smp.Data());
    pi.mKey = key;
    pi.mKeyProtectBits = protectBits;
    pi.linkWidthEnabled = 0;
    pi.linkSpeedEnabled = 0;
    IbSmp set = DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
    pi.WriteTo(set.Data());
    Dr(set, MicroSeconds(30));
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(got[1].smp.GetSmpStatus(), 0);
}

/// Injects raw bytes as if they had arrived on `port` from its cable.
void
Inject(Ptr<IbNetDevice> port, std::vector<uint8_t> bytes)
{
    ns3::IbFillCrcs(bytes.data(), bytes.size());
    port->InjectReceivedBytes(bytes.data(), static_cast<uint32_t>(bytes.size()));
}

std::vector<uint8_t>
SmpPacket(const IbSmp& smp, uint8_t vl = 15, uint32_t qp = 0, uint16_t dlid = 0xFFFF,
          uint16_t slid = 0xFFFF)
{
    uint8_t mad[256];
    smp.WriteTo(mad);
    cnuas_test::TestPacketSpec s;
    s.vl = vl;
    s.destQp = qp;
    s.srcQp = qp;
    s.qkey = 0;
    s.dlid = dlid;
    s.slid = slid;
    s.payload.assign(mad, mad + 256);
    return cnuas_test::BuildPacket(s);
}

} // namespace

TEST(MgmtAgents, DirectedRouteNodeInfoThroughTwoSwitchesBeforeAnySubnetSetup)
{
    Line l;
    // No LIDs anywhere yet: the seed's "Base lid: 0" state, ports in Init after training.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1), MicroSeconds(5));
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToSwR), MicroSeconds(30));
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeDescription, 0, kToH1), MicroSeconds(55));
    ASSERT_EQ(l.got.size(), 3u);
    EXPECT_EQ(l.H1Port()->GetLid(), 0);
    EXPECT_EQ(l.H1Port()->GetPortState(), IbPortState::Init);

    // 1: h1's NodeInfo, as h1's own objects say.
    const IbSmp& a = l.got[0].smp;
    EXPECT_EQ(a.Mad().GetMethod(), IbMadMethod::GetResp);
    EXPECT_TRUE(a.GetDirection());
    EXPECT_EQ(a.GetSmpStatus(), 0);
    EXPECT_EQ(a.GetHopPointer(), 0); // back at the originator
    EXPECT_EQ(a.GetHopCount(), 3);
    EXPECT_EQ(a.Mad().GetTransactionId(), 100u);
    // ReturnPath: the ports each hop came in on: swL port 1, swR port 2, h1 port 1.
    EXPECT_EQ(a.ReturnPath()[1], 1);
    EXPECT_EQ(a.ReturnPath()[2], 2);
    EXPECT_EQ(a.ReturnPath()[3], 1);
    IbNodeInfo ni;
    ni.ReadFrom(a.Data());
    EXPECT_EQ(ni.nodeType, IbNodeType::ChannelAdapter);
    EXPECT_EQ(ni.numPorts, 1);
    EXPECT_EQ(ni.portGuid, l.H1Port()->GetPortGuid());
    EXPECT_EQ(ni.nodeGuid, l.H1Port()->GetPortGuid() - 1);
    EXPECT_EQ(ni.localPortNum, 1);

    // 2: swR's NodeInfo: a switch, reached on its port 2.
    IbNodeInfo sw;
    sw.ReadFrom(l.got[1].smp.Data());
    EXPECT_EQ(sw.nodeType, IbNodeType::Switch);
    Ptr<IbSwitch> swR = l.SwR()->GetObject<IbSwitch>();
    EXPECT_EQ(sw.numPorts, swR->GetNPorts());
    EXPECT_EQ(sw.nodeGuid, swR->GetNodeGuid());
    EXPECT_EQ(sw.portGuid, swR->GetNodeGuid());
    EXPECT_EQ(sw.localPortNum, 2);

    IbNodeDescription nd;
    nd.ReadFrom(l.got[2].smp.Data());
    EXPECT_EQ(nd.text, "cnuas node " + std::to_string(l.f.hosts.Get(1)->GetId()));
    // The round trip cannot beat the wire: six hops of a 292-byte packet (LRH..VCRC, 290,
    // plus the 2 delimiter bytes the port counts) at the trained rate, plus six cable delays.
    const Time rtt = l.gotAt[0] - MicroSeconds(5);
    const Time perHop = l.H1Port()->GetActiveRate().SerializationTime(290 + 2) +
                        l.f.cables[0]->GetDelay();
    EXPECT_GE(rtt, 6 * perHop);
    EXPECT_LT(rtt, MicroSeconds(5)); // and nothing waits anywhere on an idle fabric
    std::cout << "DR Get(NodeInfo) over 3 hops and back: " << rtt.GetNanoSeconds()
              << " ns (wire and cable floor " << (6 * perHop).GetNanoSeconds() << " ns)"
              << std::endl;

    // The two switches forwarded each SMP both ways.
    EXPECT_EQ(IbMgmtHelper::GetDispatcher(l.SwL())->GetDrForwarded(), 6u);
    EXPECT_EQ(IbMgmtHelper::GetDispatcher(l.SwR())->GetDrForwarded(), 4u);
}

// The first step of every SM sweep, done with nothing but directed-route NodeInfo Gets from
// h0: breadth first over the switches' ports, every node of the fabric is found once, with LIDs
// all 0 and every port in Init.
class MgmtDiscovery : public ::testing::TestWithParam<std::pair<std::string, uint32_t>>
{
};

TEST_P(MgmtDiscovery, DirectedRouteNodeInfoFindsEveryNode)
{
    IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec(GetParam().first));
    IbMgmtHelper().Install(f);
    Ptr<IbMadDispatcher> sm = IbMgmtHelper::GetDispatcher(f.hosts.Get(0));
    std::vector<IbReceivedMad> got;
    sm->SetManagerHandler(Callback<void, const IbReceivedMad&>(
        [&got](const IbReceivedMad& m) { got.push_back(m); }));
    std::set<uint64_t> seen;
    uint32_t switches = 0;
    uint32_t hosts = 0;
    uint32_t queries = 0;
    uint32_t longest = 0;
    std::deque<std::vector<uint8_t>> todo{{}}; // hop count 0: h0 itself
    Time t = MicroSeconds(5);
    while (!todo.empty())
    {
        std::vector<uint8_t> path = todo.front();
        todo.pop_front();
        IbSmp smp = IbSmp::MakeDirected(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, ++queries,
                                        path.data(), static_cast<uint8_t>(path.size()));
        Simulator::Schedule(t - Simulator::Now(), [sm, smp]() { sm->SendDirectedSmp(smp); });
        t += MicroSeconds(10);
        Simulator::Stop(t - Simulator::Now());
        Simulator::Run();
        if (got.empty())
        {
            continue; // the path ran into an unlinked port: no answer
        }
        EXPECT_EQ(got.size(), 1u);
        IbNodeInfo ni;
        ni.ReadFrom(got.back().smp.Data());
        got.clear();
        if (!seen.insert(ni.nodeGuid).second)
        {
            continue;
        }
        longest = std::max<uint32_t>(longest, static_cast<uint32_t>(path.size()));
        if (ni.nodeType == IbNodeType::Switch)
        {
            switches++;
            for (uint8_t p = 1; p <= ni.numPorts; ++p)
            {
                if (p != ni.localPortNum)
                {
                    auto next = path;
                    next.push_back(p);
                    todo.push_back(next);
                }
            }
        }
        else
        {
            hosts++;
            if (path.empty())
            {
                todo.push_back({1}); // out of h0's port
            }
        }
    }
    EXPECT_EQ(switches, f.switches.GetN());
    EXPECT_EQ(hosts, f.hosts.GetN());
    std::set<uint64_t> real;
    for (uint32_t i = 0; i < f.switches.GetN(); ++i)
    {
        real.insert(f.switches.Get(i)->GetObject<IbSwitch>()->GetNodeGuid());
    }
    for (uint32_t i = 0; i < f.hosts.GetN(); ++i)
    {
        real.insert(f.HostPort(i)->GetPortGuid() - 1);
    }
    EXPECT_EQ(seen, real);
    EXPECT_EQ(longest, GetParam().second);
    std::cout << GetParam().first << ": " << seen.size() << " nodes, " << queries
              << " DR NodeInfo Gets, longest path " << longest << " hops" << std::endl;
    Simulator::Destroy();
}

// IbMgmtHelper builds the dispatcher and agents once through their attributes and gives every
// node a copy (issue 18): each node still has its own objects, with the attribute values the
// helper and Config::SetDefault asked for, each installed on its own node.
TEST(MgmtAgents, EveryNodeGetsItsOwnAgentsWithTheHelpersAttributes)
{
    Config::SetDefault("ns3::IbMadDispatcher::ProcessingDelay", TimeValue(NanoSeconds(3)));
    IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("fat-tree:k=4"));
    IbMgmtHelper mh;
    mh.SetSmaAttribute("VendorId", UintegerValue(0x1234));
    mh.SetSmaAttribute("TrapRepeats", UintegerValue(7));
    mh.SetPmaAttribute("RespTimeValue", UintegerValue(5));
    EXPECT_EQ(mh.Install(f), f.nodes.GetN());
    Config::SetDefault("ns3::IbMadDispatcher::ProcessingDelay", TimeValue(Seconds(0)));
    std::set<const void*> objects;
    for (uint32_t i = 0; i < f.nodes.GetN(); ++i)
    {
        Ptr<Node> node = f.nodes.Get(i);
        Ptr<IbMadDispatcher> d = IbMgmtHelper::GetDispatcher(node);
        Ptr<IbSmaAgent> sma = IbMgmtHelper::GetSma(node);
        Ptr<IbPmaAgent> pma = IbMgmtHelper::GetPma(node);
        ASSERT_TRUE(d && sma && pma) << "node " << i;
        EXPECT_TRUE(objects.insert(PeekPointer(d)).second);
        EXPECT_TRUE(objects.insert(PeekPointer(sma)).second);
        EXPECT_TRUE(objects.insert(PeekPointer(pma)).second);
        EXPECT_EQ(d->GetNode(), node);
        TimeValue delay;
        d->GetAttribute("ProcessingDelay", delay);
        EXPECT_EQ(delay.Get(), NanoSeconds(3)) << "node " << i;
        UintegerValue v;
        sma->GetAttribute("VendorId", v);
        EXPECT_EQ(v.Get(), 0x1234u) << "node " << i;
        sma->GetAttribute("TrapRepeats", v);
        EXPECT_EQ(v.Get(), 7u) << "node " << i;
        pma->GetAttribute("RespTimeValue", v);
        EXPECT_EQ(v.Get(), 5u) << "node " << i;
    }
    Simulator::Destroy();
}

// Longest path from h0 to the farthest node: leaf-spine h0-leaf-spine-leaf-host (4); fat-tree
// h0-edge-agg-core-agg-edge-host (6).
INSTANTIATE_TEST_SUITE_P(Fabrics,
                         MgmtDiscovery,
                         ::testing::Values(std::make_pair(std::string("leaf-spine:leaves=3,"
                                                                      "spines=2,hosts=2"),
                                                          4u),
                                           std::make_pair(std::string("fat-tree:k=4"), 6u),
                                           std::make_pair(std::string("fat-tree:k=8"), 6u)));

TEST(MgmtAgents, ProcessingDelayAddsOncePerNodeOnThePath)
{
    auto roundTrip = [](Time delay) {
        Config::SetDefault("ns3::IbMadDispatcher::ProcessingDelay", TimeValue(delay));
        Line l;
        Config::SetDefault("ns3::IbMadDispatcher::ProcessingDelay", TimeValue(Seconds(0)));
        l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1), MicroSeconds(5));
        EXPECT_EQ(l.gotAt.size(), 1u);
        return l.gotAt.empty() ? Time() : l.gotAt[0] - MicroSeconds(5);
    };
    const Time fast = roundTrip(Seconds(0));
    const Time slow = roundTrip(MicroSeconds(1));
    // Six nodes take the MAD from the wire (swL, swR, h1, swR, swL, h0): on an idle fabric the
    // round trip grows by exactly six processing delays.
    EXPECT_EQ(slow - fast, MicroSeconds(6));
}

// A cut-through switch relays data from a packet's first bytes, but its management port
// (§17.2.1.1) takes an SMP only once it is all in: on a slow link with no switch latency each of
// the four hops of a DR Get to swR and back costs at least a whole packet time.
TEST(MgmtAgents, SwitchAgentsTakeWholePackets)
{
    IbFabricHelper fh;
    fh.SetDefaultRate("1xSDR");
    fh.SetSwitchAttribute("Latency", TimeValue(Seconds(0)));
    IbFabric f = fh.Build(MakeDumbbell(1, 1));
    IbMgmtHelper().Install(f);
    Ptr<IbMadDispatcher> sm = IbMgmtHelper::GetDispatcher(f.hosts.Get(0));
    Time at;
    sm->SetManagerHandler(Callback<void, const IbReceivedMad&>(
        [&at](const IbReceivedMad&) { at = Simulator::Now(); }));
    IbSmp smp = IbSmp::MakeDirected(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, 1,
                                    kToSwR.data(), 2);
    Simulator::Schedule(MicroSeconds(5), [sm, smp]() { sm->SendDirectedSmp(smp); });
    Simulator::Stop(MicroSeconds(50));
    Simulator::Run();
    ASSERT_TRUE(at.IsStrictlyPositive());
    const Time packet = f.HostPort(0)->GetActiveRate().SerializationTime(290 + 2);
    const Time cable = f.cables[0]->GetDelay();
    EXPECT_GE(at - MicroSeconds(5), 4 * (packet + cable));
    Simulator::Destroy();
}

// A switch part way along a directed route passes the SMP on as its SMI would rebuild it from
// an IbSmp (IBA vol. 1 §14.2.2.2, C14-9): hop pointer moved, the arrival port in ReturnPath, a
// fresh BTH and DETH (QP0 to QP0, default P_Key, Q_Key 0, the switch's own PSN) and the MAD's
// reserved bytes as IbSmp::WriteTo writes them (zeros), whatever the SMP came in with. The
// switches edit the received bytes in place (IbMadDispatcher::ForwardDirectedSmp): this checks
// the bytes they send are those of the IbSmp path.
TEST(MgmtAgents, ForwardedDirectedSmpIsRebuiltAsAnIbSmpWouldBe)
{
    Line l;
    IbSmp smp = l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1);
    smp.SetHopPointer(1); // as h0's SMI sent it (C14-9 at the originator)
    uint8_t mad[256];
    smp.WriteTo(mad);
    for (uint32_t i = 36; i < 64; ++i)
    {
        mad[i] = static_cast<uint8_t>(0xA0 + i); // reserved: not zero on the wire
    }
    mad[18] = 0x5A;
    mad[19] = 0xA5;
    cnuas_test::TestPacketSpec spec;
    spec.vl = 15;
    spec.dlid = 0xFFFF;
    spec.slid = 0xFFFF;
    spec.destQp = 0;
    spec.srcQp = 0;
    spec.qkey = 0x12345678; // the SMI ignores it (§13.5.1)
    spec.pkey = 0x8001;
    spec.psn = 0x777;
    spec.payload.assign(mad, mad + 256);
    const std::vector<uint8_t> sent = cnuas_test::BuildPacket(spec);

    // What swL sends out of port 2 toward swR.
    std::vector<std::vector<uint8_t>> out;
    Ptr<IbNetDevice> swLPort2 = l.SwL()->GetObject<IbSwitch>()->GetPort(2);
    swLPort2->AddSniffer(IbNetDevice::SnifferCallback(
        [&out](Time, const uint8_t* b, uint32_t n, bool transmit) {
            if (transmit && n > 100)
            {
                out.emplace_back(b, b + n);
            }
        }));
    Ptr<IbNetDevice> swLPort1 = l.SwL()->GetObject<IbSwitch>()->GetPort(1);
    Simulator::Schedule(MicroSeconds(5), [swLPort1, sent]() { Inject(swLPort1, sent); });
    l.RunUntil(MicroSeconds(25));
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].size(), sent.size());
    EXPECT_EQ(IbMgmtHelper::GetDispatcher(l.SwL())->GetDrForwarded(), 2u); // out and back

    // The IbSmp path: read, move the hop pointer, record port 1, write; then BTH and DETH.
    IbSmp fwd;
    fwd.ReadFrom(mad);
    fwd.ReturnPath()[1] = 1;
    fwd.SetHopPointer(2);
    uint8_t expectMad[256];
    fwd.WriteTo(expectMad);
    Ptr<Packet> expect = IbMakeMadPacket(expectMad, 0, 0, 0, IbBthHeader::kDefaultPkey, 0);
    std::vector<uint8_t> expectBytes(expect->GetSize());
    expect->CopyData(expectBytes.data(), expectBytes.size());
    const std::vector<uint8_t> got(out[0].begin() + IbLrhHeader::kSize,
                                   out[0].begin() + IbLrhHeader::kSize + expectBytes.size());
    EXPECT_EQ(got, expectBytes);
    EXPECT_EQ(got[IbBthHeader::kSize + IbDethHeader::kSize + 36], 0) << "reserved byte kept";
    // And the SMP went on to h1 and its answer came back.
    EXPECT_EQ(l.got.size(), 1u);
}

TEST(MgmtAgents, SetPortInfoAssignsLidAndMovesPortStateAsAnSmWould)
{
    Line l;
    IbSmp get = l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1);
    l.Dr(get, MicroSeconds(5));
    ASSERT_EQ(l.got.size(), 1u);
    IbPortInfo pi;
    pi.ReadFrom(l.got[0].smp.Data());
    EXPECT_EQ(pi.lid, 0);
    EXPECT_EQ(pi.portState, 2);         // Init
    EXPECT_EQ(pi.portPhysicalState, 5); // LinkUp
    EXPECT_EQ(pi.localPortNum, 1);
    const IbLinkRate rate = l.H1Port()->GetActiveRate();
    EXPECT_EQ(rate.width, 4);
    EXPECT_EQ(pi.linkWidthActive, 2);   // 4x
    EXPECT_EQ(pi.linkSpeedExtActive, 4); // HDR
    EXPECT_EQ(pi.operationalVls, 1);    // VL0 only, as the port starts
    EXPECT_EQ(pi.vlCap, 4);             // VL0-7

    // Set: LID 7, LMC 0, SM LID 1, OperationalVLs VL0-3, and Armed (from Init).
    pi.lid = 7;
    pi.masterSmLid = 1;
    pi.operationalVls = 3;
    pi.portState = 3;
    pi.portPhysicalState = 0;
    pi.linkWidthEnabled = 0;
    pi.linkSpeedEnabled = 0;
    IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
    pi.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(30));
    ASSERT_EQ(l.got.size(), 2u);
    EXPECT_EQ(l.got[1].smp.GetSmpStatus(), 0);
    EXPECT_EQ(l.H1Port()->GetLid(), 7);
    EXPECT_EQ(l.H1Port()->GetSmLid(), 1);
    EXPECT_EQ(l.H1Port()->GetOperationalVls(), 4);
    EXPECT_EQ(l.H1Port()->GetPortState(), IbPortState::Armed);
    IbPortInfo back;
    back.ReadFrom(l.got[1].smp.Data()); // the answer carries the values now in force
    EXPECT_EQ(back.lid, 7);
    EXPECT_EQ(back.portState, 3);
    EXPECT_EQ(back.operationalVls, 3);

    // Active from Armed; then Armed again is not a legal transition (§7.2): status 7 and
    // nothing changes.
    pi.portState = 4;
    pi.operationalVls = 0;
    set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
    pi.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(55));
    EXPECT_EQ(l.H1Port()->GetPortState(), IbPortState::Active);
    pi.portState = 3;
    pi.lid = 9;
    set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
    pi.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(80));
    ASSERT_EQ(l.got.size(), 4u);
    EXPECT_EQ(l.got[3].smp.GetSmpStatus(), IbMadStatus::InvalidField);
    EXPECT_EQ(l.H1Port()->GetLid(), 7); // the invalid Set changed nothing
    EXPECT_EQ(l.H1Port()->GetPortState(), IbPortState::Active);

    // A switch's LID is its port 0's: Set PortInfo on swR with AttributeModifier 0.
    IbSmp swGet = l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToSwR);
    l.Dr(swGet, MicroSeconds(105));
    IbPortInfo p0;
    p0.ReadFrom(l.got[4].smp.Data());
    p0.lid = 3;
    p0.masterSmLid = 1;
    IbSmp swSet = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToSwR);
    p0.WriteTo(swSet.Data());
    l.Dr(swSet, MicroSeconds(130));
    EXPECT_EQ(l.SwR()->GetObject<IbSwitch>()->GetLid(), 3);
    // PortInfo of switch port 2 (AttributeModifier 2): the link to swL, trained to 4x HDR.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 2, kToSwR), MicroSeconds(155));
    ASSERT_EQ(l.got.size(), 7u);
    IbPortInfo p2;
    p2.ReadFrom(l.got[6].smp.Data());
    EXPECT_EQ(p2.localPortNum, 2);
    EXPECT_EQ(p2.portState, 2);
    EXPECT_EQ(p2.linkWidthActive, 2);
}

TEST(MgmtAgents, SwitchTablesSetAndReadBack)
{
    Line l;
    Ptr<IbSwitch> swR = l.SwR()->GetObject<IbSwitch>();
    // LinearForwardingTable block 0: LIDs 0..63.
    IbLftBlock lft;
    lft.port.fill(255);
    lft.port[5] = 1;
    lft.port[9] = 2;
    IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::LinearForwardingTable, 0, kToSwR);
    lft.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(5));
    EXPECT_EQ(swR->GetLftEntry(5), 1);
    EXPECT_EQ(swR->GetLftEntry(9), 2);
    EXPECT_EQ(swR->GetLftEntry(6), 255);
    // SwitchInfo: LinearFDBTop.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::SwitchInfo, 0, kToSwR), MicroSeconds(30));
    IbSwitchInfo si;
    si.ReadFrom(l.got[1].smp.Data());
    EXPECT_EQ(si.linearFdbCap, swR->GetLinearFdbCap());
    si.linearFdbTop = 9;
    set = l.DrSmp(IbMadMethod::Set, IbSmAttr::SwitchInfo, 0, kToSwR);
    si.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(55));
    EXPECT_EQ(swR->GetLinearFdbTop(), 9);
    // SLtoVL for (in 2, out 1).
    IbSlToVlTable t;
    for (int i = 0; i < 16; ++i)
    {
        t.vl[i] = static_cast<uint8_t>(i % 4);
    }
    set = l.DrSmp(IbMadMethod::Set, IbSmAttr::SlToVlMappingTable, (2u << 8) | 1u, kToSwR);
    t.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(80));
    EXPECT_EQ(swR->MapSlToVl(2, 1, 7), 3);
    EXPECT_EQ(swR->MapSlToVl(2, 1, 5), 1);
    // VLArbitration low table, block 1, of port 1.
    IbVlArbTableBlock va;
    va.vl[0] = 0;
    va.weight[0] = 10;
    va.vl[1] = 1;
    va.weight[1] = 20;
    set = l.DrSmp(IbMadMethod::Set, IbSmAttr::VlArbitrationTable, (1u << 16) | 1u, kToSwR);
    va.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(105));
    const auto& low = swR->GetPort(1)->GetVlArbiter().Low();
    ASSERT_EQ(low.size(), 2u);
    EXPECT_EQ(low[1].vl, 1);
    EXPECT_EQ(low[1].weight, 20);
    // LFT Get of the block reads back what the table holds.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::LinearForwardingTable, 0, kToSwR),
         MicroSeconds(130));
    ASSERT_EQ(l.got.size(), 6u);
    IbLftBlock back;
    back.ReadFrom(l.got[5].smp.Data());
    EXPECT_EQ(back.port[9], 2);
    EXPECT_EQ(back.port[5], 1);
    for (auto& g : l.got)
    {
        EXPECT_EQ(g.smp.GetSmpStatus(), 0);
    }
}

TEST(MgmtAgents, ChannelAdapterTablesAndLoopbackToOwnSma)
{
    Line l;
    // P_KeyTable block 0 of h1: the default entry is the full-member default partition.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PKeyTable, 0, kToH1), MicroSeconds(5));
    IbPKeyTableBlock pk;
    pk.ReadFrom(l.got[0].smp.Data());
    EXPECT_EQ(pk.pkey[0], 0xFFFF);
    pk.pkey[1] = 0x8001;
    IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PKeyTable, 0, kToH1);
    pk.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(30));
    // GUIDInfo: entry 0 is the port GUID and stays so; entry 1 takes an alias.
    IbGuidInfoBlock g;
    g.guid[0] = 0x1111;
    g.guid[1] = 0xA11A5;
    set = l.DrSmp(IbMadMethod::Set, IbSmAttr::GuidInfo, 0, kToH1);
    g.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(55));
    // SLtoVL of a CA port: SL i -> VL i mod 2.
    IbSlToVlTable t;
    for (int i = 0; i < 16; ++i)
    {
        t.vl[i] = static_cast<uint8_t>(i % 2);
    }
    set = l.DrSmp(IbMadMethod::Set, IbSmAttr::SlToVlMappingTable, 0, kToH1);
    t.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(80));
    ASSERT_EQ(l.got.size(), 4u);
    pk.ReadFrom(l.got[1].smp.Data());
    EXPECT_EQ(pk.pkey[1], 0x8001);
    // Written to the port itself: the table its transport checks packets against.
    ASSERT_GE(l.H1Port()->GetPkeyTable().size(), 2u);
    EXPECT_EQ(l.H1Port()->GetPkeyTable()[1], 0x8001);
    g.ReadFrom(l.got[2].smp.Data());
    EXPECT_EQ(g.guid[0], l.H1Port()->GetPortGuid());
    EXPECT_EQ(g.guid[1], 0xA11A5u);
    EXPECT_EQ(l.H1Port()->MapSlToVl(3), 1);
    EXPECT_EQ(l.H1Port()->MapSlToVl(4), 0);
    // Hop count 0: the SM's own node (what opensm does first, §14.2.2): never on the wire.
    const uint64_t sent = l.f.HostPort(0)->GetCounters().portXmitPkts;
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, {}), MicroSeconds(105));
    ASSERT_EQ(l.got.size(), 5u);
    IbNodeInfo ni;
    ni.ReadFrom(l.got[4].smp.Data());
    EXPECT_EQ(ni.portGuid, l.f.HostPort(0)->GetPortGuid());
    EXPECT_EQ(l.got[4].smp.GetSmpStatus(), 0);
    EXPECT_EQ(l.f.HostPort(0)->GetCounters().portXmitPkts, sent);
}

TEST(MgmtAgents, BadInputGetsTheSpecStatus)
{
    Line l;
    Ptr<IbSmaAgent> sma = IbMgmtHelper::GetSma(l.f.hosts.Get(1));
    IbSmp v = l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1);
    v.Mad().SetClassVersion(2);
    l.Dr(v, MicroSeconds(5));
    IbSmp unknownAttr = l.DrSmp(IbMadMethod::Get, 0x00FF, 0, kToH1);
    l.Dr(unknownAttr, MicroSeconds(30));
    IbSmp badMethod = l.DrSmp(0x10, IbSmAttr::NodeInfo, 0, kToH1);
    l.Dr(badMethod, MicroSeconds(55));
    IbSmp setRo = l.DrSmp(IbMadMethod::Set, IbSmAttr::NodeInfo, 0, kToH1);
    l.Dr(setRo, MicroSeconds(80));
    IbSmp badLid = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
    IbPortInfo pi;
    pi.lid = 0xC001; // a multicast LID is not a port's LID
    pi.WriteTo(badLid.Data());
    l.Dr(badLid, MicroSeconds(105));
    IbSmp swOnly = l.DrSmp(IbMadMethod::Get, IbSmAttr::SwitchInfo, 0, kToH1); // h1 is a CA
    l.Dr(swOnly, MicroSeconds(130));
    IbSmp badPort = l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 9, kToSwR);
    l.Dr(badPort, MicroSeconds(155));
    IbSmp badBlock = l.DrSmp(IbMadMethod::Get, IbSmAttr::LinearForwardingTable, 0xC000 / 64,
                             kToSwR);
    l.Dr(badBlock, MicroSeconds(180));
    ASSERT_EQ(l.got.size(), 8u);
    // IBA vol. 1 §13.4.7 Table 110.
    EXPECT_EQ(l.got[0].smp.GetSmpStatus(), IbMadStatus::BadVersion);
    EXPECT_EQ(l.got[1].smp.GetSmpStatus(), IbMadStatus::UnsupportedMethodAttr);
    EXPECT_EQ(l.got[2].smp.GetSmpStatus(), IbMadStatus::UnsupportedMethod);
    EXPECT_EQ(l.got[3].smp.GetSmpStatus(), IbMadStatus::UnsupportedMethodAttr);
    EXPECT_EQ(l.got[4].smp.GetSmpStatus(), IbMadStatus::InvalidField);
    EXPECT_EQ(l.got[5].smp.GetSmpStatus(), IbMadStatus::UnsupportedMethodAttr);
    EXPECT_EQ(l.got[6].smp.GetSmpStatus(), IbMadStatus::InvalidField);
    EXPECT_EQ(l.got[7].smp.GetSmpStatus(), IbMadStatus::InvalidField);
    for (auto& g : l.got)
    {
        EXPECT_TRUE(g.smp.GetDirection()); // every answer is a response with the D bit
        EXPECT_EQ(g.smp.Mad().GetMethod(), IbMadMethod::GetResp);
    }
    EXPECT_EQ(l.H1Port()->GetLid(), 0);
    EXPECT_EQ(sma->GetAnsweredCount(IbMadStatus::InvalidField), 1u);
    EXPECT_EQ(sma->GetAnsweredCount(IbMadStatus::UnsupportedMethodAttr), 3u);
}

TEST(MgmtAgents, MKeyProtectsThePort)
{
    Line l;
    Ptr<IbSmaAgent> sma = IbMgmtHelper::GetSma(l.f.hosts.Get(1));
    // The SM sets an M_Key with protection bits 2: from now on Gets need the key too.
    l.SetH1MKey(0x1122334455667788ULL, 2);
    ASSERT_FALSE(::testing::Test::HasFailure());
    // Wrong key: discarded, no answer, counted (§14.2.4.1).
    IbSmp wrong = l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1);
    wrong.SetMKey(0xDEAD);
    l.Dr(wrong, MicroSeconds(55));
    EXPECT_EQ(l.got.size(), 2u);
    EXPECT_EQ(sma->GetDropCount(IbSmaDropReason::BadMKey), 1u);
    EXPECT_EQ(sma->GetMKeyViolations(1), 1);
    // The right key works.
    IbSmp right = l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1);
    right.SetMKey(0x1122334455667788ULL);
    l.Dr(right, MicroSeconds(80));
    ASSERT_EQ(l.got.size(), 3u);
    IbPortInfo now;
    now.ReadFrom(l.got[2].smp.Data());
    EXPECT_EQ(now.mKey, 0x1122334455667788ULL);
    EXPECT_EQ(now.mKeyViolations, 1);
    // Protection bits 1: a Get with a wrong key passes but PortInfo.M_Key reads 0; Sets fail.
    now.mKeyProtectBits = 1;
    now.linkWidthEnabled = 0;
    now.linkSpeedEnabled = 0;
    IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
    set.SetMKey(0x1122334455667788ULL);
    now.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(105));
    IbSmp peek = l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1);
    l.Dr(peek, MicroSeconds(130));
    ASSERT_EQ(l.got.size(), 5u);
    IbPortInfo hidden;
    hidden.ReadFrom(l.got[4].smp.Data());
    EXPECT_EQ(hidden.mKey, 0u);
    EXPECT_EQ(hidden.mKeyProtectBits, 1);
    IbSmp setNoKey = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
    hidden.lid = 5;
    hidden.WriteTo(setNoKey.Data());
    l.Dr(setNoKey, MicroSeconds(155));
    EXPECT_EQ(l.got.size(), 5u);
    EXPECT_EQ(l.H1Port()->GetLid(), 0);
    EXPECT_EQ(sma->GetMKeyViolations(1), 2);
}

TEST(MgmtAgents, MKeyLeaseExpiresWithoutTheOwningSm)
{
    Line l;
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1), MicroSeconds(5));
    IbPortInfo pi;
    pi.ReadFrom(l.got[0].smp.Data());
    pi.mKey = 0x77;
    pi.mKeyProtectBits = 3;
    pi.mKeyLeasePeriod = 1; // seconds
    IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
    pi.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(30));
    // Another SM probes with the wrong key: refused, and the lease starts.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1), MicroSeconds(55));
    EXPECT_EQ(l.got.size(), 2u);
    // Half a lease later it is still refused.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1), MilliSeconds(500));
    EXPECT_EQ(l.got.size(), 2u);
    // After the lease (1 s from the first violation, nobody with the key having spoken) the
    // protection bits are 0: a Get without the key is answered.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1), MilliSeconds(1001));
    ASSERT_EQ(l.got.size(), 3u);
    IbPortInfo now;
    now.ReadFrom(l.got[2].smp.Data());
    EXPECT_EQ(now.mKeyProtectBits, 0);
    EXPECT_EQ(now.mKeyViolations, 2);
    EXPECT_EQ(now.mKey, 0x77u); // the key itself stays; only the protection lapsed
}

// A bad M_Key is a security event the SM hears about: Trap 256 from the port that was hit,
// naming who tried what with which key, decoded by tshark field by field.
TEST(MgmtAgents, BadMKeyTrap256ReachesTheSm)
{
    const std::string path = "/tmp/cnuas-mgmt-trap256-" + std::to_string(getpid()) + ".pcap";
    {
        Line l;
        IbPcapHelper pcap;
        ASSERT_TRUE(pcap.Enable(l.f.HostPort(0), path));
        IbStaticSubnetHelper subnet;
        subnet.Configure(l.f.nodes);
        const uint16_t h0Lid = subnet.GetLid(l.f.hosts.Get(0));
        const uint16_t h1Lid = subnet.GetLid(l.f.hosts.Get(1));
        l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1), MicroSeconds(6));
        IbPortInfo pi;
        pi.ReadFrom(l.got[0].smp.Data());
        pi.mKey = 0xABCD;
        pi.mKeyProtectBits = 2;
        pi.masterSmLid = h0Lid;
        pi.linkWidthEnabled = 0;
        pi.linkSpeedEnabled = 0;
        IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToH1);
        pi.WriteTo(set.Data());
        l.Dr(set, MicroSeconds(30));
        ASSERT_EQ(l.got.size(), 2u);
        ASSERT_EQ(l.got[1].smp.GetSmpStatus(), 0);
        IbSmp bad = l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1);
        bad.SetMKey(0xDEAD);
        l.Dr(bad, MicroSeconds(55));
        pcap.Close();
        ASSERT_EQ(l.got.size(), 3u); // no answer, but a trap
        const IbReceivedMad& t = l.got[2];
        EXPECT_EQ(t.smp.Mad().GetMethod(), IbMadMethod::Trap);
        EXPECT_EQ(t.view.lrh.GetSlid(), h1Lid);
        IbNotice n;
        n.ReadFrom(t.smp.Data());
        EXPECT_EQ(n.trapNumber, 256);
        EXPECT_EQ(n.type, 2);         // security
        EXPECT_EQ(n.producerType, 1u); // channel adapter
        EXPECT_EQ(n.issuerLid, h1Lid);
        const uint8_t* d = n.dataDetails.data();
        EXPECT_EQ((d[2] << 8) | d[3], 0xFFFF); // LIDADDR: a DR SMP comes from the permissive LID
        EXPECT_EQ((d[4] << 8) | d[5], 0xFFFF); // DRSLID of the offending SMP
        EXPECT_EQ(d[6], IbMadMethod::Get);
        EXPECT_EQ((d[8] << 8) | d[9], IbSmAttr::NodeInfo);
        EXPECT_EQ((d[20] << 8) | d[21], 0xDEAD);
        EXPECT_EQ(d[22], 0);        // the byte before the DR flags is reserved
        EXPECT_EQ(d[23], 0x80 | 3); // DRNotice, hop count 3
        EXPECT_EQ(d[24 + 1], 1);    // the return path: swL port 1, swR port 2, h1 port 1
        EXPECT_EQ(d[24 + 2], 2);
        EXPECT_EQ(d[24 + 3], 1);
    }
    if (system("command -v tshark >/dev/null 2>&1") == 0)
    {
        int st = -1;
        auto rows = cnuas_test::TsharkFieldRows(
            path,
            {"infiniband.notice.trapnumberdeviceid", "infiniband.trap.method",
             "infiniband.trap.attributeid", "infiniband.trap.mkey", "infiniband.trap.drhopcount",
             "_ws.malformed", "infiniband.trap.drslid"},
            "-Y infiniband.notice.trapnumberdeviceid", &st);
        ASSERT_EQ(st, 0);
        ASSERT_EQ(rows.size(), 1u);
        ASSERT_EQ(rows[0].size(), 7u);
        EXPECT_EQ(rows[0][0], "0x0100");
        EXPECT_EQ(rows[0][1], "0x01");
        EXPECT_EQ(rows[0][2], "0x0011");
        EXPECT_EQ(rows[0][3], "0x000000000000dead");
        EXPECT_EQ(rows[0][4], "0x03");
        EXPECT_EQ(rows[0][5], "");
        EXPECT_EQ(rows[0][6], "0xffff");
    }
    unlink(path.c_str());
}

TEST(MgmtAgents, MalformedSmpsAreCountedDropsNeverCrashes)
{
    Line l;
    l.RunUntil(MicroSeconds(5)); // links up
    Ptr<IbNetDevice> swLIn = l.f.Port(2, 1); // swL's port facing h0
    Ptr<IbMadDispatcher> swL = IbMgmtHelper::GetDispatcher(l.SwL());
    // Hop pointer 0 with a non-zero hop count at a receiver: the sender did not move it (C14-9).
    IbSmp s = l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1);
    Inject(swLIn, SmpPacket(s));
    // Hop pointer beyond hop count + 1.
    s.SetHopPointer(7);
    Inject(swLIn, SmpPacket(s));
    // Hop count above 63.
    s.SetHopCount(64);
    s.SetHopPointer(1);
    Inject(swLIn, SmpPacket(s));
    // A path that names a port the switch does not have.
    IbSmp badPath = l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, {1, 9, 1});
    badPath.SetHopPointer(1);
    Inject(swLIn, SmpPacket(badPath));
    // An SMP for QP0 on a data VL; a VL15 packet for QP1; a GSI class on QP0.
    IbSmp good = l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToSwR);
    good.SetHopPointer(1);
    IbPerfMgtMad pm = IbPerfMgtMad::Make(IbMadMethod::Get, IbPerfAttr::PortCounters, 0, 1);
    uint8_t raw[256];
    pm.WriteTo(raw);
    IbSmp asSmp;
    asSmp.ReadFrom(raw);
    Inject(swLIn, SmpPacket(good, 15, 1));
    Inject(swLIn, SmpPacket(asSmp, 15, 0));
    // A MAD cut short.
    std::vector<uint8_t> shortPkt = SmpPacket(good);
    cnuas_test::TestPacketSpec sp;
    sp.vl = 15;
    sp.destQp = 0;
    sp.qkey = 0;
    sp.dlid = 0xFFFF;
    sp.slid = 0xFFFF;
    sp.payload.assign(200, 0x81);
    Inject(swLIn, cnuas_test::BuildPacket(sp));
    // A returning SMP arriving where it should already have been turned round.
    IbSmp ret = good;
    ret.SetDirection(true);
    ret.SetHopPointer(3);
    Inject(swLIn, SmpPacket(ret));
    l.RunUntil(MicroSeconds(30));
    EXPECT_EQ(swL->GetDropCount(IbMadDropReason::BadHopPointer), 3u);
    EXPECT_EQ(swL->GetDropCount(IbMadDropReason::BadHopCount), 1u);
    EXPECT_EQ(swL->GetDropCount(IbMadDropReason::BadPathPort), 1u);
    EXPECT_EQ(swL->GetDropCount(IbMadDropReason::SmpNotOnVl15), 1u);
    EXPECT_EQ(swL->GetDropCount(IbMadDropReason::WrongClassOnQp0), 1u);
    EXPECT_EQ(swL->GetDropCount(IbMadDropReason::NotAMad), 1u);
    // A CA in the middle of a path does not forward (§14.2.2).
    IbSmp viaCa = l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, {1, 2, 1, 1});
    l.Dr(viaCa, MicroSeconds(35));
    EXPECT_EQ(IbMgmtHelper::GetDispatcher(l.f.hosts.Get(1))->GetDropCount(
                  IbMadDropReason::NotASwitch),
              1u);
    // And the agents still answer afterwards.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1), MicroSeconds(60));
    ASSERT_EQ(l.got.size(), 1u);
    EXPECT_EQ(l.got[0].smp.GetSmpStatus(), 0);
}

TEST(MgmtAgents, FuzzedSmpsAlwaysHaveAnOutcome)
{
    Line l;
    l.RunUntil(MicroSeconds(5));
    Ptr<IbNetDevice> swLIn = l.f.Port(2, 1);
    Ptr<IbMadDispatcher> swL = IbMgmtHelper::GetDispatcher(l.SwL());
    Ptr<IbSmaAgent> sma = IbMgmtHelper::GetSma(l.SwL());
    uint64_t rx = 0; // SMPs arriving from h0's side (the answers come back on port 2)
    swL->TraceConnectWithoutContext(
        "MadRx", Callback<void, Ptr<const Packet>, uint8_t>([&rx](Ptr<const Packet>, uint8_t in) {
            rx += in == 1 ? 1 : 0;
        }));
    std::mt19937 rng(7);
    IbSmp base = l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1);
    base.SetHopPointer(1);
    const int n = 500;
    for (int i = 0; i < n; ++i)
    {
        uint8_t mad[256];
        base.WriteTo(mad);
        // Flip a few bytes of the header, the DR fields and the paths.
        for (int k = 0; k < 3; ++k)
        {
            const int off = std::uniform_int_distribution<int>(0, 255)(rng);
            mad[off] = static_cast<uint8_t>(rng());
        }
        IbSmp s;
        s.ReadFrom(mad);
        std::vector<uint8_t> pkt = SmpPacket(s);
        // ReadFrom drops the DR fields of a non-DR class: put the fuzzed bytes back.
        std::copy(mad, mad + 256, pkt.begin() + 28);
        Simulator::Schedule(NanoSeconds(200 * i), [swLIn, pkt]() { Inject(swLIn, pkt); });
    }
    l.RunUntil(MicroSeconds(400));
    EXPECT_EQ(rx, static_cast<uint64_t>(n));
    // Every injected SMP ends exactly once: as an answer back at h0, or as a counted drop at
    // some node's SMI, SMA or port (an answer that cannot be sent is counted by the SMI).
    uint64_t drops = 0;
    uint64_t smaDrops = 0;
    uint64_t linkDrops = 0;
    for (uint32_t i = 0; i < l.f.nodes.GetN(); ++i)
    {
        Ptr<Node> node = l.f.nodes.Get(i);
        Ptr<IbMadDispatcher> d = IbMgmtHelper::GetDispatcher(node);
        for (int r = 0; r <= static_cast<int>(IbMadDropReason::SendFailed); ++r)
        {
            drops += d->GetDropCount(static_cast<IbMadDropReason>(r));
        }
        Ptr<IbSmaAgent> a = IbMgmtHelper::GetSma(node);
        smaDrops += a->GetDropCount(IbSmaDropReason::BadMKey) +
                    a->GetDropCount(IbSmaDropReason::TrapRepress);
        for (auto& p : IbPortsOf(node))
        {
            for (int r = 0; r <= static_cast<int>(IbDropReason::LinkDown); ++r)
            {
                linkDrops += p->GetDropCount(static_cast<IbDropReason>(r));
            }
        }
    }
    const uint64_t answered = l.got.size();
    std::cout << "fuzz: " << n << " SMPs: " << answered << " answers back at h0, " << drops
              << " SMI drops, " << smaDrops << " SMA drops, " << linkDrops << " link drops; "
              << swL->GetDrForwarded() << " forwarded by swL" << std::endl;
    EXPECT_EQ(answered + drops + smaDrops + linkDrops, static_cast<uint64_t>(n));
    EXPECT_GT(answered, 0u);
    EXPECT_GT(drops, 0u);
}

TEST(MgmtAgents, LidRoutedSmpAfterSubnetSetup)
{
    Line l;
    IbStaticSubnetHelper subnet;
    subnet.Configure(l.f.nodes);
    const uint16_t h1Lid = subnet.GetLid(l.f.hosts.Get(1));
    const uint16_t swRLid = subnet.GetLid(l.SwR());
    l.RunUntil(MicroSeconds(5));
    IbSmp get = IbSmp::MakeLidRouted(IbMadMethod::Get, IbSmAttr::PortInfo, 0, 1);
    Simulator::Schedule(NanoSeconds(1), [&]() { l.h0->SendLidRoutedSmp(1, get, h1Lid); });
    IbSmp lft = IbSmp::MakeLidRouted(IbMadMethod::Get, IbSmAttr::LinearForwardingTable, 0, 2);
    Simulator::Schedule(NanoSeconds(2), [&]() { l.h0->SendLidRoutedSmp(1, lft, swRLid); });
    l.RunUntil(MicroSeconds(30));
    ASSERT_EQ(l.got.size(), 2u);
    // The switch is nearer: its answer may come first. Match answers by transaction ID.
    const IbReceivedMad& gp = l.got[0].smp.Mad().GetTransactionId() == 1 ? l.got[0] : l.got[1];
    const IbReceivedMad& gl = l.got[0].smp.Mad().GetTransactionId() == 2 ? l.got[0] : l.got[1];
    IbPortInfo pi;
    pi.ReadFrom(gp.smp.Data());
    EXPECT_EQ(gp.smp.Mad().GetAttributeId(), IbSmAttr::PortInfo);
    EXPECT_EQ(gl.smp.Mad().GetAttributeId(), IbSmAttr::LinearForwardingTable);
    EXPECT_EQ(gp.view.lrh.GetSlid(), h1Lid);
    EXPECT_EQ(gl.view.lrh.GetSlid(), swRLid);
    EXPECT_EQ(pi.lid, h1Lid);
    EXPECT_EQ(pi.portState, 4);
    EXPECT_EQ(pi.masterSmLid, l.H1Port()->GetSmLid());
    IbLftBlock b;
    b.ReadFrom(gl.smp.Data());
    Ptr<IbSwitch> swR = l.SwR()->GetObject<IbSwitch>();
    for (int lid = 0; lid < 64; ++lid)
    {
        EXPECT_EQ(b.port[lid], swR->GetLftEntry(static_cast<uint16_t>(lid))) << lid;
    }
}

// The SMI keeps one IbReceivedMad from MAD to MAD (issue 18): a GMP that follows an SMP at the
// same node reaches its agent as in a fresh one, without the SMP (IbReceivedMad::smp all
// zeros, as IbSmp() writes it).
TEST(MgmtAgents, AGmpAfterAnSmpCarriesNoneOfIt)
{
    Line l;
    IbStaticSubnetHelper subnet;
    subnet.Configure(l.f.nodes);
    const uint16_t h1Lid = subnet.GetLid(l.f.hosts.Get(1));
    l.RunUntil(MicroSeconds(5));
    Ptr<IbMadDispatcher> h1 = IbMgmtHelper::GetDispatcher(l.f.hosts.Get(1));
    constexpr uint8_t kTestClass = 0x0A; // no agent of the model serves it
    std::vector<std::array<uint8_t, 256>> smpsSeen;
    h1->SetGsiHandler(kTestClass, Callback<void, const IbReceivedMad&>(
                                      [&smpsSeen](const IbReceivedMad& m) {
                                          std::array<uint8_t, 256> b{};
                                          m.smp.WriteTo(b.data());
                                          smpsSeen.push_back(b);
                                      }));
    IbSmp smp = IbSmp::MakeLidRouted(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, 4242);
    Simulator::Schedule(MicroSeconds(1), [&l, smp, h1Lid]() {
        l.h0->SendLidRoutedSmp(1, smp, h1Lid);
    });
    std::array<uint8_t, 256> gmp{};
    gmp[0] = 1; // BaseVersion
    gmp[1] = kTestClass;
    gmp[2] = 1; // ClassVersion
    gmp[3] = IbMadMethod::Get;
    Simulator::Schedule(MicroSeconds(3), [&l, gmp, h1Lid]() {
        l.h0->SendGmp(1, gmp.data(), h1Lid, 1, 0);
    });
    l.RunUntil(MicroSeconds(30));
    ASSERT_EQ(l.got.size(), 1u); // the SMP reached h1's SMA, which answered
    EXPECT_EQ(l.got[0].smp.Mad().GetTransactionId(), 4242u);
    ASSERT_EQ(smpsSeen.size(), 1u);
    std::array<uint8_t, 256> fresh{};
    IbSmp().WriteTo(fresh.data());
    EXPECT_EQ(smpsSeen[0], fresh);
}

TEST(MgmtAgents, PmaCountersAfterTrafficWithResetSemantics)
{
    Line l;
    IbStaticSubnetHelper subnet;
    subnet.Configure(l.f.nodes);
    const uint16_t h1Lid = subnet.GetLid(l.f.hosts.Get(1));
    l.RunUntil(MicroSeconds(5));
    // What h1's data consumer (the RDMA engine's receive path) sees: never the MADs.
    uint32_t dataPackets = 0;
    l.H1Port()->SetIbReceiveCallback(
        Callback<void, Ptr<IbNetDevice>, Ptr<const Packet>, const IbRxInfo&>(
            [&dataPackets](Ptr<IbNetDevice>, Ptr<const Packet>, const IbRxInfo&) {
                dataPackets++;
            }));
    // Ten UD packets of 1024 payload bytes h0 -> h1 (to a data QP, not to the agents).
    const int kPackets = 10;
    Ptr<IbNetDevice> h0Port = l.f.HostPort(0);
    for (int i = 0; i < kPackets; ++i)
    {
        cnuas_test::TestPacketSpec s;
        s.destQp = 0x11;
        s.payload.assign(1024, static_cast<uint8_t>(i));
        std::vector<uint8_t> b = cnuas_test::BuildPacket(s);
        // BuildPacket made LRH..VCRC; SendIb takes what follows the LRH, without the CRCs.
        Ptr<Packet> p = Create<Packet>(b.data() + 8, static_cast<uint32_t>(b.size() - 8 - 6));
        ASSERT_TRUE(h0Port->SendIb(p, h1Lid, 0));
    }
    l.RunUntil(MicroSeconds(20));
    auto query = [&](uint16_t attr, uint8_t method, const uint8_t* attrBytes, size_t n,
                     Time at) {
        IbPerfMgtMad m = IbPerfMgtMad::Make(method, attr, 0, 500);
        std::copy(attrBytes, attrBytes + n, m.Data());
        uint8_t mad[256];
        m.WriteTo(mad);
        std::vector<uint8_t> copy(mad, mad + 256);
        Simulator::Schedule(at - Simulator::Now(),
                            [&l, copy, h1Lid]() { l.h0->SendGmp(1, copy.data(), h1Lid, 1, 0); });
        l.RunUntil(at + MicroSeconds(20));
    };
    IbPortCountersAttr req;
    req.portSelect = 1;
    uint8_t buf[IbPortCountersAttr::kSize];
    req.WriteTo(buf);
    query(IbPerfAttr::PortCounters, IbMadMethod::Get, buf, sizeof(buf), MicroSeconds(25));
    ASSERT_EQ(l.got.size(), 1u);
    IbPerfMgtMad r;
    r.ReadFrom(l.got[0].view.mad.data());
    EXPECT_EQ(r.Mad().GetStatus(), 0);
    IbPortCountersAttr c;
    c.ReadFrom(r.Data());
    // PortRcvData counts 4-byte words LRH..ICRC (§16.1.3.5): a data packet is
    // 8 + 12 + 8 + 1024 + 4 bytes, the GMP that asked 8 + 12 + 8 + 256 + 4.
    const uint32_t dataWords = (8 + 12 + 8 + 1024 + 4) / 4;
    const uint32_t gmpWords = (8 + 12 + 8 + 256 + 4) / 4;
    EXPECT_EQ(c.portRcvPkts, static_cast<uint32_t>(kPackets + 1));
    EXPECT_EQ(c.portRcvData, kPackets * dataWords + gmpWords);
    EXPECT_EQ(c.portXmitPkts, 0u); // nothing sent yet: the answer is counted when it leaves
    EXPECT_EQ(c.portSelect, 1);
    EXPECT_EQ(dataPackets, static_cast<uint32_t>(kPackets));

    // Set with PortRcvData and PortRcvPkts selected: those two clear, nothing else does.
    req.counterSelect = IbCounterSelect::PortRcvData | IbCounterSelect::PortRcvPkts;
    req.WriteTo(buf);
    query(IbPerfAttr::PortCounters, IbMadMethod::Set, buf, sizeof(buf), MicroSeconds(50));
    ASSERT_EQ(l.got.size(), 2u);
    r.ReadFrom(l.got[1].view.mad.data());
    c.ReadFrom(r.Data());
    EXPECT_EQ(c.portRcvPkts, 0u);
    EXPECT_EQ(c.portRcvData, 0u);
    EXPECT_EQ(c.portXmitPkts, 1u); // the first answer
    EXPECT_EQ(c.portXmitData, gmpWords);
    // The extended set is independent of a PortCounters reset (§16.1.4.11).
    IbPortCountersExtendedAttr ereq;
    ereq.portSelect = 1;
    uint8_t ebuf[IbPortCountersExtendedAttr::kSize];
    ereq.WriteTo(ebuf);
    query(IbPerfAttr::PortCountersExtended, IbMadMethod::Get, ebuf, sizeof(ebuf),
          MicroSeconds(75));
    ASSERT_EQ(l.got.size(), 3u);
    r.ReadFrom(l.got[2].view.mad.data());
    IbPortCountersExtendedAttr e;
    e.ReadFrom(r.Data());
    EXPECT_EQ(e.portRcvPkts, static_cast<uint64_t>(kPackets + 3));
    EXPECT_EQ(e.portRcvData, uint64_t{kPackets} * dataWords + 3u * gmpWords);
    EXPECT_EQ(e.portUnicastRcvPkts, static_cast<uint64_t>(kPackets + 3));
    // Saturation: a 32-bit PortRcvPkts stops at its maximum; the 64-bit one keeps counting.
    l.H1Port()->GetCountersForUpdate().portRcvPkts = 0xFFFFFFFEu;
    req.counterSelect = 0;
    req.WriteTo(buf);
    query(IbPerfAttr::PortCounters, IbMadMethod::Get, buf, sizeof(buf), MicroSeconds(100));
    query(IbPerfAttr::PortCounters, IbMadMethod::Get, buf, sizeof(buf), MicroSeconds(125));
    ASSERT_EQ(l.got.size(), 5u);
    r.ReadFrom(l.got[4].view.mad.data());
    c.ReadFrom(r.Data());
    EXPECT_EQ(c.portRcvPkts, 0xFFFFFFFFu);
    // Bad input to the PMA: an unknown port, an unknown attribute, a wrong class version.
    req.portSelect = 7;
    req.WriteTo(buf);
    query(IbPerfAttr::PortCounters, IbMadMethod::Get, buf, sizeof(buf), MicroSeconds(150));
    query(0x0099, IbMadMethod::Get, buf, sizeof(buf), MicroSeconds(175));
    ASSERT_EQ(l.got.size(), 7u);
    r.ReadFrom(l.got[5].view.mad.data());
    EXPECT_EQ(r.Mad().GetStatus(), IbMadStatus::InvalidField);
    r.ReadFrom(l.got[6].view.mad.data());
    EXPECT_EQ(r.Mad().GetStatus(), IbMadStatus::UnsupportedMethodAttr);
    // A GMP whose Q_Key is wrong never reaches the PMA (§13.5.1).
    Ptr<IbMadDispatcher> h1 = IbMgmtHelper::GetDispatcher(l.f.hosts.Get(1));
    IbPerfMgtMad m = IbPerfMgtMad::Make(IbMadMethod::Get, IbPerfAttr::PortCounters, 0, 1);
    uint8_t mad[256];
    m.WriteTo(mad);
    cnuas_test::TestPacketSpec s;
    s.destQp = 1;
    s.qkey = 0x1234;
    s.dlid = h1Lid;
    s.slid = subnet.GetLid(l.f.hosts.Get(0));
    s.payload.assign(mad, mad + 256);
    Inject(l.H1Port(), cnuas_test::BuildPacket(s));
    EXPECT_EQ(h1->GetDropCount(IbMadDropReason::BadQkey), 1u);

    // ClassPortInfo: what perfquery asks first, to learn which counters exist.
    query(IbPerfAttr::ClassPortInfo, IbMadMethod::Get, buf, 0, MicroSeconds(200));
    ASSERT_EQ(l.got.size(), 8u);
    r.ReadFrom(l.got[7].view.mad.data());
    EXPECT_EQ(r.Mad().GetStatus(), 0);
    IbClassPortInfo cpi;
    cpi.ReadFrom(r.Data());
    EXPECT_EQ(cpi.classVersion, 1);
    EXPECT_EQ(cpi.capabilityMask, (1u << 9) | (1u << 12)); // 64-bit counters, PortXmitWait
    // PortXmitWait is reset by CounterSelect2 bit 0, not by any CounterSelect bit.
    l.H1Port()->GetCountersForUpdate().portXmitWait = 1234;
    req.portSelect = 1;
    req.counterSelect = 0xFFFF;
    req.counterSelect2 = 0;
    req.WriteTo(buf);
    query(IbPerfAttr::PortCounters, IbMadMethod::Set, buf, sizeof(buf), MicroSeconds(225));
    r.ReadFrom(l.got[8].view.mad.data());
    c.ReadFrom(r.Data());
    EXPECT_EQ(c.portXmitWait, 1234u);
    EXPECT_EQ(c.portRcvPkts, 0u);
    req.counterSelect = 0;
    req.counterSelect2 = IbCounterSelect::PortXmitWait;
    req.WriteTo(buf);
    query(IbPerfAttr::PortCounters, IbMadMethod::Set, buf, sizeof(buf), MicroSeconds(250));
    r.ReadFrom(l.got[9].view.mad.data());
    c.ReadFrom(r.Data());
    EXPECT_EQ(c.portXmitWait, 0u);
    EXPECT_GT(c.portRcvPkts, 0u);
    // PortCountersExtended Set: bit 3 (PortRcvPkts) clears that counter only.
    ereq.counterSelect = 1u << 3;
    ereq.WriteTo(ebuf);
    query(IbPerfAttr::PortCountersExtended, IbMadMethod::Set, ebuf, sizeof(ebuf),
          MicroSeconds(275));
    ASSERT_EQ(l.got.size(), 11u);
    r.ReadFrom(l.got[10].view.mad.data());
    e.ReadFrom(r.Data());
    EXPECT_EQ(e.portRcvPkts, 0u);
    EXPECT_GT(e.portRcvData, 0u);
    EXPECT_GT(e.portXmitPkts, 0u);
}

// A channel adapter with two ports is one node with one SMA (§14.2.5.3: NumPorts 2); what it
// answers depends on the port the SMP came in by.
TEST(MgmtAgents, TwoPortChannelAdapter)
{
    Topology t;
    const uint32_t h0 = t.AddNode("h0", TopoNodeKind::Host, 1, 0);
    const uint32_t h1 = t.AddNode("h1", TopoNodeKind::Host, 2, 0);
    const uint32_t sw = t.AddNode("sw", TopoNodeKind::Switch, 3, 1);
    t.AddLink(h0, 1, sw, 1);
    t.AddLink(h1, 1, sw, 2);
    t.AddLink(h1, 2, sw, 3);
    IbFabric f = IbFabricHelper().Build(t);
    IbMgmtHelper().Install(f);
    Ptr<IbMadDispatcher> sm = IbMgmtHelper::GetDispatcher(f.hosts.Get(0));
    std::vector<IbReceivedMad> got;
    sm->SetManagerHandler(Callback<void, const IbReceivedMad&>(
        [&got](const IbReceivedMad& m) { got.push_back(m); }));
    f.Port(h1, 1)->SetLid(11); // so that the two ports' PortInfo can be told apart
    f.Port(h1, 2)->SetLid(12);
    auto dr = [&](uint16_t attr, uint32_t mod, std::vector<uint8_t> path, Time at) {
        IbSmp smp = IbSmp::MakeDirected(IbMadMethod::Get, attr, mod, 1, path.data(),
                                        static_cast<uint8_t>(path.size()));
        Simulator::Schedule(at - Simulator::Now(), [sm, smp]() { sm->SendDirectedSmp(smp); });
        Simulator::Stop(at + MicroSeconds(20) - Simulator::Now());
        Simulator::Run();
    };
    dr(IbSmAttr::NodeInfo, 0, {1, 2}, MicroSeconds(5));  // in by h1's port 1
    dr(IbSmAttr::NodeInfo, 0, {1, 3}, MicroSeconds(30)); // in by h1's port 2
    dr(IbSmAttr::PortInfo, 0, {1, 3}, MicroSeconds(55)); // modifier 0: the arrival port
    dr(IbSmAttr::PortInfo, 1, {1, 3}, MicroSeconds(80)); // modifier 1: port 1
    dr(IbSmAttr::PortInfo, 3, {1, 3}, MicroSeconds(105)); // no port 3
    ASSERT_EQ(got.size(), 5u);
    IbNodeInfo a;
    IbNodeInfo b;
    a.ReadFrom(got[0].smp.Data());
    b.ReadFrom(got[1].smp.Data());
    Ptr<IbNetDevice> p1 = f.Port(h1, 1);
    Ptr<IbNetDevice> p2 = f.Port(h1, 2);
    EXPECT_EQ(a.numPorts, 2);
    EXPECT_EQ(a.nodeGuid, b.nodeGuid); // one node
    EXPECT_EQ(a.localPortNum, 1);
    EXPECT_EQ(b.localPortNum, 2);
    EXPECT_EQ(a.portGuid, p1->GetPortGuid());
    EXPECT_EQ(b.portGuid, p2->GetPortGuid());
    IbPortInfo pa;
    IbPortInfo pb;
    pa.ReadFrom(got[2].smp.Data());
    pb.ReadFrom(got[3].smp.Data());
    EXPECT_EQ(pa.localPortNum, 2);
    EXPECT_EQ(pb.localPortNum, 2); // LocalPortNum is where the SMP came in
    EXPECT_EQ(pa.lid, 12);
    EXPECT_EQ(pb.lid, 11);
    EXPECT_EQ(got[2].smp.GetSmpStatus(), 0);
    EXPECT_EQ(got[3].smp.GetSmpStatus(), 0);
    EXPECT_EQ(got[4].smp.GetSmpStatus(), IbMadStatus::InvalidField);
    Simulator::Destroy();
}

TEST(MgmtAgents, SwitchPmaAnswersThroughItsForwardingTable)
{
    Line l;
    IbStaticSubnetHelper subnet;
    subnet.Configure(l.f.nodes);
    const uint16_t swRLid = subnet.GetLid(l.SwR());
    l.RunUntil(MicroSeconds(5));
    // A switch's PMA is reached at its LID (port 0) and answers from port 0 through its LFT,
    // on a data VL (§16.1, §17.2.1.1): PortCounters of swR's port 2, the link to swL.
    IbPerfMgtMad m = IbPerfMgtMad::Make(IbMadMethod::Get, IbPerfAttr::PortCounters, 0, 77);
    IbPortCountersAttr a;
    a.portSelect = 2;
    a.WriteTo(m.Data());
    uint8_t mad[256];
    m.WriteTo(mad);
    std::vector<uint8_t> bytes(mad, mad + 256);
    Simulator::Schedule(NanoSeconds(1),
                        [&l, bytes, swRLid]() { l.h0->SendGmp(1, bytes.data(), swRLid, 1, 0); });
    l.RunUntil(MicroSeconds(30));
    ASSERT_EQ(l.got.size(), 1u);
    EXPECT_EQ(l.got[0].view.lrh.GetSlid(), swRLid);
    EXPECT_EQ(l.got[0].vl, 0); // a GMP travels on a data VL, not VL15
    IbPerfMgtMad r;
    r.ReadFrom(l.got[0].view.mad.data());
    EXPECT_EQ(r.Mad().GetStatus(), 0);
    EXPECT_EQ(r.Mad().GetTransactionId(), 77u);
    IbPortCountersAttr c;
    c.ReadFrom(r.Data());
    // Port 2 received the request (the only packet that crossed swL -> swR since activation
    // apart from link packets, which are not counted) and had sent nothing yet.
    const IbPortCounters& real = l.SwR()->GetObject<IbSwitch>()->GetPort(2)->GetCounters();
    EXPECT_EQ(c.portRcvPkts, 1u);
    EXPECT_EQ(c.portRcvData, (8u + 12 + 8 + 256 + 4) / 4);
    EXPECT_EQ(c.portXmitPkts, 0u);
    EXPECT_EQ(real.portXmitPkts, 1u); // and then the answer left by it
}

TEST(MgmtAgents, SwitchSendsTrap128WhenAPortChangesState)
{
    const std::string path = "/tmp/cnuas-mgmt-trap128-" + std::to_string(getpid()) + ".pcap";
    Line l;
    IbPcapHelper pcap;
    ASSERT_TRUE(pcap.Enable(l.f.HostPort(0), path));
    IbStaticSubnetHelper subnet;
    subnet.Configure(l.f.nodes);
    const uint16_t h0Lid = subnet.GetLid(l.f.hosts.Get(0));
    const uint16_t swRLid = subnet.GetLid(l.SwR());
    l.RunUntil(MicroSeconds(5));
    // The SM tells swR where it is (PortInfo Set of port 0, MasterSMLID).
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToSwR), MicroSeconds(6));
    IbPortInfo p0;
    p0.ReadFrom(l.got[0].smp.Data());
    p0.masterSmLid = h0Lid;
    IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToSwR);
    p0.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(30));
    ASSERT_EQ(l.got.size(), 2u);
    // h1's cable is pulled: swR's port 1 goes Down.
    Simulator::Schedule(MicroSeconds(1), [&]() { l.H1Port()->SetPhysicalLinkDown(); });
    l.RunUntil(MicroSeconds(80));
    ASSERT_GE(l.got.size(), 3u);
    const IbReceivedMad& t = l.got[2];
    EXPECT_EQ(t.smp.Mad().GetMethod(), IbMadMethod::Trap);
    EXPECT_EQ(t.smp.Mad().GetAttributeId(), IbSmAttr::Notice);
    EXPECT_EQ(t.view.lrh.GetSlid(), swRLid);
    IbNotice n;
    n.ReadFrom(t.smp.Data());
    EXPECT_TRUE(n.isGeneric);
    EXPECT_EQ(n.trapNumber, 128);
    EXPECT_EQ(n.producerType, 2u);
    EXPECT_EQ(n.issuerLid, swRLid);
    EXPECT_EQ((n.dataDetails[0] << 8) | n.dataDetails[1], swRLid);
    EXPECT_EQ(IbMgmtHelper::GetSma(l.SwR())->GetTrapsSent(), 1u);
    // SwitchInfo.PortStateChange is set until the SM writes 1 to it.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::SwitchInfo, 0, kToSwR), MicroSeconds(100));
    IbSwitchInfo si;
    si.ReadFrom(l.got.back().smp.Data());
    EXPECT_TRUE(si.portStateChange);
    IbSmp clear = l.DrSmp(IbMadMethod::Set, IbSmAttr::SwitchInfo, 0, kToSwR);
    si.WriteTo(clear.Data());
    l.Dr(clear, MicroSeconds(125));
    si.ReadFrom(l.got.back().smp.Data());
    EXPECT_FALSE(si.portStateChange);
    pcap.Close();
    if (system("command -v tshark >/dev/null 2>&1") == 0)
    {
        // tshark reads the trap as Trap 128 with the switch's LID as LIDADDR.
        int st = -1;
        auto rows = cnuas_test::TsharkFieldRows(
            path, {"infiniband.notice.trapnumberdeviceid", "infiniband.trap.lidaddr",
                   "infiniband.notice.issuerlid", "_ws.malformed"},
            "-Y infiniband.notice.trapnumberdeviceid", &st);
        ASSERT_EQ(st, 0);
        ASSERT_EQ(rows.size(), 1u);
        char lid[8];
        std::snprintf(lid, sizeof(lid), "0x%04x", swRLid);
        EXPECT_EQ(rows[0], (std::vector<std::string>{"0x0080", lid, lid, ""}));
    }
    unlink(path.c_str());
}

// SMInfo belongs to the SM behind a port, not to the SMA (IBA vol. 1 §14.2.5.13): without an SM
// the SMA answers status 3; with one, the SM's own answer goes back on the wire.
TEST(MgmtAgents, SmInfoGoesToTheSmBehindThePort)
{
    Line l;
    Ptr<IbSmaAgent> h1Sma = IbMgmtHelper::GetSma(l.f.hosts.Get(1));
    l.RunUntil(MicroSeconds(5));
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::SmInfo, 0, kToH1), MicroSeconds(5));
    ASSERT_EQ(l.got.size(), 1u);
    EXPECT_EQ(l.got[0].smp.GetSmpStatus(), IbMadStatus::UnsupportedMethodAttr);

    // An SM on h1 (a stand-in that answers with values chosen here, not by the SMA).
    IbSmInfo mine;
    mine.guid = 0x0011223344556677ULL;
    mine.actCount = 4242;
    mine.priority = 11;
    mine.smState = static_cast<uint8_t>(IbSmState::Standby);
    bool alive = true;
    std::vector<uint8_t> methodsSeen;
    h1Sma->SetSmInfoHandler(IbSmaAgent::SmInfoHandler(
        [&](const IbSmp& req, IbSmp& resp) {
            methodsSeen.push_back(req.Mad().GetMethod());
            if (!alive || req.Mad().GetMethod() != IbMadMethod::Get)
            {
                return uint16_t(IbMadStatus::UnsupportedMethodAttr);
            }
            resp = req;
            mine.WriteTo(resp.Data());
            return uint16_t(IbMadStatus::Ok);
        }));
    IbSmp get = l.DrSmp(IbMadMethod::Get, IbSmAttr::SmInfo, 0, kToH1);
    const uint64_t tid = get.Mad().GetTransactionId();
    l.Dr(get, MicroSeconds(30));
    ASSERT_EQ(l.got.size(), 2u);
    const IbSmp& a = l.got[1].smp;
    EXPECT_EQ(a.GetSmpStatus(), 0);
    EXPECT_EQ(a.Mad().GetMethod(), IbMadMethod::GetResp);
    EXPECT_EQ(a.Mad().GetAttributeId(), IbSmAttr::SmInfo);
    EXPECT_EQ(a.Mad().GetTransactionId(), tid);
    IbSmInfo back;
    back.ReadFrom(a.Data());
    EXPECT_EQ(back.guid, mine.guid);
    EXPECT_EQ(back.actCount, mine.actCount);
    EXPECT_EQ(back.priority, mine.priority);
    EXPECT_EQ(back.smState, mine.smState);
    // A method the SM refuses, and an SM that has stopped: status 3, never a crash or silence.
    l.Dr(l.DrSmp(IbMadMethod::Set, IbSmAttr::SmInfo, 1, kToH1), MicroSeconds(55));
    alive = false;
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::SmInfo, 0, kToH1), MicroSeconds(80));
    ASSERT_EQ(l.got.size(), 4u);
    EXPECT_EQ(l.got[2].smp.GetSmpStatus(), IbMadStatus::UnsupportedMethodAttr);
    EXPECT_EQ(l.got[3].smp.GetSmpStatus(), IbMadStatus::UnsupportedMethodAttr);
    EXPECT_EQ(methodsSeen,
              (std::vector<uint8_t>{IbMadMethod::Get, IbMadMethod::Set, IbMadMethod::Get}));
}

// SMInfo.SM_Key reads as 0 for a requester that passed the M_Key check only as a Get under
// protection bits 1 (IBA vol. 1 §14.2.5.13, as PortInfo.M_Key, §14.2.4.1); the SM's own status
// for a Set it refuses goes back with its data.
TEST(MgmtAgents, SmInfoKeyIsHiddenFromARequesterWithoutTheMKey)
{
    Line l;
    Ptr<IbSmaAgent> h1Sma = IbMgmtHelper::GetSma(l.f.hosts.Get(1));
    IbSmInfo mine;
    mine.guid = 0x0011223344556677ULL;
    mine.smKey = 0x77;
    mine.smState = static_cast<uint8_t>(IbSmState::Master);
    h1Sma->SetSmInfoHandler(IbSmaAgent::SmInfoHandler([&](const IbSmp& req, IbSmp& resp) {
        resp = req;
        mine.WriteTo(resp.Data());
        return uint16_t(req.Mad().GetMethod() == IbMadMethod::Get ? IbMadStatus::Ok
                                                                  : IbMadStatus::InvalidField);
    }));
    l.RunUntil(MicroSeconds(5));
    l.SetH1MKey(0x1122334455667788ULL, 1);
    ASSERT_FALSE(::testing::Test::HasFailure());
    // Without the M_Key: answered, the SM_Key zeroed, the rest the SM's.
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::SmInfo, 0, kToH1), MicroSeconds(55));
    ASSERT_EQ(l.got.size(), 3u);
    EXPECT_EQ(l.got[2].smp.GetSmpStatus(), 0);
    IbSmInfo seen;
    seen.ReadFrom(l.got[2].smp.Data());
    EXPECT_EQ(seen.smKey, 0u);
    EXPECT_EQ(seen.guid, mine.guid);
    EXPECT_EQ(seen.smState, static_cast<uint8_t>(IbSmState::Master));
    // With it: the SM_Key.
    IbSmp keyed = l.DrSmp(IbMadMethod::Get, IbSmAttr::SmInfo, 0, kToH1);
    keyed.SetMKey(0x1122334455667788ULL);
    l.Dr(keyed, MicroSeconds(80));
    ASSERT_EQ(l.got.size(), 4u);
    seen.ReadFrom(l.got[3].smp.Data());
    EXPECT_EQ(seen.smKey, 0x77u);
    // A Set the SM refuses: its status (7) and its SMInfo.
    IbSmp handover = l.DrSmp(IbMadMethod::Set, IbSmAttr::SmInfo, 1, kToH1);
    handover.SetMKey(0x1122334455667788ULL);
    l.Dr(handover, MicroSeconds(105));
    ASSERT_EQ(l.got.size(), 5u);
    EXPECT_EQ(l.got[4].smp.GetSmpStatus(), IbMadStatus::InvalidField);
    seen.ReadFrom(l.got[4].smp.Data());
    EXPECT_EQ(seen.guid, mine.guid);
}

// IBA vol. 1 §14.2.5.4: PortStateChange (and so Trap 128) follows links coming and going
// (Down->Init, anything->Down), not the SM's own PortInfo Sets to Armed and Active.
TEST(MgmtAgents, ArmingAndActivatingPortsRaisesNoTrap)
{
    Line l;
    Ptr<IbSmaAgent> swRSma = IbMgmtHelper::GetSma(l.SwR());
    IbStaticSubnetHelper subnet;
    subnet.Configure(l.f.nodes);
    const uint16_t h0Lid = subnet.GetLid(l.f.hosts.Get(0));
    l.RunUntil(MicroSeconds(5));
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToSwR), MicroSeconds(6));
    IbPortInfo p0;
    p0.ReadFrom(l.got[0].smp.Data());
    p0.masterSmLid = h0Lid;
    IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToSwR);
    p0.WriteTo(set.Data());
    l.Dr(set, MicroSeconds(30));
    // The static helper left every port Active: retrain swR's port 1 (to h1) so that it is
    // back in Init (Active -> Down -> Init: two real changes, traps sent for them).
    Ptr<IbNetDevice> swRPort1 = l.SwR()->GetObject<IbSwitch>()->GetPort(1);
    std::vector<uint8_t> states;
    swRPort1->TraceConnectWithoutContext(
        "PortState", Callback<void, uint8_t, uint8_t>(
                         [&states](uint8_t, uint8_t s) { states.push_back(s); }));
    Simulator::Schedule(MicroSeconds(1), [&]() { swRPort1->SetPortState(IbPortState::Down); });
    l.RunUntil(MicroSeconds(70));
    ASSERT_EQ(swRPort1->GetPortState(), IbPortState::Init);
    EXPECT_GT(swRSma->GetTrapsSent(), 0u);
    // Clear PortStateChange (written as 1, §14.2.5.4).
    IbSwitchInfo si;
    si.portStateChange = true;
    IbSmp clear = l.DrSmp(IbMadMethod::Set, IbSmAttr::SwitchInfo, 0, kToSwR);
    si.WriteTo(clear.Data());
    l.Dr(clear, MicroSeconds(70));
    si.ReadFrom(l.got.back().smp.Data());
    EXPECT_FALSE(si.portStateChange);
    const uint64_t trapsBefore = swRSma->GetTrapsSent();
    // Init -> Armed -> Active by SubnSet(PortInfo), as an SM's link manager does.
    Time at = MicroSeconds(100);
    for (uint8_t to : {uint8_t(3), uint8_t(4)})
    {
        IbSmp get = l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 1, kToSwR);
        l.Dr(get, at);
        IbPortInfo pi;
        pi.ReadFrom(l.got.back().smp.Data());
        pi.portState = to;
        pi.portPhysicalState = 0;
        pi.linkDownDefaultState = 0;
        pi.linkWidthEnabled = 0;
        pi.linkSpeedEnabled = 0;
        pi.operationalVls = 0;
        IbSmp s = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 1, kToSwR);
        pi.WriteTo(s.Data());
        l.Dr(s, at + MicroSeconds(25));
        EXPECT_EQ(l.got.back().smp.GetSmpStatus(), 0);
        at += MicroSeconds(50);
    }
    ASSERT_FALSE(states.empty());
    EXPECT_EQ(states.back(), static_cast<uint8_t>(IbPortState::Active));
    EXPECT_EQ(swRSma->GetTrapsSent(), trapsBefore);
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::SwitchInfo, 0, kToSwR), at);
    si.ReadFrom(l.got.back().smp.Data());
    EXPECT_FALSE(si.portStateChange);
    // The link going down is a change the SM must hear of.
    Simulator::Schedule(MicroSeconds(1), [&]() { l.H1Port()->SetPhysicalLinkDown(); });
    l.RunUntil(at + MicroSeconds(40));
    EXPECT_EQ(swRSma->GetTrapsSent(), trapsBefore + 1);
    l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::SwitchInfo, 0, kToSwR), at + MicroSeconds(45));
    si.ReadFrom(l.got.back().smp.Data());
    EXPECT_TRUE(si.portStateChange);
}

TEST(MgmtAgents, TrapRepeatsUntilRepressed)
{
    for (bool repress : {false, true})
    {
        Line l;
        Ptr<IbSmaAgent> swRSma = IbMgmtHelper::GetSma(l.SwR());
        swRSma->SetAttribute("TrapRepeatInterval", TimeValue(MicroSeconds(5)));
        swRSma->SetAttribute("TrapRepeats", UintegerValue(3));
        IbStaticSubnetHelper subnet;
        subnet.Configure(l.f.nodes);
        const uint16_t h0Lid = subnet.GetLid(l.f.hosts.Get(0));
        const uint16_t swRLid = subnet.GetLid(l.SwR());
        l.RunUntil(MicroSeconds(5));
        l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToSwR), MicroSeconds(6));
        IbPortInfo p0;
        p0.ReadFrom(l.got[0].smp.Data());
        p0.masterSmLid = h0Lid;
        IbSmp set = l.DrSmp(IbMadMethod::Set, IbSmAttr::PortInfo, 0, kToSwR);
        p0.WriteTo(set.Data());
        l.Dr(set, MicroSeconds(30));
        l.got.clear();
        if (repress)
        {
            // The SM acknowledges every trap it gets with a TrapRepress of the same TID.
            l.h0->SetManagerHandler(Callback<void, const IbReceivedMad&>(
                [&l, swRLid](const IbReceivedMad& m) {
                    l.got.push_back(m);
                    if (m.smp.Mad().GetMethod() == IbMadMethod::Trap)
                    {
                        IbSmp r = m.smp;
                        r.Mad().SetMethod(IbMadMethod::TrapRepress);
                        Simulator::ScheduleNow(
                            [&l, r, swRLid]() { l.h0->SendLidRoutedSmp(1, r, swRLid); });
                    }
                }));
        }
        Simulator::Schedule(MicroSeconds(1), [&]() { l.H1Port()->SetPhysicalLinkDown(); });
        l.RunUntil(MicroSeconds(100));
        // Unrepressed: the first trap and three repetitions, one TransactionID.
        const size_t want = repress ? 1 : 4;
        ASSERT_EQ(l.got.size(), want) << "repress=" << repress;
        for (auto& g : l.got)
        {
            EXPECT_EQ(g.smp.Mad().GetMethod(), IbMadMethod::Trap);
            EXPECT_EQ(g.smp.Mad().GetTransactionId(), l.got[0].smp.Mad().GetTransactionId());
        }
        EXPECT_EQ(swRSma->GetTrapsSent(), want);
        EXPECT_EQ(swRSma->GetTrapsRepressed(), repress ? 1u : 0u);
    }
}

// What an SM sweep looks like in a trace: h0's pcap decodes in tshark as SMPs with their
// attributes and directed-route paths, and nothing is malformed.
TEST(MgmtAgents, SweepTraceDecodesInTshark)
{
    if (system("command -v tshark >/dev/null 2>&1") != 0)
    {
        GTEST_SKIP() << "tshark not installed";
    }
    const std::string path = "/tmp/cnuas-mgmt-sweep-" + std::to_string(getpid()) + ".pcap";
    {
        Line l;
        IbPcapHelper pcap;
        ASSERT_TRUE(pcap.Enable(l.f.HostPort(0), path));
        // A switch port too: the SMPs swL forwards are its own packets (SendManagementPacket).
        ASSERT_TRUE(pcap.Enable(l.f.Port(2, 2), path + ".swL"));
        l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::NodeInfo, 0, kToH1), MicroSeconds(5));
        l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::PortInfo, 0, kToH1), MicroSeconds(30));
        l.Dr(l.DrSmp(IbMadMethod::Get, IbSmAttr::SwitchInfo, 0, kToSwR), MicroSeconds(55));
        ASSERT_EQ(l.got.size(), 3u);
        pcap.Close();
    }
    // Every CRC of both traces is right (the checker recomputes ICRC and VCRC).
    for (const std::string& p : {path, path + ".swL"})
    {
        TraceCheckReport rep = CheckTrace(p);
        EXPECT_TRUE(rep.ok()) << rep.Summary();
        EXPECT_EQ(rep.packets, 6u); // three requests and three answers cross both ports
    }
    int st = -1;
    auto rows = cnuas_test::TsharkFieldRows(
        path,
        {"_ws.col.Info", "infiniband.smpdirected.hopcount", "infiniband.smpdirected.smpstatus",
         "infiniband.nodeinfo.localportnum", "infiniband.portinfo.portstate",
         "_ws.malformed"},
        "", &st);
    ASSERT_EQ(st, 0);
    ASSERT_EQ(rows.size(), 6u);
    const char* want[] = {"SubnGet(NodeInfo)",   "SubnGetResp(NodeInfo)",
                          "SubnGet(PortInfo)",   "SubnGetResp(PortInfo)",
                          "SubnGet(SwitchInfo)", "SubnGetResp(SwitchInfo)"};
    for (size_t i = 0; i < rows.size(); ++i)
    {
        ASSERT_EQ(rows[i].size(), 6u);
        EXPECT_NE(rows[i][0].find(want[i]), std::string::npos) << rows[i][0];
        EXPECT_EQ(rows[i][5], "") << "malformed: " << rows[i][0];
        EXPECT_EQ(rows[i][2], i % 2 == 0 ? "0x0000" : "0x8000"); // D bit on the answers
    }
    EXPECT_EQ(rows[0][1], "0x03");
    EXPECT_EQ(rows[1][3], "0x01");
    EXPECT_EQ(rows[3][4], "0x02"); // Init: no SM has run
    // The PortInfo and SwitchInfo answers as Wireshark reads their fields: 4x active out of
    // 1x/2x/4x supported, VL0-7 capable with VL0 operational, MTU 4096, QDR base speed (HDR is
    // an extended speed), capability mask IsSLMappingSupported | IsSystemImageGUIDSupported |
    // IsExtendedSpeedsSupported; the switch's LinearFDBCap 0xC000.
    auto info = cnuas_test::TsharkFieldRows(
        path,
        {"infiniband.portinfo.linkwidthactive", "infiniband.portinfo.linkwidthsupported",
         "infiniband.portinfo.vlcap", "infiniband.portinfo.operationalvls",
         "infiniband.portinfo.neighbormtu", "infiniband.portinfo.linkspeedactive",
         "infiniband.portinfo.capabilitymask", "infiniband.switchinfo.linearfdbcap"},
        "", &st);
    ASSERT_EQ(info.size(), 6u);
    EXPECT_EQ(info[3], (std::vector<std::string>{"0x02", "0x13", "0x04", "0x01", "0x05", "0x04",
                                                 "0x00004840", ""}));
    EXPECT_EQ(info[5][7], "0xc000");
    const std::string v =
        cnuas_test::RunCommand("tshark -r '" + path + "' -V -Y frame.number==2 2>/dev/null");
    // The answer's paths: out 1,2,1 and back in on 1,2,1.
    EXPECT_NE(v.find("Initial Path: 00010201000000"), std::string::npos) << v;
    EXPECT_NE(v.find("Return Path: 00010201000000"), std::string::npos) << v;
    unlink(path.c_str());
    unlink((path + ".swL").c_str());
}
