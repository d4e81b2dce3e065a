// The static subnet configuration: LIDs, min-hop LFTs that reach everybody loop-free, and a
// traffic-weighted balance that routes a fat-tree's shift permutation without collisions.
#include "helpers/ib/ib-fabric-helper.h"
#include "models/ib/ib-switch.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace ns3;

namespace
{
/// Follows LFTs from host `from` to `dstLid`; returns the (switch node, out port) hops, empty if
/// the route does not reach the destination within 16 hops.
std::vector<std::pair<uint32_t, uint8_t>>
Walk(const IbFabric& f, uint32_t from, uint16_t dstLid)
{
    std::vector<std::pair<uint32_t, uint8_t>> hops;
    Ptr<IbNetDevice> at = f.HostPort(from)->GetPeer();
    for (int guard = 0; guard < 16; ++guard)
    {
        Ptr<IbSwitch> sw = at->GetNode()->GetObject<IbSwitch>();
        uint8_t out = sw->GetLftEntry(dstLid);
        if (out == 255 || out == 0 || !sw->GetPort(out))
        {
            return {};
        }
        hops.emplace_back(at->GetNode()->GetId(), out);
        Ptr<IbNetDevice> peer = sw->GetPort(out)->GetPeer();
        if (!peer->IsSwitchPort())
        {
            return peer->GetLid() == dstLid ? hops : std::vector<std::pair<uint32_t, uint8_t>>{};
        }
        at = peer;
    }
    return {};
}
} // namespace

class StaticSubnet : public ::testing::TestWithParam<std::string>
{
};

TEST_P(StaticSubnet, EveryHostReachesEveryOtherOnMinHopRoutes)
{
    IbFabricHelper h;
    IbFabric f = h.Build(BuildTopologyFromSpec(GetParam()));
    IbStaticSubnetHelper subnet;
    uint32_t lids = subnet.Configure(f.nodes);
    EXPECT_EQ(lids, f.nodes.GetN());
    std::set<uint16_t> seen;
    for (uint32_t i = 0; i < f.hosts.GetN(); ++i)
    {
        uint16_t lid = subnet.GetLid(f.hosts.Get(i));
        EXPECT_NE(lid, 0);
        EXPECT_TRUE(seen.insert(lid).second) << "duplicate LID " << lid;
    }
    for (uint32_t a = 0; a < f.hosts.GetN(); ++a)
    {
        for (uint32_t b = 0; b < f.hosts.GetN(); ++b)
        {
            if (a == b)
            {
                continue;
            }
            auto hops = Walk(f, a, subnet.GetLid(f.hosts.Get(b)));
            ASSERT_FALSE(hops.empty()) << "no route h" << a << " -> h" << b;
            std::set<uint32_t> switches;
            for (auto& [sw, port] : hops)
            {
                EXPECT_TRUE(switches.insert(sw).second) << "loop on h" << a << " -> h" << b;
            }
        }
    }
    Simulator::Destroy();
}

INSTANTIATE_TEST_SUITE_P(Topologies,
                         StaticSubnet,
                         ::testing::Values("pair", "star:hosts=5", "dumbbell:left=3,right=4",
                                           "leaf-spine:leaves=4,spines=2,hosts=3",
                                           "fat-tree:k=4"));

TEST(StaticSubnetRouting, FatTreeShiftPermutationIsCollisionFree)
{
    for (int k : {4, 8})
    {
        IbFabricHelper h;
        IbFabric f = h.Build(MakeFatTree(k));
        IbStaticSubnetHelper subnet;
        subnet.Configure(f.nodes);
        const uint32_t n = f.hosts.GetN();
        std::map<std::pair<uint32_t, uint8_t>, int> flowsPerLink;
        for (uint32_t i = 0; i < n; ++i)
        {
            auto hops = Walk(f, i, subnet.GetLid(f.hosts.Get((i + n / 2) % n)));
            ASSERT_EQ(hops.size(), 5u); // edge, agg, core, agg, edge
            for (auto& hop : hops)
            {
                flowsPerLink[hop]++;
            }
        }
        int worst = 0;
        for (auto& [link, flows] : flowsPerLink)
        {
            worst = std::max(worst, flows);
        }
        EXPECT_EQ(worst, 1) << "k=" << k;
        Simulator::Destroy();
    }
}
