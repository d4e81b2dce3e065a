// The per-packet shortcuts of the RoCE and RDMA hot path (docs/performance.md, issue 17, session
// 14): a frame's arrival as the frame's own event, the INT record recycled by its first line,
// INT stacks copied by their hops, QP lookups by number. Each test checks what the shortcut
// must keep true, by construction rather than by timing.
#include "test-roce-util.h"

#include "models/common/int-stack.h"
#include "models/rdma/rdma-qpn-table.h"
#include "models/roce/eth-frame.h"

#include "helpers/roce/eth-traffic-run.h"

#include "ns3/simulator.h"

#include <gtest/gtest.h>

using namespace ns3;
using namespace cnuas_test;

namespace
{

/// What the receiving port's Rx trace saw of each frame's reference count.
struct ArrivalCounts
{
    uint64_t frames = 0;
    uint64_t notTwo = 0; ///< frames whose count was not the frame's own plus the simulator's

    void Rx(const EthFrame& f)
    {
        frames++;
        notTwo += f.GetReferenceCount() != 2;
    }
};

} // namespace

TEST(RoceHotPath, AFrameIsItsOwnArrivalEventAndOutlivesEveryHop)
{
    // The simulator drops one reference after it runs an event. The sender adds one per hop, so
    // at the arrival the count is the frame's own and the simulator's (2), and back to 1 after;
    // a frame recycled by the pool is sent again and again. A missing Ref would let the
    // simulator delete a pooled frame (count 1 at arrival, a use after free under ASan); an
    // extra one would show as 3 and more.
    EthFabric fab = MakeEthPair();
    Ptr<EthNetDevice> a = fab.HostPort(0);
    Ptr<EthNetDevice> b = fab.HostPort(1);
    ArrivalCounts counts;
    b->TraceConnectWithoutContext("Rx", MakeCallback(&ArrivalCounts::Rx, &counts));
    EthUdpFlow flow;
    flow.dscp = 26;
    flow.priority = 3;
    EthGreedySource src(a, {fab.HostIp(1)}, flow, 1000, MicroSeconds(20));
    const uint64_t createdBefore = EthFramePool::Created(); // the pool is per process
    Simulator::Schedule(Time(0), &EthGreedySource::Start, &src);
    Simulator::Stop(MicroSeconds(100));
    Simulator::Run();
    EXPECT_GT(counts.frames, 100u);
    EXPECT_EQ(counts.frames, src.GetSent());
    EXPECT_EQ(counts.notTwo, 0u);
    // Far fewer frames were made than sent: the same records went round again.
    EXPECT_LT(EthFramePool::Created() - createdBefore, counts.frames);
    Simulator::Destroy();
}

TEST(RoceHotPath, ARecycledIntRecordStartsWithNoHopsAndTheDefaultLimit)
{
    EthIntRecord* rec = EthIntPool::Allocate();
    rec->maxHops = 3;
    rec->stack.nHops = 2;
    rec->stack.hops[0].txBytes = 1234;
    EthIntPool::Release(rec);
    EthIntRecord* again = EthIntPool::Allocate();
    ASSERT_EQ(again, rec); // the free list hands back the record just released
    EXPECT_EQ(again->stack.nHops, 0u);
    EXPECT_EQ(again->maxHops, kIntDefaultMaxHops);
    EXPECT_FALSE(again->inPool);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(again) % 64, 0u); // EthIntRecord::LinesFor's premise
    EthIntPool::Release(again);
    Simulator::Destroy();
}

TEST(RoceHotPath, AnIntStackCopiesItsCountAndTheHopsInUse)
{
    IntStack src;
    src.nHops = 2;
    src.hops[0] = IntHop{100000000000ULL, 10, 20, 30};
    src.hops[1] = IntHop{400000000000ULL, 11, 21, 31};
    IntStack dst;
    dst.nHops = 5;
    dst.hops[1].qlenBytes = 999;
    dst.hops[2].qlenBytes = 777; // beyond the copied count: left as it was
    dst.CopyHopsFrom(src);
    EXPECT_EQ(dst.nHops, 2u);
    for (uint32_t j = 0; j < 2; ++j)
    {
        EXPECT_EQ(dst.hops[j].lineRateBps, src.hops[j].lineRateBps);
        EXPECT_EQ(dst.hops[j].timePs, src.hops[j].timePs);
        EXPECT_EQ(dst.hops[j].txBytes, src.hops[j].txBytes);
        EXPECT_EQ(dst.hops[j].qlenBytes, src.hops[j].qlenBytes);
    }
    EXPECT_EQ(dst.hops[2].qlenBytes, 777u);
    // A malformed count (more hops than a stack holds) is kept for the reader to refuse; only
    // the capacity is copied (no write past the array: ASan in the Debug build).
    src.nHops = kIntStackCapacity + 1;
    src.hops[kIntStackCapacity - 1].txBytes = 42;
    dst.CopyHopsFrom(src);
    EXPECT_EQ(dst.nHops, kIntStackCapacity + 1);
    EXPECT_EQ(dst.hops[kIntStackCapacity - 1].txBytes, 42u);
}

TEST(RdmaQpnTable, FindsByNumberInItsWindowAndLeavesTheRestToTheMap)
{
    RdmaQpnTable<int> t;
    int a = 1;
    int b = 2;
    int* out = &a;
    EXPECT_FALSE(t.Lookup(0x100, &out)); // empty: the owner's map decides
    t.Set(0x100, &a);                    // the window starts here
    t.Set(0x105, &b);
    ASSERT_TRUE(t.Lookup(0x100, &out));
    EXPECT_EQ(out, &a);
    ASSERT_TRUE(t.Lookup(0x105, &out));
    EXPECT_EQ(out, &b);
    ASSERT_TRUE(t.Lookup(0x103, &out)); // in the window, never made
    EXPECT_EQ(out, nullptr);
    ASSERT_TRUE(t.Lookup(0x100 + 1000, &out)); // beyond the highest made, still in the window
    EXPECT_EQ(out, nullptr);
    EXPECT_FALSE(t.Lookup(0xFF, &out));                               // below the first
    EXPECT_FALSE(t.Lookup(0x100 + RdmaQpnTable<int>::kWindow, &out)); // past the window
    t.Set(0x100 + RdmaQpnTable<int>::kWindow, &a);                    // ignored: the map has it
    EXPECT_FALSE(t.Lookup(0x100 + RdmaQpnTable<int>::kWindow, &out));
    t.Erase(0x105);
    ASSERT_TRUE(t.Lookup(0x105, &out));
    EXPECT_EQ(out, nullptr);
    t.Clear();
    EXPECT_FALSE(t.Lookup(0x100, &out));
}
