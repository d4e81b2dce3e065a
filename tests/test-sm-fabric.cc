// The subnet manager on the wire: a simulated fabric with the real SMA on every node and the SM
// on one host. Before the SM: ports Init, LID 0, data refused. After: every port Active, unique
// LIDs, every host reaches every other with real packets over the LFTs the SM wrote, no loops.
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/ib/ib-packet-source.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/trace/ib-trace-helper.h"
#include "ib-test-packets.h"
#include "helpers/mgmt/mgmt-helper.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sma-agent.h"
#include "models/mgmt/ib-subnet-manager.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/error-model.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/data-rate.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unistd.h>

using namespace ns3;

namespace
{

/// Runs the simulation until `done()` holds (checked every 10 us) or `limit` passes.
void
RunUntil(const std::function<bool()>& done, Time limit)
{
    const Time end = Simulator::Now() + limit;
    std::function<void()> check;
    check = [&]() {
        if (done() || Simulator::Now() >= end)
        {
            Simulator::Stop();
            return;
        }
        Simulator::Schedule(MicroSeconds(10), check);
    };
    Simulator::Schedule(MicroSeconds(10), check);
    Simulator::Run();
}

/// Every linked port of the fabric.
std::vector<Ptr<IbNetDevice>>
LinkedPorts(const IbFabric& f)
{
    std::vector<Ptr<IbNetDevice>> out;
    for (auto& p : f.AllPorts())
    {
        if (p->GetPeer())
        {
            out.push_back(p);
        }
    }
    return out;
}

/// Follows the switches' real LFTs from host `from` to `dlid`: number of cables crossed, -1 if
/// the walk dead-ends or revisits a switch.
int
WalkLfts(const IbFabric& f, uint32_t from, uint16_t dlid)
{
    Ptr<IbNetDevice> at = f.HostPort(from)->GetPeer();
    std::set<uint32_t> seen;
    for (int hops = 1;; ++hops)
    {
        if (!at->IsSwitchPort())
        {
            return at->GetLid() == dlid ? hops : -1;
        }
        Ptr<IbSwitch> sw = at->GetNode()->GetObject<IbSwitch>();
        if (sw->GetLid() == dlid)
        {
            return hops;
        }
        if (!seen.insert(at->GetNode()->GetId()).second)
        {
            return -1;
        }
        const uint8_t out = sw->GetLftEntry(dlid);
        if (out == 0 || out > sw->GetNPorts() || !sw->GetPort(out)->GetPeer())
        {
            return -1;
        }
        at = sw->GetPort(out)->GetPeer();
    }
}

/// Every host sends one small packet to every other host's LID (as the ports report it);
/// returns the sinks. Host `skip` (if any) neither sends nor is sent to.
std::vector<Ptr<IbPacketSink>>
AllToAll(const IbFabric& f, Time start, uint32_t payload = 64, int skip = -1)
{
    const uint32_t n = f.hosts.GetN();
    std::vector<Ptr<IbPacketSink>> sinks;
    for (uint32_t i = 0; i < n; ++i)
    {
        Ptr<IbPacketSink> sink = CreateObject<IbPacketSink>();
        f.hosts.Get(i)->AddApplication(sink);
        sink->SetStartTime(Seconds(0));
        sinks.push_back(sink);
        if (static_cast<int>(i) == skip)
        {
            continue;
        }
        std::vector<uint16_t> lids;
        for (uint32_t j = 1; j < n; ++j)
        {
            if (static_cast<int>((i + j) % n) != skip)
            {
                lids.push_back(f.HostPort((i + j) % n)->GetLid());
            }
        }
        Ptr<IbPacketSource> src = CreateObject<IbPacketSource>();
        src->SetAttribute("PayloadBytes", UintegerValue(payload));
        src->SetAttribute("MaxBytes", UintegerValue(uint64_t(payload) * lids.size()));
        src->SetDestinations(lids);
        f.hosts.Get(i)->AddApplication(src);
        src->SetStartTime(start - Simulator::Now());
    }
    return sinks;
}

} // namespace

class SmFabric : public ::testing::TestWithParam<std::string>
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

TEST_P(SmFabric, BringsUpTheFabricAndEveryHostReachesEveryOther)
{
    IbFabricHelper fh;
    IbFabric f = fh.Build(BuildTopologyFromSpec(GetParam()));
    IbSmHelper smh;
    Ptr<IbSubnetManager> sm = smh.Install(f, f.hosts.Get(0), MicroSeconds(2));
    const auto ports = LinkedPorts(f);

    // Before the SM (links trained at 1 us, SM starts at 2 us): Init, LID 0, data refused.
    Simulator::Stop(MicroSeconds(1.5));
    Simulator::Run();
    for (auto& p : ports)
    {
        EXPECT_EQ(p->GetPortState(), IbPortState::Init);
        EXPECT_EQ(p->GetLid(), 0);
    }
    Ptr<Packet> data = Create<Packet>(64);
    EXPECT_FALSE(f.HostPort(0)->SendIb(data, 1, 0));
    EXPECT_EQ(f.HostPort(0)->GetCounters().portXmitDiscards, 1u);

    RunUntil([&]() { return sm->GetPhase() == IbSweepPhase::Up; }, MilliSeconds(50));
    ASSERT_GE(sm->GetLastSubnetUp(), Seconds(0)) << "subnet never came up, phase "
                                                 << IbSweepPhaseName(sm->GetPhase());
    EXPECT_EQ(sm->GetSmState(), IbSmState::Master);
    EXPECT_EQ(sm->GetSubnet().NodeCount(), static_cast<int32_t>(f.nodes.GetN()));
    EXPECT_EQ(sm->GetSmpsTimedOut(), 0u);
    EXPECT_EQ(sm->GetBadResponses(), 0u);

    // What the ports and switches themselves now say.
    std::set<uint16_t> lids;
    for (auto& p : ports)
    {
        EXPECT_EQ(p->GetPortState(), IbPortState::Active);
        if (!p->IsSwitchPort())
        {
            EXPECT_NE(p->GetLid(), 0);
            EXPECT_TRUE(lids.insert(p->GetLid()).second) << "LID " << p->GetLid() << " twice";
            EXPECT_EQ(p->GetSmLid(), f.HostPort(0)->GetLid());
        }
    }
    for (uint32_t i = 0; i < f.switches.GetN(); ++i)
    {
        const uint16_t lid = f.switches.Get(i)->GetObject<IbSwitch>()->GetLid();
        EXPECT_NE(lid, 0);
        EXPECT_TRUE(lids.insert(lid).second) << "switch LID " << lid << " twice";
    }
    EXPECT_EQ(sm->GetSmLid(), f.HostPort(0)->GetLid());

    // The LFTs the SMAs hold lead every host to every LID, without loops.
    for (uint32_t h = 0; h < f.hosts.GetN(); ++h)
    {
        for (uint16_t lid : lids)
        {
            if (lid != f.HostPort(h)->GetLid())
            {
                EXPECT_GT(WalkLfts(f, h, lid), 0) << "host " << h << " -> LID " << lid;
            }
        }
    }

    // Real packets: one from every host to every other.
    auto sinks = AllToAll(f, Simulator::Now() + MicroSeconds(1));
    Simulator::Stop(MilliSeconds(2));
    Simulator::Run();
    const uint32_t n = f.hosts.GetN();
    for (uint32_t i = 0; i < n; ++i)
    {
        EXPECT_EQ(sinks[i]->GetTotalPackets(), n - 1) << "host " << i;
        EXPECT_EQ(sinks[i]->GetFlows().size(), n - 1) << "host " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Fabrics,
                         SmFabric,
                         ::testing::Values("pair",
                                           "leaf-spine:leaves=4,spines=2,hosts=4",
                                           "fat-tree:k=4",
                                           "fat-tree:k=8"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string s = info.param;
                             std::string out;
                             for (char c : s)
                             {
                                 out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             }
                             return out;
                         });

namespace
{
/// A k=4 fat-tree brought up by an SM on h0 that sweeps every 50 us.
struct UpFabric
{
    IbFabric f;
    Ptr<IbSubnetManager> sm;
};

UpFabric
BringUp(const std::string& spec, Time sweep = MicroSeconds(50))
{
    UpFabric u;
    u.f = IbFabricHelper().Build(BuildTopologyFromSpec(spec));
    IbSmHelper smh;
    smh.SetSmAttribute("SweepInterval", TimeValue(sweep));
    u.sm = smh.Install(u.f, u.f.hosts.Get(0), MicroSeconds(2));
    RunUntil([&]() { return u.sm->GetPhase() == IbSweepPhase::Up; }, MilliSeconds(50));
    return u;
}

/// Routes from every host to every other host that cross only LinkUp ports.
uint32_t
BrokenRoutes(const IbFabric& f)
{
    uint32_t broken = 0;
    for (uint32_t a = 0; a < f.hosts.GetN(); ++a)
    {
        for (uint32_t b = 0; b < f.hosts.GetN(); ++b)
        {
            if (a == b)
            {
                continue;
            }
            const uint16_t dlid = f.HostPort(b)->GetLid();
            Ptr<IbNetDevice> at = f.HostPort(a)->GetPeer();
            bool ok = false;
            for (int guard = 0; guard < 16 && at; ++guard)
            {
                if (!at->IsSwitchPort())
                {
                    ok = at->GetLid() == dlid;
                    break;
                }
                Ptr<IbSwitch> sw = at->GetNode()->GetObject<IbSwitch>();
                const uint8_t out = sw->GetLftEntry(dlid);
                if (out == 0 || out > sw->GetNPorts() ||
                    sw->GetPort(out)->GetPhysState() != IbPhysState::LinkUp)
                {
                    break;
                }
                at = sw->GetPort(out)->GetPeer();
            }
            broken += ok ? 0 : 1;
        }
    }
    return broken;
}
} // namespace

class SmSweep : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

TEST_F(SmSweep, ALinkGoingDownIsRoutedAroundAndComingBackIsActivated)
{
    UpFabric u = BringUp("fat-tree:k=4");
    ASSERT_EQ(u.sm->GetPhase(), IbSweepPhase::Up);
    ASSERT_EQ(BrokenRoutes(u.f), 0u);
    const uint64_t heavy = u.sm->GetHeavySweeps();
    // edge0_0's uplink to agg0_0 (fat-tree ports: edge port k/2+1 = 3).
    const uint32_t edge = *u.f.topology.Find("edge0_0");
    Ptr<IbNetDevice> up = u.f.Port(edge, 3);
    Ptr<IbNetDevice> peer = up->GetPeer();
    // A flow whose route crosses that cable, paced, running across the failure.
    const uint32_t edgeNodeId = u.f.nodes.Get(edge)->GetId();
    int from = -1;
    int to = -1;
    for (uint32_t a = 0; a < 2 && from < 0; ++a) // h0, h1 hang off edge0_0
    {
        for (uint32_t b = 4; b < u.f.hosts.GetN() && from < 0; ++b)
        {
            for (const IbRouteHop& hop : IbFabricRoute(u.f, a, u.f.HostPort(b)->GetLid()))
            {
                if (hop.node == edgeNodeId && hop.port == 3)
                {
                    from = static_cast<int>(a);
                    to = static_cast<int>(b);
                }
            }
        }
    }
    ASSERT_GE(from, 0) << "no route uses edge0_0 port 3";
    Ptr<IbPacketSink> sink = CreateObject<IbPacketSink>();
    u.f.hosts.Get(to)->AddApplication(sink);
    sink->SetStartTime(Seconds(0));
    Ptr<IbPacketSource> src = CreateObject<IbPacketSource>();
    src->SetAttribute("DestinationLid", UintegerValue(u.f.HostPort(to)->GetLid()));
    src->SetAttribute("PayloadBytes", UintegerValue(256));
    src->SetAttribute("DataRate", DataRateValue(DataRate("10Gbps")));
    u.f.hosts.Get(from)->AddApplication(src);
    src->SetStartTime(Seconds(0));
    src->SetStopTime(MilliSeconds(3));
    RunUntil([]() { return false; }, MicroSeconds(50));
    const uint64_t beforeFailure = sink->GetTotalPackets();
    EXPECT_GT(beforeFailure, 0u);

    up->SetPhysicalLinkDown();
    const Time failedAt = Simulator::Now();
    EXPECT_GT(BrokenRoutes(u.f), 0u); // the old tables send some traffic into the dead link
    RunUntil([&]() { return u.sm->GetHeavySweeps() > heavy &&
                            u.sm->GetPhase() == IbSweepPhase::Up; },
             MilliSeconds(5));
    EXPECT_EQ(u.sm->GetPhase(), IbSweepPhase::Up);
    const Time reroutedAt = Simulator::Now();
    const uint64_t atReroute = sink->GetTotalPackets();
    RunUntil([]() { return false; }, MicroSeconds(100));
    // The flow resumed on the new route: packets keep arriving after the reroute.
    EXPECT_GT(sink->GetTotalPackets(), atReroute + 50) << "failed at " << failedAt.As(Time::US)
                                                        << ", rerouted at "
                                                        << reroutedAt.As(Time::US);
    EXPECT_EQ(BrokenRoutes(u.f), 0u);
    const IbSmSubnet& s = u.sm->GetSubnet();
    const int32_t edgeIdx = s.Find(u.f.nodes.Get(edge)->GetObject<IbSwitch>()->GetNodeGuid());
    ASSERT_GE(edgeIdx, 0);
    EXPECT_LT(s.Node(edgeIdx).ports[3].peerNode, 0); // the SM no longer sees that cable
    // Traffic flows again, all of it: a packet from every host to every other (the paced
    // flow's packets arrive at its destination too, so count sources, not packets).
    auto sinks = AllToAll(u.f, Simulator::Now() + MicroSeconds(1));
    RunUntil([]() { return false; }, MicroSeconds(500));
    for (uint32_t i = 0; i < u.f.hosts.GetN(); ++i)
    {
        const auto& flows = sinks[i]->GetFlows();
        EXPECT_EQ(flows.size(), u.f.hosts.GetN() - 1) << "host " << i;
        for (uint32_t j = 0; j < u.f.hosts.GetN(); ++j)
        {
            if (j != i)
            {
                auto it = flows.find(u.f.HostPort(j)->GetLid());
                EXPECT_TRUE(it != flows.end() && it->second.packets >= 1) << j << " -> " << i;
            }
        }
    }

    // The cable comes back: it trains to Init, and the SM arms and activates both ends.
    const uint64_t heavy2 = u.sm->GetHeavySweeps();
    up->SetPhysicalLinkUp();
    RunUntil([&]() { return u.sm->GetHeavySweeps() > heavy2 &&
                            u.sm->GetPhase() == IbSweepPhase::Up &&
                            up->GetPortState() == IbPortState::Active; },
             MilliSeconds(5));
    EXPECT_EQ(up->GetPortState(), IbPortState::Active);
    EXPECT_EQ(peer->GetPortState(), IbPortState::Active);
    EXPECT_EQ(u.sm->GetSubnet().Node(edgeIdx).ports[3].peerNode >= 0, true);
}

// ---- the SM's transaction layer against a node that misbehaves --------------------------------

namespace
{
/// A sender that records what the SM sends and answers nothing.
struct Silent
{
    std::vector<IbSmp> sent;
    bool Send(const IbSmp& smp)
    {
        sent.push_back(smp);
        return true;
    }
};
} // namespace

TEST_F(SmSweep, UnansweredSmpsAreRetriedThenGivenUpWithoutHanging)
{
    Silent node;
    Ptr<IbSubnetManager> sm = CreateObject<IbSubnetManager>();
    sm->SetAttribute("SmpTimeout", TimeValue(MicroSeconds(10)));
    sm->SetAttribute("SmpRetries", UintegerValue(2));
    sm->SetAttribute("SweepInterval", TimeValue(MilliSeconds(1)));
    sm->SetSmpSender(MakeCallback(&Silent::Send, &node));
    sm->SetGuid(0x1234);
    Simulator::Schedule(MicroSeconds(1), &IbSubnetManager::Start, sm);
    Simulator::Stop(MicroSeconds(100));
    Simulator::Run();
    // One NodeInfo to hop 0, sent 1 + 2 times, then given up: the sweep ends empty (Idle).
    ASSERT_EQ(node.sent.size(), 3u);
    for (const IbSmp& s : node.sent)
    {
        EXPECT_EQ(s.Mad().GetAttributeId(), IbSmAttr::NodeInfo);
        EXPECT_EQ(s.GetHopCount(), 0);
        EXPECT_EQ(s.Mad().GetTransactionId(), node.sent[0].Mad().GetTransactionId());
    }
    EXPECT_EQ(sm->GetSmpsTimedOut(), 3u);
    EXPECT_EQ(sm->GetSmpsFailed(), 1u);
    EXPECT_EQ(sm->GetPhase(), IbSweepPhase::Idle);
    // It tries again a sweep interval later.
    Simulator::Stop(MilliSeconds(1));
    Simulator::Run();
    EXPECT_EQ(node.sent.size(), 6u);
    sm->Stop();
}

namespace
{
/// A k=4 fat-tree whose switches lose `loss` of what they receive, brought up by the built-in
/// SM with `timeout` as SmpTimeout, changed to `later` at `switchAt`: the SMPs it sent and
/// those that timed out, each with its time.
struct LossyBringUp
{
    using Key = std::tuple<uint16_t, uint8_t, uint32_t>; ///< attribute, method, attempt
    std::map<Key, std::multiset<int64_t>> sent;
    std::vector<std::pair<Key, int64_t>> timedOut;
    Ptr<IbSubnetManager> sm;
    std::function<void(uint16_t, uint8_t, uint32_t)> onSent;
    std::function<void(uint16_t, uint8_t, uint32_t)> onTimedOut;

    void Run(Time timeout, Time later, Time switchAt, double loss = 0.02)
    {
        IbFabricHelper fh;
        IbFabric f = fh.Build(BuildTopologyFromSpec("fat-tree:k=4"));
        int64_t stream = 100;
        for (uint32_t i = 0; i < f.switches.GetN(); ++i)
        {
            for (uint32_t d = 0; d < f.switches.Get(i)->GetNDevices(); ++d)
            {
                Ptr<IbNetDevice> port = DynamicCast<IbNetDevice>(f.switches.Get(i)->GetDevice(d));
                if (!port)
                {
                    continue;
                }
                Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
                em->SetAttribute("ErrorUnit", EnumValue(RateErrorModel::ERROR_UNIT_PACKET));
                em->SetAttribute("ErrorRate", DoubleValue(loss));
                em->AssignStreams(stream++);
                port->SetAttribute("ReceiveErrorModel", PointerValue(em));
            }
        }
        IbSmHelper smh;
        sm = smh.Install(f, f.hosts.Get(0), MicroSeconds(2));
        sm->SetAttribute("SmpTimeout", TimeValue(timeout));
        sm->SetAttribute("SmpRetries", UintegerValue(20));
        Simulator::Schedule(switchAt, [this, later]() {
            sm->SetAttribute("SmpTimeout", TimeValue(later));
        });
        onSent = [this](uint16_t a, uint8_t m, uint32_t n) {
            sent[{a, m, n}].insert(Simulator::Now().GetPicoSeconds());
        };
        onTimedOut = [this](uint16_t a, uint8_t m, uint32_t n) {
            timedOut.push_back({{a, m, n}, Simulator::Now().GetPicoSeconds()});
        };
        using Fn = std::function<void(uint16_t, uint8_t, uint32_t)>;
        sm->TraceConnectWithoutContext("SmpSent", MakeCallback(&Fn::operator(), &onSent));
        sm->TraceConnectWithoutContext("SmpTimedOut", MakeCallback(&Fn::operator(), &onTimedOut));
        RunUntil([&]() { return sm->GetPhase() == IbSweepPhase::Up; }, MilliSeconds(50));
    }

    /// Matches every timeout to a send of the same SMP one timeout earlier: `timeout` for a
    /// send before `switchAt`, `later` for one after (each send matched once).
    void ExpectEveryTimeoutOneTimeoutAfterItsSend(Time timeout, Time later, Time switchAt)
    {
        for (const auto& [key, at] : timedOut)
        {
            auto& times = sent[key];
            auto it = times.find(at - timeout.GetPicoSeconds());
            if (it == times.end() || *it >= switchAt.GetPicoSeconds())
            {
                it = times.find(at - later.GetPicoSeconds());
                if (it != times.end() && *it < switchAt.GetPicoSeconds())
                {
                    it = times.end();
                }
            }
            ASSERT_NE(it, times.end())
                << "a timeout at " << at << " ps with no send of attribute 0x" << std::hex
                << std::get<0>(key) << std::dec << " attempt " << std::get<2>(key)
                << " one SmpTimeout before it";
            times.erase(it);
        }
    }
};
} // namespace

// The SM keeps its SMPs' deadlines in one queue under one timer (answered SMPs leave stale
// entries behind): on a fabric whose switches lose a few per cent of what they receive, every
// timeout must still come exactly SmpTimeout after its send, none may hit an answered SMP, and
// the fabric must come up.
TEST_F(SmSweep, LostSmpsTimeOutExactlySmpTimeoutAfterTheirSend)
{
    const Time timeout = MicroSeconds(7);
    LossyBringUp run;
    run.Run(timeout, timeout, Seconds(1));
    ASSERT_EQ(run.sm->GetPhase(), IbSweepPhase::Up);
    ASSERT_GE(run.timedOut.size(), 5u) << "too few SMPs lost to test the timeouts";
    EXPECT_EQ(run.timedOut.size(), run.sm->GetSmpsTimedOut());
    EXPECT_EQ(run.sm->GetSmpsFailed(), 0u);
    run.ExpectEveryTimeoutOneTimeoutAfterItsSend(timeout, timeout, Seconds(1));
    run.sm->Stop();
}

// A shorter SmpTimeout set during the sweep: the SMPs sent after it are due before some sent
// earlier, so their deadlines go into the queue ahead of those; each still times out exactly
// its own timeout after its send. (8 % loss, so that an SMP lost just before the change is
// still waiting when one lost just after it is due: with deadlines appended unsorted, the later
// one's timeout comes late and this fails.)
TEST_F(SmSweep, ASmpTimeoutShortenedMidSweepStillTimesEachSmpOutOnTime)
{
    const Time first = MicroSeconds(9);
    const Time later = MicroSeconds(3);
    const Time switchAt = MicroSeconds(40);
    LossyBringUp run;
    run.Run(first, later, switchAt, 0.08);
    ASSERT_EQ(run.sm->GetPhase(), IbSweepPhase::Up);
    size_t early = 0;
    size_t late = 0;
    for (const auto& [key, at] : run.timedOut)
    {
        (at - first.GetPicoSeconds() < switchAt.GetPicoSeconds() ? early : late)++;
    }
    ASSERT_GE(early, 2u) << "too few SMPs lost before the change";
    ASSERT_GE(late, 2u) << "too few SMPs lost after the change";
    EXPECT_EQ(run.timedOut.size(), run.sm->GetSmpsTimedOut());
    EXPECT_EQ(run.sm->GetSmpsFailed(), 0u);
    run.ExpectEveryTimeoutOneTimeoutAfterItsSend(first, later, switchAt);
    run.sm->Stop();
}

TEST_F(SmSweep, ForgedAndMismatchedResponsesAreCountedNotTrusted)
{
    Silent node;
    Ptr<IbSubnetManager> sm = CreateObject<IbSubnetManager>();
    sm->SetSmpSender(MakeCallback(&Silent::Send, &node));
    sm->SetGuid(0x1234);
    sm->Start();
    ASSERT_EQ(node.sent.size(), 1u);
    const IbSmp req = node.sent[0];
    // An answer with a TID nobody asked for.
    IbSmp forged = req;
    forged.Mad().SetMethod(IbMadMethod::GetResp);
    forged.Mad().SetTransactionId(req.Mad().GetTransactionId() + 99);
    sm->ReceiveSmp(forged);
    // The right TID but another attribute.
    IbSmp wrongAttr = req;
    wrongAttr.Mad().SetMethod(IbMadMethod::GetResp);
    wrongAttr.Mad().SetAttributeId(IbSmAttr::PortInfo);
    sm->ReceiveSmp(wrongAttr);
    // A request (not a response) arriving at the manager.
    sm->ReceiveSmp(req);
    EXPECT_EQ(sm->GetBadResponses(), 3u);
    EXPECT_EQ(sm->GetSubnet().NodeCount(), 0);
    EXPECT_EQ(sm->GetPhase(), IbSweepPhase::Discover); // still waiting for the real answer
    // A NodeInfo answer that claims a router: counted, not added.
    IbSmp router = req;
    router.Mad().SetMethod(IbMadMethod::GetResp);
    router.SetDirection(true);
    IbNodeInfo ni;
    ni.nodeType = IbNodeType::Router;
    ni.numPorts = 2;
    ni.nodeGuid = 0x99;
    ni.WriteTo(router.Data());
    sm->ReceiveSmp(router);
    EXPECT_EQ(sm->GetBadResponses(), 4u);
    sm->Stop();
}

// The sweep as a trace: the SM's port's pcap decodes in tshark as directed-route SMPs (Gets and
// Sets of the attributes a sweep uses), every request answered, paths as long as the fabric is
// deep, nothing malformed.
TEST_F(SmSweep, SweepTraceDecodesInTsharkAsDirectedRouteSmps)
{
    if (system("command -v tshark >/dev/null 2>&1") != 0)
    {
        GTEST_SKIP() << "tshark not installed";
    }
    const std::string path = "/tmp/cnuas-sm-sweep-" + std::to_string(getpid()) + ".pcap";
    // The directed route to every node beyond the SM's own, as tshark prints InitialPath:
    // entry 0 (unused) and then the ports, one hex byte each, 64 bytes in all.
    std::set<std::string> nodePaths;
    {
        IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("fat-tree:k=4"));
        IbPcapHelper pcap;
        ASSERT_TRUE(pcap.Enable(f.HostPort(0), path));
        Ptr<IbSubnetManager> sm = IbSmHelper().Install(f, f.hosts.Get(0), MicroSeconds(2));
        RunUntil([&]() { return sm->GetPhase() == IbSweepPhase::Up; }, MilliSeconds(50));
        ASSERT_EQ(sm->GetPhase(), IbSweepPhase::Up);
        pcap.Close();
        const IbSmSubnet& s = sm->GetSubnet();
        for (int32_t i = 0; i < s.NodeCount(); ++i)
        {
            if (s.Node(i).path.empty())
            {
                continue; // the SM's own node: hop count 0, never on the wire
            }
            std::string hex = "00";
            for (uint8_t port : s.Node(i).path)
            {
                char b[3];
                std::snprintf(b, sizeof(b), "%02x", port);
                hex += b;
            }
            hex.resize(128, '0');
            nodePaths.insert(hex);
        }
        ASSERT_EQ(nodePaths.size(), f.nodes.GetN() - 1);
    }
    int st = -1;
    auto rows = cnuas_test::TsharkFieldRows(
        path,
        {"_ws.col.Info", "infiniband.smpdirected.hopcount", "infiniband.smpdirected.smpstatus",
         "infiniband.smpdirected.initialpath", "infiniband.mad.transactionid", "_ws.malformed",
         "_ws.expert"},
        "", &st);
    ASSERT_EQ(st, 0);
    ASSERT_GT(rows.size(), 100u);
    std::map<std::string, int> requests; // Info column of requests: how many
    std::map<std::string, int> pending;  // TID -> requests minus answers
    int maxHops = 0;
    bool sawPath = false;
    std::set<std::string> nodeInfoPaths;
    for (const auto& r : rows)
    {
        ASSERT_EQ(r.size(), 7u);
        EXPECT_EQ(r[5], "") << "malformed: " << r[0];
        if (r[0].find("SubnTrap") != std::string::npos)
        {
            continue; // trap 128 from a switch whose ports the SM armed
        }
        ASSERT_NE(r[1], "") << "not a directed-route SMP: " << r[0];
        const bool answer = r[0].find("Resp") != std::string::npos;
        // D bit (0x8000) on the way back, and status 0 both ways (§14.2.1.2).
        EXPECT_EQ(r[2], answer ? "0x8000" : "0x0000") << r[0];
        pending[r[4]] += answer ? -1 : 1;
        if (!answer)
        {
            const size_t at = r[0].find("Subn");
            ASSERT_NE(at, std::string::npos) << r[0];
            requests[r[0].substr(at, r[0].find(')', at) + 1 - at)]++;
            maxHops = std::max(maxHops, std::stoi(r[1], nullptr, 16));
            // Every path starts at the SM's port 1.
            EXPECT_EQ(r[3].substr(0, 4), "0001") << r[0] << " path " << r[3];
            sawPath = sawPath || r[3].size() >= 8;
            if (r[0].find("SubnGet(NodeInfo)") != std::string::npos)
            {
                nodeInfoPaths.insert(r[3]);
            }
        }
    }
    // Every node the SM knows was asked for its NodeInfo along the route the SM recorded.
    for (const std::string& p : nodePaths)
    {
        EXPECT_TRUE(nodeInfoPaths.count(p)) << "no NodeInfo Get along " << p;
    }
    for (const auto& [tid, n] : pending)
    {
        EXPECT_EQ(n, 0) << "transaction " << tid;
    }
    EXPECT_TRUE(sawPath);
    // h0 -> edge -> agg -> core -> agg -> edge -> a host of another pod: 6 hops.
    EXPECT_EQ(maxHops, 6);
    for (const char* want : {"SubnGet(NodeInfo)", "SubnGet(NodeDescription)", "SubnGet(PortInfo)",
                             "SubnGet(SwitchInfo)", "SubnSet(PortInfo)", "SubnSet(SwitchInfo)",
                             "SubnSet(LinearForwardingTable)"})
    {
        EXPECT_GT(requests[want], 0) << want;
    }
    unlink(path.c_str());
}

// IBA vol. 1 §14.2.5.4: arming and activating ports is the SM's own doing and raises no
// PortStateChange and no Trap 128, so one heavy sweep brings the fabric up and it stays quiet.
// A cable that goes down afterwards does raise Trap 128, which the SM acknowledges with a
// TrapRepress (§13.4.9) and answers with a heavy sweep.
TEST_F(SmSweep, OnlyLinkChangesRaiseTrapsAndTheyAreRepressed)
{
    UpFabric u = BringUp("leaf-spine:leaves=2,spines=2,hosts=2", MilliSeconds(1));
    ASSERT_EQ(u.sm->GetPhase(), IbSweepPhase::Up);
    auto trapsSent = [&u]() {
        uint64_t sent = 0;
        for (uint32_t i = 0; i < u.f.switches.GetN(); ++i)
        {
            sent += IbMgmtHelper::GetSma(u.f.switches.Get(i))->GetTrapsSent();
        }
        return sent;
    };
    EXPECT_EQ(trapsSent(), 0u);
    EXPECT_EQ(u.sm->GetTrapsReceived(), 0u);
    EXPECT_EQ(u.sm->GetHeavySweeps(), 1u);
    // Long after (several light sweeps): no trap, no new heavy sweep.
    RunUntil([]() { return false; }, MilliSeconds(20));
    EXPECT_EQ(trapsSent(), 0u);
    EXPECT_EQ(u.sm->GetHeavySweeps(), 1u);
    EXPECT_GT(u.sm->GetLightSweeps(), 10u);

    // h3's cable is pulled: its leaf traps, the SM represses the trap and sweeps.
    Time heavyAt = PicoSeconds(-1);
    u.sm->TraceConnectWithoutContext("SweepStarted", Callback<void, bool>([&heavyAt](bool h) {
                                         if (h && heavyAt < Seconds(0))
                                         {
                                             heavyAt = Simulator::Now();
                                         }
                                     }));
    const Time pulled = Simulator::Now();
    u.f.HostPort(3)->SetPhysicalLinkDown();
    RunUntil([&]() { return u.sm->GetHeavySweeps() > 1 && u.sm->GetPhase() == IbSweepPhase::Up; },
             MilliSeconds(5));
    EXPECT_GE(trapsSent(), 1u);
    EXPECT_GE(u.sm->GetTrapsReceived(), 1u);
    uint64_t repressed = 0;
    for (uint32_t i = 0; i < u.f.switches.GetN(); ++i)
    {
        repressed += IbMgmtHelper::GetSma(u.f.switches.Get(i))->GetTrapsRepressed();
    }
    EXPECT_EQ(repressed, trapsSent());
    // Found by the trap within microseconds, not by a light sweep (one every 1 ms).
    EXPECT_EQ(u.sm->GetHeavySweeps(), 2u);
    ASSERT_GE(heavyAt, pulled);
    EXPECT_LT(heavyAt - pulled, MicroSeconds(50));
    EXPECT_EQ(u.sm->GetSubnet().NodeCount(), static_cast<int32_t>(u.f.nodes.GetN()) - 1);
}

// ---- master and standby (IBA vol. 1 §14.4.1), everything on the wire -----------------------

namespace
{
/// Two SMs on one fabric, both installed by IbSmHelper: every SMP, SMInfo included, crosses
/// the wire through the nodes' SMIs, and each node's SMA hands SMInfo to its SM.
struct TwoSms
{
    IbFabric f;
    Ptr<IbSubnetManager> sm[2];
    uint32_t host[2] = {0, 0};
    /// SMInfo Gets each SM sent (first attempts), and those the other SM's SMA answered Ok.
    uint64_t smInfoSent[2] = {0, 0};
    uint64_t smInfoAnswered[2] = {0, 0};
    Time becameMaster[2] = {PicoSeconds(-1), PicoSeconds(-1)};

    /// SM k on host hk with priority prio_k; SM 1 starts at `start1` and has SM_Key `key1`
    /// (SM 0: 1, the default).
    void Install(const std::string& spec, uint32_t h0, uint8_t prio0, uint32_t h1, uint8_t prio1,
                 Time sweep, Time start1 = MicroSeconds(2), uint64_t key1 = 1)
    {
        f = IbFabricHelper().Build(BuildTopologyFromSpec(spec));
        IbSmHelper smh;
        smh.SetSmAttribute("SweepInterval", TimeValue(sweep));
        const uint32_t hosts[2] = {h0, h1};
        const uint8_t prios[2] = {prio0, prio1};
        const Time starts[2] = {MicroSeconds(2), start1};
        const uint64_t keys[2] = {1, key1};
        for (int k = 0; k < 2; ++k)
        {
            host[k] = hosts[k];
            smh.SetSmAttribute("Priority", UintegerValue(prios[k]));
            smh.SetSmAttribute("SmKey", UintegerValue(keys[k]));
            sm[k] = smh.Install(f, f.hosts.Get(hosts[k]), starts[k]);
            sm[k]->TraceConnectWithoutContext(
                "SmpSent", Callback<void, uint16_t, uint8_t, uint32_t>(
                               [this, k](uint16_t attr, uint8_t, uint32_t attempt) {
                                   smInfoSent[k] += attr == IbSmAttr::SmInfo && attempt == 1;
                               }));
            sm[k]->TraceConnectWithoutContext(
                "SmState", Callback<void, uint8_t, uint8_t>([this, k](uint8_t, uint8_t st) {
                    if (st == static_cast<uint8_t>(IbSmState::Master))
                    {
                        becameMaster[k] = Simulator::Now();
                    }
                }));
        }
        for (int k = 0; k < 2; ++k)
        {
            // The answers the SMA of SM k's node gave to the other SM's SMInfo Gets.
            IbMgmtHelper::GetSma(f.hosts.Get(hosts[k]))
                ->TraceConnectWithoutContext(
                    "SmpAnswered",
                    Callback<void, uint16_t, uint8_t, uint16_t>(
                        [this, k](uint16_t attr, uint8_t method, uint16_t status) {
                            smInfoAnswered[1 - k] += attr == IbSmAttr::SmInfo &&
                                                     method == IbMadMethod::Get && status == 0;
                        }));
        }
    }
};

/// How the master is killed.
enum class Kill
{
    StopApplication, ///< IbSubnetManager::Stop: its node's SMA answers SMInfo with status 3
    PortDown,        ///< the master's cable goes down: the standby's polls go unanswered
};

void
StandbyTakesOver(Kill kill)
{
    TwoSms t;
    const Time sweep = MicroSeconds(200);
    // h5 has the higher priority: it must win although h0's GUID is lower.
    t.Install("fat-tree:k=4", 0, 3, 5, 9, sweep);
    RunUntil([&]() { return t.sm[1]->GetPhase() == IbSweepPhase::Up &&
                            t.sm[0]->GetSmState() == IbSmState::Standby; },
             MilliSeconds(20));
    EXPECT_EQ(t.sm[1]->GetSmState(), IbSmState::Master);
    ASSERT_EQ(t.sm[0]->GetSmState(), IbSmState::Standby);
    // They found each other through the SMAs: each asked, the other's node answered Ok.
    EXPECT_GT(t.smInfoAnswered[0], 0u);
    EXPECT_GT(t.smInfoAnswered[1], 0u);
    EXPECT_EQ(t.sm[0]->GetSmpsTimedOut(), 0u);
    const uint16_t masterLid = t.f.HostPort(5)->GetLid();
    ASSERT_NE(masterLid, 0);
    for (auto& p : LinkedPorts(t.f))
    {
        EXPECT_EQ(p->GetPortState(), IbPortState::Active);
        if (!p->IsSwitchPort())
        {
            EXPECT_EQ(p->GetSmLid(), masterLid);
        }
    }
    // The standby polls a live master every SweepInterval (§14.4.1.2) and stays standby.
    const uint64_t polls0 = t.smInfoSent[0];
    const uint64_t answered0 = t.smInfoAnswered[0];
    RunUntil([]() { return false; }, MilliSeconds(2));
    EXPECT_EQ(t.sm[0]->GetSmState(), IbSmState::Standby);
    EXPECT_EQ(t.sm[0]->GetHeavySweeps(), 1u);
    EXPECT_GE(t.smInfoSent[0] - polls0, 8u); // 2 ms / 200 us, less the answers' round trips
    EXPECT_EQ(t.smInfoAnswered[0] - answered0, t.smInfoSent[0] - polls0);

    std::map<uint64_t, uint16_t> lidsBefore;
    for (auto& p : LinkedPorts(t.f))
    {
        if (!p->IsSwitchPort())
        {
            lidsBefore[p->GetPortGuid()] = p->GetLid();
        }
    }
    const Time killedAt = Simulator::Now();
    const uint64_t pollsAtKill = t.smInfoSent[0];
    if (kill == Kill::StopApplication)
    {
        t.sm[1]->Stop();
    }
    else
    {
        t.f.HostPort(5)->SetPhysicalLinkDown();
    }
    RunUntil([&]() { return t.sm[0]->GetSmState() == IbSmState::Master &&
                            t.sm[0]->GetPhase() == IbSweepPhase::Up; },
             MilliSeconds(20));
    ASSERT_EQ(t.sm[0]->GetSmState(), IbSmState::Master);
    // It waited for MasterPollRetries (3) failed polls, no fewer; and took over within that
    // many poll intervals plus, when nothing answers, each poll's timeouts (1 + SmpRetries).
    EXPECT_GE(t.smInfoSent[0] - pollsAtKill, 3u);
    const Time perPoll =
        sweep + (kill == Kill::PortDown ? MicroSeconds(100) * 4 : MicroSeconds(20));
    const Time took = t.becameMaster[0] - killedAt;
    EXPECT_GT(took, sweep * 2);
    EXPECT_LE(took, perPoll * 4) << took.As(Time::US);
    // It swept: every port points at it, LIDs unchanged (GUID order on an unchanged fabric).
    EXPECT_EQ(t.sm[0]->GetHeavySweeps(), 2u);
    const uint16_t newLid = t.f.HostPort(0)->GetLid();
    EXPECT_EQ(t.sm[0]->GetSmLid(), newLid);
    for (auto& p : LinkedPorts(t.f))
    {
        if (kill == Kill::PortDown && p->GetPhysState() != IbPhysState::LinkUp)
        {
            continue; // the dead master's cable
        }
        EXPECT_EQ(p->GetPortState(), IbPortState::Active);
        if (!p->IsSwitchPort())
        {
            EXPECT_EQ(p->GetSmLid(), newLid);
            EXPECT_EQ(p->GetLid(), lidsBefore[p->GetPortGuid()]);
        }
    }
    // Traffic flows among every host still cabled.
    const int skip = kill == Kill::PortDown ? 5 : -1;
    auto sinks = AllToAll(t.f, Simulator::Now() + MicroSeconds(1), 64, skip);
    RunUntil([]() { return false; }, MicroSeconds(500));
    const uint32_t others = t.f.hosts.GetN() - 1 - (skip >= 0 ? 1 : 0);
    for (uint32_t i = 0; i < t.f.hosts.GetN(); ++i)
    {
        EXPECT_EQ(sinks[i]->GetTotalPackets(), static_cast<int>(i) == skip ? 0 : others)
            << "host " << i;
    }
}
} // namespace

TEST_F(SmSweep, StandbyTakesOverWhenTheMasterStops)
{
    StandbyTakesOver(Kill::StopApplication);
}

TEST_F(SmSweep, StandbyTakesOverWhenTheMastersPortGoesDown)
{
    StandbyTakesOver(Kill::PortDown);
}

TEST_F(SmSweep, EqualPrioritiesElectTheLowerGuid)
{
    TwoSms t;
    // Both priority 0; h3 starts first in the list, h1 has the lower GUID.
    t.Install("leaf-spine:leaves=2,spines=1,hosts=2", 3, 0, 1, 0, MicroSeconds(200));
    RunUntil([&]() { return t.sm[1]->GetPhase() == IbSweepPhase::Up &&
                            t.sm[0]->GetSmState() == IbSmState::Standby; },
             MilliSeconds(20));
    // h1's port GUID is lower than h3's (IbFabricHelper numbers GUIDs in node order).
    ASSERT_LT(t.sm[1]->GetGuid(), t.sm[0]->GetGuid());
    EXPECT_EQ(t.sm[1]->GetSmState(), IbSmState::Master);
    EXPECT_EQ(t.sm[0]->GetSmState(), IbSmState::Standby);
    EXPECT_GT(t.smInfoAnswered[0], 0u);
    EXPECT_EQ(t.f.HostPort(2)->GetSmLid(), t.f.HostPort(1)->GetLid());
    EXPECT_EQ(t.f.HostPort(3)->GetSmLid(), t.f.HostPort(1)->GetLid());
}

// IBA vol. 1 §14.4.1, Table 169: an SM that outranks the master and starts later finds the
// master and stands by; the master hears of it (Trap 144 when its port's IsSM went up, then its
// light sweep's SMInfo), hands over with SubnSet(SMInfo) HANDOVER, gets ACKNOWLEDGE, and stands
// by; the new master sweeps and takes the subnet over without changing a LID. When it stops,
// the old master, now standby, takes over again.
TEST_F(SmSweep, AMasterHandsOverToAHigherPrioritySmThatStartsLater)
{
    TwoSms t;
    const Time sweep = MicroSeconds(200);
    t.Install("fat-tree:k=4", 0, 3, 5, 9, sweep, MilliSeconds(1));
    std::vector<std::pair<uint32_t, uint16_t>> sets[2];
    for (int k = 0; k < 2; ++k)
    {
        t.sm[k]->TraceConnectWithoutContext(
            "SmInfoSet", Callback<void, uint32_t, uint64_t, uint16_t>(
                             [&sets, k](uint32_t control, uint64_t, uint16_t status) {
                                 sets[k].push_back({control, status});
                             }));
    }
    RunUntil([&]() { return t.sm[0]->GetPhase() == IbSweepPhase::Up; }, MilliSeconds(1));
    ASSERT_EQ(t.sm[0]->GetSmState(), IbSmState::Master);
    EXPECT_FALSE(t.sm[1]->IsRunning());
    std::map<uint64_t, uint16_t> lidsBefore;
    for (auto& p : LinkedPorts(t.f))
    {
        if (!p->IsSwitchPort())
        {
            lidsBefore[p->GetPortGuid()] = p->GetLid();
        }
    }
    RunUntil([&]() { return t.sm[1]->GetSmState() == IbSmState::Master &&
                            t.sm[1]->GetPhase() == IbSweepPhase::Up &&
                            t.sm[0]->GetSmState() == IbSmState::Standby; },
             MilliSeconds(20));
    ASSERT_EQ(t.sm[1]->GetSmState(), IbSmState::Master);
    ASSERT_EQ(t.sm[0]->GetSmState(), IbSmState::Standby);
    // One HANDOVER, answered Ok, and one ACKNOWLEDGE back, each accepted by the other.
    EXPECT_EQ(t.sm[0]->GetHandoversSent(), 1u);
    EXPECT_EQ(t.sm[1]->GetHandoversReceived(), 1u);
    EXPECT_EQ(t.sm[1]->GetAcknowledgesSent(), 1u);
    EXPECT_EQ(t.sm[0]->GetAcknowledgesReceived(), 1u);
    using C = IbSmInfoControl;
    EXPECT_EQ(sets[1], (std::vector<std::pair<uint32_t, uint16_t>>{
                           {static_cast<uint32_t>(C::Handover), IbMadStatus::Ok}}));
    EXPECT_EQ(sets[0], (std::vector<std::pair<uint32_t, uint16_t>>{
                           {static_cast<uint32_t>(C::Acknowledge), IbMadStatus::Ok}}));
    EXPECT_EQ(t.sm[0]->GetMasterGuid(), t.sm[1]->GetGuid());
    EXPECT_EQ(t.sm[0]->GetSmpsTimedOut(), 0u);
    // Every port Active under the new master's LID, no LID changed.
    const uint16_t newLid = t.f.HostPort(5)->GetLid();
    EXPECT_EQ(t.sm[1]->GetSmLid(), newLid);
    for (auto& p : LinkedPorts(t.f))
    {
        EXPECT_EQ(p->GetPortState(), IbPortState::Active);
        if (!p->IsSwitchPort())
        {
            EXPECT_EQ(p->GetSmLid(), newLid);
            EXPECT_EQ(p->GetLid(), lidsBefore[p->GetPortGuid()]);
        }
    }
    // Both know each other; the standby polls the master and stays standby.
    ASSERT_EQ(t.sm[0]->GetKnownSms().size(), 1u);
    EXPECT_EQ(t.sm[0]->GetKnownSms()[0].guid, t.sm[1]->GetGuid());
    const uint64_t heavy1 = t.sm[1]->GetHeavySweeps();
    RunUntil([]() { return false; }, MilliSeconds(2));
    EXPECT_EQ(t.sm[0]->GetSmState(), IbSmState::Standby);
    EXPECT_EQ(t.sm[1]->GetSmState(), IbSmState::Master);
    EXPECT_EQ(t.sm[1]->GetHeavySweeps(), heavy1) << "a settled subnet needs no heavy sweep";
    auto sinks = AllToAll(t.f, Simulator::Now() + MicroSeconds(1), 64, -1);
    RunUntil([]() { return false; }, MicroSeconds(500));
    for (uint32_t i = 0; i < t.f.hosts.GetN(); ++i)
    {
        EXPECT_EQ(sinks[i]->GetTotalPackets(), static_cast<int>(t.f.hosts.GetN() - 1))
            << "host " << i;
    }
    // The new master stops: the old one, standing by, takes over after its polls fail.
    t.sm[1]->Stop();
    RunUntil([&]() { return t.sm[0]->GetSmState() == IbSmState::Master &&
                            t.sm[0]->GetPhase() == IbSweepPhase::Up; },
             MilliSeconds(20));
    EXPECT_EQ(t.sm[0]->GetSmState(), IbSmState::Master);
    EXPECT_EQ(t.f.HostPort(3)->GetSmLid(), t.f.HostPort(0)->GetLid());
}

// SMs that hold different SM_Keys are not of one subnet's management (§14.2.5.13, §14.4):
// each sees the other's SMInfo, ignores it, and is master of what it swept.
TEST_F(SmSweep, SmsWithDifferentSmKeysIgnoreEachOther)
{
    TwoSms t;
    t.Install("leaf-spine:leaves=2,spines=1,hosts=2", 0, 3, 3, 9, MicroSeconds(200),
              MicroSeconds(2), 0x1234);
    RunUntil([&]() { return t.sm[0]->GetPhase() == IbSweepPhase::Up &&
                            t.sm[1]->GetPhase() == IbSweepPhase::Up; },
             MilliSeconds(20));
    EXPECT_EQ(t.sm[0]->GetSmState(), IbSmState::Master);
    EXPECT_EQ(t.sm[1]->GetSmState(), IbSmState::Master);
    EXPECT_GE(t.sm[0]->GetSmKeyMismatches(), 1u);
    EXPECT_GE(t.sm[1]->GetSmKeyMismatches(), 1u);
    EXPECT_TRUE(t.sm[0]->GetKnownSms().empty());
    EXPECT_TRUE(t.sm[1]->GetKnownSms().empty());
    EXPECT_EQ(t.sm[0]->GetHandoversSent() + t.sm[1]->GetHandoversSent(), 0u);
}

namespace
{
/// A SubnGet or SubnSet(SMInfo) as another SM would send it: `from`'s SMInfo as the data.
IbSmp
SmInfoRequest(uint8_t method, uint32_t control, const IbSmInfo& from)
{
    const uint8_t path[1] = {1};
    IbSmp smp = IbSmp::MakeDirected(method, IbSmAttr::SmInfo, control, 77, path, 1);
    from.WriteTo(smp.Data());
    return smp;
}
} // namespace

// The SMInfo answers and the SubnSet(SMInfo) controls of one SM, asked directly: the SM_Key is
// zero for a requester that shows a wrong one; DISABLE, STANDBY and DISCOVER from a master move
// a standby as Table 169 says; everything else, a wrong key or a sender in the wrong state is
// refused with status 7 and changes nothing.
TEST_F(SmSweep, SmInfoSetsFollowTable169AndAWrongSmKeyReadsAsZero)
{
    TwoSms t;
    t.Install("leaf-spine:leaves=2,spines=1,hosts=2", 0, 3, 3, 9, MicroSeconds(200));
    RunUntil([&]() { return t.sm[1]->GetPhase() == IbSweepPhase::Up &&
                            t.sm[0]->GetSmState() == IbSmState::Standby; },
             MilliSeconds(20));
    Ptr<IbSubnetManager> standby = t.sm[0];
    ASSERT_EQ(standby->GetSmState(), IbSmState::Standby);
    IbSmInfo master;
    master.guid = t.sm[1]->GetGuid();
    master.smKey = 1;
    master.priority = 9;
    master.smState = static_cast<uint8_t>(IbSmState::Master);
    IbSmInfo stranger = master;
    stranger.smKey = 0xBAD;
    IbSmInfo anonymous;
    IbSmp resp;
    IbSmInfo got;

    // Get: the key for the right key or none (opensm asks with none), 0 for a wrong one.
    EXPECT_EQ(standby->AnswerSmInfo(SmInfoRequest(IbMadMethod::Get, 0, master), resp), 0);
    got.ReadFrom(resp.Data());
    EXPECT_EQ(got.smKey, 1u);
    EXPECT_EQ(got.guid, standby->GetGuid());
    EXPECT_EQ(got.priority, 3);
    EXPECT_EQ(got.smState, static_cast<uint8_t>(IbSmState::Standby));
    EXPECT_EQ(standby->AnswerSmInfo(SmInfoRequest(IbMadMethod::Get, 0, anonymous), resp), 0);
    got.ReadFrom(resp.Data());
    EXPECT_EQ(got.smKey, 1u);
    EXPECT_EQ(standby->AnswerSmInfo(SmInfoRequest(IbMadMethod::Get, 0, stranger), resp), 0);
    got.ReadFrom(resp.Data());
    EXPECT_EQ(got.smKey, 0u);
    EXPECT_EQ(got.guid, standby->GetGuid());

    auto set = [&](IbSmInfoControl c, const IbSmInfo& from) {
        const uint16_t st =
            standby->AnswerSmInfo(SmInfoRequest(IbMadMethod::Set, uint32_t(c), from), resp);
        RunUntil([]() { return false; }, MicroSeconds(1)); // the SM acts in an event
        return st;
    };
    IbSmInfo fromStandby = master;
    fromStandby.smState = static_cast<uint8_t>(IbSmState::Standby);
    // Refused: a wrong key; HANDOVER from a standby; STANDBY to a standby; an unknown control.
    EXPECT_EQ(set(IbSmInfoControl::Disable, stranger), IbMadStatus::InvalidField);
    EXPECT_EQ(set(IbSmInfoControl::Handover, fromStandby), IbMadStatus::InvalidField);
    EXPECT_EQ(set(IbSmInfoControl::Standby, master), IbMadStatus::InvalidField);
    EXPECT_EQ(set(static_cast<IbSmInfoControl>(9), master), IbMadStatus::InvalidField);
    EXPECT_EQ(standby->GetSmInfoSetsRefused(), 4u);
    EXPECT_EQ(standby->GetSmState(), IbSmState::Standby);
    // DISABLE: not active, still answering (as NOT_ACTIVE); DISCOVER is illegal there.
    EXPECT_EQ(set(IbSmInfoControl::Disable, master), IbMadStatus::Ok);
    EXPECT_EQ(standby->GetSmState(), IbSmState::NotActive);
    EXPECT_TRUE(standby->IsRunning());
    EXPECT_EQ(standby->AnswerSmInfo(SmInfoRequest(IbMadMethod::Get, 0, master), resp), 0);
    got.ReadFrom(resp.Data());
    EXPECT_EQ(got.smState, static_cast<uint8_t>(IbSmState::NotActive));
    EXPECT_EQ(set(IbSmInfoControl::Discover, master), IbMadStatus::InvalidField);
    // A not-active SM takes no part in the election: the master keeps polling nothing from it
    // and stays master.
    RunUntil([]() { return false; }, MilliSeconds(1));
    EXPECT_EQ(t.sm[1]->GetSmState(), IbSmState::Master);
    EXPECT_EQ(standby->GetSmState(), IbSmState::NotActive);
    // STANDBY: back to standby, polling the master it names.
    EXPECT_EQ(set(IbSmInfoControl::Standby, master), IbMadStatus::Ok);
    EXPECT_EQ(standby->GetSmState(), IbSmState::Standby);
    EXPECT_EQ(standby->GetMasterGuid(), master.guid);
    // DISCOVER: a heavy sweep, which finds the master and stands by again.
    const uint64_t heavy = standby->GetHeavySweeps();
    EXPECT_EQ(set(IbSmInfoControl::Discover, master), IbMadStatus::Ok);
    RunUntil([&]() { return standby->GetSmState() == IbSmState::Standby; }, MilliSeconds(5));
    EXPECT_EQ(standby->GetHeavySweeps(), heavy + 1);
    EXPECT_EQ(standby->GetSmState(), IbSmState::Standby);
    EXPECT_EQ(t.sm[1]->GetSmState(), IbSmState::Master);
    // A stopped SM answers nothing (its node's SMA says status 3).
    standby->Stop();
    EXPECT_EQ(standby->AnswerSmInfo(SmInfoRequest(IbMadMethod::Get, 0, master), resp),
              IbMadStatus::UnsupportedMethodAttr);
}

// The SM may run on a switch (its management port 0, IBA vol. 1 §17.2.1): hop count 0 is the
// switch itself, its ports start every route, and its LID is every port's SM LID.
TEST_F(SmSweep, AnSmOnASwitchBringsTheFabricUp)
{
    IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("leaf-spine:leaves=3,spines=2,"
                                                              "hosts=2"));
    Ptr<Node> spine = f.nodes.Get(*f.topology.Find("spine1"));
    Ptr<IbSubnetManager> sm = IbSmHelper().Install(f, spine, MicroSeconds(2));
    RunUntil([&]() { return sm->GetPhase() == IbSweepPhase::Up; }, MilliSeconds(20));
    ASSERT_EQ(sm->GetPhase(), IbSweepPhase::Up);
    const uint16_t smLid = spine->GetObject<IbSwitch>()->GetLid();
    ASSERT_NE(smLid, 0);
    EXPECT_EQ(sm->GetSmLid(), smLid);
    EXPECT_EQ(sm->GetSubnet().NodeCount(), static_cast<int32_t>(f.nodes.GetN()));
    for (auto& p : LinkedPorts(f))
    {
        EXPECT_EQ(p->GetPortState(), IbPortState::Active);
        if (!p->IsSwitchPort())
        {
            EXPECT_EQ(p->GetSmLid(), smLid);
        }
    }
    auto sinks = AllToAll(f, Simulator::Now() + MicroSeconds(1));
    RunUntil([]() { return false; }, MicroSeconds(300));
    for (uint32_t i = 0; i < f.hosts.GetN(); ++i)
    {
        EXPECT_EQ(sinks[i]->GetTotalPackets(), f.hosts.GetN() - 1) << "host " << i;
    }
}

namespace
{
struct TraceLog
{
    std::map<uint64_t, uint16_t> lids;
    std::vector<std::pair<uint8_t, uint8_t>> states;
    uint32_t heavyStarted = 0;
    uint32_t heavyFinished = 0;
    uint32_t smpsSent = 0;
};

void
OnLid(TraceLog* t, uint64_t guid, uint16_t lid)
{
    t->lids[guid] = lid;
}

void
OnState(TraceLog* t, uint8_t a, uint8_t b)
{
    t->states.emplace_back(a, b);
}

void
OnStarted(TraceLog* t, bool heavy)
{
    t->heavyStarted += heavy ? 1 : 0;
}

void
OnFinished(TraceLog* t, bool heavy, uint32_t nodes, Time)
{
    t->heavyFinished += heavy ? 1 : 0;
}

void
OnSmp(TraceLog* t, uint16_t, uint8_t, uint32_t)
{
    t->smpsSent++;
}
} // namespace

TEST_F(SmSweep, TraceSourcesReportLidsStatesSweepsAndSmps)
{
    IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("pair"));
    Ptr<IbSubnetManager> sm = IbSmHelper().Install(f, f.hosts.Get(0), MicroSeconds(2));
    TraceLog log;
    sm->TraceConnectWithoutContext("LidAssigned", MakeBoundCallback(&OnLid, &log));
    sm->TraceConnectWithoutContext("SmState", MakeBoundCallback(&OnState, &log));
    sm->TraceConnectWithoutContext("SweepStarted", MakeBoundCallback(&OnStarted, &log));
    sm->TraceConnectWithoutContext("SweepFinished", MakeBoundCallback(&OnFinished, &log));
    sm->TraceConnectWithoutContext("SmpSent", MakeBoundCallback(&OnSmp, &log));
    RunUntil([&]() { return sm->GetPhase() == IbSweepPhase::Up; }, MilliSeconds(5));
    // Three LIDs (two CA ports, one switch), each reported once, as the devices hold them.
    ASSERT_EQ(log.lids.size(), 3u);
    EXPECT_EQ(log.lids[f.HostPort(0)->GetPortGuid()], f.HostPort(0)->GetLid());
    EXPECT_EQ(log.lids[f.HostPort(1)->GetPortGuid()], f.HostPort(1)->GetLid());
    EXPECT_EQ(log.lids[f.switches.Get(0)->GetObject<IbSwitch>()->GetNodeGuid()],
              f.switches.Get(0)->GetObject<IbSwitch>()->GetLid());
    ASSERT_GE(log.states.size(), 2u);
    EXPECT_EQ(log.states[0], std::make_pair(uint8_t(IbSmState::NotActive),
                                            uint8_t(IbSmState::Discovering)));
    EXPECT_EQ(log.states[1], std::make_pair(uint8_t(IbSmState::Discovering),
                                            uint8_t(IbSmState::Master)));
    EXPECT_EQ(log.heavyStarted, sm->GetHeavySweeps());
    EXPECT_EQ(log.heavyFinished, sm->GetHeavySweeps());
    EXPECT_EQ(log.smpsSent, sm->GetSmpsSent());
}
