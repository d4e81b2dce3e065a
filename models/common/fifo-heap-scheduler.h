// An ns-3 event scheduler for packet-level fabric simulation: a FIFO for events scheduled at the
// current time, a calendar of short time buckets for the near future and a four-ary heap beyond
// it; the same total order as every ns-3 scheduler (timestamp, then insertion number) at less
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
 * \brief Event queue: FIFO for "now", calendar buckets for the near future, four-ary heap for
 * the rest.
 *
 * Why: in a fabric model a large share of events is scheduled for the current time (an
 * engine's pump, a transmitter kick, a deferred clean-up), and almost all the others a link's
 * serialization or propagation time ahead. Events for the current time arrive in insertion
 * order, which is their execution order (ns-3 breaks timestamp ties by the insertion number,
 * Scheduler::EventKey), so a FIFO holds them with no comparisons.
 *
 * The near future is a calendar (Brown, "Calendar queues", CACM 31(10), 1988): a ring of
 * buckets of 2^BucketWidthLog2 picoseconds each, covering 2^BucketCountLog2 buckets from the
 * current one. An event for a later bucket of that window is appended to its bucket, unsorted;
 * when the simulation reaches a bucket, its events are sorted once and then taken in order from
 * the front. An event for the current bucket (or earlier) scheduled after that sort goes to a
 * small heap beside the sorted run, and one beyond the window to a heap of its own, which hands
 * its events to the calendar as the window reaches them. A large fabric holds tens of thousands
 * of events (frames in flight): in a heap every removal walks its levels with a dependent cache
 * miss per level once the heap outgrows the core's caches, while a bucket is read front to back
 * (what the hardware prefetcher follows) and written at its end.
 *
 * The order is exactly the heap's: the next event is the smallest of the FIFO's head, the
 * sorted run's head and the small heap's top, which together hold every event of the current
 * bucket and earlier, and every other event is in a later bucket.
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
        // Every event of a later bucket is later than the current instant, which is in the
        // current bucket or before it.
        return s && s->m_now.empty() &&
               (s->m_runPos == s->m_run.size() || s->m_run[s->m_runPos].key.m_ts > s->m_nowTs) &&
               (s->m_late.Empty() || s->m_late.Top().key.m_ts > s->m_nowTs);
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

    /// A four-ary min-heap of events: half the depth of a binary heap, and a node's children
    /// share a cache line or two (24-byte entries).
    class Heap
    {
      public:
        bool Empty() const
        {
            return m_v.empty();
        }
        size_t Size() const
        {
            return m_v.size();
        }
        const Event& Top() const
        {
            return m_v[0];
        }
        void Push(const Event& ev);
        Event Pop();
        /// Removes the event with `uid`, if the heap holds it.
        bool Remove(uint32_t uid);

      private:
        void SiftUp(size_t i);
        void SiftDown(size_t i);
        std::vector<Event> m_v;
    };

    /// Where the next event is.
    enum class Source
    {
        Fifo,
        Run,
        Late
    };
    /// Makes the current bucket's sorted run hold the next events if the run and the small
    /// heap are spent and events are left in the calendar or the far heap (no-op otherwise).
    void Refill();
    /// The source of the next event (Refill done; the scheduler is not empty).
    Source NextSource() const;
    /// Appends `ev` to the calendar bucket `bucket` (absolute bucket number, in the window).
    void AppendToBucket(uint64_t bucket, const Event& ev);
    /// The absolute number of the bucket that holds timestamp `ts`.
    uint64_t BucketOf(uint64_t ts) const
    {
        return ts >> m_widthLog2;
    }
    /// The ring slot of absolute bucket `bucket` (the ring's size is a power of two).
    size_t SlotOf(uint64_t bucket) const
    {
        return bucket & (m_buckets.size() - 1);
    }
    /// Marks ring slot `slot` empty in m_occupied.
    void ClearSlot(size_t slot)
    {
        m_occupied[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
    }
    void Allocate();

    uint32_t m_widthLog2 = 13; ///< attribute BucketWidthLog2
    uint32_t m_countLog2 = 10; ///< attribute BucketCountLog2

    std::deque<Event> m_now; ///< events for m_nowTs, in insertion order
    uint64_t m_nowTs = 0;    ///< timestamp of the last event removed

    uint64_t m_cur = 0;                         ///< absolute number of the current bucket
    std::vector<Event> m_run;                   ///< the current bucket's events, sorted
    size_t m_runPos = 0;                        ///< m_run's first event not yet removed
    Heap m_late;                                ///< current bucket, inserted after its sort
    std::vector<std::vector<Event>> m_buckets;  ///< the ring (unsorted), index bucket & mask
    std::vector<uint64_t> m_occupied;           ///< bit per ring slot: non-empty
    std::vector<std::vector<Event>> m_spare;    ///< emptied bucket buffers, reused (LIFO)
    uint64_t m_inBuckets = 0;                   ///< events in m_buckets
    Heap m_far;                                 ///< beyond the window

    /// The instance whose RemoveNext ran last: the one driving the simulation.
    static inline FifoHeapScheduler* s_driving = nullptr;
};

} // namespace ns3

#endif
