#include "lean-simulator-impl.h"

#include "ns3/assert.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(LeanSimulatorImpl);

TypeId
LeanSimulatorImpl::GetTypeId()
{
    static TypeId tid = TypeId("ns3::LeanSimulatorImpl")
                            .SetParent<SimulatorImpl>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<LeanSimulatorImpl>();
    return tid;
}

LeanSimulatorImpl::LeanSimulatorImpl()
    : m_uid(EventId::UID::VALID),
      m_currentUid(EventId::UID::INVALID),
      m_currentContext(Simulator::NO_CONTEXT),
      m_mainThreadId(std::this_thread::get_id())
{
}

LeanSimulatorImpl::~LeanSimulatorImpl() = default;

void
LeanSimulatorImpl::DoDispose()
{
    TakeForeign();
    if (m_events)
    {
        while (!m_events->IsEmpty())
        {
            Scheduler::Event ev = m_events->RemoveNext();
            ev.impl->Unref(); // the queue's reference
        }
        m_events = nullptr;
    }
    SimulatorImpl::DoDispose();
}

void
LeanSimulatorImpl::Destroy()
{
    while (!m_destroyEvents.empty())
    {
        Ptr<EventImpl> ev = m_destroyEvents.front().PeekEventImpl();
        m_destroyEvents.pop_front();
        if (!ev->IsCancelled())
        {
            ev->Invoke();
        }
    }
}

void
LeanSimulatorImpl::SetScheduler(ObjectFactory schedulerFactory)
{
    Ptr<Scheduler> scheduler = schedulerFactory.Create<Scheduler>();
    if (m_events)
    {
        while (!m_events->IsEmpty())
        {
            scheduler->Insert(m_events->RemoveNext());
        }
    }
    m_events = scheduler;
}

void
LeanSimulatorImpl::Insert(uint64_t ts, uint32_t context, EventImpl* event, uint32_t uid)
{
    Scheduler::Event ev;
    ev.impl = event;
    ev.key.m_ts = ts;
    ev.key.m_context = context;
    ev.key.m_uid = uid;
    m_unscheduledEvents++;
    m_events->Insert(ev);
}

EventId
LeanSimulatorImpl::Schedule(const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(std::this_thread::get_id() == m_mainThreadId,
                  "Simulator::Schedule from another thread (use ScheduleWithContext)");
    NS_ASSERT_MSG(!delay.IsStrictlyNegative(), "Simulator::Schedule: negative delay " << delay);
    const uint64_t ts = m_currentTs + static_cast<uint64_t>(delay.GetTimeStep());
    const uint32_t uid = m_uid++;
    Insert(ts, m_currentContext, event, uid);
    return EventId(event, ts, m_currentContext, uid);
}

EventId
LeanSimulatorImpl::ScheduleNow(EventImpl* event)
{
    NS_ASSERT_MSG(std::this_thread::get_id() == m_mainThreadId,
                  "Simulator::ScheduleNow from another thread");
    const uint32_t uid = m_uid++;
    Insert(m_currentTs, m_currentContext, event, uid);
    return EventId(event, m_currentTs, m_currentContext, uid);
}

void
LeanSimulatorImpl::ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(!delay.IsStrictlyNegative(),
                  "Simulator::ScheduleWithContext: negative delay " << delay);
    if (std::this_thread::get_id() == m_mainThreadId)
    {
        Insert(m_currentTs + static_cast<uint64_t>(delay.GetTimeStep()), context, event, m_uid++);
        return;
    }
    // Another thread: the simulation thread takes it in after the event it is running, and the
    // delay counts from the simulated time then (as ns-3's DefaultSimulatorImpl does).
    std::lock_guard<std::mutex> lock(m_foreignMutex);
    m_foreign.push_back({context, static_cast<uint64_t>(delay.GetTimeStep()), event});
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

EventId
LeanSimulatorImpl::ScheduleDestroy(EventImpl* event)
{
    NS_ASSERT_MSG(std::this_thread::get_id() == m_mainThreadId,
                  "Simulator::ScheduleDestroy from another thread");
    // The EventId takes over the reference the caller's new event came with.
    EventId id(Ptr<EventImpl>(event, false), m_currentTs, 0xffffffff, EventId::UID::DESTROY);
    m_destroyEvents.push_back(id);
    m_uid++; // a destroy event uses up an insertion number too (the order of later events)
    return id;
}

void
LeanSimulatorImpl::Remove(const EventId& id)
{
    if (id.GetUid() == EventId::UID::DESTROY)
    {
        auto it = std::find(m_destroyEvents.begin(), m_destroyEvents.end(), id);
        if (it != m_destroyEvents.end())
        {
            m_destroyEvents.erase(it);
        }
        return;
    }
    if (IsExpired(id))
    {
        return;
    }
    Scheduler::Event ev;
    ev.impl = id.PeekEventImpl();
    ev.key.m_ts = id.GetTs();
    ev.key.m_context = id.GetContext();
    ev.key.m_uid = id.GetUid();
    m_events->Remove(ev);
    ev.impl->Cancel();
    ev.impl->Unref(); // the queue's reference
    m_unscheduledEvents--;
}

void
LeanSimulatorImpl::Cancel(const EventId& id)
{
    if (!IsExpired(id))
    {
        id.PeekEventImpl()->Cancel();
    }
}

bool
LeanSimulatorImpl::IsExpired(const EventId& id) const
{
    EventImpl* impl = id.PeekEventImpl();
    if (id.GetUid() == EventId::UID::DESTROY)
    {
        return impl == nullptr || impl->IsCancelled() ||
               std::find(m_destroyEvents.begin(), m_destroyEvents.end(), id) ==
                   m_destroyEvents.end();
    }
    // An event runs, or has run, once the clock passes its (timestamp, insertion number).
    return impl == nullptr || id.GetTs() < m_currentTs ||
           (id.GetTs() == m_currentTs && id.GetUid() <= m_currentUid) || impl->IsCancelled();
}

void
LeanSimulatorImpl::Run()
{
    m_mainThreadId = std::this_thread::get_id();
    TakeForeign();
    m_stop = false;
    Scheduler* events = PeekPointer(m_events);
    while (!m_stop && !events->IsEmpty())
    {
        Scheduler::Event next = events->RemoveNext();
        NS_ASSERT(next.key.m_ts >= m_currentTs);
        m_unscheduledEvents--;
        m_eventCount++;
        m_currentTs = next.key.m_ts;
        m_currentContext = next.key.m_context;
        m_currentUid = next.key.m_uid;
        next.impl->Invoke();
        next.impl->Unref(); // the queue's reference: the event is gone unless an EventId holds it
        if (m_foreignPending.load(std::memory_order_relaxed))
        {
            TakeForeign();
        }
        events = PeekPointer(m_events); // an event may have replaced the scheduler
    }
    // Stopped for want of events: every event inserted was run or removed.
    NS_ASSERT(!m_events->IsEmpty() || m_unscheduledEvents == 0);
}

bool
LeanSimulatorImpl::IsFinished() const
{
    return m_stop || m_events->IsEmpty();
}

void
LeanSimulatorImpl::Stop()
{
    m_stop = true;
}

void
LeanSimulatorImpl::Stop(const Time& delay)
{
    Simulator::Schedule(delay, &Simulator::Stop);
}

Time
LeanSimulatorImpl::Now() const
{
    return TimeStep(m_currentTs);
}

Time
LeanSimulatorImpl::GetDelayLeft(const EventId& id) const
{
    return IsExpired(id) ? TimeStep(0) : TimeStep(id.GetTs() - m_currentTs);
}

Time
LeanSimulatorImpl::GetMaximumSimulationTime() const
{
    return TimeStep(0x7fffffffffffffffLL);
}

uint32_t
LeanSimulatorImpl::GetSystemId() const
{
    return 0;
}

uint32_t
LeanSimulatorImpl::GetContext() const
{
    return m_currentContext;
}

uint64_t
LeanSimulatorImpl::GetEventCount() const
{
    return m_eventCount;
}

} // namespace ns3
