// RdmaCcDctcp (the HPCC simulator's CC_MODE 8): the rate arithmetic reasoned by hand, one cut
// per window, alpha per window from the marked fraction, the (variable) window, and two DCTCP
// flows on one 40 Gb/s bottleneck with threshold marking keeping the queue near K.
#include "helpers/roce/roce-traffic-run.h"
#include "models/rdma/rdma-cc-dctcp.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>

using namespace ns3;

namespace
{
constexpr double G = 1e9;

Ptr<RdmaCcDctcp>
Make(double g, const char* ai)
{
    Ptr<RdmaCcDctcp> cc = CreateObject<RdmaCcDctcp>();
    cc->SetAttribute("G", DoubleValue(g));
    cc->SetAttribute("RateAi", DataRateValue(DataRate(ai)));
    return cc;
}

void
Send(Ptr<RdmaCcDctcp> cc, uint32_t qp, uint32_t packets)
{
    for (uint32_t i = 0; i < packets; ++i)
    {
        cc->OnSend(qp, 1000, false);
    }
}
} // namespace

TEST(RdmaCcDctcp, OneCutPerWindowAlphaFromTheMarkedFraction)
{
    Ptr<RdmaCcDctcp> cc = Make(0.25, "1Gbps");
    const uint32_t qp = 3;
    cc->OnQpStart(qp, 100000000000ULL);
    EXPECT_EQ(cc->GetRate(qp), 100000000000ULL); // line rate, no slow start
    EXPECT_DOUBLE_EQ(cc->GetAlpha(qp), 1.0);
    EXPECT_TRUE(cc->OnEcnMarkedReceive(qp)); // every mark is echoed

    Send(cc, qp, 10);
    cc->OnAck(qp, 1, Time(0)); // opens the first window: it ends when packet 10 is acked
    // First mark: cut with alpha 1: 100 (1 - 1/2) = 50 G. The second, in the same window,
    // is counted but does not cut again.
    cc->OnCnp(qp);
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(qp), 50 * G);
    cc->OnCnp(qp);
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(qp), 50 * G);
    EXPECT_EQ(cc->GetRateDecreases(), 1u);
    Send(cc, qp, 6); // 16 sent
    cc->OnAck(qp, 4, Time(0));
    EXPECT_DOUBLE_EQ(cc->GetAlpha(qp), 1.0); // window not over (5 of 10 acked)
    cc->OnAck(qp, 5, Time(0));
    // Window over: 2 of the 9 packets acknowledged in it were marked:
    // alpha = 0.75 x 1 + 0.25 x 2/9. No packet sent after the cut is acknowledged yet, so
    // the QP is still reacting to it: no additive increase.
    const double a1 = 0.75 + 0.25 * 2.0 / 9.0;
    EXPECT_DOUBLE_EQ(cc->GetAlpha(qp), a1);
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(qp), 50 * G);
    cc->OnCnp(qp); // still the cut's window: no second cut
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(qp), 50 * G);
    cc->OnAck(qp, 1, Time(0)); // packet 11, sent after the cut: the cut's window is over
    // A mark now cuts again with the new alpha.
    cc->OnCnp(qp);
    const double r2 = 50 * G * (1 - a1 / 2);
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(qp), r2);
    // The window ends at packet 16: 6 acknowledged in it, 2 marked.
    cc->OnAck(qp, 5, Time(0));
    const double a2 = 0.75 * a1 + 0.25 * 2.0 / 6.0;
    EXPECT_DOUBLE_EQ(cc->GetAlpha(qp), a2);
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(qp), r2);
    // Three clean windows: alpha decays by 0.75 each, the rate grows by 1 G each.
    for (int w = 0; w < 3; ++w)
    {
        Send(cc, qp, 4);
        cc->OnAck(qp, 4, Time(0));
    }
    EXPECT_DOUBLE_EQ(cc->GetAlpha(qp), a2 * 0.75 * 0.75 * 0.75);
    EXPECT_NEAR(cc->GetCurrentRate(qp), r2 + 3 * G, 1e-3);
    EXPECT_EQ(cc->GetRateDecreases(), 2u);
}

TEST(RdmaCcDctcp, RateBoundedByLineAndMinRate)
{
    Ptr<RdmaCcDctcp> cc = Make(1.0, "10Gbps");
    cc->SetAttribute("MinRate", DataRateValue(DataRate("30Gbps")));
    const uint32_t qp = 1;
    cc->OnQpStart(qp, 40000000000ULL);
    Send(cc, qp, 2);
    cc->OnAck(qp, 1, Time(0));
    cc->OnCnp(qp); // 40 -> 20 G, held at the 30 G floor
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(qp), 30 * G);
    for (int w = 0; w < 3; ++w)
    {
        Send(cc, qp, 1);
        cc->OnAck(qp, 1, Time(0));
    }
    EXPECT_DOUBLE_EQ(cc->GetCurrentRate(qp), 40 * G); // 30 + 10 then capped at the line
    cc->OnQpStop(qp);
    EXPECT_EQ(cc->GetRate(qp), 0u); // unknown QP: no limit
}

TEST(RdmaCcDctcp, WindowFixedOrScaledByRate)
{
    Ptr<RdmaCcDctcp> cc = Make(1.0 / 16, "615Mbps");
    const uint32_t qp = 9;
    cc->SetAttribute("Window", UintegerValue(160000));
    cc->OnQpStart(qp, 100000000000ULL);
    EXPECT_EQ(cc->GetWindow(qp), 160000u);
    Send(cc, qp, 2);
    cc->OnAck(qp, 1, Time(0));
    cc->OnCnp(qp); // alpha 1: half rate
    EXPECT_EQ(cc->GetWindow(qp), 160000u); // fixed window
    cc->SetAttribute("VariableWindow", BooleanValue(true));
    EXPECT_EQ(cc->GetWindow(qp), 80000u); // x rate / line = 1/2
    cc->SetQpWindow(qp, 50000);           // a per-pair BDP overrides the attribute
    EXPECT_EQ(cc->GetWindow(qp), 25000u);
    cc->SetAttribute("Window", UintegerValue(0));
    cc->SetQpWindow(qp, 0);
    EXPECT_EQ(cc->GetWindow(qp), 0u); // no window
}

TEST(RdmaCcDctcp, TwoFlowsShareABottleneckAndHoldTheQueueNearK)
{
    // Two long writers into one host through one switch at 40 Gb/s, switches marking in
    // threshold mode (Kmin = Kmax = K, Pmax 1), K = 30 KB x 40/10 as the HPCC paper scales it,
    // a BDP window as its run.py sets HAS_WIN.
    const uint64_t k = 120000;
    RoceRunSpec spec;
    spec.topology = MakeStar(3);
    spec.hostRate = DataRate("40Gbps");
    spec.fabricRate = spec.hostRate;
    spec.cc = "ns3::RdmaCcDctcp";
    spec.kminBytes = k;
    spec.kmaxBytes = k;
    spec.pmax = 1.0;
    spec.configureFabric = [](EthFabricHelper& h) {
        h.SetMmuAttribute("EcnMode", EnumValue(2));
    };
    spec.configureNics = [](RoceHelper& h) {
        h.SetCongestionControlAttribute("Window", UintegerValue(100000));
        h.SetCongestionControlAttribute("RateAi", DataRateValue(DataRate("200Mbps")));
    };
    spec.flows.push_back({1, 0, 30000000, Time(0)});
    spec.flows.push_back({2, 0, 30000000, Time(0)});
    spec.sampleInterval = MicroSeconds(100);
    spec.limit = MilliSeconds(4);
    const RoceRunResult r = RunRoceFlows(spec);
    ASSERT_GE(r.sampleTimesUs.size(), 30u);
    EXPECT_GT(r.ecnMarks, 0u);
    EXPECT_EQ(r.drops, 0u);
    // Steady state: from 1 ms to the end of the run (both flows still sending).
    double q = 0;
    double r0 = 0;
    double r1 = 0;
    uint32_t n = 0;
    for (size_t s = 0; s < r.sampleTimesUs.size(); ++s)
    {
        if (r.sampleTimesUs[s] <= 1000)
        {
            continue;
        }
        q += r.maxQueueBytes[s];
        r0 += r.flowRateGbps[0][s];
        r1 += r.flowRateGbps[1][s];
        n++;
    }
    q /= n;
    r0 /= n;
    r1 /= n;
    // The queue hovers around K (threshold marking holds it there), the link stays full and
    // the two flows share it. Full is what the sender's transport bytes can be: of every
    // 1024-byte payload packet's 1040 bytes (BTH 12, ICRC 4) on 1106 on the wire (UDP 8,
    // IPv4 20, Ethernet 18, preamble and IFG 20).
    const double full = 40.0 * 1040 / 1106;
    EXPECT_GT(q, 0.5 * k) << q;
    EXPECT_LT(q, 1.5 * k) << q;
    EXPECT_GT((r0 + r1) / full, 0.97) << r0 << " " << r1;
    EXPECT_LT(std::abs(r0 - r1) / 40, 0.1) << r0 << " " << r1;
}
