// RoCE traffic patterns and the roce-fct scenario: the load the generated flows offer against
// the requested one (within a bound from the CDF's own variance), a permutation's partners form
// a derangement, incast and all-to-all choose their peers as documented, and a run completes
// every flow with a CSV line each.
#include "ib-test-packets.h"

#include "helpers/formats/parse-util.h"
#include "helpers/roce/roce-traffic-pattern.h"
#include "helpers/scenario/scenario.h"
#include "models/rdma/apps/empirical-size-distribution.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace ns3;
using namespace cnuas_test;

namespace
{
std::string
Cdf(const std::string& name)
{
    return std::string(CNUAS_SOURCE_DIR) + "/data/cdf/" + name;
}

/// The mean of a piecewise-linear CDF worked out from its points (an atom at the first size,
/// then each segment's mass at its midpoint), independently of the generator.
double
CdfMean(const std::string& file)
{
    Ptr<EmpiricalSizeDistribution> d = CreateObject<EmpiricalSizeDistribution>();
    std::string err;
    EXPECT_TRUE(d->LoadFile(file, &err)) << err;
    const auto& pts = d->GetPoints();
    double mean = pts.front().size * pts.front().probability;
    for (size_t i = 1; i < pts.size(); ++i)
    {
        mean += (pts[i].probability - pts[i - 1].probability) * 0.5 *
                (pts[i].size + pts[i - 1].size);
    }
    return mean;
}

std::vector<std::vector<std::string>>
ReadCsv(const std::string& path)
{
    std::vector<std::vector<std::string>> rows;
    std::ifstream in(path);
    std::string line;
    std::getline(in, line); // header
    while (std::getline(in, line))
    {
        std::vector<std::string> cells;
        std::stringstream s(line);
        std::string c;
        while (std::getline(s, c, ','))
        {
            cells.push_back(c);
        }
        if (line.back() == ',')
        {
            cells.emplace_back();
        }
        rows.push_back(cells);
    }
    return rows;
}

std::string
Summary(const ScenarioResult& r, const std::string& key)
{
    for (const auto& [k, v] : r.summary)
    {
        if (k == key)
        {
            return v;
        }
    }
    return "";
}
} // namespace

TEST(RoceTraffic, OfferedLoadMatchesTheRequestWithinTheStatisticalBound)
{
    for (const std::string cdf : {"websearch.cdf", "fb-hadoop.cdf"})
    {
        for (RocePattern p : {RocePattern::AllToAll, RocePattern::Permutation,
                              RocePattern::Incast})
        {
            RoceTrafficSpec s;
            s.pattern = p;
            s.hosts = 16;
            s.linkBps = 40e9;
            s.load = 0.35;
            s.cdfFile = Cdf(cdf);
            s.incastSenders = 5;
            s.seed = 3;
            const double mean = CdfMean(s.cdfFile);
            const double links = p == RocePattern::Incast ? 1 : s.hosts;
            // About 20000 flows in all: the window follows from the requested load.
            const double want = 20000;
            s.duration = Seconds(want * 8 * mean / (s.load * s.linkBps * links));
            const RoceTraffic t = MakeRoceTraffic(s);
            double bytes = 0;
            double sq = 0;
            for (const auto& f : t.flows)
            {
                bytes += f.bytes;
                sq += double(f.bytes) * f.bytes;
                ASSERT_LT(f.start, s.duration);
            }
            const double n = t.flows.size();
            const double offered = bytes * 8 / (s.duration.GetSeconds() * s.linkBps * links);
            // Compound Poisson: Var(sum) = E[N] E[S^2], so the relative standard deviation of
            // the offered load is sqrt(E[S^2] / E[N]) / E[S].
            const double rel = std::sqrt(sq / n / want) / mean;
            ASSERT_LT(rel, 0.05) << "the bound must be tight enough to catch a wrong rate";
            EXPECT_NEAR(offered / s.load, 1.0, 4 * rel) << cdf << " pattern " << int(p);
            EXPECT_NEAR(n, want, 5 * std::sqrt(want)) << cdf << " pattern " << int(p);
        }
    }
}

TEST(RoceTraffic, PermutationIsADerangementFollowedByEveryFlow)
{
    std::set<std::vector<uint32_t>> seen;
    for (uint32_t hosts : {2u, 3u, 7u, 16u})
    {
        for (uint64_t seed = 1; seed <= 40; ++seed)
        {
            RoceTrafficSpec s;
            s.pattern = RocePattern::Permutation;
            s.hosts = hosts;
            s.cdfFile = Cdf("fb-hadoop.cdf");
            s.duration = MicroSeconds(200);
            s.seed = seed;
            const RoceTraffic t = MakeRoceTraffic(s);
            ASSERT_EQ(t.partner.size(), hosts);
            std::set<uint32_t> targets(t.partner.begin(), t.partner.end());
            EXPECT_EQ(targets.size(), hosts) << "a bijection";
            for (uint32_t h = 0; h < hosts; ++h)
            {
                EXPECT_NE(t.partner[h], h) << "no fixed point";
                EXPECT_LT(t.partner[h], hosts);
            }
            for (const auto& f : t.flows)
            {
                EXPECT_EQ(f.dst, t.partner[f.src]);
            }
            if (hosts == 7)
            {
                seen.insert(t.partner);
            }
        }
    }
    EXPECT_GT(seen.size(), 20u) << "the seed changes the permutation";
}

TEST(RoceTraffic, IncastAndAllToAllPickTheirPeers)
{
    RoceTrafficSpec s;
    s.hosts = 8;
    s.cdfFile = Cdf("fb-hadoop.cdf");
    s.duration = MilliSeconds(2);
    s.pattern = RocePattern::Incast;
    s.incastSenders = 3;
    s.incastTarget = 6;
    RoceTraffic t = MakeRoceTraffic(s);
    std::set<uint32_t> srcs;
    for (const auto& f : t.flows)
    {
        EXPECT_EQ(f.dst, 6u);
        srcs.insert(f.src);
    }
    EXPECT_EQ(srcs, (std::set<uint32_t>{7, 0, 1}));
    s.pattern = RocePattern::AllToAll;
    s.duration = MilliSeconds(20); // ~300 flows a host: all 7 peers (miss one: p < 1e-18)
    t = MakeRoceTraffic(s);
    std::map<uint32_t, std::set<uint32_t>> dsts;
    for (size_t i = 0; i < t.flows.size(); ++i)
    {
        const auto& f = t.flows[i];
        EXPECT_NE(f.src, f.dst);
        dsts[f.src].insert(f.dst);
        if (i > 0)
        {
            EXPECT_GE(f.start, t.flows[i - 1].start) << "sorted by start";
        }
    }
    ASSERT_EQ(dsts.size(), 8u);
    for (const auto& [src, d] : dsts)
    {
        EXPECT_EQ(d.size(), 7u) << "host " << src << " reaches every other host";
    }
    // Impossible requests are refused with the reason.
    s.pattern = RocePattern::Incast;
    s.incastSenders = 8;
    EXPECT_THROW(MakeRoceTraffic(s), std::invalid_argument);
    s.incastSenders = 2;
    s.load = 1.5;
    EXPECT_THROW(MakeRoceTraffic(s), std::invalid_argument);
    s.load = 0.3;
    s.hosts = 1;
    EXPECT_THROW(MakeRoceTraffic(s), std::invalid_argument);
    EXPECT_THROW(ParseRocePattern("ring"), std::invalid_argument);
}

TEST(RoceFctScenario, EveryFlowCompletesWithItsSlowdown)
{
    const ScenarioInfo* info = ScenarioRegistry::Find("roce-fct");
    ASSERT_NE(info, nullptr);
    struct Case
    {
        std::string topology;
        std::string pattern;
        std::string pfc;
        std::string duration;
    };
    // Incast loads only h0's link, so it needs a longer window for as many flows.
    for (const Case& c :
         {Case{"leaf-spine:leaves=2,spines=2,hosts=3", "permutation", "on", "300us"},
          Case{"fat-tree:k=4", "incast", "on", "2ms"},
          Case{"leaf-spine:leaves=2,spines=2,hosts=2", "all-to-all", "off", "300us"}})
    {
        ScenarioOptions o;
        o.outDir = std::string(CNUAS_BINARY_DIR) + "/test-output/roce-fct-" + c.pattern;
        RunCommand("rm -rf '" + o.outDir + "'");
        o.plots = false;
        o.progress = false;
        o.params = {{"topology", c.topology}, {"pattern", c.pattern},
                    {"cdf", "fb-hadoop.cdf"}, {"load", "0.3"},
                    {"duration", c.duration},    {"senders", "4"},
                    {"pfc", c.pfc},           {"limit", "50ms"}};
        const ScenarioResult r = info->run(o);
        Simulator::Destroy();
        EXPECT_EQ(r.exitCode, 0) << c.pattern << ": " << Summary(r, "flows done");
        const auto rows = ReadCsv(o.outDir + "/roce-fct.csv");
        ASSERT_GT(rows.size(), 5u) << c.pattern;
        EXPECT_EQ(Summary(r, "flows done"),
                  std::to_string(rows.size()) + "/" + std::to_string(rows.size()));
        std::set<std::string> ids;
        for (const auto& row : rows)
        {
            ASSERT_EQ(row.size(), 10u);
            ids.insert(row[0]);
            EXPECT_NE(row[1], row[2]);
            EXPECT_EQ(row[9], "success") << c.pattern << " flow " << row[0];
            const double fct = std::stod(row[6]);
            const double ideal = std::stod(row[7]);
            EXPECT_NEAR(std::stod(row[8]), fct / ideal, 1e-3 * fct / ideal + 1e-4);
            // The standalone ideal counts a RETH on every packet: a lone flow may beat it by
            // those 16 bytes a packet, no more.
            EXPECT_GT(fct / ideal, 0.97) << c.pattern << " flow " << row[0];
            EXPECT_NEAR(std::stod(row[5]) - std::stod(row[4]), fct, 1e-3 + 1e-6 * fct);
        }
        EXPECT_EQ(ids.size(), rows.size()) << "one line a flow";
    }
    ScenarioOptions bad;
    bad.params = {{"pfc", "maybe"}};
    EXPECT_THROW(info->run(bad), std::invalid_argument);
    Simulator::Destroy();
}

TEST(RoceFctScenario, FlowsFileRunsTheListedFlowsAndTheTableMatchesTheCsv)
{
    const ScenarioInfo* info = ScenarioRegistry::Find("roce-fct");
    ASSERT_NE(info, nullptr);
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/roce-fct-flows-file";
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    const std::string flows = dir + "/flows.txt";
    std::ofstream(flows) << "# src dst bytes start\n1 0 200000 0\n2 0 100000 5us\n\n"
                            "3 4 50000 1us  # to another host\n";
    ScenarioOptions o;
    o.outDir = dir;
    o.plots = false;
    o.progress = false;
    o.params = {{"topology", "star:hosts=5"}, {"rate", "10Gbps"}, {"flows-file", flows},
                {"kmax", "50000"},            {"sample", "10us"}, {"limit", "10ms"}};
    const ScenarioResult r = info->run(o);
    Simulator::Destroy();
    EXPECT_EQ(r.exitCode, 0);
    const ScenarioFlowTable& t = r.flows;
    ASSERT_EQ(t.src.size(), 3u);
    EXPECT_EQ(t.src, (std::vector<uint32_t>{1, 2, 3}));
    EXPECT_EQ(t.dst, (std::vector<uint32_t>{0, 0, 4}));
    EXPECT_EQ(t.sizeBytes, (std::vector<uint64_t>{200000, 100000, 50000}));
    const auto rows = ReadCsv(dir + "/roce-fct.csv");
    ASSERT_EQ(rows.size(), 3u);
    for (size_t i = 0; i < rows.size(); ++i)
    {
        // The table holds the numbers the CSV prints (to its three decimals).
        EXPECT_NEAR(std::stod(rows[i][4]), t.startNs[i], 1e-3);
        EXPECT_NEAR(std::stod(rows[i][6]), t.fctNs[i], 1e-3);
        EXPECT_NEAR(std::stod(rows[i][7]), t.idealFctNs[i], 1e-3);
        EXPECT_EQ(t.ok[i], 1);
    }
    // Two flows share h0's link: both are slower than alone; the third is not.
    EXPECT_GT(t.slowdown[0], 1.2);
    EXPECT_LT(t.slowdown[2], 1.1);
    // Sampled: a rate row per flow and sample, counters that never go down.
    const size_t samples = r.traces.timeUs.size();
    ASSERT_GT(samples, 10u);
    EXPECT_EQ(r.traces.flowRateGbps.size(), 3 * samples);
    EXPECT_EQ(r.traces.ecnMarks.size(), samples);
    for (size_t i = 1; i < samples; ++i)
    {
        EXPECT_GE(r.traces.ecnMarks[i], r.traces.ecnMarks[i - 1]);
        EXPECT_GE(r.traces.cnps[i], r.traces.cnps[i - 1]);
    }

    // A malformed list is an input error naming the file and line; kmin above kmax is refused.
    std::ofstream(flows) << "1 0 200000 0\n1 1 100 0us\n";
    EXPECT_THROW(
        {
            try
            {
                info->run(o);
            }
            catch (const InputError& e)
            {
                EXPECT_NE(std::string(e.what()).find("flows.txt:2:"), std::string::npos)
                    << e.what();
                throw;
            }
        },
        InputError);
    Simulator::Destroy();
    std::ofstream(flows) << "1 0 200000 5\n";
    EXPECT_THROW(info->run(o), InputError); // a start time without its unit
    Simulator::Destroy();
    o.params["flows-file"] = "";
    o.params["kmin"] = "60000";
    EXPECT_THROW(info->run(o), ScenarioParamError);
    Simulator::Destroy();
}

// What a run cost, as the scaling benchmark (bench/roce-scale-bench.py) reads it: packet-hops
// count every cable a frame crosses, so through one switch each RoCE packet (data, ACK, CNP)
// makes exactly two, and the ratios in the summary are those of the counters.
TEST(RoceFctScenario, SummaryReportsEventsPerPacketAndPacketHops)
{
    const ScenarioInfo* info = ScenarioRegistry::Find("roce-fct");
    ASSERT_NE(info, nullptr);
    const std::string dir = std::string(CNUAS_BINARY_DIR) + "/test-output/roce-fct-cost";
    RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    auto counter = [](const ScenarioResult& r, const std::string& key) {
        for (const auto& [k, v] : r.counters)
        {
            if (k == key)
            {
                return v;
            }
        }
        ADD_FAILURE() << "no counter " << key;
        return -1.0;
    };
    struct Case
    {
        std::string topology;
        double minHopsPerPacket;
        double maxHopsPerPacket;
    };
    // A k=4 fat-tree: 2 hops within an edge switch, 4 within a pod, 6 across the core.
    for (const Case& c : {Case{"star:hosts=4", 2, 2}, Case{"fat-tree:k=4", 2, 6}})
    {
        ScenarioOptions o;
        o.outDir = dir;
        o.plots = false;
        o.progress = false;
        o.params = {{"topology", c.topology}, {"cdf", "fb-hadoop.cdf"}, {"load", "0.3"},
                    {"duration", "200us"},    {"limit", "20ms"}};
        const ScenarioResult r = info->run(o);
        Simulator::Destroy();
        EXPECT_EQ(r.exitCode, 0) << c.topology;
        const double packets = counter(r, "packets_sent");
        const double hops = counter(r, "packet_hops");
        const double events = counter(r, "events");
        ASSERT_GT(packets, 100) << c.topology;
        EXPECT_GE(hops, c.minHopsPerPacket * packets) << c.topology;
        EXPECT_LE(hops, c.maxHopsPerPacket * packets) << c.topology;
        EXPECT_EQ(Summary(r, "RoCE packets sent"), std::to_string(uint64_t(packets)));
        EXPECT_EQ(Summary(r, "packet-hops"), std::to_string(uint64_t(hops)));
        EXPECT_EQ(Summary(r, "events"), std::to_string(uint64_t(events)));
        EXPECT_NEAR(std::stod(Summary(r, "events per packet")), events / packets, 0.006);
        EXPECT_NEAR(std::stod(Summary(r, "events per packet-hop")), events / hops, 0.006);
        EXPECT_GT(std::stod(Summary(r, "peak RSS (MB)")), 0) << c.topology;
        EXPECT_FALSE(Summary(r, "wall time (s)").empty());
        EXPECT_FALSE(Summary(r, "CPU time (s)").empty());
    }
}
