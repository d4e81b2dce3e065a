// The simulator core every Cnuas simulation runs on (not the real-time emulation, which has its
// own): ns-3's DefaultSimulatorImpl semantics, event for event, at less cost per event.
#ifndef CNUAS_LEAN_SIMULATOR_IMPL_H
#define CNUAS_LEAN_SIMULATOR_IMPL_H

#include "ns3/event-id.h"
#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/ptr.h"
#include "ns3/scheduler.h"
#include "ns3/simulator-impl.h"

#include <atomic>
#include <cstdint>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace ns3
{

/**
 * \brief A SimulatorImpl with DefaultSimulatorImpl's behaviour and less work per event.
 *
 * Why: a packet-level fabric runs millions of events whose own work is a few hundred
 * instructions, and ns-3's DefaultSimulatorImpl spends a good part of that again around each
 * one: a throw-away EventId (a reference count taken and dropped) for the PreEventHook that
 * nothing overrides, logging checks in Schedule and ProcessOneEvent, Time temporaries for the
 * absolute timestamp, and a non-atomic flag read for events handed in by other threads.
 * Measured on an InfiniBand k=8 all-to-all: the event machinery (scheduling, dispatch,
 * allocation, clock reads) was about 45 % of all instructions (docs/performance.md).
 *
 * What is the same, so that every output is byte-identical to a run on DefaultSimulatorImpl:
 * events run in (timestamp, insertion number) order, the insertion numbers start at
 * EventId::UID::VALID and advance for every Schedule, ScheduleNow, ScheduleWithContext on the
 * simulation thread and ScheduleDestroy exactly as ns-3's do, Schedule takes the current event's
 * context, IsExpired, Cancel, Remove, GetDelayLeft, Stop, Destroy and the event count follow
 * DefaultSimulatorImpl's definitions, and an event scheduled from another thread is taken into
 * the queue after the event that is running (with the next insertion number and the simulated
 * time then, plus its delay). The scheduler is whatever SchedulerType names
 * (FifoHeapScheduler by default in Cnuas).
 */
class LeanSimulatorImpl final : public SimulatorImpl
{
  public:
    static TypeId GetTypeId();

    LeanSimulatorImpl();
    ~LeanSimulatorImpl() override;

    void Destroy() override;
    bool IsFinished() const override;
    void Stop() override;
    void Stop(const Time& delay) override;
    EventId Schedule(const Time& delay, EventImpl* event) override;
    void ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event) override;
    EventId ScheduleNow(EventImpl* event) override;
    EventId ScheduleDestroy(EventImpl* event) override;
    void Remove(const EventId& id) override;
    void Cancel(const EventId& id) override;
    bool IsExpired(const EventId& id) const override;
    void Run() override;
    Time Now() const override;
    Time GetDelayLeft(const EventId& id) const override;
    Time GetMaximumSimulationTime() const override;
    void SetScheduler(ObjectFactory schedulerFactory) override;
    uint32_t GetSystemId() const override;
    uint32_t GetContext() const override;
    uint64_t GetEventCount() const override;

  private:
    void DoDispose() override;
    /// Queues an event with the next insertion number.
    void Insert(uint64_t ts, uint32_t context, EventImpl* event, uint32_t uid);
    /// Takes the events other threads handed in into the queue (simulation thread only).
    void TakeForeign();

    /// An event another thread scheduled: its delay is counted from the simulated time at
    /// which the simulation thread takes it in.
    struct ForeignEvent
    {
        uint32_t context;
        uint64_t delay;
        EventImpl* event;
    };

    Ptr<Scheduler> m_events;
    std::list<EventId> m_destroyEvents;
    bool m_stop = false;
    uint32_t m_uid;
    uint32_t m_currentUid;
    uint64_t m_currentTs = 0;
    uint32_t m_currentContext;
    uint64_t m_eventCount = 0;
    int64_t m_unscheduledEvents = 0; ///< inserted and not yet run or removed (a consistency check)
    std::thread::id m_mainThreadId;
    std::mutex m_foreignMutex;
    std::vector<ForeignEvent> m_foreign;
    std::atomic<bool> m_foreignPending{false};
};

} // namespace ns3

#endif
