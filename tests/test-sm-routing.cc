// The subnet manager's database, LID assignment and routing engines on topology graphs (no
// simulation): unique GUID-stable LIDs, every CA reaches every LID on a shortest legal route,
// no forwarding loop, and the credit-loop check that tells up/down from min-hop on a ring.
#include "helpers/mgmt/ib-sm-helper.h"
#include "models/mgmt/ib-routing-engine.h"

#include <gtest/gtest.h>

#include <map>

#include <algorithm>
#include <deque>
#include <set>

using namespace ns3;

namespace
{

/// Shortest path lengths (in cables) from topology node `from` to every node, where only
/// switches relay: computed on the Topology itself, independently of IbSmSubnet.
std::vector<int>
TopoDistances(const Topology& t, uint32_t from)
{
    std::vector<std::vector<uint32_t>> adj(t.nodes.size());
    for (const TopoLink& l : t.links)
    {
        adj[l.a].push_back(l.b);
        adj[l.b].push_back(l.a);
    }
    std::vector<int> d(t.nodes.size(), -1);
    std::deque<uint32_t> q{from};
    d[from] = 0;
    while (!q.empty())
    {
        uint32_t u = q.front();
        q.pop_front();
        if (u != from && t.nodes[u].kind != TopoNodeKind::Switch)
        {
            continue;
        }
        for (uint32_t v : adj[u])
        {
            if (d[v] < 0)
            {
                d[v] = d[u] + 1;
                q.push_back(v);
            }
        }
    }
    return d;
}

/// Hops of the route from CA node `ca` (port 1) to `lid` through the tables, -1 if none.
int
RouteHops(const IbSmSubnet& s, const IbRoutingTables& t, int32_t ca, uint16_t lid)
{
    const IbSmPort& p = s.Node(ca).ports[1];
    int32_t cur = p.peerNode;
    uint8_t in = p.peerPort;
    for (int hops = 1; hops < 64; ++hops)
    {
        const IbSmNode& n = s.Node(cur);
        if (!n.IsSwitch())
        {
            return n.ports[in].lid == lid ? hops : -1;
        }
        if (n.lid == lid)
        {
            return hops;
        }
        uint8_t out = t.lft[cur][lid];
        if (out == 0 || out > n.numPorts || n.ports[out].peerNode < 0)
        {
            return -1;
        }
        in = n.ports[out].peerPort;
        cur = n.ports[out].peerNode;
    }
    return -1;
}

/// A ring of `n` switches, each with one host on port 1; switch i port 2 -> switch i+1 port 3.
Topology
MakeRing(uint32_t n)
{
    Topology t;
    t.name = "ring";
    for (uint32_t i = 0; i < n; ++i)
    {
        t.AddNode("h" + std::to_string(i), TopoNodeKind::Host, 1);
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        t.AddNode("sw" + std::to_string(i), TopoNodeKind::Switch, 3);
        t.AddLink(i, 1, n + i, 1);
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        t.AddLink(n + i, 2, n + (i + 1) % n, 3);
    }
    EXPECT_EQ(t.Validate(), "");
    return t;
}

} // namespace

// ---- LID assignment ---------------------------------------------------------------------------

TEST(SmLids, UniqueInGuidOrderAndStableAcrossSweeps)
{
    Topology topo = BuildTopologyFromSpec("fat-tree:k=4");
    IbSmSubnet s = IbSmSubnetFromTopology(topo);
    IbSmLidTable table;
    ASSERT_EQ(table.Assign(s), static_cast<int>(topo.nodes.size()));
    EXPECT_EQ(s.CheckLids(), "");
    // First sweep: LIDs 1..N in the order of the GUIDs that get them (switch node GUID, CA port
    // GUID), sorted here from the topology's own numbering.
    std::vector<std::pair<uint64_t, uint32_t>> byGuid;
    for (uint32_t i = 0; i < topo.nodes.size(); ++i)
    {
        const bool sw = topo.nodes[i].kind == TopoNodeKind::Switch;
        byGuid.emplace_back(IbFabricNodeGuid(i) + (sw ? 0 : 1), i);
    }
    std::sort(byGuid.begin(), byGuid.end());
    for (size_t k = 0; k < byGuid.size(); ++k)
    {
        EXPECT_EQ(s.LidOf(byGuid[k].second, 1), k + 1) << topo.nodes[byGuid[k].second].name;
    }

    // A later sweep of a fabric without h0 and with a new host whose GUID sorts first: the
    // others keep their LIDs, the newcomer gets a fresh one, h0's LID stays reserved for it.
    const uint16_t h0Lid = s.LidOf(0, 1);
    const uint16_t h5Lid = s.LidOf(5, 1);
    IbSmSubnet later;
    for (uint32_t i = 1; i < topo.nodes.size(); ++i)
    {
        const IbSmNode& n = s.Node(i);
        int32_t idx = later.AddNode(n.nodeGuid, n.type, n.numPorts);
        for (uint8_t p = 0; p <= n.numPorts; ++p)
        {
            later.Node(idx).ports[p].guid = n.ports[p].guid;
        }
    }
    int32_t newcomer = later.AddNode(0x10, IbNodeType::ChannelAdapter, 1);
    later.Node(newcomer).ports[1].guid = 0x11;
    for (const TopoLink& l : topo.links)
    {
        if (l.a == 0 || l.b == 0)
        {
            later.Connect(newcomer, 1, later.Find(IbFabricNodeGuid(l.a == 0 ? l.b : l.a)),
                          static_cast<uint8_t>(l.a == 0 ? l.bPort : l.aPort));
            continue;
        }
        later.Connect(later.Find(IbFabricNodeGuid(l.a)), static_cast<uint8_t>(l.aPort),
                      later.Find(IbFabricNodeGuid(l.b)), static_cast<uint8_t>(l.bPort));
    }
    EXPECT_EQ(table.Assign(later), 1);
    EXPECT_EQ(later.CheckLids(), "");
    EXPECT_EQ(later.LidOf(later.Find(IbFabricNodeGuid(5)), 1), h5Lid);
    EXPECT_EQ(later.LidOf(newcomer, 1), topo.nodes.size() + 1);
    EXPECT_EQ(table.Lookup(IbFabricNodeGuid(0) + 1), h0Lid);
    for (uint32_t i = 1; i < topo.nodes.size(); ++i)
    {
        EXPECT_EQ(later.LidOf(later.Find(IbFabricNodeGuid(i)), 1), s.LidOf(i, 1));
    }
}

// A new SM (a standby taking over) never saw the old master's table: it keeps the LIDs the
// ports already hold where they are valid and free, first come in GUID order, so address
// handles stay valid; a port holding a taken or invalid LID gets the lowest free one.
TEST(SmLids, PortsKeepTheLidsTheyAlreadyHold)
{
    Topology topo = BuildTopologyFromSpec("leaf-spine:leaves=2,spines=1,hosts=2");
    IbSmSubnet s = IbSmSubnetFromTopology(topo);
    // As a sweep would read them: every port reports a LID chosen here, unlike GUID order.
    std::map<uint64_t, uint16_t> held;
    uint16_t next = 40;
    for (int32_t i = 0; i < s.NodeCount(); ++i)
    {
        IbSmNode& n = s.Node(i);
        for (uint8_t p = n.IsSwitch() ? 0 : 1; p <= (n.IsSwitch() ? 0 : n.numPorts); ++p)
        {
            n.ports[p].hasInfo = true;
            n.ports[p].info.lid = next;
            held[n.IsSwitch() ? n.nodeGuid : n.ports[p].guid] = next;
            next += 3;
        }
    }
    // Two conflicts: host 1 claims host 0's LID (host 0's GUID is lower, it wins), and host 2
    // reports a multicast LID.
    const int32_t h0 = *topo.Find("h0");
    const int32_t h1 = *topo.Find("h1");
    const int32_t h2 = *topo.Find("h2");
    s.Node(h1).ports[1].info.lid = s.Node(h0).ports[1].info.lid;
    s.Node(h2).ports[1].info.lid = 0xC001;
    IbSmLidTable table;
    ASSERT_EQ(table.Assign(s), static_cast<int>(topo.nodes.size()));
    EXPECT_EQ(s.CheckLids(), "");
    for (int32_t i = 0; i < s.NodeCount(); ++i)
    {
        const IbSmNode& n = s.Node(i);
        if (i == h1 || i == h2)
        {
            continue;
        }
        const uint64_t guid = n.IsSwitch() ? n.nodeGuid : n.ports[1].guid;
        EXPECT_EQ(s.LidOf(i, n.IsSwitch() ? 0 : 1), held[guid]) << topo.nodes[i].name;
    }
    // The two losers get the lowest free LIDs, in GUID order.
    EXPECT_EQ(s.LidOf(h1, 1), 1);
    EXPECT_EQ(s.LidOf(h2, 1), 2);
}

TEST(SmLids, CheckLidsCatchesDuplicatesAndZero)
{
    IbSmSubnet s = IbSmSubnetFromTopology(BuildTopologyFromSpec("pair"));
    IbSmLidTable table;
    table.Assign(s);
    ASSERT_EQ(s.CheckLids(), "");
    s.Node(1).ports[1].lid = s.Node(0).ports[1].lid;
    EXPECT_NE(s.CheckLids().find("given to both"), std::string::npos);
    s.Node(1).ports[1].lid = 0;
    EXPECT_NE(s.CheckLids().find("not a unicast LID"), std::string::npos);
}

// ---- routing engines on the fabrics of the issue ----------------------------------------------

struct RoutingCase
{
    std::string spec;
    IbRoutingAlgorithm algorithm;
};

class SmRouting : public ::testing::TestWithParam<RoutingCase>
{
};

TEST_P(SmRouting, EveryCaReachesEveryLidOnShortestRoutesWithoutLoops)
{
    const Topology topo = BuildTopologyFromSpec(GetParam().spec);
    IbSmSubnet s = IbSmSubnetFromTopology(topo);
    IbSmLidTable lids;
    lids.Assign(s);
    IbRoutingTables t = IbComputeRoutes(s, GetParam().algorithm);
    ASSERT_EQ(t.error, "");
    IbRouteCheck c = IbCheckRoutes(s, t);
    EXPECT_TRUE(c.Ok()) << c.firstProblem;
    const uint64_t hosts = topo.Hosts().size();
    EXPECT_EQ(c.pairs, hosts * (topo.nodes.size() - 1));
    EXPECT_EQ(IbFindCreditLoop(s, t), "");
    // Every route is as short as the topology allows (on these fabrics up/down loses nothing).
    for (uint32_t h : topo.Hosts())
    {
        std::vector<int> d = TopoDistances(topo, h);
        for (uint32_t j = 0; j < topo.nodes.size(); ++j)
        {
            if (j == h)
            {
                continue;
            }
            EXPECT_EQ(RouteHops(s, t, h, s.LidOf(j, 1)), d[j])
                << topo.nodes[h].name << " -> " << topo.nodes[j].name;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Fabrics,
    SmRouting,
    ::testing::Values(RoutingCase{"pair", IbRoutingAlgorithm::MinHop},
                      RoutingCase{"pair", IbRoutingAlgorithm::UpDown},
                      RoutingCase{"leaf-spine:leaves=4,spines=2,hosts=4",
                                  IbRoutingAlgorithm::MinHop},
                      RoutingCase{"leaf-spine:leaves=4,spines=2,hosts=4",
                                  IbRoutingAlgorithm::UpDown},
                      RoutingCase{"fat-tree:k=4", IbRoutingAlgorithm::MinHop},
                      RoutingCase{"fat-tree:k=4", IbRoutingAlgorithm::UpDown},
                      RoutingCase{"fat-tree:k=8", IbRoutingAlgorithm::MinHop},
                      RoutingCase{"fat-tree:k=8", IbRoutingAlgorithm::UpDown}),
    [](const ::testing::TestParamInfo<RoutingCase>& info) {
        std::string name = info.param.spec.substr(0, info.param.spec.find(':'));
        name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
        if (info.param.spec.find("k=8") != std::string::npos)
        {
            name += "8";
        }
        return name + "_" + IbRoutingAlgorithmName(info.param.algorithm);
    });

TEST(SmRouting, UpDownRootsOfAFatTreeAreItsCores)
{
    const Topology topo = BuildTopologyFromSpec("fat-tree:k=4");
    IbSmSubnet s = IbSmSubnetFromTopology(topo);
    IbSmLidTable lids;
    lids.Assign(s);
    IbRoutingTables t = IbComputeRoutes(s, IbRoutingAlgorithm::UpDown);
    std::set<std::string> roots;
    for (int32_t r : t.roots)
    {
        roots.insert(topo.nodes[r].name);
    }
    EXPECT_EQ(roots, (std::set<std::string>{"core0", "core1", "core2", "core3"}));
    for (uint32_t i : topo.Switches())
    {
        // Topology levels: core 3, aggregation 2, edge 1; ranks count down from the roots.
        EXPECT_EQ(s.Node(i).rank, 3 - topo.nodes[i].level) << topo.nodes[i].name;
    }
}

// ---- what the checks catch ---------------------------------------------------------------------

TEST(SmRouting, MinHopOnARingHasACreditLoopUpDownHasNone)
{
    // Five switches in a ring: every two-hop route goes the short way round, so the routes
    // s0->s2, s1->s3, ..., s4->s1 chain into a cycle of channel dependencies.
    const Topology ring = MakeRing(5);
    IbSmSubnet s = IbSmSubnetFromTopology(ring);
    IbSmLidTable lids;
    lids.Assign(s);
    IbRoutingTables minhop = IbComputeRoutes(s, IbRoutingAlgorithm::MinHop);
    EXPECT_TRUE(IbCheckRoutes(s, minhop).Ok());
    const std::string loop = IbFindCreditLoop(s, minhop);
    EXPECT_NE(loop, "");
    EXPECT_NE(loop.find("sw"), std::string::npos) << loop;

    IbRoutingTables updn = IbComputeRoutes(s, IbRoutingAlgorithm::UpDown);
    IbRouteCheck c = IbCheckRoutes(s, updn);
    EXPECT_TRUE(c.Ok()) << c.firstProblem;
    EXPECT_EQ(IbFindCreditLoop(s, updn), "");
    // Up/down pays for it: some route is longer than the ring's shortest (2 switch hops + 2).
    EXPECT_GT(c.maxHops, 4u);
}

TEST(SmRouting, CheckRoutesFindsLoopsAndHoles)
{
    const Topology topo = BuildTopologyFromSpec("leaf-spine:leaves=2,spines=1,hosts=2");
    IbSmSubnet s = IbSmSubnetFromTopology(topo);
    IbSmLidTable lids;
    lids.Assign(s);
    IbRoutingTables t = IbComputeRoutes(s, IbRoutingAlgorithm::MinHop);
    ASSERT_TRUE(IbCheckRoutes(s, t).Ok());
    const int32_t leaf0 = *topo.Find("leaf0");
    const int32_t spine0 = *topo.Find("spine0");
    const uint16_t h3 = s.LidOf(*topo.Find("h3"), 1);
    // leaf0 sends h3's packets up (port 3); make the spine send them back down to leaf0.
    ASSERT_EQ(t.lft[leaf0][h3], 3);
    IbRoutingTables looped = t;
    looped.lft[spine0][h3] = 1;
    IbRouteCheck c = IbCheckRoutes(s, looped);
    EXPECT_EQ(c.loops, 2u); // h0 and h1 -> h3
    EXPECT_NE(c.firstProblem.find("loop"), std::string::npos);
    IbRoutingTables holed = t;
    holed.lft[spine0][h3] = kIbLftNoRoute;
    c = IbCheckRoutes(s, holed);
    EXPECT_EQ(c.unreachable, 2u);
    EXPECT_EQ(c.loops, 0u);
}

/// The route check as the definition reads: walk every (CA port, LID) pair cable by cable
/// (0 arrives, 1 dead-ends, 2 loops), counting cables.
IbRouteCheck
NaiveRouteCheck(const IbSmSubnet& s, const IbRoutingTables& t)
{
    IbRouteCheck r;
    for (int32_t i = 0; i < s.NodeCount(); ++i)
    {
        for (uint8_t p = 1; !s.Node(i).IsSwitch() && p <= s.Node(i).numPorts; ++p)
        {
            if (s.Node(i).ports[p].peerNode < 0)
            {
                continue;
            }
            for (const auto& [lid, target] : s.Lids())
            {
                if (target.node == i && target.port == p)
                {
                    continue;
                }
                r.pairs++;
                int32_t cur = s.Node(i).ports[p].peerNode;
                uint8_t in = s.Node(i).ports[p].peerPort;
                uint32_t hops = 1;
                std::set<int32_t> seen;
                int res = -1;
                while (res < 0)
                {
                    const IbSmNode& n = s.Node(cur);
                    if (!n.IsSwitch())
                    {
                        res = (cur == target.node && in == target.port) ? 0 : 1;
                    }
                    else if (n.lid == lid)
                    {
                        res = 0;
                    }
                    else if (!seen.insert(cur).second)
                    {
                        res = 2;
                    }
                    else
                    {
                        const uint8_t out = lid < t.lft[cur].size() ? t.lft[cur][lid] : 255;
                        if (out == 0 || out > n.numPorts || n.ports[out].peerNode < 0)
                        {
                            res = 1;
                        }
                        else
                        {
                            in = n.ports[out].peerPort;
                            cur = n.ports[out].peerNode;
                            ++hops;
                        }
                    }
                }
                if (res == 0)
                {
                    r.maxHops = std::max(r.maxHops, hops);
                }
                else
                {
                    (res == 1 ? r.unreachable : r.loops)++;
                }
            }
        }
    }
    return r;
}

TEST(SmRouting, CheckRoutesAgreesWithWalkingEveryPairOnDamagedTables)
{
    // IbCheckRoutes follows each switch's route to a LID once for all sources; on tables with
    // random holes, wrong ports and loops it must count what walking every pair counts.
    const Topology topo = BuildTopologyFromSpec("fat-tree:k=4");
    IbSmSubnet s = IbSmSubnetFromTopology(topo);
    IbSmLidTable lids;
    lids.Assign(s);
    const IbRoutingTables good = IbComputeRoutes(s, IbRoutingAlgorithm::UpDown);
    const IbRouteCheck clean = IbCheckRoutes(s, good);
    const IbRouteCheck cleanNaive = NaiveRouteCheck(s, good);
    EXPECT_EQ(clean.pairs, cleanNaive.pairs);
    EXPECT_EQ(clean.maxHops, cleanNaive.maxHops);
    EXPECT_EQ(clean.unreachable, cleanNaive.unreachable);
    uint32_t state = 12345;
    auto rnd = [&](uint32_t n) {
        state = state * 1103515245u + 12345u;
        return (state >> 8) % n;
    };
    uint64_t sawLoops = 0;
    uint64_t sawHoles = 0;
    for (int round = 0; round < 50; ++round)
    {
        IbRoutingTables t = good;
        for (int k = 0; k < 1 + round; ++k)
        {
            int32_t sw = static_cast<int32_t>(rnd(static_cast<uint32_t>(s.NodeCount())));
            if (!s.Node(sw).IsSwitch() || t.lft[sw].empty())
            {
                continue;
            }
            const uint16_t lid = static_cast<uint16_t>(1 + rnd(s.MaxLid()));
            t.lft[sw][lid] = static_cast<uint8_t>(rnd(6)); // 0..4 a port (maybe wrong), 5 none
            if (t.lft[sw][lid] == 5)
            {
                t.lft[sw][lid] = kIbLftNoRoute;
            }
        }
        const IbRouteCheck fast = IbCheckRoutes(s, t);
        const IbRouteCheck naive = NaiveRouteCheck(s, t);
        EXPECT_EQ(fast.pairs, naive.pairs) << round;
        EXPECT_EQ(fast.unreachable, naive.unreachable) << round;
        EXPECT_EQ(fast.loops, naive.loops) << round;
        EXPECT_EQ(fast.maxHops, naive.maxHops) << round;
        EXPECT_EQ(fast.Ok(), fast.firstProblem.empty()) << round;
        sawLoops += naive.loops;
        sawHoles += naive.unreachable;
    }
    EXPECT_GT(sawLoops, 0u) << "the damage made loops";
    EXPECT_GT(sawHoles, 0u) << "the damage made holes";
}

TEST(SmRouting, LidsBeyondTheLftCapAreAnError)
{
    IbSmSubnet s = IbSmSubnetFromTopology(BuildTopologyFromSpec("star:hosts=8"));
    IbSmLidTable lids;
    lids.Assign(s);
    s.Node(s.NodeCount() - 1).linearFdbCap = 8; // LIDs 0..7 fit, 9 nodes need LID 9
    IbRoutingTables t = IbComputeRoutes(s, IbRoutingAlgorithm::MinHop);
    EXPECT_NE(t.error.find("LinearFDBCap"), std::string::npos) << t.error;
    EXPECT_FALSE(IbCheckRoutes(s, t).Ok());
}

// ---- deadlock-free virtual layers for routes that need them -----------------------------------

TEST(SmRouting, VirtualLayersMakeMinHopOnARingDeadlockFree)
{
    const Topology ring = MakeRing(5);
    IbSmSubnet s = IbSmSubnetFromTopology(ring);
    IbSmLidTable lids;
    lids.Assign(s);
    IbRoutingTables minhop = IbComputeRoutes(s, IbRoutingAlgorithm::MinHop);
    ASSERT_NE(IbFindCreditLoop(s, minhop), "");
    // One layer cannot hold these routes.
    EXPECT_NE(IbAssignVlLayers(s, minhop, 1).error, "");
    IbVlLayers v = IbAssignVlLayers(s, minhop, 4);
    ASSERT_EQ(v.error, "");
    EXPECT_GE(v.layers, 2);
    EXPECT_LE(v.layers, 4);
    EXPECT_EQ(v.layer.size(), IbCheckRoutes(s, minhop).pairs); // every route has its layer
    for (uint8_t l = 0; l < v.layers; ++l)
    {
        EXPECT_EQ(IbFindCreditLoopInLayer(s, minhop, v, l), "") << "layer " << unsigned(l);
    }
    // Routes that are deadlock-free on one VL stay on it.
    IbRoutingTables updn = IbComputeRoutes(s, IbRoutingAlgorithm::UpDown);
    IbVlLayers one = IbAssignVlLayers(s, updn, 4);
    EXPECT_EQ(one.error, "");
    EXPECT_EQ(one.layers, 1);
}
