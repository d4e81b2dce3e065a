#include "queue-simulator-impl.h"

#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(QueueSimulatorImpl);

TypeId
QueueSimulatorImpl::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::QueueSimulatorImpl").SetParent<SimulatorImpl>().SetGroupName("Cnuas");
    return tid;
}

void
QueueSimulatorImpl::DisposeQueue()
{
    if (m_events)
    {
        while (!m_events->IsEmpty())
        {
            m_events->RemoveNext().impl->Unref(); // the queue's reference
        }
        m_events = nullptr;
    }
}

void
QueueSimulatorImpl::Destroy()
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
QueueSimulatorImpl::SetScheduler(ObjectFactory schedulerFactory)
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

EventId
QueueSimulatorImpl::ScheduleDestroy(EventImpl* event)
{
    // The EventId takes over the reference the caller's new event came with.
    EventId id(Ptr<EventImpl>(event, false), m_currentTs, 0xffffffff, EventId::UID::DESTROY);
    m_destroyEvents.push_back(id);
    m_uid++; // a destroy event uses up an insertion number too (the order of later events)
    return id;
}

void
QueueSimulatorImpl::Remove(const EventId& id)
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
QueueSimulatorImpl::Cancel(const EventId& id)
{
    if (!IsExpired(id))
    {
        id.PeekEventImpl()->Cancel();
    }
}

bool
QueueSimulatorImpl::IsExpired(const EventId& id) const
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

bool
QueueSimulatorImpl::IsFinished() const
{
    return m_stop || m_events->IsEmpty();
}

void
QueueSimulatorImpl::Stop()
{
    m_stop = true;
}

void
QueueSimulatorImpl::Stop(const Time& delay)
{
    Simulator::Schedule(delay, &Simulator::Stop);
}

Time
QueueSimulatorImpl::Now() const
{
    return TimeStep(m_currentTs);
}

Time
QueueSimulatorImpl::GetDelayLeft(const EventId& id) const
{
    return IsExpired(id) ? TimeStep(0) : TimeStep(id.GetTs() - m_currentTs);
}

Time
QueueSimulatorImpl::GetMaximumSimulationTime() const
{
    return TimeStep(0x7fffffffffffffffLL);
}

uint32_t
QueueSimulatorImpl::GetSystemId() const
{
    return 0;
}

uint32_t
QueueSimulatorImpl::GetContext() const
{
    return m_currentContext;
}

uint64_t
QueueSimulatorImpl::GetEventCount() const
{
    return m_eventCount;
}

} // namespace ns3
