// An ns-3 event scheduler for packet-level fabric simulation: a four-ary heap for future events
// and a FIFO for events scheduled at the current time, the same total order as every ns-3
// scheduler (timestamp, then insertion number) at less cost per event.
#ifndef CNUAS_FIFO_HEAP_SCHEDULER_H
#define CNUAS_FIFO_HEAP_SCHEDULER_H

#include "ns3/scheduler.h"

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

    /**
     * Whether the scheduler that runs the current simulation holds no event for the current
     * instant (so an event scheduled now would be the next to run; EventTail). False when the
     * simulation is driven by another scheduler.
     */
    static bool NothingElsePendingNow()
    {
        const FifoHeapScheduler* s = s_driving;
        return s && s->m_now.empty() && (s->m_heap.empty() || s->m_heap[0].key.m_ts > s->m_nowTs);
    }

    /// The current instant of the scheduler NothingElsePendingNow asks (0 if none).
    static uint64_t DrivingNow()
    {
        return s_driving ? s_driving->m_nowTs : 0;
    }

  private:
    static bool Before(const EventKey& a, const EventKey& b)
    {
        return a.m_ts < b.m_ts || (a.m_ts == b.m_ts && a.m_uid < b.m_uid);
    }
    /// Whether the next event is the FIFO's head (else the heap's top).
    bool NextIsFifo() const
    {
        return !m_now.empty() && (m_heap.empty() || Before(m_now.front().key, m_heap[0].key));
    }
    void SiftUp(size_t i);
    void SiftDown(size_t i);
    Event PopHeap();

    std::vector<Event> m_heap;
    std::deque<Event> m_now; ///< events for m_nowTs, in insertion order
    uint64_t m_nowTs = 0;    ///< timestamp of the last event removed
    /// The instance whose RemoveNext ran last: the one driving the simulation.
    static inline FifoHeapScheduler* s_driving = nullptr;
};

} // namespace ns3

#endif
