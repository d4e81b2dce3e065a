#include "lean-simulator-impl.h"

#include "ns3/assert.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(LeanSimulatorImpl);

LeanSimulatorImpl* LeanSimulatorImpl::s_running = nullptr;

TypeId
LeanSimulatorImpl::GetTypeId()
{
    static TypeId tid = TypeId("ns3::LeanSimulatorImpl")
                            .SetParent<QueueSimulatorImpl>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<LeanSimulatorImpl>();
    return tid;
}

LeanSimulatorImpl::LeanSimulatorImpl()
    : m_mainThreadId(std::this_thread::get_id())
{
}

LeanSimulatorImpl::~LeanSimulatorImpl() = default;

void
LeanSimulatorImpl::DoDispose()
{
    TakeForeign();
    DisposeQueue();
    QueueSimulatorImpl::DoDispose();
}

EventId
LeanSimulatorImpl::Schedule(const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(std::this_thread::get_id() == m_mainThreadId,
                  "Simulator::Schedule from another thread (use ScheduleWithContext)");
    NS_ASSERT_MSG(!delay.IsStrictlyNegative(), "Simulator::Schedule: negative delay " << delay);
    return InsertInCurrentContext(m_currentTs + static_cast<uint64_t>(delay.GetTimeStep()), event);
}

EventId
LeanSimulatorImpl::ScheduleNow(EventImpl* event)
{
    NS_ASSERT_MSG(std::this_thread::get_id() == m_mainThreadId,
                  "Simulator::ScheduleNow from another thread");
    return InsertInCurrentContext(m_currentTs, event);
}

EventId
LeanSimulatorImpl::ScheduleDestroy(EventImpl* event)
{
    NS_ASSERT_MSG(std::this_thread::get_id() == m_mainThreadId,
                  "Simulator::ScheduleDestroy from another thread");
    return QueueSimulatorImpl::ScheduleDestroy(event);
}

void
LeanSimulatorImpl::ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(!delay.IsStrictlyNegative(),
                  "Simulator::ScheduleWithContext: negative delay " << delay);
    ScheduleWithContextSteps(context, static_cast<uint64_t>(delay.GetTimeStep()), event);
}

void
LeanSimulatorImpl::ScheduleForeign(uint32_t context, uint64_t delay, EventImpl* event)
{
    // Another thread: the simulation thread takes it in after the event it is running, and the
    // delay counts from the simulated time then (as ns-3's DefaultSimulatorImpl does).
    std::lock_guard<std::mutex> lock(m_foreignMutex);
    m_foreign.push_back({context, delay, event});
    m_foreignPending.store(true, std::memory_order_release);
}

void
LeanSimulatorImpl::TakeForeign()
{
    if (!m_foreignPending.load(std::memory_order_acquire))
    {
        return;
    }
    std::vector<ForeignEvent> taken;
    {
        std::lock_guard<std::mutex> lock(m_foreignMutex);
        taken.swap(m_foreign);
        m_foreignPending.store(false, std::memory_order_release);
    }
    for (const ForeignEvent& f : taken)
    {
        Insert(m_currentTs + f.delay, f.context, f.event, m_uid++);
    }
}

void
LeanSimulatorImpl::Run()
{
    m_mainThreadId = std::this_thread::get_id();
    TakeForeign();
    m_stop = false;
    // SimClock reads this core while it runs (and Simulator::Now() before and after, which
    // answers the same): only with picosecond time steps, which SimClock's callers count in.
    // Restored however Run ends (an exception out of an event included).
    struct Registration
    {
        LeanSimulatorImpl* const outer = s_running;
        ~Registration()
        {
            s_running = outer;
        }
    } registration;
    if (Time::GetResolution() == Time::PS)
    {
        s_running = this;
    }
    while (!m_stop && !m_events->IsEmpty())
    {
        NS_ASSERT(m_events->PeekNext().key.m_ts >= m_currentTs);
        ProcessOneEvent();
        if (m_foreignPending.load(std::memory_order_relaxed))
        {
            TakeForeign();
        }
    }
    // Stopped for want of events: every event inserted was run or removed.
    NS_ASSERT(!m_events->IsEmpty() || m_unscheduledEvents == 0);
}

} // namespace ns3
