// RdmaCcHpcc driven by hand-made INT stacks: the expected rates are worked out here from the
// HPCC paper's rules (Algorithm 1 and the HPCC simulator's rate form), not read from the code.
#include "models/rdma/rdma-cc-hpcc.h"
#include "models/common/int-stack.h"

#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/nstime.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

using namespace ns3;

namespace
{
constexpr double kLine = 100e9;

/// One hop at `us` microseconds having sent `tx` bytes with `q` bytes queued, on a 100G port.
IntStack
OneHop(double us, uint64_t tx, uint64_t q, uint64_t rate = 100000000000ULL)
{
    IntStack s;
    s.nHops = 1;
    s.hops[0].lineRateBps = rate;
    s.hops[0].timePs = static_cast<int64_t>(us * 1e6);
    s.hops[0].txBytes = tx;
    s.hops[0].qlenBytes = q;
    return s;
}

Ptr<RdmaCcHpcc>
MakeHpcc()
{
    Ptr<RdmaCcHpcc> cc = CreateObject<RdmaCcHpcc>();
    cc->SetAttribute("BaseRtt", TimeValue(MicroSeconds(10)));
    cc->OnQpStart(7, static_cast<uint64_t>(kLine));
    return cc;
}
} // namespace

TEST(RdmaCcHpcc, StartsAtLineRateWithABdpWindow)
{
    Ptr<RdmaCcHpcc> cc = MakeHpcc();
    EXPECT_EQ(cc->GetRate(7), 100000000000ULL);
    // W = 100 Gb/s x 10 us / 8 = 125000 bytes; at line rate the variable window is all of it.
    EXPECT_EQ(cc->GetBaseWindow(7), 125000u);
    EXPECT_EQ(cc->GetWindow(7), 125000u);
    EXPECT_EQ(cc->GetRate(8), 0u); // unknown QP: no limit
    // ECN plays no part in HPCC.
    EXPECT_FALSE(cc->OnEcnMarkedReceive(7));
    cc->OnCnp(7);
    EXPECT_EQ(cc->GetRate(7), 100000000000ULL);
}

TEST(RdmaCcHpcc, ReferenceRateMovesOncePerRoundTripAndAcksBetweenReactFast)
{
    Ptr<RdmaCcHpcc> cc = MakeHpcc();
    // First echo: recorded only. The round trip ends when PSN 5 is acknowledged.
    cc->OnIntAck(7, 1, 5, OneHop(0, 0, 0));
    EXPECT_EQ(cc->GetRate(7), 100000000000ULL);
    EXPECT_DOUBLE_EQ(cc->GetUtilization(7), 1.0);

    // Full update (psnEnd 6 > 5): 50000 B in 4 us = 100 Gb/s -> 1.0; queue min(30000, 0) = 0.
    // u = (1 x (10 - 4) + 1.0 x 4) / 10 = 1.0; k = 1 / 0.95; R = 100G x 0.95 + 40M.
    cc->OnIntAck(7, 6, 12, OneHop(4, 50000, 30000));
    const double r2 = 100e9 * 0.95 + 40e6;
    EXPECT_NEAR(cc->GetCurrentRate(7), r2, 1);
    EXPECT_NEAR(cc->GetReferenceRate(7), r2, 1);
    EXPECT_EQ(cc->GetWindow(7), 118800u); // 125000 x 95.04 / 100

    // Fast react (psnEnd 8 <= 12): 25000 B in 2 us = 1.0, queue min(50000, 30000) = 30000
    // -> 30000 / 125000 = 0.24; U = 1.24; u = (1.0 x 8 + 1.24 x 2) / 10 = 1.048.
    // R = Rc / (1.048 / 0.95) + 40M from the reference rate, which stays.
    cc->OnIntAck(7, 8, 12, OneHop(6, 75000, 50000));
    const double u3 = (1.0 * 8 + 1.24 * 2) / 10;
    EXPECT_NEAR(cc->GetUtilization(7), u3, 1e-12);
    EXPECT_NEAR(cc->GetCurrentRate(7), r2 / (u3 / 0.95) + 40e6, 1);
    EXPECT_NEAR(cc->GetReferenceRate(7), r2, 1);

    // Full update (psnEnd 13 > 12): 15000 B in 2 us = 0.6, queue min(10000, 50000) -> 0.08;
    // u = (1.048 x 8 + 0.68 x 2) / 10. The new rate is computed from Rc = r2, not from the
    // fast-react rate, and becomes the reference.
    cc->OnIntAck(7, 13, 20, OneHop(8, 90000, 10000));
    const double u4 = (u3 * 8 + 0.68 * 2) / 10;
    const double r4 = r2 / (u4 / 0.95) + 40e6;
    EXPECT_NEAR(cc->GetUtilization(7), u4, 1e-12);
    EXPECT_NEAR(cc->GetCurrentRate(7), r4, 1);
    EXPECT_NEAR(cc->GetReferenceRate(7), r4, 1);
}

TEST(RdmaCcHpcc, WithoutFastReactOnlyRoundTripsChangeTheRate)
{
    Ptr<RdmaCcHpcc> cc = CreateObject<RdmaCcHpcc>();
    cc->SetAttribute("BaseRtt", TimeValue(MicroSeconds(10)));
    cc->SetAttribute("FastReact", BooleanValue(false));
    cc->OnQpStart(7, static_cast<uint64_t>(kLine));
    cc->OnIntAck(7, 1, 5, OneHop(0, 0, 0));
    // Inside the round trip: a congested echo changes nothing.
    cc->OnIntAck(7, 3, 5, OneHop(2, 25000, 100000));
    EXPECT_EQ(cc->GetRate(7), 100000000000ULL);
    // The round trip's end differences against the first echo (the middle one was not kept):
    // 50000 B in 4 us = 1.0, queue min(20000, 0) = 0; u = 1.0.
    cc->OnIntAck(7, 6, 9, OneHop(4, 50000, 20000));
    EXPECT_NEAR(cc->GetCurrentRate(7), 100e9 * 0.95 + 40e6, 1);
}

TEST(RdmaCcHpcc, AdditiveIncreaseBelowTargetUntilMaxStage)
{
    Ptr<RdmaCcHpcc> cc = CreateObject<RdmaCcHpcc>();
    cc->SetAttribute("BaseRtt", TimeValue(MicroSeconds(10)));
    cc->SetAttribute("MaxStage", UintegerValue(2));
    cc->SetAttribute("RateAi", DataRateValue(DataRate("1Gbps")));
    cc->SetAttribute("MinRate", DataRateValue(DataRate("10Gbps")));
    cc->OnQpStart(7, static_cast<uint64_t>(kLine));
    cc->OnIntAck(7, 1, 2, OneHop(0, 0, 0));
    // Every full update sees a link 20 % busy for 10 us (u drops to 0.2 at once: tau = T).
    // Stage 0 < 2: R = Rc + 1G would exceed line: capped at 100G.
    cc->OnIntAck(7, 3, 4, OneHop(10, 25000, 0));
    EXPECT_NEAR(cc->GetUtilization(7), 0.2, 1e-12);
    EXPECT_NEAR(cc->GetCurrentRate(7), 100e9, 1);
    // Stage 1 < 2: additive again, still capped.
    cc->OnIntAck(7, 5, 6, OneHop(20, 50000, 0));
    EXPECT_NEAR(cc->GetCurrentRate(7), 100e9, 1);
    // Stage 2 = MaxStage: multiplicative, R = 100G / (0.2 / 0.95) + 1G, capped at line.
    cc->OnIntAck(7, 7, 8, OneHop(30, 75000, 0));
    EXPECT_NEAR(cc->GetCurrentRate(7), 100e9, 1);
    // A hot link: 100 % busy with 125000 B (one W) queued at both ends of 10 us: U = 1 + 1.
    cc->OnIntAck(7, 9, 10, OneHop(40, 200000, 125000));
    cc->OnIntAck(7, 11, 12, OneHop(50, 325000, 125000));
    EXPECT_NEAR(cc->GetUtilization(7), 2.0, 1e-12);
    // The first hot update saw queue min(125000, 0) = 0 and 1.0 busy: u = 1.0, R = 95G + 1G;
    // the second starts from that.
    const double r1 = 100e9 / (1.0 / 0.95) + 1e9;
    EXPECT_NEAR(cc->GetCurrentRate(7), r1 / (2.0 / 0.95) + 1e9, 1);
    // A collapse (80 W queued at both ends: U = 81) is floored at MinRate.
    cc->OnIntAck(7, 13, 14, OneHop(60, 450000, 10000000));
    cc->OnIntAck(7, 15, 16, OneHop(70, 575000, 10000000));
    EXPECT_NEAR(cc->GetCurrentRate(7), 10e9, 1);
}

TEST(RdmaCcHpcc, TheMostUtilizedHopDecidesWithItsInterval)
{
    Ptr<RdmaCcHpcc> cc = MakeHpcc();
    IntStack a;
    a.nHops = 2;
    a.hops[0] = OneHop(0, 0, 0).hops[0];
    a.hops[1] = OneHop(0, 0, 0, 400000000000ULL).hops[0];
    cc->OnIntAck(7, 1, 5, a);
    IntStack b = a;
    // Hop 0: 100G port, 25000 B in 5 us = 40 Gb/s -> 0.4. Hop 1: 400G port, 200000 B in 5 us
    // = 320 Gb/s -> 0.8 (its own line rate, not the NIC's), queue 0.
    b.hops[0].timePs = 5000000;
    b.hops[0].txBytes = 25000;
    b.hops[1].timePs = 5000000;
    b.hops[1].txBytes = 200000;
    cc->OnIntAck(7, 6, 9, b);
    const double u = (1.0 * 5 + 0.8 * 5) / 10;
    EXPECT_NEAR(cc->GetUtilization(7), u, 1e-12);
    EXPECT_NEAR(cc->GetCurrentRate(7), std::min(100e9, 100e9 / (u / 0.95) + 40e6), 1);
}

TEST(RdmaCcHpcc, BadEchoesAreCountedAndIgnored)
{
    Ptr<RdmaCcHpcc> cc = MakeHpcc();
    cc->OnIntAck(7, 1, 5, OneHop(0, 0, 0));
    // Time did not advance (a stale or reordered echo): nothing learnt, counted.
    cc->OnIntAck(7, 6, 9, OneHop(0, 1000, 5000));
    EXPECT_EQ(cc->GetBadEchoes(), 1u);
    EXPECT_EQ(cc->GetRate(7), 100000000000ULL);
    // More hops than a stack holds: refused whole.
    IntStack big = OneHop(1, 100, 0);
    big.nHops = kIntStackCapacity + 1;
    cc->OnIntAck(7, 10, 12, big);
    EXPECT_EQ(cc->GetBadEchoes(), 2u);
    EXPECT_EQ(cc->GetRate(7), 100000000000ULL);
    // An echo for a QP it does not know is ignored.
    cc->OnIntAck(99, 10, 12, OneHop(1, 100, 0));
    EXPECT_EQ(cc->GetRate(99), 0u);
}

TEST(RdmaCcHpcc, PsnWrapStillEndsTheRoundTrip)
{
    Ptr<RdmaCcHpcc> cc = MakeHpcc();
    // The round trip ends at PSN 0x000002, after the 24-bit PSN wrapped.
    cc->OnIntAck(7, 0xFFFFF0, 0x000002, OneHop(0, 0, 0));
    cc->OnIntAck(7, 0xFFFFF8, 0x000004, OneHop(4, 50000, 0)); // before: fast react
    EXPECT_NEAR(cc->GetReferenceRate(7), 100e9, 1);
    cc->OnIntAck(7, 0x000003, 0x000006, OneHop(8, 100000, 0)); // after: full update
    EXPECT_LT(cc->GetReferenceRate(7), 100e9);
}

TEST(RdmaCcHpcc, QpsInterleavedKeepTheirOwnStateAndAStoppedQpIsForgotten)
{
    // The policy keeps the last QP it found (RdmaCcHpcc::Find): calls that alternate between
    // QPs, and a QP stopped and its number started again, must each see their own state.
    Ptr<RdmaCcHpcc> cc = MakeHpcc(); // QP 7 at 100 Gb/s
    cc->OnQpStart(8, 25000000000ULL);
    EXPECT_EQ(cc->GetRate(7), 100000000000ULL);
    EXPECT_EQ(cc->GetRate(8), 25000000000ULL);
    cc->OnIntAck(7, 1, 5, OneHop(0, 0, 0));
    cc->OnIntAck(8, 1, 5, OneHop(0, 0, 0, 25000000000ULL));
    cc->OnIntAck(7, 6, 12, OneHop(4, 50000, 30000)); // QP 7 at full load: R = 95.04 Gb/s
    EXPECT_EQ(cc->GetRate(8), 25000000000ULL);      // QP 8 untouched
    EXPECT_NEAR(cc->GetCurrentRate(7), 100e9 * 0.95 + 40e6, 1);
    EXPECT_EQ(cc->GetWindow(8), 31250u); // 25 Gb/s x 10 us / 8, at line rate
    EXPECT_GT(cc->GetRate(7), 0u); // QP 7 is now the one kept
    cc->OnQpStop(7);
    EXPECT_EQ(cc->GetRate(7), 0u);
    EXPECT_EQ(cc->GetWindow(7), 0u);
    cc->OnQpStart(7, 25000000000ULL); // the number again, a new QP: line rate, first echo
    EXPECT_EQ(cc->GetRate(7), 25000000000ULL);
    cc->OnIntAck(7, 1, 5, OneHop(10, 0, 0, 25000000000ULL));
    EXPECT_EQ(cc->GetRate(7), 25000000000ULL); // only recorded
}

TEST(RdmaCcHpcc, BaseRttAndMinRateSetLaterAreUsed)
{
    // T and MinRate are kept as doubles by their attribute setters: a change after the QP
    // started must reach the update (the EWMA's T, the floor of the rate).
    Ptr<RdmaCcHpcc> cc = MakeHpcc();
    cc->SetAttribute("MinRate", DataRateValue(DataRate("60Gbps")));
    cc->OnIntAck(7, 1, 5, OneHop(0, 0, 1250000));
    // Ten windows queued in both echoes: U = 1 + 10, u = (1 x 6 + 11 x 4) / 10 = 5, and
    // R = 100G / (5 / 0.95) + 40M = 19.04 Gb/s, below the floor, which holds it at 60.
    cc->OnIntAck(7, 6, 12, OneHop(4, 50000, 1250000));
    EXPECT_NEAR(cc->GetUtilization(7), 5.0, 1e-12);
    EXPECT_EQ(cc->GetRate(7), 60000000000ULL);
    cc->SetAttribute("BaseRtt", TimeValue(MicroSeconds(4)));
    // tau = 4 us = T: u is the sample alone, 50000 B in 4 us = 1.0 and no queue (min of the
    // two echoes): u = 1.0 (with T still 10 us it would be (5 x 6 + 1 x 4) / 10 = 3.4).
    cc->OnIntAck(7, 8, 12, OneHop(8, 100000, 0));
    EXPECT_NEAR(cc->GetUtilization(7), 1.0, 1e-12);
}
