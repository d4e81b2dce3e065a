// The message-size sampler (EmpiricalSizeDistribution) and the CDF file format: draws follow
// the file's CDF within a Kolmogorov-Smirnov (DKW) bound, the mean and the CDF of a small table
// worked out by hand, every rule of the format refused with its line, and the shipped WebSearch
// and FB_Hadoop files against the flow sizes of the HPCC simulator's own flow files.
#include "models/rdma/apps/empirical-size-distribution.h"

#include "ns3/rng-seed-manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace ns3;

namespace
{

std::string
SrcPath(const std::string& rel)
{
    return std::string(CNUAS_SOURCE_DIR) + "/" + rel;
}

/// DKW: P(sup |F_n - F| > eps) <= 2 exp(-2 n eps^2); eps for a false-alarm rate alpha.
double
DkwEpsilon(size_t n, double alpha)
{
    return std::sqrt(std::log(2.0 / alpha) / (2.0 * double(n)));
}

Ptr<EmpiricalSizeDistribution>
Load(const std::string& text)
{
    Ptr<EmpiricalSizeDistribution> d = CreateObject<EmpiricalSizeDistribution>();
    std::string err;
    EXPECT_TRUE(d->Parse(text, "t.cdf", &err)) << err;
    return d;
}

} // namespace

TEST(RdmaAppsCdf, SmallTableCdfQuantileAndMeanByHand)
{
    // An atom of 0.2 at 100 bytes, 0.3 spread evenly over 100..200, 0.5 over 200..1000.
    auto d = Load("# comment\n\n100 0.2\n200 0.5   # trailing comment\n1000 1\n");
    EXPECT_DOUBLE_EQ(d->Cdf(99), 0.0);
    EXPECT_DOUBLE_EQ(d->Cdf(100), 0.2);
    EXPECT_DOUBLE_EQ(d->Cdf(150), 0.35);
    EXPECT_DOUBLE_EQ(d->Cdf(600), 0.75);
    EXPECT_DOUBLE_EQ(d->Cdf(1000), 1.0);
    EXPECT_DOUBLE_EQ(d->Quantile(0.1), 100.0);
    EXPECT_DOUBLE_EQ(d->Quantile(0.35), 150.0);
    EXPECT_DOUBLE_EQ(d->Quantile(0.75), 600.0);
    // 0.2 * 100 + 0.3 * 150 + 0.5 * 600
    EXPECT_DOUBLE_EQ(d->Mean(), 365.0);
}

TEST(RdmaAppsCdf, AtomFromRepeatedSize)
{
    auto d = Load("0 0\n500 0.5\n500 0.9\n4096 1\n");
    RngSeedManager::SetSeed(7);
    d->SetStream(3);
    const int n = 100000;
    int at500 = 0;
    for (int i = 0; i < n; ++i)
    {
        at500 += d->GetValue() == 500.0;
    }
    // 40 % of the mass sits exactly at 500 (binomial, 6 standard deviations).
    const double sd = std::sqrt(n * 0.4 * 0.6);
    EXPECT_NEAR(at500, 0.4 * n, 6 * sd);
}

TEST(RdmaAppsCdf, DrawsFollowTheShippedFilesWithinTheDkwBound)
{
    for (const char* f : {"data/cdf/websearch.cdf", "data/cdf/fb-hadoop.cdf"})
    {
        Ptr<EmpiricalSizeDistribution> d = CreateObject<EmpiricalSizeDistribution>();
        std::string err;
        ASSERT_TRUE(d->LoadFile(SrcPath(f), &err)) << err;
        RngSeedManager::SetSeed(11);
        d->SetStream(5);
        const size_t n = 200000;
        std::vector<double> x(n);
        for (auto& v : x)
        {
            v = d->GetValue();
            ASSERT_EQ(v, std::round(v));
        }
        std::sort(x.begin(), x.end());
        // Compare at every point of the file and at points between them; draws are rounded
        // to whole bytes, which moves F by at most the density over half a byte.
        const double eps = DkwEpsilon(n, 1e-6) + 1e-4;
        const auto& pts = d->GetPoints();
        for (size_t i = 0; i + 1 < pts.size(); ++i)
        {
            for (double t : {0.0, 0.37, 0.81})
            {
                const double at = pts[i].size + t * (pts[i + 1].size - pts[i].size);
                const double emp =
                    double(std::upper_bound(x.begin(), x.end(), at) - x.begin()) / double(n);
                EXPECT_NEAR(emp, d->Cdf(at), eps) << f << " at " << at;
            }
        }
        // Sample mean against the table's mean (the largest sizes dominate the variance:
        // bound it by the range).
        double sum = 0;
        for (double v : x)
        {
            sum += v;
        }
        const double range = pts.back().size - pts.front().size;
        EXPECT_NEAR(sum / double(n), d->Mean(), 5 * range / 2 / std::sqrt(double(n))) << f;
    }
}

TEST(RdmaAppsCdf, ShippedCdfsMatchTheHpccFlowFiles)
{
    // The HPCC simulator's WebSearch and FB_Hadoop flow files (30 % load) were drawn from these
    // distributions by that project's generator: their sizes must pass a KS test against ours.
    const std::string dir = SrcPath("../shared/data/hpcc-compat/");
    const std::pair<const char*, const char*> cases[] = {
        {"ws30_5ms.txt", "data/cdf/websearch.cdf"},
        {"fb30_5ms.txt", "data/cdf/fb-hadoop.cdf"}};
    if (!std::filesystem::exists(dir + cases[0].first))
    {
        GTEST_SKIP() << "no " << dir;
    }
    for (const auto& [flows, cdf] : cases)
    {
        Ptr<EmpiricalSizeDistribution> d = CreateObject<EmpiricalSizeDistribution>();
        std::string err;
        ASSERT_TRUE(d->LoadFile(SrcPath(cdf), &err)) << err;
        std::ifstream in(dir + flows);
        size_t count = 0;
        in >> count;
        std::vector<double> sizes;
        uint32_t src, dst, prio, port;
        double size, start;
        while (in >> src >> dst >> prio >> port >> size >> start)
        {
            sizes.push_back(size);
        }
        ASSERT_EQ(sizes.size(), count) << flows;
        std::sort(sizes.begin(), sizes.end());
        double dmax = 0;
        for (size_t i = 0; i < sizes.size(); ++i)
        {
            const double f = d->Cdf(sizes[i]);
            dmax = std::max({dmax, std::abs(double(i + 1) / count - f),
                             std::abs(double(i) / count - f)});
        }
        EXPECT_LT(dmax, DkwEpsilon(count, 1e-3)) << flows << " vs " << cdf;
    }
}

TEST(RdmaAppsCdf, EveryRuleOfTheFormatIsRefusedWithItsLine)
{
    struct Case
    {
        const char* text;
        const char* expect; ///< substring of the message, line included
    };
    const Case cases[] = {
        {"", "t.cdf:0: no points"},
        {"# only a comment\n", "t.cdf:1: no points"},
        {"100 0.5 7\n200 1\n", "t.cdf:1: expected two columns"},
        {"100\n", "t.cdf:1: expected two columns"},
        {"abc 0.5\n", "t.cdf:1: size 'abc' is not a number"},
        {"100 half\n", "t.cdf:1: probability 'half' is not a number"},
        {"100 0.5x\n", "t.cdf:1: probability '0.5x' is not a number"},
        {"-5 0\n100 1\n", "t.cdf:1: size must be >= 0"},
        {"0 0\n5e12 1\n", "t.cdf:2: size exceeds"},
        {"0 0\n100 15\n200 100\n", "t.cdf:2: cumulative probability must be within [0, 1]"},
        {"0 -0.1\n100 1\n", "t.cdf:1: cumulative probability must be within [0, 1]"},
        {"0 0\n200 0.5\n100 1\n", "t.cdf:3: sizes must not decrease"},
        {"0 0\n100 0.6\n200 0.5\n300 1\n", "t.cdf:3: cumulative probabilities must not"},
        {"0 0\n\n100 0.99\n", "t.cdf:3: the last cumulative probability must be 1"},
        {"0 0\n100 nan\n", "t.cdf:2: probability 'nan' is not a number"},
        {"inf 1\n", "t.cdf:1: size 'inf' is not a number"},
    };
    for (const Case& c : cases)
    {
        Ptr<EmpiricalSizeDistribution> d = CreateObject<EmpiricalSizeDistribution>();
        std::string err;
        ASSERT_TRUE(d->Parse("7 1\n", "good", &err)) << err;
        EXPECT_FALSE(d->Parse(c.text, "t.cdf", &err)) << c.text;
        EXPECT_NE(err.find(c.expect), std::string::npos) << "'" << err << "' for " << c.text;
        // A refused table leaves the previous one in place.
        ASSERT_EQ(d->GetPoints().size(), 1u);
        EXPECT_EQ(d->GetPoints()[0].size, 7.0);
    }
    Ptr<EmpiricalSizeDistribution> d = CreateObject<EmpiricalSizeDistribution>();
    std::string err;
    EXPECT_FALSE(d->LoadFile("/nonexistent/x.cdf", &err));
    EXPECT_NE(err.find("/nonexistent/x.cdf: cannot open"), std::string::npos) << err;
    EXPECT_FALSE(d->IsReady());
}

TEST(RdmaAppsCdf, SameSeedSameDraws)
{
    auto a = Load("0 0\n1000000 1\n");
    auto b = Load("0 0\n1000000 1\n");
    a->SetStream(9);
    b->SetStream(9);
    for (int i = 0; i < 100; ++i)
    {
        ASSERT_EQ(a->GetValue(), b->GetValue());
    }
}
