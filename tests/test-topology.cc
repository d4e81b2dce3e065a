// Fabric graph descriptions: generators, validation, the ibnetdiscover-style file format.
#include "helpers/formats/topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <tuple>
#include <unistd.h>

using namespace ns3;

namespace
{

/// A fresh empty directory for one test's files.
std::filesystem::path
TestDir()
{
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                ("cnuas-topo-" + std::to_string(getpid()) + "-" +
                                 info->test_suite_name() + "-" + info->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

void
WriteFile(const std::filesystem::path& p, const std::string& text)
{
    std::ofstream(p) << text;
}

/// Every switch/host port is used at most once; returns how many ports are used per node.
std::vector<uint32_t>
PortUse(const Topology& t)
{
    std::vector<uint32_t> used(t.nodes.size(), 0);
    std::set<std::pair<uint32_t, uint32_t>> seen;
    for (const TopoLink& l : t.links)
    {
        EXPECT_TRUE(seen.insert({l.a, l.aPort}).second) << t.PortName(l.a, l.aPort);
        EXPECT_TRUE(seen.insert({l.b, l.bPort}).second) << t.PortName(l.b, l.bPort);
        EXPECT_GE(l.aPort, 1u);
        EXPECT_LE(l.aPort, t.nodes[l.a].ports);
        EXPECT_GE(l.bPort, 1u);
        EXPECT_LE(l.bPort, t.nodes[l.b].ports);
        ++used[l.a];
        ++used[l.b];
    }
    return used;
}

/// Hop distances from node `from` (breadth-first search), -1 where unreachable.
std::vector<int>
Distances(const Topology& t, uint32_t from)
{
    std::vector<std::vector<uint32_t>> adj(t.nodes.size());
    for (const TopoLink& l : t.links)
    {
        adj[l.a].push_back(l.b);
        adj[l.b].push_back(l.a);
    }
    std::vector<int> d(t.nodes.size(), -1);
    std::vector<uint32_t> q{from};
    d[from] = 0;
    for (size_t i = 0; i < q.size(); ++i)
    {
        for (uint32_t n : adj[q[i]])
        {
            if (d[n] < 0)
            {
                d[n] = d[q[i]] + 1;
                q.push_back(n);
            }
        }
    }
    return d;
}

/// The largest host-to-host hop count.
int
HostDiameter(const Topology& t)
{
    int worst = 0;
    for (uint32_t h : t.Hosts())
    {
        std::vector<int> d = Distances(t, h);
        for (uint32_t g : t.Hosts())
        {
            EXPECT_GE(d[g], 0) << "host " << t.nodes[g].name << " unreachable";
            worst = std::max(worst, d[g]);
        }
    }
    return worst;
}

/// The node/port at the far end of `port` of `node`.
std::pair<std::string, uint32_t>
Peer(const Topology& t, const std::string& node, uint32_t port)
{
    uint32_t n = t.Find(node).value();
    std::optional<uint32_t> li = t.LinkAt(n, port);
    if (!li)
    {
        return {"", 0};
    }
    const TopoLink& l = t.links[*li];
    return l.a == n && l.aPort == port ? std::pair{t.nodes[l.b].name, l.bPort}
                                       : std::pair{t.nodes[l.a].name, l.aPort};
}

using LinkKey = std::tuple<std::string, uint32_t, std::string, uint32_t, std::string, double>;

/// Links independent of their order and orientation.
std::set<LinkKey>
LinkSet(const Topology& t)
{
    std::set<LinkKey> s;
    for (const TopoLink& l : t.links)
    {
        std::pair<std::string, uint32_t> a{t.nodes[l.a].name, l.aPort};
        std::pair<std::string, uint32_t> b{t.nodes[l.b].name, l.bPort};
        if (b < a)
        {
            std::swap(a, b);
        }
        s.emplace(a.first, a.second, b.first, b.second, l.rate, l.lengthMeters);
    }
    return s;
}

/// Expects `text` to be refused with a message that starts "name:line:" and contains `what`.
void
ExpectBadFile(const std::string& text, int line, const std::string& what)
{
    try
    {
        ParseTopologyText(text, "bad.topo");
        ADD_FAILURE() << "accepted a bad file; expected line " << line << ": " << what;
    }
    catch (const std::invalid_argument& e)
    {
        std::string msg = e.what();
        std::string prefix = "bad.topo:" + std::to_string(line) + ": ";
        EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
        EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
}

} // namespace

TEST(TopologyGenerators, FatTreeK4)
{
    Topology t = MakeFatTree(4);
    EXPECT_EQ(t.Validate(), "");
    EXPECT_EQ(t.name, "fat-tree:k=4");
    EXPECT_EQ(t.Hosts().size(), 16u);
    EXPECT_EQ(t.Switches().size(), 20u); // 8 edge + 8 agg + 4 core
    EXPECT_EQ(t.nodes.size(), 36u);
    EXPECT_EQ(t.links.size(), 48u); // 16 host + 16 edge-agg + 16 agg-core
    std::vector<uint32_t> used = PortUse(t);
    std::map<int, int> perLevel;
    for (uint32_t i = 0; i < t.nodes.size(); ++i)
    {
        ++perLevel[t.nodes[i].level];
        // Every port of every node is cabled in a full fat-tree.
        EXPECT_EQ(used[i], t.nodes[i].ports) << t.nodes[i].name;
        if (t.nodes[i].kind == TopoNodeKind::Switch)
        {
            EXPECT_EQ(t.nodes[i].ports, 4u);
        }
    }
    EXPECT_EQ(perLevel[0], 16);
    EXPECT_EQ(perLevel[1], 8);
    EXPECT_EQ(perLevel[2], 8);
    EXPECT_EQ(perLevel[3], 4);
    // Documented numbering.
    EXPECT_EQ(Peer(t, "edge0_0", 1), (std::pair<std::string, uint32_t>{"h0", 1}));
    EXPECT_EQ(Peer(t, "edge1_1", 2), (std::pair<std::string, uint32_t>{"h7", 1}));
    EXPECT_EQ(Peer(t, "edge2_1", 3), (std::pair<std::string, uint32_t>{"agg2_0", 2}));
    EXPECT_EQ(Peer(t, "edge2_1", 4), (std::pair<std::string, uint32_t>{"agg2_1", 2}));
    EXPECT_EQ(Peer(t, "agg3_1", 3), (std::pair<std::string, uint32_t>{"core2", 4}));
    EXPECT_EQ(Peer(t, "agg3_1", 4), (std::pair<std::string, uint32_t>{"core3", 4}));
    for (uint32_t c = 0; c < 4; ++c)
    {
        for (uint32_t p = 0; p < 4; ++p)
        {
            // Core port p+1 goes to pod p.
            auto [peer, port] = Peer(t, "core" + std::to_string(c), p + 1);
            EXPECT_EQ(peer, "agg" + std::to_string(p) + "_" + std::to_string(c / 2));
            EXPECT_EQ(port, 3 + c % 2);
        }
    }
    // Hosts in different pods are 6 hops apart: host-edge-agg-core-agg-edge-host.
    EXPECT_EQ(HostDiameter(t), 6);
}

TEST(TopologyGenerators, FatTreeK8)
{
    Topology t = MakeFatTree(8);
    EXPECT_EQ(t.Validate(), "");
    EXPECT_EQ(t.Hosts().size(), 128u);
    EXPECT_EQ(t.Switches().size(), 80u); // 32 edge + 32 agg + 16 core
    EXPECT_EQ(t.links.size(), 384u);
    std::vector<uint32_t> used = PortUse(t);
    for (uint32_t s : t.Switches())
    {
        EXPECT_EQ(t.nodes[s].ports, 8u);
        EXPECT_EQ(used[s], 8u) << t.nodes[s].name;
    }
    EXPECT_TRUE(t.Find("core15").has_value());
    EXPECT_FALSE(t.Find("core16").has_value());
    EXPECT_TRUE(t.Find("edge7_3").has_value());
    EXPECT_EQ(t.nodes[t.Find("h127").value()].kind, TopoNodeKind::Host);
    EXPECT_EQ(HostDiameter(t), 6);
}

TEST(TopologyGenerators, FatTreeSmallestAndInvalid)
{
    Topology t = MakeFatTree(2);
    EXPECT_EQ(t.Validate(), "");
    EXPECT_EQ(t.Hosts().size(), 2u);
    EXPECT_EQ(t.Switches().size(), 5u);
    EXPECT_THROW(MakeFatTree(3), std::invalid_argument);
    EXPECT_THROW(MakeFatTree(0), std::invalid_argument);
    EXPECT_THROW(MakeFatTree(1000), std::invalid_argument);
}

TEST(TopologyGenerators, LeafSpine)
{
    Topology t = MakeLeafSpine(4, 2, 3);
    EXPECT_EQ(t.Validate(), "");
    EXPECT_EQ(t.Hosts().size(), 12u);
    EXPECT_EQ(t.Switches().size(), 6u);
    EXPECT_EQ(t.links.size(), 12u + 8u);
    std::vector<uint32_t> used = PortUse(t);
    for (uint32_t s : t.Switches())
    {
        const TopoNode& n = t.nodes[s];
        EXPECT_EQ(n.ports, n.name.rfind("leaf", 0) == 0 ? 5u : 4u) << n.name;
        EXPECT_EQ(n.level, n.name.rfind("leaf", 0) == 0 ? 1 : 2) << n.name;
        EXPECT_EQ(used[s], n.ports);
    }
    EXPECT_EQ(Peer(t, "leaf2", 1), (std::pair<std::string, uint32_t>{"h6", 1}));
    EXPECT_EQ(Peer(t, "leaf2", 5), (std::pair<std::string, uint32_t>{"spine1", 3}));
    EXPECT_EQ(HostDiameter(t), 4);
    EXPECT_THROW(MakeLeafSpine(0, 2, 2), std::invalid_argument);
}

TEST(TopologyGenerators, DumbbellStarPair)
{
    Topology d = MakeDumbbell(3, 5);
    EXPECT_EQ(d.Validate(), "");
    EXPECT_EQ(d.Hosts().size(), 8u);
    EXPECT_EQ(d.Switches().size(), 2u);
    EXPECT_EQ(d.links.size(), 9u);
    PortUse(d);
    EXPECT_EQ(d.nodes[d.Find("swL").value()].ports, 4u);
    EXPECT_EQ(d.nodes[d.Find("swR").value()].ports, 6u);
    EXPECT_EQ(Peer(d, "swL", 4), (std::pair<std::string, uint32_t>{"swR", 6}));
    EXPECT_EQ(Peer(d, "swR", 1), (std::pair<std::string, uint32_t>{"h3", 1}));
    EXPECT_EQ(HostDiameter(d), 3);

    Topology s = MakeStar(8);
    EXPECT_EQ(s.Validate(), "");
    EXPECT_EQ(s.nodes.size(), 9u);
    EXPECT_EQ(s.links.size(), 8u);
    EXPECT_EQ(HostDiameter(s), 2);

    Topology p = MakeTwoHostsOneSwitch();
    EXPECT_EQ(p.Validate(), "");
    EXPECT_EQ(p.Hosts(), (std::vector<uint32_t>{0, 1}));
    EXPECT_EQ(p.Switches(), (std::vector<uint32_t>{2}));
    EXPECT_EQ(Peer(p, "sw0", 2), (std::pair<std::string, uint32_t>{"h1", 1}));
    EXPECT_THROW(MakeStar(0), std::invalid_argument);
    EXPECT_THROW(MakeDumbbell(0, 1), std::invalid_argument);
}

TEST(TopologyValidate, CatchesEachProblem)
{
    auto broken = [](auto mutate) {
        Topology t = MakeStar(3);
        mutate(t);
        return t.Validate();
    };
    auto has = [](const std::string& msg, const std::string& what) {
        return msg.find(what) != std::string::npos;
    };
    EXPECT_TRUE(has(broken([](Topology& t) { t.nodes.clear(); t.links.clear(); }), "no nodes"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.nodes[1].name = ""; }), "empty name"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.nodes[1].name = "a\"b"; }), "quote"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.nodes[2].name = "h0"; }), "duplicate node name"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.nodes[3].ports = 0; }), "no ports"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.links[0].b = 42; }), "only 4 nodes"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.links[0].bPort = 4; }), "out of range 1..3"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.links[0].aPort = 0; }), "port 0 out of range"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.AddLink(3, 1, 3, 2); }), "self-loop"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.links[1].bPort = 1; }), "already used"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.links[0].rate = "4xFAST"; }), "bad rate"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.links[0].lengthMeters = std::nan(""); }),
                    "not a finite"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.links.pop_back(); }), "disconnected"));
    EXPECT_TRUE(has(broken([](Topology& t) { t.AddNode("lonely", TopoNodeKind::Host, 1); }),
                    "'lonely' cannot be reached"));
    // And the fine cases stay fine.
    EXPECT_EQ(broken([](Topology& t) { t.links[0].rate = "12xNDR"; }), "");
    EXPECT_EQ(broken([](Topology& t) { t.links[0].lengthMeters = 3.5; }), "");
}

TEST(TopologyRates, ParseLinkRate)
{
    std::string c;
    EXPECT_TRUE(ParseLinkRate("4xHDR", &c));
    EXPECT_EQ(c, "4xHDR");
    EXPECT_TRUE(ParseLinkRate("12xndr", &c));
    EXPECT_EQ(c, "12xNDR");
    EXPECT_TRUE(ParseLinkRate("1xSDR"));
    EXPECT_TRUE(ParseLinkRate("4xFDR10"));
    EXPECT_TRUE(ParseLinkRate("2xXDR"));
    EXPECT_FALSE(ParseLinkRate("3xHDR"));
    EXPECT_FALSE(ParseLinkRate("4xHDR2"));
    EXPECT_FALSE(ParseLinkRate("HDR"));
    EXPECT_FALSE(ParseLinkRate("4x"));
    EXPECT_FALSE(ParseLinkRate(""));
}

// An excerpt in the shape ibnetdiscover prints, with the Cnuas length extension.
static const char* const kIbnetdiscoverSample = R"(#
# Topology file: generated on Tue Mar  4 10:00:00 2025
#
# Initiated from node 0002c903000a1b2c port 0002c903000a1b2d

vendid=0x2c9
devid=0xd2f0
sysimgguid=0xb8599f0300fc4a5e
switchguid=0xb8599f0300fc4a5e(b8599f0300fc4a5e)
Switch	40 "S-b8599f0300fc4a5e"		# "MF0;leaf1:MQM8700/U1" enhanced port 0 lid 1 lmc 0
[1]	"H-0002c903000a1b2c"[1](2c903000a1b2d) 		# "node1 HCA-1" lid 2 4xHDR
[2]	"H-0002c903000a1b3c"[1](2c903000a1b3d) 		# "node2 HCA-1" lid 3 4xHDR length=3m
[39]	"S-b8599f0300fc4a7e"[40]		# "MF0;spine1:MQM8700/U1" lid 4 4xHDR length=25m

vendid=0x2c9
devid=0xd2f0
sysimgguid=0xb8599f0300fc4a7e
switchguid=0xb8599f0300fc4a7e(b8599f0300fc4a7e)
Switch	40 "S-b8599f0300fc4a7e"		# "MF0;spine1:MQM8700/U1" enhanced port 0 lid 4 lmc 0
[40]	"S-b8599f0300fc4a5e"[39]		# "MF0;leaf1:MQM8700/U1" lid 1 4xHDR

vendid=0x2c9
devid=0x101b
sysimgguid=0x2c903000a1b2f
caguid=0x2c903000a1b2c
Ca	1 "H-0002c903000a1b2c"		# "node1 HCA-1"
[1](2c903000a1b2d) 	"S-b8599f0300fc4a5e"[1]		# lid 2 lmc 0 "MF0;leaf1:MQM8700/U1" lid 1 4xHDR

vendid=0x2c9
devid=0x101b
sysimgguid=0x2c903000a1b3f
caguid=0x2c903000a1b3c
Ca	1 "H-0002c903000a1b3c"		# "node2 HCA-1"
[1](2c903000a1b3d) 	"S-b8599f0300fc4a5e"[2]		# lid 3 lmc 0 "MF0;leaf1:MQM8700/U1" lid 1 4xHDR
)";

TEST(TopologyFile, ParsesIbnetdiscoverOutput)
{
    Topology t = ParseTopologyText(kIbnetdiscoverSample, "/some/dir/cluster.topo");
    EXPECT_EQ(t.name, "cluster");
    ASSERT_EQ(t.nodes.size(), 4u);
    EXPECT_EQ(t.nodes[0].name, "S-b8599f0300fc4a5e");
    EXPECT_EQ(t.nodes[0].kind, TopoNodeKind::Switch);
    EXPECT_EQ(t.nodes[0].ports, 40u);
    EXPECT_EQ(t.nodes[2].kind, TopoNodeKind::Host);
    EXPECT_EQ(t.nodes[2].ports, 1u);
    EXPECT_EQ(t.Hosts().size(), 2u);
    // Three cables, each listed from both ends (the spine link) or from one (HCA links are
    // listed from both ends too here).
    ASSERT_EQ(t.links.size(), 3u);
    std::set<LinkKey> links = LinkSet(t);
    EXPECT_EQ(links.count(LinkKey{"H-0002c903000a1b2c", 1, "S-b8599f0300fc4a5e", 1, "4xHDR", -1}),
              1u);
    EXPECT_EQ(links.count(LinkKey{"H-0002c903000a1b3c", 1, "S-b8599f0300fc4a5e", 2, "4xHDR", 3}),
              1u);
    EXPECT_EQ(links.count(LinkKey{"S-b8599f0300fc4a5e", 39, "S-b8599f0300fc4a7e", 40, "4xHDR", 25}),
              1u);
}

TEST(TopologyFile, IbsimNetFileAndOneSidedLinks)
{
    // ibsim style: no comments, a link listed from one end only, a missing remote port (1).
    const char* text = "Switch\t8 \"Switch1\"\n"
                       "[1]\t\"Hca1\"[1]\n"
                       "[2]\t\"Hca2\"\n"
                       "[3]\t\"Switch2\"[3] w=4\n"
                       "\n"
                       "Switch 8 \"Switch2\"\n"
                       "[3]\t\"Switch1\"[3]\n"
                       "\n"
                       "Hca\t2 \"Hca1\"\n"
                       "Hca\t2 \"Hca2\"\n"
                       "[1]\t\"Switch1\"[2]\t\t# 1xSDR\n";
    Topology t = ParseTopologyText(text, "net");
    EXPECT_EQ(t.links.size(), 3u);
    std::set<LinkKey> links = LinkSet(t);
    EXPECT_EQ(links.count(LinkKey{"Hca1", 1, "Switch1", 1, "", -1}), 1u);
    EXPECT_EQ(links.count(LinkKey{"Hca2", 1, "Switch1", 2, "1xSDR", -1}), 1u);
    EXPECT_EQ(links.count(LinkKey{"Switch1", 3, "Switch2", 3, "", -1}), 1u);
}

TEST(TopologyFile, NameAndLevelExtensions)
{
    Topology t = ParseTopologyText("name \"my fabric\"\n"
                                   "Switch 2 \"sw\" level=1 # \"desc\"\n"
                                   "[1] \"a\"[1] length=50cm\n"
                                   "[2] \"b\"[1]\t# 4xEDR length=1.5km\n"
                                   "Hca 1 \"a\" level=0\n"
                                   "Hca 1 \"b\"\n",
                                   "x.topo");
    EXPECT_EQ(t.name, "my fabric");
    EXPECT_EQ(t.nodes[0].level, 1);
    EXPECT_EQ(t.nodes[1].level, 0);
    EXPECT_EQ(t.nodes[2].level, -1);
    EXPECT_DOUBLE_EQ(t.links[0].lengthMeters, 0.5);
    EXPECT_DOUBLE_EQ(t.links[1].lengthMeters, 1500);
    EXPECT_EQ(t.links[1].rate, "4xEDR");
}

TEST(TopologyFile, ClearErrorsWithLineNumbers)
{
    const std::string pair =
        "Switch 2 \"sw\"\n[1] \"a\"[1]\n[2] \"b\"[1]\nHca 1 \"a\"\nHca 1 \"b\"\n";
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1]\n[2] \"ghost\"[1]\nHca 1 \"a\"\n", 3,
                  "unknown node 'ghost'");
    ExpectBadFile("Switch 2 \"sw\"\n[3] \"a\"[1]\nHca 1 \"a\"\n", 2, "port 3 out of range");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[2]\nHca 1 \"a\"\n", 2, "peer port 2 out of range");
    ExpectBadFile(pair + "Hca 1 \"a\"\n", 6, "node 'a' is already defined at bad.topo:4");
    ExpectBadFile("Switch many \"sw\"\n", 1, "port count 'many'");
    ExpectBadFile("Switch 4 sw\n", 1, "expected the node name in double quotes");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1]  # 4xQQR\nHca 1 \"a\"\n", 2,
                  "unknown link rate '4xQQR'");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1] length=10ft\nHca 1 \"a\"\n", 2,
                  "bad cable length '10ft'");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1] length=0x10m\nHca 1 \"a\"\n", 2,
                  "bad cable length '0x10m'");
    ExpectBadFile("[1] \"a\"[1]\n", 1, "before any Switch/Hca/Ca header");
    ExpectBadFile("Swtich 2 \"sw\"\n", 1, "unrecognised line");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1]\n[1] \"b\"[1]\nHca 1 \"a\"\nHca 1 \"b\"\n", 3,
                  "already listed at bad.topo:2");
    // Inconsistent listings from the two ends.
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1]\n[2] \"b\"[1]\nHca 1 \"a\"\n[1] \"sw\"[2]\n"
                  "Hca 1 \"b\"\n",
                  2, "but bad.topo:5 lists 'a'[1] as cabled to 'sw'[2]");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1] # 4xHDR\nHca 1 \"a\"\n[1] \"sw\"[1] # 4xEDR\n", 4,
                  "rate 4xEDR disagrees");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1]\nHca 2 \"a\"\n[2] \"sw\"[1]\n", 4,
                  "'a'[2] is listed as cabled to 'sw'[1], but bad.topo:2 lists 'sw'[1] as "
                  "cabled to 'a'[1]");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"sw\"[2]\n", 2, "self-loop");
    ExpectBadFile("Switch 2 \"sw\"\n[1] \"a\"[1] bogus\nHca 1 \"a\"\n", 2, "unexpected 'bogus'");
    ExpectBadFile("Rt 2 \"router\"\n", 1, "routers (Rt) are not supported");
    ExpectBadFile("Switch 2 \"sw\" level=7\n", 1, "unexpected 'level=7'");
    ExpectBadFile("include missing.topo\n", 1, "cannot open included file");
}

TEST(TopologyFile, FileLevelErrors)
{
    // Problems with no single line to blame still name the file.
    try
    {
        ParseTopologyText("Switch 2 \"sw\"\n[1] \"a\"[1]\nHca 1 \"a\"\nHca 1 \"b\"\n", "f.topo");
        ADD_FAILURE() << "disconnected file accepted";
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_NE(std::string(e.what()).find("f.topo: topology is disconnected"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(ParseTopologyText("# nothing here\n", "empty.topo"), std::invalid_argument);
    EXPECT_THROW(ParseTopologyFile("/nonexistent/dir/x.topo"), std::invalid_argument);
}

TEST(TopologyFile, IncludeRelativeToIncludingFile)
{
    std::filesystem::path dir = TestDir();
    std::filesystem::create_directories(dir / "parts");
    WriteFile(dir / "parts" / "hosts.topo",
              "Hca 1 \"a\"\n[1] \"sw\"[1]\nHca 1 \"b\"\n[1] \"sw\"[2]\n");
    WriteFile(dir / "parts" / "fabric.topo", "Switch 2 \"sw\"\ninclude hosts.topo\n");
    WriteFile(dir / "main.topo", "name fab\ninclude parts/fabric.topo\n");
    Topology t = ParseTopologyFile((dir / "main.topo").string());
    EXPECT_EQ(t.name, "fab");
    EXPECT_EQ(t.nodes.size(), 3u);
    EXPECT_EQ(t.links.size(), 2u);

    WriteFile(dir / "loop1.topo", "include loop2.topo\n");
    WriteFile(dir / "loop2.topo", "Switch 1 \"s\"\ninclude loop1.topo\n");
    try
    {
        ParseTopologyFile((dir / "loop1.topo").string());
        ADD_FAILURE() << "include cycle accepted";
    }
    catch (const std::invalid_argument& e)
    {
        std::string msg = e.what();
        EXPECT_NE(msg.find("loop2.topo:2: include cycle"), std::string::npos) << msg;
    }
    std::filesystem::remove_all(dir);
}

TEST(TopologyFile, RoundTrip)
{
    std::vector<Topology> all = {MakeTwoHostsOneSwitch(), MakeStar(5), MakeDumbbell(2, 3),
                                 MakeLeafSpine(3, 2, 2), MakeFatTree(4)};
    // Rates and lengths survive too, including awkward decimal lengths.
    all[4].links[0].rate = "4xHDR";
    all[4].links[1].lengthMeters = 0.1;
    all[4].links[2].rate = "12xNDR";
    all[4].links[2].lengthMeters = 2.0 / 3.0;
    for (const Topology& t : all)
    {
        std::string text = WriteTopologyText(t);
        Topology back = ParseTopologyText(text, "rt.topo");
        EXPECT_EQ(back.name, t.name);
        ASSERT_EQ(back.nodes.size(), t.nodes.size()) << t.name;
        for (size_t i = 0; i < t.nodes.size(); ++i)
        {
            EXPECT_EQ(back.nodes[i].name, t.nodes[i].name);
            EXPECT_EQ(back.nodes[i].kind, t.nodes[i].kind);
            EXPECT_EQ(back.nodes[i].ports, t.nodes[i].ports);
            EXPECT_EQ(back.nodes[i].level, t.nodes[i].level);
        }
        EXPECT_EQ(LinkSet(back), LinkSet(t)) << t.name;
        EXPECT_EQ(WriteTopologyText(back), text) << t.name;
    }
}

TEST(TopologySpec, BuildsEveryKind)
{
    EXPECT_EQ(BuildTopologyFromSpec("pair").nodes.size(), 3u);
    EXPECT_EQ(BuildTopologyFromSpec("star:hosts=8").Hosts().size(), 8u);
    EXPECT_EQ(BuildTopologyFromSpec("star").Hosts().size(), 4u); // default
    Topology d = BuildTopologyFromSpec("dumbbell:left=4,right=3");
    EXPECT_EQ(d.Hosts().size(), 7u);
    EXPECT_EQ(d.name, "dumbbell:left=4,right=3");
    Topology ls = BuildTopologyFromSpec("leaf-spine:leaves=4,spines=2,hosts=4");
    EXPECT_EQ(ls.Hosts().size(), 16u);
    EXPECT_EQ(ls.Switches().size(), 6u);
    EXPECT_EQ(BuildTopologyFromSpec("leaf-spine:spines=3").Switches().size(), 7u);
    EXPECT_EQ(BuildTopologyFromSpec("fat-tree:k=8").Hosts().size(), 128u);

    std::filesystem::path dir = TestDir();
    WriteFile(dir / "f.topo", WriteTopologyText(MakeStar(3)));
    EXPECT_EQ(BuildTopologyFromSpec("file:f.topo", dir.string()).Hosts().size(), 3u);
    EXPECT_EQ(BuildTopologyFromSpec("file:" + (dir / "f.topo").string(), "/elsewhere")
                  .Hosts()
                  .size(),
              3u);
    std::filesystem::remove_all(dir);
}

TEST(TopologySpec, BadSpecs)
{
    auto message = [](const std::string& spec) {
        try
        {
            BuildTopologyFromSpec(spec);
        }
        catch (const std::invalid_argument& e)
        {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    EXPECT_NE(message("torus:n=4").find("unknown topology 'torus'"), std::string::npos);
    EXPECT_NE(message("fat-tree:k=5").find("k must be even"), std::string::npos);
    EXPECT_NE(message("fat-tree:k=four").find("not a whole number"), std::string::npos);
    EXPECT_NE(message("fat-tree:n=4").find("has no parameter 'n' (it takes: k)"),
              std::string::npos);
    EXPECT_NE(message("pair:hosts=3").find("it takes none"), std::string::npos);
    EXPECT_NE(message("star:hosts").find("expected KEY=VALUE"), std::string::npos);
    EXPECT_NE(message("star:hosts=2,hosts=3").find("given twice"), std::string::npos);
    EXPECT_NE(message("file:/nonexistent.topo").find("cannot open"), std::string::npos);
    EXPECT_NE(message("file:").find("needs a path"), std::string::npos);
}
