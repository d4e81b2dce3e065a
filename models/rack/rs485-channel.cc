#include "rs485-channel.h"

#include "rs485-device.h"

#include "ns3/abort.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("Rs485Channel");
NS_OBJECT_ENSURE_REGISTERED(Rs485Channel);

TypeId
Rs485Channel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::Rs485Channel")
            .SetParent<Channel>()
            .SetGroupName("Cnuas")
            .AddConstructor<Rs485Channel>()
            .AddAttribute("Length",
                          "Length of the bus segment (trunk), metres. Two different transceivers "
                          "are taken to be this far apart.",
                          DoubleValue(10.0),
                          MakeDoubleAccessor(&Rs485Channel::m_lengthMeters),
                          MakeDoubleChecker<double>(0.0, 1e5))
            .AddAttribute("DelayPerMeter",
                          "Propagation delay per metre of twisted pair (about 5 ns/m: a velocity "
                          "factor near 0.66).",
                          TimeValue(NanoSeconds(5)),
                          MakeTimeAccessor(&Rs485Channel::m_delayPerMeter),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("Character",
                            "A character left the line (fired at its end, after the collision "
                            "check): the line's view of it.",
                            MakeTraceSourceAccessor(&Rs485Channel::m_characterTrace),
                            "ns3::Rs485Channel::WireCharacterCallback")
            .AddTraceSource("Collision",
                            "A character was corrupted by another enabled driver.",
                            MakeTraceSourceAccessor(&Rs485Channel::m_collisionTrace),
                            "ns3::Rs485Channel::WireCharacterCallback")
            .AddTraceSource("Contention",
                            "A driver was enabled while another was: (device, enabled drivers).",
                            MakeTraceSourceAccessor(&Rs485Channel::m_contentionTrace),
                            "ns3::Rs485Channel::ContentionCallback");
    return tid;
}

Rs485Channel::Rs485Channel()
    : m_lengthMeters(10.0),
      m_delayPerMeter(NanoSeconds(5))
{
}

Rs485Channel::~Rs485Channel() = default;

void
Rs485Channel::DoDispose()
{
    m_devices.clear();
    m_drivers.clear();
    m_recent.clear();
    Channel::DoDispose();
}

uint32_t
Rs485Channel::Attach(Ptr<Rs485Device> device)
{
    NS_ABORT_MSG_IF(!device, "Rs485Channel::Attach: null device");
    m_devices.push_back(device);
    m_drivers.emplace_back();
    return static_cast<uint32_t>(m_devices.size() - 1);
}

Ptr<Rs485Device>
Rs485Channel::GetRs485Device(uint32_t i) const
{
    return i < m_devices.size() ? m_devices[i] : nullptr;
}

std::size_t
Rs485Channel::GetNDevices() const
{
    return m_devices.size();
}

Ptr<NetDevice>
Rs485Channel::GetDevice(std::size_t i) const
{
    return i < m_devices.size() ? m_devices[i] : nullptr;
}

Time
Rs485Channel::GetDelay() const
{
    return PicoSeconds(static_cast<int64_t>(m_delayPerMeter.GetPicoSeconds() * m_lengthMeters));
}

uint32_t
Rs485Channel::GetEnabledDrivers() const
{
    uint32_t n = 0;
    for (const auto& d : m_drivers)
    {
        n += d.enabled ? 1 : 0;
    }
    return n;
}

void
Rs485Channel::SetDriverEnabled(uint32_t id, bool enabled)
{
    NS_ASSERT(id < m_drivers.size());
    Driver& d = m_drivers[id];
    if (d.enabled == enabled)
    {
        return;
    }
    const Time now = Simulator::Now();
    d.enabled = enabled;
    if (enabled)
    {
        d.history.push_back({now, Time::Max()});
        const uint32_t n = GetEnabledDrivers();
        if (n > 1)
        {
            // TIA-485 two-wire: one driver at a time (Modbus over serial line v1.02 §3.3.2).
            m_contentions++;
            m_contentionTrace(id, n);
            NS_LOG_LOGIC("contention: driver " << id << " enabled with " << n - 1 << " others");
        }
    }
    else
    {
        NS_ASSERT(!d.history.empty());
        d.history.back().to = now;
    }
    Prune();
}

void
Rs485Channel::TransmitStart(uint32_t id,
                            uint8_t byte,
                            const Rs485Format& format,
                            Time start,
                            Time end)
{
    NS_ASSERT(id < m_devices.size());
    NS_ASSERT_MSG(m_drivers[id].enabled, "Rs485Channel: a character sent with the driver off");
    Rs485WireCharacter c;
    c.seq = m_nextSeq++;
    c.sender = id;
    c.byte = byte;
    c.lineByte = byte;
    c.format = format;
    c.start = start;
    c.end = end;
    m_recent.push_back({c, false});
    if (end - start > m_longestCharacter)
    {
        m_longestCharacter = end - start;
    }
    m_characters++;
    m_busyTime += end - start;
    const Time d = GetDelay();
    for (uint32_t i = 0; i < m_devices.size(); ++i)
    {
        const Time lag = i == id ? Time(0) : d;
        m_devices[i]->NotifyArrivalStart(c.seq, start + lag, end + lag);
    }
    Simulator::Schedule(end - Simulator::Now(), &Rs485Channel::EndCharacter, this, c.seq);
}

Rs485Channel::Entry*
Rs485Channel::Find(uint64_t seq)
{
    if (m_recent.empty() || seq < m_recent.front().c.seq)
    {
        return nullptr;
    }
    const uint64_t idx = seq - m_recent.front().c.seq;
    return idx < m_recent.size() ? &m_recent[idx] : nullptr;
}

void
Rs485Channel::EndCharacter(uint64_t seq)
{
    Entry* e = Find(seq);
    NS_ASSERT(e);
    Rs485WireCharacter* c = &e->c;
    // Contention: any other driver enabled at some instant of [start, end).
    for (uint32_t i = 0; i < m_drivers.size() && !c->collided; ++i)
    {
        if (i == c->sender)
        {
            continue;
        }
        for (const Interval& iv : m_drivers[i].history)
        {
            if (iv.from < c->end && iv.to > c->start)
            {
                c->collided = true;
                break;
            }
        }
    }
    if (c->collided)
    {
        // The line carries an undefined mix; take the AND of the overlapping characters.
        for (const Entry& oe : m_recent)
        {
            const Rs485WireCharacter& o = oe.c;
            if (o.seq != c->seq && o.sender != c->sender && o.start < c->end && o.end > c->start)
            {
                c->lineByte &= o.byte;
            }
        }
        m_collided++;
        m_collisionTrace(*c);
    }
    m_characterTrace(*c);
    e->evaluated = true;
    const Rs485WireCharacter copy = *c;
    // Local echo now; the other transceivers after the propagation delay.
    m_devices[copy.sender]->ReceiveFromChannel(copy, copy.start, copy.end, true);
    const Time d = GetDelay();
    if (d.IsZero())
    {
        Deliver(copy);
    }
    else
    {
        Simulator::Schedule(d, &Rs485Channel::Deliver, this, copy);
    }
    Prune();
}

void
Rs485Channel::Deliver(Rs485WireCharacter c)
{
    const Time d = GetDelay();
    for (uint32_t i = 0; i < m_devices.size(); ++i)
    {
        if (i != c.sender)
        {
            m_devices[i]->ReceiveFromChannel(c, c.start + d, c.end + d, false);
        }
    }
}

void
Rs485Channel::Prune()
{
    const Time now = Simulator::Now();
    // A character is needed until every character that may overlap it has been judged: those
    // end at most one longest-character time after it.
    while (!m_recent.empty() && m_recent.front().evaluated &&
           m_recent.front().c.end + m_longestCharacter < now)
    {
        m_recent.pop_front();
    }
    for (Driver& d : m_drivers)
    {
        while (!d.history.empty() && d.history.front().to != Time::Max() &&
               d.history.front().to + m_longestCharacter < now)
        {
            d.history.pop_front();
        }
    }
}

} // namespace ns3
