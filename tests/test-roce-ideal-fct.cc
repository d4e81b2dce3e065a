// The ideal FCT on RoCEv2 (helpers/roce/roce-ideal-fct.h): a flow alone finishes exactly at
// it, to the picosecond, whatever its size, path, MTU or ACK interval; no flow of a busy fabric
// finishes before it; and one case worked out by hand. FCT tables divide by it (roce-fct,
// roce-hpcc's roce-hpcc-fct.csv), so a lone flow reads a slowdown of exactly 1.
#include "helpers/formats/topology.h"
#include "helpers/roce/roce-ideal-fct.h"
#include "helpers/roce/roce-traffic-pattern.h"
#include "helpers/roce/roce-traffic-run.h"

#include "ns3/boolean.h"

#include <gtest/gtest.h>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

/// A k=4 fat-tree with 100 Gb/s host links of 200 m (1 us) and 400 Gb/s switch links of 20 m
/// (100 ns), the HPCC fat-tree's rates; no congestion control unless `cc` names one.
RoceRunSpec
FatTree4(const std::string& cc = "ns3::RdmaCcNone")
{
    RoceRunSpec spec;
    spec.topology = BuildTopologyFromSpec("fat-tree:k=4");
    for (TopoLink& l : spec.topology.links)
    {
        const bool hostLink = spec.topology.nodes[l.a].kind == TopoNodeKind::Host ||
                              spec.topology.nodes[l.b].kind == TopoNodeKind::Host;
        l.lengthMeters = hostLink ? 200 : 20;
    }
    spec.hostRate = DataRate("100Gbps");
    spec.fabricRate = DataRate("400Gbps");
    spec.cc = cc;
    return spec;
}

struct LoneRun
{
    RoceRunResult result;
    std::vector<RoceIdealRoute> routes; ///< per flow, as RoceIdealPaths reads the fabric
};

/// Every flow of `spec` (each alone: they start far enough apart), with its route.
LoneRun
RunWithRoutes(RoceRunSpec spec)
{
    std::optional<RoceIdealPaths> paths;
    spec.beforeRun = [&paths](const EthFabric& f, const std::vector<RoceHca>&) {
        paths.emplace(f);
    };
    LoneRun out;
    out.result = RunRoceFlows(spec);
    for (const RoceFlowSpec& f : spec.flows)
    {
        out.routes.push_back(paths->Route(f.src, f.dst));
    }
    return out;
}

} // namespace

TEST(RoceIdealFct, WorkedOutByHandOnTwoLinks)
{
    // 1025 bytes over two 100 Gb/s links of 1 us. Packet 1: BTH 12 + RETH 16 + 1024 + ICRC 4
    // in UDP/IPv4/Ethernet with FCS = 1102 bytes, on the wire with preamble and gap 1122 bytes
    // = 89.76 ns; packet 2: the last byte padded to 4, 66 bytes, 86 on the wire = 6.88 ns; an
    // ACK (BTH + AETH + ICRC) the same 66 bytes. A receiver acts on the last bit, 0.96 ns of gap
    // before the wire frees.
    //   link 1: p1 0 -> in at 88.80 + 1000; p2 89.76 -> in at 89.76 + 5.92 + 1000 = 1095.68
    //   link 2: p1 1088.80 -> wire free at 1178.56, in at 2177.60; p2 waits for the wire:
    //           1178.56 -> in at 2184.48
    //   ACK 1 leaves at 2177.60, in at 2177.60 + 2 x 1005.92 = 4189.44; ACK 2 leaves at
    //   2184.48 (ACK 1's wire is free again just then) and both links are free for it: in at
    //   4196.32 ns.
    const RoceIdealRoute route = RoceIdealRoute::Symmetric(
        {RoceIdealLink{100000000000ULL, 1000000}, RoceIdealLink{100000000000ULL, 1000000}});
    EXPECT_EQ(RoceIdealFctPs(1025, route, {1024, 1}), 4196320);
    // Only the last packet asks for an ACK: the same here (ACK 1 delayed nothing).
    EXPECT_EQ(RoceIdealFctPs(1025, route, {1024, 0}), 4196320);
    // One byte: 82-byte frame (RETH, the byte padded to 4), 102 on the wire: 2 x (8.16 - 0.96 +
    // 1000) + 2 x (6.88 - 0.96 + 1000) = 4026.24 ns.
    EXPECT_EQ(RoceIdealFctPs(1, route, {1024, 1}), 4026240);
    // A VLAN tag adds 4 bytes to each of the four frames: 4 x 0.32 ns.
    RoceIdealRoute tagged = route;
    for (auto* links : {&tagged.forward, &tagged.back})
    {
        for (RoceIdealLink& l : *links)
        {
            l.vlanTag = true;
        }
    }
    EXPECT_EQ(RoceIdealFctPs(1, tagged, {1024, 1}), 4026240 + 4 * 320);
    EXPECT_THROW(RoceIdealFctPs(0, route, {1024, 1}), std::invalid_argument);
    EXPECT_THROW(RoceIdealFctPs(1, RoceIdealRoute{}, {1024, 1}), std::invalid_argument);
}

TEST(RoceIdealFct, ALoneFlowFinishesExactlyAtItsIdeal)
{
    // Sizes around the packet boundaries and the padding, a long flow; hosts on one edge
    // switch (2 links), in one pod (4) and in two pods (6); MTU 1024 and 4096; an ACK per
    // packet (the HPCC configurations), per third packet and per message; no congestion control
    // and DCQCN (a lone flow runs at line rate under it). Flows 300 us apart, each alone.
    const std::vector<uint64_t> sizes = {1, 3, 4, 5, 1000, 1023, 1024, 1025, 2049, 4096, 4097,
                                         65536, 1000003};
    const std::vector<std::pair<uint32_t, uint32_t>> pairs = {{0, 1}, {0, 2}, {3, 12}};
    struct Case
    {
        RdmaMtu mtu;
        uint32_t ackEvery;
        const char* cc;
    };
    for (const Case& c : {Case{RdmaMtu::MTU_1024, 1, "ns3::RdmaCcNone"},
                          Case{RdmaMtu::MTU_4096, 0, "ns3::RdmaCcNone"},
                          Case{RdmaMtu::MTU_1024, 3, "ns3::RdmaCcNone"},
                          Case{RdmaMtu::MTU_1024, 1, "ns3::RdmaCcDcqcnPaper"}})
    {
        RoceRunSpec spec = FatTree4(c.cc);
        spec.pathMtu = c.mtu;
        spec.ethMtu = 9000;
        spec.ackEveryPackets = c.ackEvery;
        Time start = MicroSeconds(1);
        for (const auto& [src, dst] : pairs)
        {
            for (uint64_t bytes : sizes)
            {
                spec.flows.push_back({src, dst, bytes, start});
                start += MicroSeconds(300);
            }
        }
        spec.limit = start + MilliSeconds(1);
        const LoneRun run = RunWithRoutes(spec);
        ASSERT_EQ(run.result.flows.size(), spec.flows.size());
        std::set<size_t> lengths;
        for (size_t i = 0; i < spec.flows.size(); ++i)
        {
            const RoceFlowResult& f = run.result.flows[i];
            ASSERT_TRUE(f.ok) << "flow " << i;
            lengths.insert(run.routes[i].forward.size());
            const int64_t ideal =
                RoceIdealFctPs(f.spec.bytes, run.routes[i],
                               {RdmaMtuBytes(c.mtu), c.ackEvery});
            EXPECT_EQ(f.fct.GetPicoSeconds(), ideal)
                << c.cc << " MTU " << RdmaMtuBytes(c.mtu) << " ACK every " << c.ackEvery
                << ": " << f.spec.bytes << " bytes, host " << f.spec.src << " -> "
                << f.spec.dst;
        }
        EXPECT_EQ(lengths, (std::set<size_t>{2, 4, 6}));
    }
}

TEST(RoceIdealFct, NoFlowOfABusyFabricFinishesBelowItsIdeal)
{
    // All-to-all WebSearch at 70 % of the host links under DCQCN, 500 us of arrivals: queues,
    // marks and CNPs, flows slowed by others. None may beat its ideal (a flow faster than
    // alone would mean the ideal counts something the model does not do), and the load must
    // actually slow flows down, or the check is empty.
    RoceRunSpec spec = FatTree4("ns3::RdmaCcDcqcnPaper");
    RoceTrafficSpec t;
    t.pattern = RocePattern::AllToAll;
    t.hosts = static_cast<uint32_t>(spec.topology.Hosts().size());
    t.linkBps = 100e9;
    t.load = 0.7;
    t.duration = MicroSeconds(500);
    t.cdfFile = std::string(CNUAS_SOURCE_DIR) + "/data/cdf/websearch.cdf";
    t.seed = 5;
    spec.flows = MakeRoceTraffic(t).flows;
    spec.limit = MilliSeconds(20);
    ASSERT_GT(spec.flows.size(), 40u);
    const LoneRun run = RunWithRoutes(spec);
    double worst = 0;
    size_t done = 0;
    for (size_t i = 0; i < spec.flows.size(); ++i)
    {
        const RoceFlowResult& f = run.result.flows[i];
        if (!f.ok)
        {
            continue;
        }
        done++;
        const int64_t ideal = RoceIdealFctPs(f.spec.bytes, run.routes[i], {1024, 1});
        EXPECT_GE(f.fct.GetPicoSeconds(), ideal) << "flow " << i << ", " << f.spec.bytes
                                                 << " bytes";
        worst = std::max(worst, double(f.fct.GetPicoSeconds()) / double(ideal));
    }
    EXPECT_EQ(done, spec.flows.size());
    EXPECT_GT(worst, 1.5) << "the fabric was not busy enough to slow any flow";
}
