#include "fifo-heap-scheduler.h"

#include "ns3/assert.h"

#include <utility>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(FifoHeapScheduler);

namespace
{
constexpr size_t kArity = 4;
} // namespace

TypeId
FifoHeapScheduler::GetTypeId()
{
    static TypeId tid = TypeId("ns3::FifoHeapScheduler")
                            .SetParent<Scheduler>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<FifoHeapScheduler>();
    return tid;
}

FifoHeapScheduler::FifoHeapScheduler()
{
    m_heap.reserve(1024);
}

FifoHeapScheduler::~FifoHeapScheduler()
{
    if (s_driving == this)
    {
        s_driving = nullptr;
    }
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
    m_heap.push_back(ev);
    SiftUp(m_heap.size() - 1);
}

bool
FifoHeapScheduler::IsEmpty() const
{
    return m_heap.empty() && m_now.empty();
}

Scheduler::Event
FifoHeapScheduler::PeekNext() const
{
    NS_ASSERT(!IsEmpty());
    return NextIsFifo() ? m_now.front() : m_heap[0];
}

Scheduler::Event
FifoHeapScheduler::RemoveNext()
{
    NS_ASSERT(!IsEmpty());
    Event ev;
    if (NextIsFifo())
    {
        ev = m_now.front();
        m_now.pop_front();
    }
    else
    {
        ev = PopHeap();
    }
    // The FIFO is empty whenever time advances: its events are for m_nowTs and come first.
    m_nowTs = ev.key.m_ts;
    s_driving = this;
    // The next event's object was written when it was scheduled, often long ago: start
    // fetching it now, while this one runs (a pure hint; the order is unchanged).
    if (!m_heap.empty())
    {
        __builtin_prefetch(m_heap[0].impl);
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
    for (auto it = m_now.begin(); it != m_now.end(); ++it)
    {
        if (it->key.m_uid == ev.key.m_uid)
        {
            NS_ASSERT(it->impl == ev.impl);
            m_now.erase(it);
            return;
        }
    }
    for (size_t i = 0; i < m_heap.size(); ++i)
    {
        if (m_heap[i].key.m_uid == ev.key.m_uid)
        {
            NS_ASSERT(m_heap[i].impl == ev.impl);
            m_heap[i] = m_heap.back();
            m_heap.pop_back();
            if (i < m_heap.size())
            {
                SiftDown(i);
                SiftUp(i);
            }
            return;
        }
    }
    NS_ASSERT_MSG(false, "FifoHeapScheduler::Remove: event not found");
}

void
FifoHeapScheduler::SiftUp(size_t i)
{
    Event ev = m_heap[i];
    while (i > 0)
    {
        const size_t parent = (i - 1) / kArity;
        if (!Before(ev.key, m_heap[parent].key))
        {
            break;
        }
        m_heap[i] = m_heap[parent];
        i = parent;
    }
    m_heap[i] = ev;
}

void
FifoHeapScheduler::SiftDown(size_t i)
{
    const size_t n = m_heap.size();
    Event ev = m_heap[i];
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
            if (Before(m_heap[c].key, m_heap[best].key))
            {
                best = c;
            }
        }
        if (!Before(m_heap[best].key, ev.key))
        {
            break;
        }
        m_heap[i] = m_heap[best];
        i = best;
    }
    m_heap[i] = ev;
}

Scheduler::Event
FifoHeapScheduler::PopHeap()
{
    Event top = m_heap[0];
    m_heap[0] = m_heap.back();
    m_heap.pop_back();
    if (!m_heap.empty())
    {
        SiftDown(0);
    }
    return top;
}

} // namespace ns3
