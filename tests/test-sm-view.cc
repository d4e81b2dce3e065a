// The fabric as the standard tools print it: ibstat port blocks read from the ports, and the SM's
// discovered subnet in ibnetdiscover format, which the topology reader takes back as the very
// fabric that was built. Also `cnuas fabric show` end to end.
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "ib-test-packets.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <set>

using namespace ns3;

namespace
{

/// A topology's cables as "a[p]-b[q]" with the ends in name order, and their rates.
std::set<std::string>
Cables(const Topology& t, bool withRate)
{
    std::set<std::string> out;
    for (const TopoLink& l : t.links)
    {
        std::string x = t.PortName(l.a, l.aPort);
        std::string y = t.PortName(l.b, l.bPort);
        if (y < x)
        {
            std::swap(x, y);
        }
        out.insert(x + "-" + y + (withRate ? " " + l.rate : ""));
    }
    return out;
}

size_t
Count(const std::string& text, const std::string& what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    {
        ++n;
    }
    return n;
}

} // namespace

class SmView : public ::testing::TestWithParam<std::string>
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

TEST_P(SmView, IbnetdiscoverOutputReadsBackAsTheFabricThatWasBuilt)
{
    const Topology built = BuildTopologyFromSpec(GetParam());
    IbFabric f = IbFabricHelper().Build(built);
    IbSmBringUp up = IbBringUpWithSm(f, 1);
    const std::string text = IbFormatIbnetdiscover(up.sm->GetSubnet(), up.sm->GetGuid());
    const Topology seen = ParseTopologyText(text, "sm-view.topo");
    ASSERT_EQ(seen.nodes.size(), built.nodes.size()) << text;
    for (const TopoNode& n : built.nodes)
    {
        auto at = seen.Find(n.name);
        ASSERT_TRUE(at.has_value()) << n.name;
        EXPECT_EQ(seen.nodes[*at].kind, n.kind) << n.name;
        EXPECT_EQ(seen.nodes[*at].ports, n.ports) << n.name;
    }
    EXPECT_EQ(Cables(seen, false), Cables(built, false));
    // Every cable shows the rate its ports trained to (IbNetDevice default: 4x HDR).
    for (const TopoLink& l : seen.links)
    {
        EXPECT_EQ(l.rate, "4xHDR") << seen.PortName(l.a, l.aPort);
    }
    // LIDs in the comments are the ones the ports hold.
    for (uint32_t h = 0; h < f.hosts.GetN(); ++h)
    {
        const std::string lid = "lid " + std::to_string(f.HostPort(h)->GetLid()) + " lmc 0";
        EXPECT_NE(text.find(lid), std::string::npos) << lid;
    }
}

INSTANTIATE_TEST_SUITE_P(Fabrics,
                         SmView,
                         ::testing::Values("pair", "leaf-spine:leaves=3,spines=2,hosts=2",
                                           "fat-tree:k=4"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string out;
                             for (char c : info.param)
                             {
                                 out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             }
                             return out;
                         });

TEST(SmViewIbstat, InitializingWithLidZeroBeforeTheSmActiveAfter)
{
    IbFabric f = IbFabricHelper().Build(BuildTopologyFromSpec("leaf-spine:leaves=2,spines=1,"
                                                              "hosts=2"));
    Simulator::Stop(MicroSeconds(1.5)); // links trained, no SM yet
    Simulator::Run();
    std::string before = IbFormatIbstat(f);
    EXPECT_EQ(Count(before, "\t\tState: Initializing\n"), 4u) << before;
    EXPECT_EQ(Count(before, "\t\tBase lid: 0\n"), 4u);
    EXPECT_EQ(Count(before, "\t\tPhysical state: LinkUp\n"), 4u);
    IbSmBringUp up = IbBringUpWithSm(f, 1);
    std::string after = IbFormatIbstat(f);
    EXPECT_EQ(Count(after, "\t\tState: Active\n"), 4u) << after;
    EXPECT_EQ(Count(after, "\t\tRate: 200\n"), 4u);
    EXPECT_EQ(Count(after, "\t\tSM lid: " + std::to_string(up.sm->GetSmLid()) + "\n"), 4u);
    for (uint32_t h = 0; h < f.hosts.GetN(); ++h)
    {
        EXPECT_NE(after.find("CA 'h" + std::to_string(h) + "'"), std::string::npos);
        EXPECT_NE(after.find("Base lid: " + std::to_string(f.HostPort(h)->GetLid()) + "\n"),
                  std::string::npos);
    }
    Simulator::Destroy();
}

TEST(SmViewCli, FabricShowPrintsIbstatAndAReadableTopology)
{
    int st = -1;
    const std::string out = cnuas_test::RunCommand(
        std::string(CNUAS_BINARY_DIR) + "/bin/cnuas fabric show --topology fat-tree:k=4 2>&1", &st);
    ASSERT_EQ(st, 0) << out;
    EXPECT_EQ(Count(out, "\t\tState: Active\n"), 16u) << out;
    const size_t topo = out.find("\n#\n# Topology file");
    ASSERT_NE(topo, std::string::npos);
    const Topology seen = ParseTopologyText(out.substr(topo), "cli.topo");
    EXPECT_EQ(Cables(seen, false), Cables(BuildTopologyFromSpec("fat-tree:k=4"), false));

    const std::string none = cnuas_test::RunCommand(
        std::string(CNUAS_BINARY_DIR) + "/bin/cnuas fabric show --topology pair --sm none 2>&1",
        &st);
    EXPECT_EQ(st, 0);
    EXPECT_EQ(Count(none, "\t\tState: Initializing\n"), 2u) << none;
    EXPECT_EQ(none.find("Topology file"), std::string::npos);

    cnuas_test::RunCommand(std::string(CNUAS_BINARY_DIR) +
                               "/bin/cnuas fabric show --sm bogus >/dev/null 2>&1",
                           &st);
    EXPECT_EQ(st, 2);
}

TEST(SmViewCli, ScenariosRunWithTheBuiltInSmByDefaultOrStatic)
{
    const std::string run = std::string(CNUAS_BINARY_DIR) + "/bin/cnuas run ib-pair " +
                            "--no-progress --no-plots --out " + CNUAS_BINARY_DIR +
                            "/test-out/sm-pair";
    int st = -1;
    std::string out = cnuas_test::RunCommand(run + " 2>&1", &st);
    EXPECT_EQ(st, 0) << out;
    EXPECT_NE(out.find("built-in SM on host 0: subnet up at"), std::string::npos) << out;
    EXPECT_NE(out.find(" 0 dropped"), std::string::npos) << out;
    out = cnuas_test::RunCommand(run + " --param sm=static 2>&1", &st);
    EXPECT_EQ(st, 0) << out;
    EXPECT_NE(out.find("static (configured directly, no SMPs)"), std::string::npos) << out;
    out = cnuas_test::RunCommand(run + " --param sm=opensm 2>&1", &st);
    EXPECT_NE(st, 0);
    EXPECT_NE(out.find("sm='opensm' is not one of builtin, static"), std::string::npos) << out;
}
