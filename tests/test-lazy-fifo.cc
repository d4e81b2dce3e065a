// LazyFifo, the queue of an IbNetDevice's per-VL buffers: first in, first out through growth
// and wrap-around like the std::deque it replaced, and no storage until the first element.
#include "models/common/lazy-fifo.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <vector>

using namespace ns3;

TEST(LazyFifo, EmptyQueueOwnsNoStorage)
{
    LazyFifo<int*> q;
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.capacity(), 0u);
    q.push_back(nullptr);
    EXPECT_EQ(q.capacity(), 4u);
    q.pop_front();
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.capacity(), 4u) << "storage is kept for the next element";

    // Moved from: empty, and owns nothing any more.
    LazyFifo<int> a;
    a.push_back(1);
    a.push_back(2);
    LazyFifo<int> b = std::move(a);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.capacity(), 0u);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b.front(), 1);
    EXPECT_EQ(b.back(), 2);
    a.push_back(3); // a moved-from queue is usable
    EXPECT_EQ(a.front(), 3);
}

// Random pushes and pops, mirrored on a std::deque: the same elements in the same order at every
// step, through growth while the ring has wrapped.
TEST(LazyFifo, BehavesAsADequeUnderRandomPushesAndPops)
{
    LazyFifo<uint32_t> q;
    std::deque<uint32_t> ref;
    uint32_t seed = 7;
    uint32_t next = 0;
    for (int step = 0; step < 20000; ++step)
    {
        seed = seed * 1103515245u + 12345u;
        // Mostly pushes in the first half, mostly pops in the second.
        const bool push = ((seed >> 16) % 100) < (step < 10000 ? 60u : 40u);
        if (push)
        {
            q.push_back(next);
            ref.push_back(next);
            ++next;
        }
        else if (!ref.empty())
        {
            ASSERT_EQ(q.front(), ref.front()) << "step " << step;
            q.pop_front();
            ref.pop_front();
        }
        ASSERT_EQ(q.size(), ref.size());
        if (!ref.empty())
        {
            ASSERT_EQ(q.back(), ref.back());
        }
        if (step % 997 == 0)
        {
            std::vector<uint32_t> got(q.begin(), q.end());
            ASSERT_EQ(got, std::vector<uint32_t>(ref.begin(), ref.end())) << "step " << step;
            LazyFifo<uint32_t> copy = q;
            ASSERT_EQ(std::vector<uint32_t>(copy.begin(), copy.end()), got);
        }
    }
    q.clear();
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.begin(), q.end());
}
