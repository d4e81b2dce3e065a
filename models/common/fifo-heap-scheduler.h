// An ns-3 event scheduler for packet-level fabric simulation: a four-ary heap for future events,
// a FIFO for events scheduled at the current time and a FIFO per cable for the frames in flight
// on it, the same total order as every ns-3 scheduler (timestamp, then insertion number) at less
// cost per event.
#ifndef CNUAS_FIFO_HEAP_SCHEDULER_H
#define CNUAS_FIFO_HEAP_SCHEDULER_H

#include "ns3/scheduler.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace ns3
{

/**
 * \brief Event queue: FIFO for "now", four-ary min-heap for later.
 *
 * Why: in a fabric model a large share of events is scheduled for the current time (an
 * engine's pump, a transmitter kick, a deferred clean-up), and the rest mostly a link's
 * serialization or propagation time ahead. Events for the current time arrive in insertion
 * order, which is their execution order (ns-3 breaks timestamp ties by the insertion number,
 * Scheduler::EventKey), so a FIFO holds them with no comparisons; every event already waiting
 * for the current time was inserted earlier and is in the heap, and RemoveNext takes the smaller
 * of the two heads. The heap has four children per node: half the depth of a binary heap, and
 * the children of a node share a cache line or two (24-byte entries), which is what dominates
 * its cost at the queue depths of a 320-host fabric.
 *
 * Streams. Most future events of a fabric are frames in flight, and the frames on one cable
 * (one direction of a link) arrive in the order they were sent: their arrival events are
 * inserted in increasing (timestamp, insertion number) order. A model that schedules such a
 * sequence names its stream just before it schedules (NextInsertGoesTo); the stream keeps its
 * events in a FIFO of its own and only its first event is in the heap. When that one is
 * removed, the stream's next event takes its place in the heap (one sift down instead of a
 * removal and an insertion), and the stream's later events are inserted with no comparison
 * but one. The heap so holds one entry per busy cable instead of one per frame in flight. The
 * order is unchanged: every event keeps the key the simulator gave it, each stream is sorted
 * (an event that would not be the largest of its stream goes into the heap on its own, counted
 * in GetStreamFallbacks) and the heap holds every stream's smallest event, so its top is still
 * the smallest of all. Which stream an event joins cannot change the order, only the cost; a
 * hint meant for another scheduler instance is ignored.
 *
 * Removal of an arbitrary event (Simulator::Remove) searches linearly, as ns-3's own
 * HeapScheduler does; Cancel, which the models use, costs nothing here.
 */
class FifoHeapScheduler : public Scheduler
{
  public:
    static TypeId GetTypeId();
    FifoHeapScheduler();
    ~FifoHeapScheduler() override;

    void Insert(const Event& ev) override;
    bool IsEmpty() const override;
    Event PeekNext() const override;
    Event RemoveNext() override;
    void Remove(const Event& ev) override;

    /// A model's handle on its stream, valid for one scheduler instance (see the class comment).
    struct StreamSlot
    {
        uint64_t scheduler = 0; ///< serial number of the scheduler the stream belongs to
        uint32_t stream = 0;    ///< the stream's index in that scheduler
    };

    /**
     * The next Insert of the scheduler that drives the current simulation goes to slot's stream
     * (made on first use): call it just before scheduling an event that is, by construction,
     * later than every event scheduled before into the same slot. Without a FifoHeapScheduler
     * driving the simulation this does nothing.
     */
    static void NextInsertGoesTo(StreamSlot& slot)
    {
        FifoHeapScheduler* s = s_driving;
        if (s)
        {
            s->HintStream(slot);
        }
    }

    /// The same, for this scheduler instance whether or not it drives a simulation (tests).
    void HintStream(StreamSlot& slot)
    {
        if (slot.scheduler != m_serial)
        {
            slot.scheduler = m_serial;
            slot.stream = static_cast<uint32_t>(m_streams.size());
            m_streams.emplace_back();
        }
        s_hintFor = this;
        s_hintStream = slot.stream;
    }

    /// Events inserted behind their stream's first one (no sift).
    uint64_t GetStreamedInserts() const
    {
        return m_streamed;
    }

    /// Events named for a stream that were not later than its last one: put in the heap.
    uint64_t GetStreamFallbacks() const
    {
        return m_fallbacks;
    }

    /// Entries in the heap now (events of streams behind their first one excluded).
    size_t GetHeapSize() const
    {
        return m_heap.size();
    }

    /**
     * Whether the scheduler that runs the current simulation holds no event for the current
     * instant (so an event scheduled now would be the next to run; EventTail). False when the
     * simulation is driven by another scheduler.
     */
    static bool NothingElsePendingNow()
    {
        const FifoHeapScheduler* s = s_driving;
        return s && s->m_now.empty() && (s->m_heap.empty() || s->m_heap[0].ev.key.m_ts > s->m_nowTs);
    }

    /// The current instant of the scheduler NothingElsePendingNow asks (0 if none).
    static uint64_t DrivingNow()
    {
        return s_driving ? s_driving->m_nowTs : 0;
    }

  private:
    static constexpr uint32_t kNoStream = UINT32_MAX;

    /// A heap entry: an event and the stream whose first event it is (kNoStream if none).
    struct Entry
    {
        Event ev;
        uint32_t stream;
    };

    /// A stream's events behind its first one (which is in the heap), in a ring buffer. One
    /// cache line for the bookkeeping: it is read once per event of the stream.
    struct alignas(64) Stream
    {
        std::vector<Event> ring; ///< capacity a power of two, or empty
        uint32_t head = 0;       ///< index of the oldest event in ring
        uint32_t size = 0;       ///< events in ring
        bool firstInHeap = false;
        EventKey last{};         ///< the largest key the stream holds or held since firstInHeap

        void Push(const Event& ev);
        Event Pop();
    };

    static bool Before(const EventKey& a, const EventKey& b)
    {
        return a.m_ts < b.m_ts || (a.m_ts == b.m_ts && a.m_uid < b.m_uid);
    }
    /// Whether the next event is the FIFO's head (else the heap's top).
    bool NextIsFifo() const
    {
        return !m_now.empty() && (m_heap.empty() || Before(m_now.front().key, m_heap[0].ev.key));
    }
    void SiftUp(size_t i);
    void SiftDown(size_t i);
    /// Removes the heap's entry i; a stream's next event takes the place of its first.
    void RemoveHeapEntry(size_t i);

    std::vector<Entry> m_heap;
    std::vector<Stream> m_streams;
    std::deque<Event> m_now; ///< events for m_nowTs, in insertion order
    uint64_t m_nowTs = 0;    ///< timestamp of the last event removed
    uint64_t m_serial;       ///< tells this instance's streams from another's (StreamSlot)
    uint64_t m_streamed = 0;
    uint64_t m_fallbacks = 0;
    static inline uint64_t s_serials = 0;
    /// The stream the next Insert of s_hintFor goes to (NextInsertGoesTo); Insert clears it.
    static inline FifoHeapScheduler* s_hintFor = nullptr;
    static inline uint32_t s_hintStream = 0;
    /// The instance whose RemoveNext ran last: the one driving the simulation.
    static inline FifoHeapScheduler* s_driving = nullptr;
};

} // namespace ns3

#endif
