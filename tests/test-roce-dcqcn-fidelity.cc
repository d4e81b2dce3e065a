// The paper preset's rules taken from QCN and from the authors' ns3-rdma, reasoned by hand:
// hyper increase scaled by the rounds past F with the timer at T/2, and the optional ns3-rdma
// choices (alpha updated before the cut, "Rt > 10 Rc: Rt /= 8").
#include "models/rdma/rdma-cc-dcqcn.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <cmath>
#include <functional>
#include <vector>

using namespace ns3;

namespace
{
constexpr double G = 1e9;

void
At(double us, std::function<void()> f)
{
    Simulator::Schedule(PicoSeconds(std::llround(us * 1e6)), f);
}

/// Paper preset, 40 G line, F = 1, T = 10 us, no byte counter, alpha fixed at 1 (g = 0),
/// R_AI 1 G, R_HAI 2 G. Two CNPs (t = 0, 1 us), then Rc sampled at `times`.
std::vector<double>
HyperRun(bool halving, const std::vector<double>& times)
{
    Ptr<RdmaCcDcqcn> cc = CreateObject<RdmaCcDcqcnPaper>();
    cc->SetAttribute("G", DoubleValue(0));
    cc->SetAttribute("F", UintegerValue(1));
    cc->SetAttribute("IncreaseTimer", TimeValue(MicroSeconds(10)));
    cc->SetAttribute("AlphaInterval", TimeValue(Seconds(1)));
    cc->SetAttribute("ByteCounter", UintegerValue(0));
    cc->SetAttribute("RateAi", DataRateValue(DataRate("1Gbps")));
    cc->SetAttribute("RateHai", DataRateValue(DataRate("2Gbps")));
    cc->SetAttribute("HyperIncreaseHalving", BooleanValue(halving));
    cc->OnQpStart(1, 40000000000ULL);
    std::vector<double> rc;
    At(0, [=]() { cc->OnCnp(1); });
    At(1, [=]() { cc->OnCnp(1); });
    for (double t : times)
    {
        At(t, [=, &rc]() { rc.push_back(cc->GetCurrentRate(1)); });
    }
    Simulator::Stop(MicroSeconds(times.back() + 1));
    Simulator::Run();
    Simulator::Destroy();
    return rc;
}
} // namespace

TEST(RoceDcqcnFidelity, HyperIncreaseScaledWithTimerAtHalfT)
{
    // CNP at 0: Rt = Rc = 40, Rc = 20. CNP at 1: Rt = 20, Rc = 10; timer restarts.
    // 11: round 1 = F, additive: Rt 21, Rc (21 + 10)/2 = 15.5.
    // 21: round 2 > F, hyper x1: Rt 23, Rc 19.25; from now on T/2.
    // 26: round 3, hyper x2: Rt 27, Rc 23.125.  31: round 4, x3: Rt 33, Rc 28.0625.
    // 36: round 5, x4: Rt min(40, 41) = 40, Rc 34.03125.
    const std::vector<double> t = {2, 12, 22, 27, 32, 37};
    const std::vector<double> on = HyperRun(true, t);
    const std::vector<double> want = {10, 15.5, 19.25, 23.125, 28.0625, 34.03125};
    ASSERT_EQ(on.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
    {
        EXPECT_DOUBLE_EQ(on[i], want[i] * G) << "t=" << t[i];
    }
    // Without halving the timer stays at T: nothing at 26; at 31 round 3 (x2): Rt 27,
    // Rc (27 + 19.25)/2 = 23.125.
    const std::vector<double> off = HyperRun(false, t);
    EXPECT_DOUBLE_EQ(off[3], 19.25 * G);
    EXPECT_DOUBLE_EQ(off[4], 23.125 * G);
}

TEST(RoceDcqcnFidelity, AlphaOrderAndTargetHeuristicAreOptions)
{
    auto first = [](bool before) {
        Ptr<RdmaCcDcqcn> cc = CreateObject<RdmaCcDcqcnPaper>();
        cc->SetAttribute("G", DoubleValue(0.5));
        cc->SetAttribute("InitialAlpha", DoubleValue(0.5));
        cc->SetAttribute("AlphaBeforeCut", BooleanValue(before));
        cc->OnQpStart(1, 40000000000ULL);
        cc->OnCnp(1);
        const double rc = cc->GetCurrentRate(1);
        Simulator::Destroy();
        return rc;
    };
    // Paper order: cut with alpha 0.5 (x 0.75 = 30 G), then alpha = 0.75. ns3-rdma order:
    // alpha = 0.25 + 0.5 = 0.75 first, cut x (1 - 0.375) = 25 G.
    EXPECT_DOUBLE_EQ(first(false), 30 * G);
    EXPECT_DOUBLE_EQ(first(true), 25 * G);

    auto target = [](bool heuristic) {
        Ptr<RdmaCcDcqcn> cc = CreateObject<RdmaCcDcqcnPaper>();
        cc->SetAttribute("G", DoubleValue(0));
        cc->SetAttribute("ClampTargetRate", BooleanValue(false));
        cc->SetAttribute("TargetRateHeuristic", BooleanValue(heuristic));
        cc->OnQpStart(1, 40000000000ULL);
        std::vector<double> rt;
        for (int i = 0; i < 4; ++i)
        {
            cc->OnCnp(1); // Rc 20, 10, 5, 2.5; no increase in between: Rt stays 40
            rt.push_back(cc->GetTargetRate(1));
        }
        Simulator::Destroy();
        return rt;
    };
    const std::vector<double> plain = target(false);
    const std::vector<double> heur = target(true);
    EXPECT_DOUBLE_EQ(plain[3], 40 * G);
    EXPECT_DOUBLE_EQ(heur[2], 40 * G); // 40 > 10 x 5 is false
    EXPECT_DOUBLE_EQ(heur[3], 5 * G);  // 40 > 10 x 2.5: Rt = 40 / 8
}
