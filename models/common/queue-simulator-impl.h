// What Cnuas's two simulator cores share: the event queue and ns-3's rules for it.
#ifndef CNUAS_QUEUE_SIMULATOR_IMPL_H
#define CNUAS_QUEUE_SIMULATOR_IMPL_H

#include "ns3/event-id.h"
#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/ptr.h"
#include "ns3/scheduler.h"
#include "ns3/simulator-impl.h"

#include <cstddef>
#include <cstdint>
#include <list>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ns3
{

/**
 * \brief The event queue of a SimulatorImpl and everything ns-3 defines about it, once for
 * LeanSimulatorImpl (simulation) and EmuRealtimeSimulatorImpl (real time).
 *
 * ns-3's DefaultSimulatorImpl rules, which both follow so that a model behaves the same on
 * either: events run in (timestamp, insertion number) order; insertion numbers start at
 * EventId::UID::VALID and every scheduled event, destroy events included, uses one up; an event
 * has expired once it ran (the clock passed its timestamp and insertion number), was cancelled
 * or removed; destroy events run at Destroy in the order they were scheduled, unless cancelled.
 * How events are scheduled (from which threads, at what time) and how Run drives the clock is
 * each subclass's own.
 */
class QueueSimulatorImpl : public SimulatorImpl
{
  public:
    static TypeId GetTypeId();

    void Destroy() override;
    bool IsFinished() const override;
    void Stop() override;
    void Stop(const Time& delay) override;
    EventId ScheduleDestroy(EventImpl* event) override;
    void Remove(const EventId& id) override;
    void Cancel(const EventId& id) override;
    bool IsExpired(const EventId& id) const override;
    Time Now() const override;
    Time GetDelayLeft(const EventId& id) const override;
    Time GetMaximumSimulationTime() const override;
    void SetScheduler(ObjectFactory schedulerFactory) override;
    uint32_t GetSystemId() const override;
    uint32_t GetContext() const override;
    uint64_t GetEventCount() const override;

  protected:
    /// Queues `event` at `ts` with insertion number `uid` (the caller takes it from m_uid).
    void Insert(uint64_t ts, uint32_t context, EventImpl* event, uint32_t uid)
    {
        Scheduler::Event ev;
#if defined(__SSE2__)
        // The scheduler copies the event with a 16-byte load of impl and timestamp (GCC
        // vectorizes the copy into its buckets). Written as two 8-byte stores, that load could
        // not take its data from the store buffer and waited for both stores to reach the
        // cache (a store-forwarding stall; perf put ~60 % of FifoHeapScheduler::AppendToBucket
        // on it). One 16-byte store forwards.
        _mm_storeu_si128(reinterpret_cast<__m128i*>(&ev),
                         _mm_set_epi64x(static_cast<long long>(ts),
                                        reinterpret_cast<long long>(event)));
        static_assert(offsetof(Scheduler::Event, impl) == 0 &&
                          offsetof(Scheduler::Event, key) == 8 &&
                          offsetof(Scheduler::EventKey, m_ts) == 0,
                      "ns-3's Scheduler::Event layout changed");
#else
        ev.impl = event;
        ev.key.m_ts = ts;
#endif
        ev.key.m_context = context;
        ev.key.m_uid = uid;
        m_unscheduledEvents++;
        m_events->Insert(ev);
    }

    /// Schedule and ScheduleNow on the simulation thread: queued at `ts` with the next insertion
    /// number, in the running event's context.
    EventId InsertInCurrentContext(uint64_t ts, EventImpl* event)
    {
        const uint32_t uid = m_uid++;
        Insert(ts, m_currentContext, event, uid);
        return EventId(event, ts, m_currentContext, uid);
    }

    /// Takes the next event off the queue, sets the clock to it and runs it.
    void ProcessOneEvent()
    {
        Scheduler::Event next = m_events->RemoveNext();
        m_unscheduledEvents--;
        m_eventCount++;
        m_currentTs = next.key.m_ts;
        m_currentContext = next.key.m_context;
        m_currentUid = next.key.m_uid;
        next.impl->Invoke();
        next.impl->Unref(); // the queue's reference: gone unless an EventId still holds it
    }

    /// Drops every queued event (DoDispose).
    void DisposeQueue();

    Ptr<Scheduler> m_events;
    std::list<EventId> m_destroyEvents;
    bool m_stop = false;
    uint32_t m_uid = EventId::UID::VALID;
    uint32_t m_currentUid = EventId::UID::INVALID;
    uint64_t m_currentTs = 0;
    uint32_t m_currentContext = 0xffffffff; ///< Simulator::NO_CONTEXT
    uint64_t m_eventCount = 0;
    int64_t m_unscheduledEvents = 0; ///< inserted and not yet run or removed (a consistency check)
};

} // namespace ns3

#endif
