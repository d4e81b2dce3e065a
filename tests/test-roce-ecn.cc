// ECN marking on egress queues: the RED curve (Kmin/Kmax/Pmax) statistically, the single
// threshold, marking at enqueue and at dequeue in a fabric, and only ECN-capable frames marked.
#include "helpers/roce/eth-traffic-run.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <cmath>
#include <gtest/gtest.h>
#include <memory>

using namespace ns3;

TEST(RoceEcn, RedMarkingFollowsTheCurveStatistically)
{
    Ptr<SharedBufferMmu> mmu = CreateObject<SharedBufferMmu>();
    const uint64_t kmin = 20000;
    const uint64_t kmax = 200000;
    const double pmax = 0.3;
    mmu->SetAttribute("EcnMode", EnumValue(1));
    mmu->SetAttribute("KminBytes", UintegerValue(kmin));
    mmu->SetAttribute("KmaxBytes", UintegerValue(kmax));
    mmu->SetAttribute("Pmax", DoubleValue(pmax));
    mmu->AssignStreams(11);
    // The DCQCN switch rule (RED without averaging, marking instead of dropping): no mark at
    // or below Kmin, a probability rising linearly to Pmax at Kmax, always above Kmax.
    auto expected = [&](uint64_t q) {
        if (q <= kmin)
        {
            return 0.0;
        }
        if (q > kmax)
        {
            return 1.0;
        }
        return pmax * double(q - kmin) / double(kmax - kmin);
    };
    const int n = 20000;
    for (uint64_t q : {uint64_t(0), kmin, kmin + 1000, uint64_t(65000), uint64_t(110000),
                       uint64_t(155000), kmax, kmax + 1, uint64_t(1000000)})
    {
        int marks = 0;
        for (int i = 0; i < n; ++i)
        {
            marks += mmu->ShouldMark(q);
        }
        const double p = expected(q);
        const double sigma = std::sqrt(p * (1 - p) / n);
        EXPECT_NEAR(double(marks) / n, p, 5 * sigma + 1e-12) << "q=" << q;
    }
}

TEST(RoceEcn, ThresholdModeMarksExactlyAboveK)
{
    Ptr<SharedBufferMmu> mmu = CreateObject<SharedBufferMmu>();
    mmu->SetAttribute("EcnMode", EnumValue(2));
    mmu->SetAttribute("KminBytes", UintegerValue(30000));
    for (uint64_t q = 0; q < 60000; q += 997)
    {
        EXPECT_EQ(mmu->ShouldMark(q), q > 30000) << q;
    }
}

namespace
{
struct MarkLog
{
    uint64_t marks = 0;
    uint64_t minQueue = UINT64_MAX;
    void Mark(uint16_t, uint8_t, uint64_t q)
    {
        marks++;
        minQueue = std::min(minQueue, q);
    }
};

EthTrafficSpec
EcnIncast(bool ecnCapable, bool atDequeue)
{
    EthTrafficSpec spec;
    spec.topology = "star:hosts=5";
    spec.duration = MicroSeconds(200);
    spec.ecnCapable = ecnCapable;
    spec.configure = [atDequeue](EthFabricHelper& h) {
        h.SetMmuAttribute("EcnMode", EnumValue(1));
        h.SetMmuAttribute("KminBytes", UintegerValue(20000));
        h.SetMmuAttribute("KmaxBytes", UintegerValue(100000));
        h.SetMmuAttribute("Pmax", DoubleValue(0.2));
        h.SetMmuAttribute("EcnAtDequeue", BooleanValue(atDequeue));
    };
    return spec;
}
} // namespace

TEST(RoceEcn, FabricMarksOnlyEctFramesAboveKmin)
{
    for (bool atDequeue : {false, true})
    {
        // Run the incast by hand so the switch's EcnMark trace can be attached.
        Topology t = MakeStar(5);
        EthFabricHelper h;
        EcnIncast(true, atDequeue).configure(h);
        EthFabric fab = h.Build(t);
        MarkLog log;
        fab.Switch(5)->TraceConnectWithoutContext("EcnMark", MakeCallback(&MarkLog::Mark, &log));
        std::vector<std::unique_ptr<EthGreedySource>> srcs;
        EthUdpFlow flow;
        flow.priority = 3;
        flow.dscp = 26;
        flow.ecn = kEcnEct0;
        for (uint32_t i = 1; i < 5; ++i)
        {
            srcs.push_back(std::make_unique<EthGreedySource>(
                fab.HostPort(i), std::vector<uint32_t>{fab.HostIp(0)}, flow, 1000,
                MicroSeconds(200)));
            Simulator::Schedule(Time(0), &EthGreedySource::Start, srcs.back().get());
        }
        uint64_t ce = 0;
        uint64_t got = 0;
        struct Rx
        {
            uint64_t* ce;
            uint64_t* got;
            void Cb(Ptr<EthNetDevice>, const EthFrame& f)
            {
                (*got)++;
                *ce += f.ecn == kEcnCe;
            }
        } rx{&ce, &got};
        fab.HostPort(0)->SetEthReceiveCallback(MakeCallback(&Rx::Cb, &rx));
        Simulator::Run();
        std::printf("ECN at %s: %llu of %llu frames marked, smallest queue at a mark %llu B\n",
                    atDequeue ? "dequeue" : "enqueue", (unsigned long long)log.marks,
                    (unsigned long long)got, (unsigned long long)log.minQueue);
        EXPECT_GT(log.marks, 0u);
        EXPECT_LT(log.marks, got);
        EXPECT_EQ(ce, log.marks); // every mark reaches the receiver as CE
        EXPECT_EQ(fab.Switch(5)->GetEcnMarked(), log.marks);
        EXPECT_GT(log.minQueue, 20000u);
        Simulator::Destroy();
    }
    // Not-ECT traffic through the same congested queue is never marked (RFC 3168 §5).
    const EthTrafficStats st = RunEthTraffic(EcnIncast(false, false));
    EXPECT_GT(st.maxEgressQueueBytes, 100000u);
    EXPECT_EQ(st.ecnMarked, 0u);
    EXPECT_EQ(st.receivedCe, 0u);
}
