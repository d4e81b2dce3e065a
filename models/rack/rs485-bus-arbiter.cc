#include "rs485-bus-arbiter.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("Rs485BusArbiter");
NS_OBJECT_ENSURE_REGISTERED(Rs485BusArbiter);

TypeId
Rs485BusArbiter::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::Rs485BusArbiter")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<Rs485BusArbiter>()
            .AddTraceSource("Grant",
                            "The bus passed to a master (id, name).",
                            MakeTraceSourceAccessor(&Rs485BusArbiter::m_grantTrace),
                            "ns3::Rs485BusArbiter::GrantCallback");
    return tid;
}

Rs485BusArbiter::Rs485BusArbiter() = default;
Rs485BusArbiter::~Rs485BusArbiter() = default;

void
Rs485BusArbiter::DoDispose()
{
    m_masters.clear();
    m_waiting.clear();
    m_owner = -1;
    Object::DoDispose();
}

uint32_t
Rs485BusArbiter::Register(const std::string& name)
{
    m_masters.push_back(Master{name, nullptr, Time(), Rs485BusArbiterCounters()});
    return static_cast<uint32_t>(m_masters.size() - 1);
}

bool
Rs485BusArbiter::IsWaiting(uint32_t master) const
{
    return std::find(m_waiting.begin(), m_waiting.end(), master) != m_waiting.end();
}

bool
Rs485BusArbiter::Request(uint32_t master, std::function<void()> granted)
{
    NS_ABORT_MSG_IF(master >= m_masters.size(), "Rs485BusArbiter: unknown master " << master);
    if (Holds(master) || IsWaiting(master))
    {
        return false;
    }
    Master& m = m_masters[master];
    m.granted = std::move(granted);
    m.askedAt = Simulator::Now();
    if (IsFree())
    {
        Grant(master);
    }
    else
    {
        m.counters.waits++;
        m_waiting.push_back(master);
    }
    return true;
}

void
Rs485BusArbiter::Grant(uint32_t master)
{
    Master& m = m_masters[master];
    // The owner is set now, synchronously, so that a master that releases and asks again in
    // the same event queues behind the one just served.
    m_owner = master;
    m_generation++;
    m.counters.grants++;
    const Time waited = Simulator::Now() - m.askedAt;
    m.counters.waited += waited;
    m.counters.maxWait = std::max(m.counters.maxWait, waited);
    m_grantTrace(master, m.name);
    // A fresh event, so the grant never nests into the releasing master's own completion.
    Simulator::ScheduleNow(&Rs485BusArbiter::Deliver, this, master, m_generation);
}

void
Rs485BusArbiter::Deliver(uint32_t master, uint64_t generation)
{
    if (generation != m_generation || !Holds(master))
    {
        return; // cancelled or released before the callback ran
    }
    std::function<void()> f;
    f.swap(m_masters[master].granted);
    if (f)
    {
        f();
    }
}

void
Rs485BusArbiter::Release(uint32_t master)
{
    if (!Holds(master))
    {
        return;
    }
    m_masters[master].granted = nullptr;
    m_owner = -1;
    if (!m_waiting.empty())
    {
        const uint32_t next = m_waiting.front();
        m_waiting.pop_front();
        Grant(next);
    }
}

void
Rs485BusArbiter::Cancel(uint32_t master)
{
    if (Holds(master))
    {
        Release(master);
        return;
    }
    auto it = std::find(m_waiting.begin(), m_waiting.end(), master);
    if (it != m_waiting.end())
    {
        m_waiting.erase(it);
        m_masters[master].granted = nullptr;
    }
}

} // namespace ns3
