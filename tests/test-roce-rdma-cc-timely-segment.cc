// TIMELY's RTT sample as the paper defines it (Mittal et al., SIGCOMM 2015, §4): one sample per
// completed segment of SegmentBytes, its completion time less its first packet's send time less
// its serialization at line rate, reasoned by hand; and two TIMELY flows sharing a bottleneck.
#include "helpers/roce/roce-traffic-run.h"
#include "models/rdma/rdma-cc-timely.h"

#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <cmath>
#include <vector>

using namespace ns3;

namespace
{
struct RttLog
{
    std::vector<std::pair<double, double>> v; // (time us, rtt us)
    void Cb(uint32_t, Time rtt)
    {
        v.emplace_back(Simulator::Now().GetSeconds() * 1e6, rtt.GetSeconds() * 1e6);
    }
};
} // namespace

TEST(RoceRdmaCcTimelySegment, OneSamplePerCompletedSegment)
{
    Ptr<RdmaCcTimely> cc = CreateObject<RdmaCcTimely>();
    cc->SetAttribute("SegmentBytes", UintegerValue(4000));
    RttLog log;
    cc->TraceConnectWithoutContext("RttSample", MakeCallback(&RttLog::Cb, &log));
    const uint32_t qp = 2;
    cc->OnQpStart(qp, 10000000000ULL); // 10 G: 4000 bytes serialize in 3.2 us
    auto at = [](double us, std::function<void()> f) {
        Simulator::Schedule(PicoSeconds(std::llround(us * 1e6)), f);
    };
    // Segment 1: packets of 1000 bytes sent at 0, 1, 2, 3 us; segment 2 at 4..7 us.
    // A burst at line rate: segment 3 (packets 9..12) all at 21 us.
    for (int i = 0; i < 8; ++i)
    {
        at(i, [=]() { cc->OnSend(qp, 1000, false); });
    }
    at(5, [=]() { cc->OnSend(qp, 1000, true); }); // a retransmission: not a new packet
    at(10, [=]() { cc->OnAck(qp, 3, MicroSeconds(99)); }); // 3 of segment 1: no sample
    at(12, [=]() { cc->OnAck(qp, 2, MicroSeconds(99)); }); // completes segment 1
    at(20, [=]() { cc->OnAck(qp, 3, MicroSeconds(99)); }); // completes segment 2
    for (int i = 0; i < 4; ++i)
    {
        at(21, [=]() { cc->OnSend(qp, 1000, false); });
    }
    at(30, [=]() { cc->OnAck(qp, 4, MicroSeconds(99)); }); // completes segment 3
    // Packets 13..15 open a fourth segment that the acknowledgments never complete.
    for (int i = 0; i < 3; ++i)
    {
        at(31 + i, [=]() { cc->OnSend(qp, 1000, false); });
    }
    at(38, [=]() { cc->OnAck(qp, 3, MicroSeconds(99)); });
    Simulator::Stop(MicroSeconds(40));
    Simulator::Run();
    Simulator::Destroy();
    // Segment 1: first sent at 0, complete at 12. Its packets were paced over 0..3 us plus
    // the last one's 0.8 us on the wire: 3.8 us of sending, more than the 3.2 us at line
    // rate, so 12 - 3.8 = 8.2 us. Segment 2: sent 4..7.8, complete at 20: 20 - 4 - 3.8 =
    // 12.2 us. The RTTs the engine passed (99 us) are not used.
    ASSERT_GE(log.v.size(), 2u);
    EXPECT_NEAR(log.v[0].first, 12, 1e-9);
    EXPECT_NEAR(log.v[0].second, 8.2, 1e-6);
    EXPECT_NEAR(log.v[1].first, 20, 1e-9);
    EXPECT_NEAR(log.v[1].second, 12.2, 1e-6);
    // Segment 3 went back to back (sending took 0.8 us < 3.2 us at line rate): the paper's
    // rule, 30 - 21 - 3.2 = 5.8 us.
    ASSERT_EQ(log.v.size(), 3u);
    EXPECT_NEAR(log.v[2].second, 5.8, 1e-6);
    EXPECT_EQ(cc->GetSamples(), 3u);
}

TEST(RoceRdmaCcTimelySegment, TwoFlowsShareABottleneck)
{
    // Two long TIMELY writers into one host at 40 Gb/s, no ECN, PFC on, the HPCC paper's
    // TIMELY constants (Delta 10 Mb/s x 40/10). With per-segment samples neither flow starves:
    // both recover additively from the first queue build-up and then share the link. TIMELY
    // has no unique fair point ("ECN or Delay", CoNEXT 2016), so the bound is loose.
    RoceRunSpec spec;
    spec.topology = MakeStar(3);
    spec.hostRate = DataRate("40Gbps");
    spec.fabricRate = spec.hostRate;
    spec.cc = "ns3::RdmaCcTimely";
    spec.ecn = false;
    spec.configureNics = [](RoceHelper& h) {
        h.SetCongestionControlAttribute("Delta", DataRateValue(DataRate("40Mbps")));
    };
    spec.flows.push_back({1, 0, 200000000, Time(0)});
    spec.flows.push_back({2, 0, 200000000, MicroSeconds(100)});
    spec.sampleInterval = MicroSeconds(100);
    spec.limit = MilliSeconds(18);
    const RoceRunResult r = RunRoceFlows(spec);
    double r0 = 0;
    double r1 = 0;
    uint32_t n = 0;
    for (size_t s = 0; s < r.sampleTimesUs.size(); ++s)
    {
        if (r.sampleTimesUs[s] > 10000)
        {
            r0 += r.flowRateGbps[0][s];
            r1 += r.flowRateGbps[1][s];
            n++;
        }
    }
    ASSERT_GT(n, 50u);
    r0 /= n;
    r1 /= n;
    const double full = 40.0 * 1040 / 1106; // transport bytes of a full 40 G link
    EXPECT_GT(std::min(r0, r1), 0.25 * (r0 + r1)) << r0 << " " << r1;
    EXPECT_GT((r0 + r1) / full, 0.7) << r0 << " " << r1;
    EXPECT_EQ(r.drops, 0u);
}
