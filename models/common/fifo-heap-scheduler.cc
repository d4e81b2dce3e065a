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
    : m_serial(++s_serials)
{
    m_heap.reserve(1024);
}

FifoHeapScheduler::~FifoHeapScheduler()
{
    if (s_driving == this)
    {
        s_driving = nullptr;
    }
    if (s_hintFor == this)
    {
        s_hintFor = nullptr;
    }
}

void
FifoHeapScheduler::Stream::Push(const Event& ev)
{
    const uint32_t capacity = static_cast<uint32_t>(ring.size());
    if (size == capacity)
    {
        // Grow to twice the size, unrolling the ring so the oldest event is at 0.
        std::vector<Event> bigger(capacity ? 2 * capacity : 8);
        for (uint32_t k = 0; k < size; ++k)
        {
            bigger[k] = ring[(head + k) & (capacity - 1)];
        }
        ring.swap(bigger);
        head = 0;
    }
    ring[(head + size) & (ring.size() - 1)] = ev;
    ++size;
}

Scheduler::Event
FifoHeapScheduler::Stream::Pop()
{
    const Event ev = ring[head];
    head = (head + 1) & (static_cast<uint32_t>(ring.size()) - 1);
    --size;
    // The next of this stream is read when this one leaves the heap, a wire time later in
    // simulated time and many events later: start fetching it (a hint; nothing changes).
    __builtin_prefetch(&ring[head]);
    return ev;
}

void
FifoHeapScheduler::Insert(const Event& ev)
{
    // An event for the current time has a larger insertion number than every event queued so
    // far, so it goes behind them all: the FIFO's back. (The simulator never schedules into the
    // past, so m_ts < m_nowTs does not occur.)
    uint32_t stream = kNoStream;
    if (s_hintFor == this)
    {
        stream = s_hintStream;
        s_hintFor = nullptr;
    }
    if (ev.key.m_ts == m_nowTs)
    {
        m_now.push_back(ev);
        return;
    }
    if (stream != kNoStream)
    {
        Stream& s = m_streams[stream];
        if (!s.firstInHeap)
        {
            s.firstInHeap = true; // the stream's first event: into the heap, tagged
            s.last = ev.key;
        }
        else if (Before(s.last, ev.key))
        {
            s.Push(ev); // behind the stream's others: no sift
            s.last = ev.key;
            ++m_streamed;
            return;
        }
        else
        {
            ++m_fallbacks; // not the stream's largest: on its own in the heap
            stream = kNoStream;
        }
    }
    m_heap.push_back(Entry{ev, stream});
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
    return NextIsFifo() ? m_now.front() : m_heap[0].ev;
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
        ev = m_heap[0].ev;
        RemoveHeapEntry(0);
    }
    // The FIFO is empty whenever time advances: its events are for m_nowTs and come first.
    m_nowTs = ev.key.m_ts;
    s_driving = this;
    // The next event's object was written when it was scheduled, often long ago: start
    // fetching it now, while this one runs (a pure hint; the order is unchanged).
    if (!m_heap.empty())
    {
        __builtin_prefetch(m_heap[0].ev.impl);
        if (m_heap[0].stream != kNoStream)
        {
            __builtin_prefetch(&m_streams[m_heap[0].stream]); // its next takes its place
        }
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
        if (m_heap[i].ev.key.m_uid == ev.key.m_uid)
        {
            NS_ASSERT(m_heap[i].ev.impl == ev.impl);
            RemoveHeapEntry(i);
            return;
        }
    }
    // Behind a stream's first event. The stream stays sorted; its `last` may now be larger
    // than what it holds, which only sends a later event to the heap on its own.
    for (Stream& s : m_streams)
    {
        const uint32_t mask = static_cast<uint32_t>(s.ring.size()) - 1;
        for (uint32_t k = 0; k < s.size; ++k)
        {
            if (s.ring[(s.head + k) & mask].key.m_uid == ev.key.m_uid)
            {
                NS_ASSERT(s.ring[(s.head + k) & mask].impl == ev.impl);
                for (; k + 1 < s.size; ++k)
                {
                    s.ring[(s.head + k) & mask] = s.ring[(s.head + k + 1) & mask];
                }
                --s.size;
                return;
            }
        }
    }
    NS_ASSERT_MSG(false, "FifoHeapScheduler::Remove: event not found");
}

void
FifoHeapScheduler::SiftUp(size_t i)
{
    const Entry e = m_heap[i];
    while (i > 0)
    {
        const size_t parent = (i - 1) / kArity;
        if (!Before(e.ev.key, m_heap[parent].ev.key))
        {
            break;
        }
        m_heap[i] = m_heap[parent];
        i = parent;
    }
    m_heap[i] = e;
}

void
FifoHeapScheduler::SiftDown(size_t i)
{
    const size_t n = m_heap.size();
    const Entry e = m_heap[i];
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
            if (Before(m_heap[c].ev.key, m_heap[best].ev.key))
            {
                best = c;
            }
        }
        if (!Before(m_heap[best].ev.key, e.ev.key))
        {
            break;
        }
        m_heap[i] = m_heap[best];
        i = best;
    }
    m_heap[i] = e;
}

void
FifoHeapScheduler::RemoveHeapEntry(size_t i)
{
    const uint32_t stream = m_heap[i].stream;
    if (stream != kNoStream)
    {
        Stream& s = m_streams[stream];
        if (s.size > 0)
        {
            // The stream is sorted: its next event is later than the one it replaces, so it
            // can only move down.
            m_heap[i].ev = s.Pop();
            SiftDown(i);
            return;
        }
        s.firstInHeap = false;
    }
    m_heap[i] = m_heap.back();
    m_heap.pop_back();
    if (i < m_heap.size())
    {
        SiftDown(i);
        SiftUp(i);
    }
}

} // namespace ns3
