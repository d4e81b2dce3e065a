// TIMELY's rate rules (SIGCOMM 2015, Algorithm 1) checked step by step against values reasoned
// by hand: gradient cut, additive and hyper-active increase, the TLow and THigh regions, the
// line-rate cap and samples without an RTT.
#include "models/rdma/rdma-cc-timely.h"

#include "ns3/double.h"
#include "ns3/nstime.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

using namespace ns3;

TEST(RoceRdmaCcTimely, RateFollowsTheRttGradientRules)
{
    Ptr<RdmaCcTimely> cc = CreateObject<RdmaCcTimely>();
    cc->SetAttribute("Alpha", DoubleValue(0.5));
    cc->SetAttribute("Beta", DoubleValue(0.5));
    cc->SetAttribute("Delta", DataRateValue(DataRate("1Gbps")));
    cc->SetAttribute("HaiRounds", UintegerValue(3));
    cc->SetAttribute("MinRate", DataRateValue(DataRate("1Gbps")));
    cc->SetAttribute("SegmentBytes", UintegerValue(0)); // the RTT each OnAck passes
    const double G = 1e9;
    cc->OnQpStart(1, 100000000000ULL);
    cc->OnAck(1, 1, MicroSeconds(30)); // first sample: only remembered
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 100 * G);
    cc->OnAck(1, 1, MicroSeconds(40)); // below TLow: +Delta, capped at the line
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 100 * G);
    cc->OnQpStart(1, 100000000000ULL);
    cc->OnAck(1, 1, MicroSeconds(100));
    // diff 20 us, rttDiff 0.5 x 20 = 10 us, gradient 10/20 = 0.5: x (1 - 0.5 x 0.5).
    cc->OnAck(1, 1, MicroSeconds(120));
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 75 * G);
    // diff 0, rttDiff 5 us, gradient 0.25: x (1 - 0.125).
    cc->OnAck(1, 1, MicroSeconds(120));
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 65.625 * G);
    // diff -20, rttDiff 2.5 - 10 = -7.5: first non-positive gradient, +1 Delta.
    cc->OnAck(1, 1, MicroSeconds(100));
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 66.625 * G);
    // diff -10, rttDiff -8.75: second, +1 Delta.
    cc->OnAck(1, 1, MicroSeconds(90));
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 67.625 * G);
    // diff 0, rttDiff -4.375: third in a row = HaiRounds: +3 Delta.
    cc->OnAck(1, 1, MicroSeconds(90));
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 70.625 * G);
    cc->OnAck(1, 1, Time(0)); // no RTT sample: nothing
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 70.625 * G);
    // 40 us < TLow: +Delta.
    cc->OnAck(1, 1, MicroSeconds(40));
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 71.625 * G);
    // 1000 us > THigh (500): x (1 - 0.5 (1 - 0.5)).
    cc->OnAck(1, 1, MicroSeconds(1000));
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 53.71875 * G);
    // 5000 us: x (1 - 0.5 (1 - 0.1)).
    cc->OnAck(1, 1, MicroSeconds(5000));
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(1), 53.71875 * 0.55 * G);
    EXPECT_EQ(cc->GetRate(1), static_cast<uint64_t>(std::llround(53.71875 * 0.55 * G)));
    EXPECT_EQ(cc->GetRate(2), 0u); // unknown QP: no limit
    EXPECT_FALSE(cc->OnEcnMarkedReceive(1)); // TIMELY asks for no CNPs
}
