// The simulator core every Cnuas simulation runs on (not the real-time emulation, which has its
// own): ns-3's DefaultSimulatorImpl semantics, event for event, at less cost per event.
#ifndef CNUAS_LEAN_SIMULATOR_IMPL_H
#define CNUAS_LEAN_SIMULATOR_IMPL_H

#include "queue-simulator-impl.h"

#include <atomic>
#include <cstdint>
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
 * absolute timestamp. Measured on an InfiniBand k=8 all-to-all: the event machinery
 * (scheduling, dispatch, allocation, clock reads) was about 45 % of all instructions, and this
 * core takes 9 % of the total off (docs/performance.md).
 *
 * What is the same, so that every output is byte-identical to a run on DefaultSimulatorImpl:
 * the queue's rules (QueueSimulatorImpl), Schedule and ScheduleNow taking the current event's
 * context, ScheduleWithContext on the simulation thread queueing at once, and an event scheduled
 * from another thread taken into the queue after the event that is running (with the next
 * insertion number and its delay counted from the simulated time then). The scheduler is
 * whatever SchedulerType names (FifoHeapScheduler by default in Cnuas).
 */
class LeanSimulatorImpl final : public QueueSimulatorImpl
{
  public:
    static TypeId GetTypeId();

    LeanSimulatorImpl();
    ~LeanSimulatorImpl() override;

    EventId Schedule(const Time& delay, EventImpl* event) override;
    void ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event) override;
    EventId ScheduleNow(EventImpl* event) override;
    EventId ScheduleDestroy(EventImpl* event) override;
    void Run() override;

    /**
     * The core that is running a simulation (inside its Run), or null: what SimClock reads.
     * Only a core whose time step is a picosecond (Cnuas's resolution, CnuasInit) registers.
     */
    static LeanSimulatorImpl* Running()
    {
        return s_running;
    }
    /// Now() in time steps.
    uint64_t CurrentTimeStep() const
    {
        return m_currentTs;
    }
    /// GetContext().
    uint32_t CurrentContext() const
    {
        return m_currentContext;
    }
    /// The insertion number of the event running (or last run).
    uint32_t CurrentUid() const
    {
        return m_currentUid;
    }
    /// ScheduleWithContext with the delay in time steps (no Time made and destroyed).
    void ScheduleWithContextSteps(uint32_t context, uint64_t delay, EventImpl* event)
    {
        if (std::this_thread::get_id() == m_mainThreadId)
        {
            Insert(m_currentTs + delay, context, event, m_uid++);
            return;
        }
        ScheduleForeign(context, delay, event);
    }

  private:
    /// Queues an event scheduled from another thread (ScheduleWithContext).
    void ScheduleForeign(uint32_t context, uint64_t delay, EventImpl* event);

    /// The core inside Run (Running()).
    static LeanSimulatorImpl* s_running;

    void DoDispose() override;
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

    std::thread::id m_mainThreadId;
    std::mutex m_foreignMutex;
    std::vector<ForeignEvent> m_foreign;
    std::atomic<bool> m_foreignPending{false};
};

} // namespace ns3

#endif
