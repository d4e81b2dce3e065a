// The subnet manager on the wire: a simulated fabric with the real SMA on every node and the SM
// on one host. Before the SM: ports Init, LID 0, data refused. After: every port Active, unique
// LIDs, every host reaches every other with real packets over the LFTs the SM wrote, no loops.
#include "helpers/ib-fabric-helper.h"
#include "helpers/ib-packet-source.h"
#include "helpers/ib-sm-helper.h"
#include "helpers/mgmt-helper.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-subnet-manager.h"

#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

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
/// returns the sinks.
std::vector<Ptr<IbPacketSink>>
AllToAll(const IbFabric& f, Time start, uint32_t payload = 64)
{
    const uint32_t n = f.hosts.GetN();
    std::vector<Ptr<IbPacketSink>> sinks;
    for (uint32_t i = 0; i < n; ++i)
    {
        Ptr<IbPacketSink> sink = CreateObject<IbPacketSink>();
        f.hosts.Get(i)->AddApplication(sink);
        sink->SetStartTime(Seconds(0));
        sinks.push_back(sink);
        std::vector<uint16_t> lids;
        for (uint32_t j = 1; j < n; ++j)
        {
            lids.push_back(f.HostPort((i + j) % n)->GetLid());
        }
        Ptr<IbPacketSource> src = CreateObject<IbPacketSource>();
        src->SetAttribute("PayloadBytes", UintegerValue(payload));
        src->SetAttribute("MaxBytes", UintegerValue(uint64_t(payload) * (n - 1)));
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
