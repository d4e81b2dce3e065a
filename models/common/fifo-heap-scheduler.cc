#include "fifo-heap-scheduler.h"

#include "ns3/assert.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <utility>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(FifoHeapScheduler);

namespace
{
constexpr size_t kArity = 4;
/// A spent bucket buffer with room for up to this many events is always kept for reuse.
constexpr size_t kKeptBucketRoom = 256;
} // namespace

TypeId
FifoHeapScheduler::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::FifoHeapScheduler")
            .SetParent<Scheduler>()
            .SetGroupName("Cnuas")
            .AddConstructor<FifoHeapScheduler>()
            .AddAttribute("BucketWidthLog2",
                          "Width of a calendar bucket, log2 of picoseconds (13: 8.192 ns, about "
                          "a 1 KB frame's wire time at 100 Gb/s). Only the cost depends on it.",
                          UintegerValue(13),
                          MakeUintegerAccessor(&FifoHeapScheduler::m_widthLog2),
                          MakeUintegerChecker<uint32_t>(0, 40))
            .AddAttribute("BucketCountLog2",
                          "Buckets in the calendar's window, log2 (10: 1,024 buckets, 8.4 us at "
                          "the default width); later events wait in a heap. Only the cost "
                          "depends on it.",
                          UintegerValue(10),
                          MakeUintegerAccessor(&FifoHeapScheduler::m_countLog2),
                          MakeUintegerChecker<uint32_t>(1, 20));
    return tid;
}

FifoHeapScheduler::FifoHeapScheduler() = default;

FifoHeapScheduler::~FifoHeapScheduler()
{
    if (s_driving == this)
    {
        s_driving = nullptr;
    }
}

void
FifoHeapScheduler::Allocate()
{
    const size_t n = size_t{1} << m_countLog2;
    m_buckets.resize(n);
    m_occupied.assign((n + 63) / 64, 0);
}

void
FifoHeapScheduler::Insert(const Event& ev)
{
    // An event for the current time has a larger insertion number than every event queued so
    // far, so it goes behind them all: the FIFO's back. (The simulator never schedules into the
    // past, so m_ts < m_nowTs does not occur.)
    if (ev.key.m_ts == m_nowTs)
    {
        m_now.push_back(ev);
        return;
    }
    if (m_buckets.empty())
    {
        Allocate(); // here, not in the constructor: the attributes are set after it
    }
    const uint64_t bucket = BucketOf(ev.key.m_ts);
    if (bucket <= m_cur)
    {
        m_late.Push(ev); // the current bucket is sorted already
    }
    else if (bucket - m_cur < m_buckets.size())
    {
        AppendToBucket(bucket, ev);
    }
    else
    {
        m_far.Push(ev);
    }
}

void
FifoHeapScheduler::AppendToBucket(uint64_t bucket, const Event& ev)
{
    const size_t slot = SlotOf(bucket);
    std::vector<Event>& v = m_buckets[slot];
    if (v.empty())
    {
        m_occupied[slot >> 6] |= uint64_t{1} << (slot & 63);
        if (v.capacity() == 0 && !m_spare.empty())
        {
            v.swap(m_spare.back()); // a buffer used a moment ago, likely still in the caches
            m_spare.pop_back();
        }
    }
    v.push_back(ev);
    ++m_inBuckets;
}

bool
FifoHeapScheduler::IsEmpty() const
{
    return m_now.empty() && m_runPos == m_run.size() && m_late.Empty() && m_inBuckets == 0 &&
           m_far.Empty();
}

void
FifoHeapScheduler::Refill()
{
    if (m_runPos < m_run.size() || !m_late.Empty() || (m_inBuckets == 0 && m_far.Empty()))
    {
        return;
    }
    const size_t n = m_buckets.size();
    uint64_t next = UINT64_MAX;
    if (m_inBuckets > 0)
    {
        // The first occupied slot after the current one, cyclically: the ring holds buckets
        // m_cur + 1 .. m_cur + n - 1, so that is the earliest bucket with events.
        const size_t start = SlotOf(m_cur + 1);
        const size_t words = m_occupied.size();
        size_t word = start >> 6;
        uint64_t bits = m_occupied[word] & (~uint64_t{0} << (start & 63));
        for (size_t k = 0; k <= words; ++k)
        {
            if (bits != 0)
            {
                const size_t slot = (word << 6) + static_cast<size_t>(__builtin_ctzll(bits));
                next = m_cur + 1 + ((slot - start) & (n - 1));
                break;
            }
            word = (word + 1) % words;
            bits = m_occupied[word];
        }
        NS_ASSERT_MSG(next != UINT64_MAX, "FifoHeapScheduler: events counted but no bucket");
    }
    else
    {
        // Only then: the far heap holds only events beyond the window, later than every bucket.
        next = BucketOf(m_far.Top().key.m_ts);
    }
    m_cur = next;
    // The window moved: what the far heap holds for it goes into its buckets.
    while (!m_far.Empty() && BucketOf(m_far.Top().key.m_ts) - m_cur < n)
    {
        const Event ev = m_far.Pop();
        AppendToBucket(BucketOf(ev.key.m_ts), ev);
    }
    // The bucket becomes the run; the run's spent buffer waits for the next bucket to fill,
    // unless it is much larger than what it held: buffers go round all buckets, so a large one
    // kept for every bucket would make the calendar hold the largest bucket's room times the
    // number of buckets (a fabric in lockstep has a few buckets of thousands of events).
    const size_t slot = SlotOf(m_cur);
    if (m_run.capacity() <= kKeptBucketRoom || m_run.capacity() <= 2 * m_run.size())
    {
        m_run.clear();
        m_spare.push_back(std::move(m_run));
    }
    m_run = std::vector<Event>();
    m_run.swap(m_buckets[slot]);
    ClearSlot(slot);
    m_inBuckets -= m_run.size();
    m_runPos = 0;
    std::sort(m_run.begin(), m_run.end(),
              [](const Event& a, const Event& b) { return Before(a.key, b.key); });
}

FifoHeapScheduler::Source
FifoHeapScheduler::NextSource() const
{
    Source source = Source::Fifo;
    const EventKey* best = m_now.empty() ? nullptr : &m_now.front().key;
    if (m_runPos < m_run.size() && (!best || Before(m_run[m_runPos].key, *best)))
    {
        best = &m_run[m_runPos].key;
        source = Source::Run;
    }
    if (!m_late.Empty() && (!best || Before(m_late.Top().key, *best)))
    {
        source = Source::Late;
    }
    return source;
}

Scheduler::Event
FifoHeapScheduler::PeekNext() const
{
    NS_ASSERT(!IsEmpty());
    // Refill only regroups what is held (logically const): the same event comes next.
    const_cast<FifoHeapScheduler*>(this)->Refill();
    switch (NextSource())
    {
    case Source::Fifo:
        return m_now.front();
    case Source::Run:
        return m_run[m_runPos];
    case Source::Late:
    default:
        return m_late.Top();
    }
}

Scheduler::Event
FifoHeapScheduler::RemoveNext()
{
    NS_ASSERT(!IsEmpty());
    Refill();
    Event ev;
    switch (NextSource())
    {
    case Source::Fifo:
        ev = m_now.front();
        m_now.pop_front();
        break;
    case Source::Run:
        ev = m_run[m_runPos++];
        break;
    case Source::Late:
        ev = m_late.Pop();
        break;
    }
    // The FIFO is empty whenever time advances: its events are for m_nowTs and come first.
    m_nowTs = ev.key.m_ts;
    s_driving = this;
    // The next events' objects were written when they were scheduled, often long ago: start
    // fetching them now, while this one runs (pure hints; the order is unchanged). The run is
    // sorted, so its next two are known.
    if (m_runPos < m_run.size())
    {
        __builtin_prefetch(m_run[m_runPos].impl);
        if (m_runPos + 1 < m_run.size())
        {
            __builtin_prefetch(m_run[m_runPos + 1].impl);
        }
    }
    if (!m_late.Empty())
    {
        __builtin_prefetch(m_late.Top().impl);
    }
    if (!m_now.empty())
    {
        __builtin_prefetch(m_now.front().impl);
    }
    return ev;
}

void
FifoHeapScheduler::Remove(const Event& ev)
{
    const uint32_t uid = ev.key.m_uid;
    for (auto it = m_now.begin(); it != m_now.end(); ++it)
    {
        if (it->key.m_uid == uid)
        {
            NS_ASSERT(it->impl == ev.impl);
            m_now.erase(it);
            return;
        }
    }
    for (size_t i = m_runPos; i < m_run.size(); ++i)
    {
        if (m_run[i].key.m_uid == uid)
        {
            m_run.erase(m_run.begin() + static_cast<std::ptrdiff_t>(i)); // stays sorted
            return;
        }
    }
    if (m_late.Remove(uid))
    {
        return;
    }
    if (!m_buckets.empty())
    {
        const uint64_t bucket = BucketOf(ev.key.m_ts);
        if (bucket > m_cur && bucket - m_cur < m_buckets.size())
        {
            const size_t slot = SlotOf(bucket);
            std::vector<Event>& v = m_buckets[slot];
            for (size_t i = 0; i < v.size(); ++i)
            {
                if (v[i].key.m_uid == uid)
                {
                    v[i] = v.back(); // a bucket is unsorted until its turn
                    v.pop_back();
                    if (v.empty())
                    {
                        ClearSlot(slot);
                    }
                    --m_inBuckets;
                    return;
                }
            }
        }
    }
    if (m_far.Remove(uid))
    {
        return;
    }
    NS_ASSERT_MSG(false, "FifoHeapScheduler::Remove: event not found");
}

// ---- the four-ary heap -----------------------------------------------------------------------

void
FifoHeapScheduler::Heap::Push(const Event& ev)
{
    m_v.push_back(ev);
    SiftUp(m_v.size() - 1);
}

Scheduler::Event
FifoHeapScheduler::Heap::Pop()
{
    const Event top = m_v[0];
    m_v[0] = m_v.back();
    m_v.pop_back();
    if (!m_v.empty())
    {
        SiftDown(0);
    }
    return top;
}

bool
FifoHeapScheduler::Heap::Remove(uint32_t uid)
{
    for (size_t i = 0; i < m_v.size(); ++i)
    {
        if (m_v[i].key.m_uid == uid)
        {
            m_v[i] = m_v.back();
            m_v.pop_back();
            if (i < m_v.size())
            {
                SiftDown(i);
                SiftUp(i);
            }
            return true;
        }
    }
    return false;
}

void
FifoHeapScheduler::Heap::SiftUp(size_t i)
{
    const Event ev = m_v[i];
    while (i > 0)
    {
        const size_t parent = (i - 1) / kArity;
        if (!Before(ev.key, m_v[parent].key))
        {
            break;
        }
        m_v[i] = m_v[parent];
        i = parent;
    }
    m_v[i] = ev;
}

void
FifoHeapScheduler::Heap::SiftDown(size_t i)
{
    const size_t n = m_v.size();
    const Event ev = m_v[i];
    for (;;)
    {
        const size_t first = i * kArity + 1;
        if (first >= n)
        {
            break;
        }
        size_t best = first;
        const size_t last = first + kArity < n ? first + kArity : n;
        for (size_t c = first + 1; c < last; ++c)
        {
            if (Before(m_v[c].key, m_v[best].key))
            {
                best = c;
            }
        }
        if (!Before(m_v[best].key, ev.key))
        {
            break;
        }
        m_v[i] = m_v[best];
        i = best;
    }
    m_v[i] = ev;
}

} // namespace ns3
