#include "rack-bmc.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <cstdio>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RackBmc");
NS_OBJECT_ENSURE_REGISTERED(RackBmc);

const RackBmcRegister*
RackBmcDevice::Find(const std::string& registerName) const
{
    for (const auto& r : registers)
    {
        if (r.name == registerName)
        {
            return &r;
        }
    }
    return nullptr;
}

TypeId
RackBmc::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RackBmc")
            .SetParent<Application>()
            .SetGroupName("Cnuas")
            .AddConstructor<RackBmc>()
            .AddAttribute("ProbeTimeout",
                          "Response timeout of a discovery probe (rackmon2: 70 ms).",
                          TimeValue(MilliSeconds(70)),
                          MakeTimeAccessor(&RackBmc::m_probeTimeout),
                          MakeTimeChecker(MicroSeconds(1)))
            .AddAttribute("CommandTimeout",
                          "Response timeout of reads and writes (rackmon2: 300 ms).",
                          TimeValue(MilliSeconds(300)),
                          MakeTimeAccessor(&RackBmc::m_commandTimeout),
                          MakeTimeChecker(MicroSeconds(1)))
            .AddAttribute("CommandRetries",
                          "Retries of a read or write after a timeout or bad frame "
                          "(rackmon2: 5).",
                          UintegerValue(5),
                          MakeUintegerAccessor(&RackBmc::m_commandRetries),
                          MakeUintegerChecker<uint32_t>(0, 100))
            .AddAttribute("ScanPasses",
                          "Passes over every candidate address at start-up (rackmon2: 3).",
                          UintegerValue(3),
                          MakeUintegerAccessor(&RackBmc::m_scanPasses),
                          MakeUintegerChecker<uint32_t>(0, 100))
            .AddAttribute("ScanInterval",
                          "After start-up, one unknown address is probed this often "
                          "(rackmon2: 3 min).",
                          TimeValue(Seconds(180)),
                          MakeTimeAccessor(&RackBmc::m_scanInterval),
                          MakeTimeChecker(MilliSeconds(1)))
            .AddAttribute("MonitorInterval",
                          "Period of the monitoring reads (rackmon2: 180 s).",
                          TimeValue(Seconds(180)),
                          MakeTimeAccessor(&RackBmc::m_monitorInterval),
                          MakeTimeChecker(MilliSeconds(1)))
            .AddAttribute("DormantFailures",
                          "Failed reads in a row after which a device is dormant (rackmon2: 10).",
                          UintegerValue(10),
                          MakeUintegerAccessor(&RackBmc::m_dormantFailures),
                          MakeUintegerChecker<uint32_t>(1, 1000))
            .AddAttribute("DormantReprobe",
                          "A dormant device is probed again once this long has passed since it "
                          "was last seen (rackmon2: 300 s).",
                          TimeValue(Seconds(300)),
                          MakeTimeAccessor(&RackBmc::m_dormantReprobe),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("MaxSpanLength",
                          "Most registers merged into one read (rackmon2 max_span_length: 120).",
                          UintegerValue(120),
                          MakeUintegerAccessor(&RackBmc::m_maxSpan),
                          MakeUintegerChecker<uint16_t>(1, 125))
            .AddAttribute("FirstReloadPerRegister",
                          "Read every register separately the first time a device is read, as "
                          "rackmon2's first reload does (50 reads for an ORv3 PSU); spans "
                          "afterwards.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&RackBmc::m_firstReloadPerRegister),
                          MakeBooleanChecker())
            .AddAttribute("UnixTimeAtStart",
                          "Unix time at simulation time zero, s (written to the devices).",
                          UintegerValue(1800000000),
                          MakeUintegerAccessor(&RackBmc::m_unixAtStart),
                          MakeUintegerChecker<uint64_t>(0, 0xFFFFFFFFull))
            .AddAttribute("Master",
                          "The ns3::ModbusMaster the BMC polls through.",
                          PointerValue(),
                          MakePointerAccessor(&RackBmc::m_master),
                          MakePointerChecker<ModbusMaster>())
            .AddAttribute("Paused",
                          "Polling paused (Pause/Resume): the transaction in flight finishes, "
                          "then the BMC sends nothing until resumed.",
                          BooleanValue(false),
                          MakeBooleanAccessor(&RackBmc::SetPaused, &RackBmc::GetPaused),
                          MakeBooleanChecker())
            .AddTraceSource("Discovered",
                            "A probe found a device: (address, type).",
                            MakeTraceSourceAccessor(&RackBmc::m_discoveredTrace),
                            "ns3::RackBmc::DeviceCallback")
            .AddTraceSource("Dormant",
                            "A device stopped answering and is dormant: (address, type).",
                            MakeTraceSourceAccessor(&RackBmc::m_dormantTrace),
                            "ns3::RackBmc::DeviceCallback")
            .AddTraceSource("Revived",
                            "A dormant device answered a probe again: (address, type).",
                            MakeTraceSourceAccessor(&RackBmc::m_revivedTrace),
                            "ns3::RackBmc::DeviceCallback")
            .AddTraceSource("Poll",
                            "A span read ended: (address, start, count, answered).",
                            MakeTraceSourceAccessor(&RackBmc::m_pollTrace),
                            "ns3::RackBmc::PollCallback")
            .AddTraceSource("Changed",
                            "A register's value differs from the previous read (or was read for "
                            "the first time): (address, register name).",
                            MakeTraceSourceAccessor(&RackBmc::m_changedTrace),
                            "ns3::RackBmc::ChangedCallback")
            .AddTraceSource("MonitorCycle",
                            "A monitoring cycle's transactions all ended: (cycle, start, end).",
                            MakeTraceSourceAccessor(&RackBmc::m_cycleTrace),
                            "ns3::RackBmc::CycleCallback")
            .AddTraceSource("Held",
                            "Paused with nothing in flight, the bus is free (true); resumed "
                            "(false).",
                            MakeTraceSourceAccessor(&RackBmc::m_heldTrace),
                            "ns3::RackBmc::HeldCallback");
    return tid;
}

RackBmc::RackBmc() = default;

RackBmc::~RackBmc() = default;

void
RackBmc::DoDispose()
{
    m_monitorEvent.Cancel();
    m_scanEvent.Cancel();
    m_master = nullptr;
    m_arbiter = nullptr;
    Application::DoDispose();
}

void
RackBmc::SetMaster(Ptr<ModbusMaster> master)
{
    m_master = master;
}

Ptr<ModbusMaster>
RackBmc::GetMaster() const
{
    return m_master;
}

void
RackBmc::AddMap(const RackRegisterMap& map)
{
    NS_ABORT_MSG_IF(m_running, "RackBmc::AddMap after start");
    m_maps.push_back(map);
}

std::vector<RackBmcDevice>
RackBmc::GetInventory() const
{
    std::vector<RackBmcDevice> out;
    for (const auto& [a, d] : m_devices)
    {
        out.push_back(d);
    }
    return out;
}

const RackBmcDevice*
RackBmc::GetDevice(uint8_t address) const
{
    auto it = m_devices.find(address);
    return it == m_devices.end() ? nullptr : &it->second;
}

uint32_t
RackBmc::GetUnixTime() const
{
    return static_cast<uint32_t>(m_unixAtStart +
                                 static_cast<uint64_t>(Simulator::Now().GetSeconds()));
}

bool
RackBmc::Known(uint8_t address) const
{
    return m_devices.count(address) != 0;
}

void
RackBmc::StartApplication()
{
    NS_ABORT_MSG_IF(!m_master, "RackBmc needs a ModbusMaster (SetMaster)");
    NS_ABORT_MSG_IF(m_maps.empty(), "RackBmc has no register maps (AddMap)");
    m_running = true;
    m_spans.clear();
    for (const auto& m : m_maps)
    {
        m_spans.push_back(m.Spans(m_maxSpan));
    }
    // rackmon2 fullScan(): every pass probes every address of every map.
    for (uint32_t pass = 0; pass < m_scanPasses; ++pass)
    {
        for (std::size_t i = 0; i < m_maps.size(); ++i)
        {
            for (uint8_t a : m_maps[i].Addresses())
            {
                Job j;
                j.kind = JobKind::Probe;
                j.unit = a;
                j.map = i;
                Enqueue(j);
            }
        }
    }
    if (m_queue.empty())
    {
        ScanComplete();
    }
}

void
RackBmc::SetArbiter(Ptr<Rs485BusArbiter> arbiter)
{
    m_arbiter = arbiter;
    if (m_arbiter)
    {
        m_arbiterId = m_arbiter->Register("bmc");
    }
}

void
RackBmc::BusGranted()
{
    m_waitingBus = false;
    RunNext();
}

void
RackBmc::ReleaseBus()
{
    if (m_arbiter)
    {
        m_waitingBus = false;
        m_arbiter->Cancel(m_arbiterId); // releases a held bus, withdraws a pending request
    }
}

void
RackBmc::StopApplication()
{
    ReleaseBus();
    m_running = false;
    m_monitorEvent.Cancel();
    m_scanEvent.Cancel();
    m_queue.clear();
}

void
RackBmc::Enqueue(const Job& j)
{
    m_queue.push_back(j);
    if (!m_busy)
    {
        // Start from a fresh event so a completion callback never nests into the next submit.
        Simulator::ScheduleNow(&RackBmc::RunNext, this);
        m_busy = true;
    }
}

void
RackBmc::SetPaused(bool paused)
{
    if (paused)
    {
        Pause();
    }
    else
    {
        Resume();
    }
}

void
RackBmc::Pause()
{
    if (m_paused)
    {
        return;
    }
    m_paused = true;
    m_counters.pauses++;
    if (m_waitingBus)
    {
        // Waiting for another master's transaction, nothing of ours in flight: withdraw.
        ReleaseBus();
        Hold();
    }
    else if (!m_busy)
    {
        Hold(); // nothing in flight or scheduled: the bus is free now
    }
}

void
RackBmc::Hold()
{
    m_busy = false;
    if (!m_held)
    {
        m_held = true;
        m_heldTrace(true);
    }
}

void
RackBmc::Resume()
{
    if (!m_paused)
    {
        return;
    }
    m_paused = false;
    if (m_held)
    {
        m_held = false;
        m_heldTrace(false);
    }
    // If a transaction is still in flight (resumed before it ended), its completion goes on.
    if (!m_busy && m_running)
    {
        Simulator::ScheduleNow(&RackBmc::RunNext, this);
        m_busy = true;
    }
}

void
RackBmc::RunNext()
{
    if (m_paused)
    {
        // Called after the last transaction's completion (or instead of the first): hold the
        // queue, as rackmon's pause lets the command in progress finish and then waits.
        ReleaseBus();
        Hold();
        return;
    }
    while (m_running && !m_queue.empty())
    {
        const Job j = m_queue.front();
        m_queue.pop_front();
        const bool skip =
            (j.kind == JobKind::Probe && !m_scanComplete && Known(j.unit)) ||
            (j.kind != JobKind::Probe && (!Known(j.unit) || m_devices[j.unit].dormant));
        if (skip)
        {
            continue;
        }
        if (m_arbiter && !m_arbiter->Holds(m_arbiterId))
        {
            // Another master may be mid-transaction: wait for the bus (Modbus over serial line
            // v1.02 §2.1, one master at a time), then pick the job up again.
            m_queue.push_front(j);
            m_busy = true;
            m_waitingBus = true;
            m_arbiter->Request(m_arbiterId, [this]() { BusGranted(); });
            return;
        }
        const RackRegisterMap& map = m_maps[j.map];
        const Rs485Format f = map.Format();
        if (!m_formatSet || f != m_format)
        {
            m_master->SetLineFormat(f);
            m_format = f;
            m_formatSet = true;
        }
        ModbusSubmitOptions o;
        ModbusRequest req;
        switch (j.kind)
        {
        case JobKind::Probe:
            o.responseTimeout = m_probeTimeout;
            o.retries = 0;
            req = ModbusRequest::ReadHoldingRegisters(map.probeRegister, 1);
            m_counters.probes++;
            break;
        case JobKind::Read:
            o.responseTimeout = m_commandTimeout;
            o.retries = static_cast<int32_t>(m_commandRetries);
            req = ModbusRequest::ReadHoldingRegisters(j.start, j.count);
            break;
        case JobKind::TimeWrite: {
            o.responseTimeout = m_commandTimeout;
            o.retries = static_cast<int32_t>(m_commandRetries);
            const uint32_t now = GetUnixTime();
            req = ModbusRequest::WriteMultipleRegisters(
                map.unixTimeRegister,
                {static_cast<uint16_t>(now >> 16), static_cast<uint16_t>(now & 0xFFFF)});
            break;
        }
        }
        m_current = j;
        m_busy = true;
        m_master->Submit(j.unit, req, MakeCallback(&RackBmc::JobDone, this), o);
        return;
    }
    m_busy = false;
    ReleaseBus();
    if (!m_running)
    {
        return;
    }
    if (!m_scanComplete)
    {
        ScanComplete();
    }
    else if (m_cycleOpen)
    {
        m_cycleOpen = false;
        m_cycleTrace(m_cycle, m_cycleStart, Simulator::Now());
    }
}

void
RackBmc::JobDone(const ModbusTransaction& t)
{
    const Job j = m_current;
    switch (j.kind)
    {
    case JobKind::Probe:
        ProbeDone(j, t);
        break;
    case JobKind::Read:
        ReadDone(j, t);
        break;
    case JobKind::TimeWrite:
        TimeWriteDone(j, t);
        break;
    }
    // The transaction (with its retries) has ended: another master may take the bus before
    // the next one (§2.4.1: a new request only after the response or the time-out).
    ReleaseBus();
    Simulator::ScheduleNow(&RackBmc::RunNext, this);
}

void
RackBmc::ProbeDone(const Job& j, const ModbusTransaction& t)
{
    // Any answer, an exception included, shows a device is there.
    const bool answered =
        t.status == ModbusResultStatus::Ok || t.status == ModbusResultStatus::Exception;
    if (!answered)
    {
        return;
    }
    m_counters.probeAnswers++;
    auto it = m_devices.find(j.unit);
    if (it != m_devices.end())
    {
        RackBmcDevice& d = it->second;
        d.lastSeen = Simulator::Now();
        d.consecutiveFailures = 0;
        if (d.dormant)
        {
            d.dormant = false;
            NS_LOG_INFO("revived " << d.name);
            m_revivedTrace(d.address, d.type);
            QueueReads(d.address);
        }
        return;
    }
    const RackRegisterMap& map = m_maps[j.map];
    RackBmcDevice d;
    char name[64];
    std::snprintf(name, sizeof(name), "%s_%02X", map.name.c_str(), j.unit);
    d.name = name;
    d.address = j.unit;
    d.type = map.name;
    d.discovered = d.lastSeen = Simulator::Now();
    for (const auto& spec : map.registers)
    {
        RackBmcRegister r;
        static_cast<RackRegisterValue&>(r) =
            RackDecodeRegister(spec, std::vector<uint16_t>(spec.length, 0).data());
        d.registers.push_back(r);
    }
    m_devices[j.unit] = d;
    m_deviceMap[j.unit] = j.map;
    NS_LOG_INFO("discovered " << d.name);
    m_discoveredTrace(d.address, d.type);
    if (m_scanComplete)
    {
        // Found by the periodic scan: time and a first read right away.
        QueueTimeWrite(j.unit);
        QueueReads(j.unit);
    }
}

void
RackBmc::Failure(RackBmcDevice& d)
{
    d.failures++;
    d.consecutiveFailures++;
    if (!d.dormant && d.consecutiveFailures >= m_dormantFailures)
    {
        d.dormant = true;
        NS_LOG_INFO("dormant " << d.name);
        m_dormantTrace(d.address, d.type);
    }
}

void
RackBmc::ReadDone(const Job& j, const ModbusTransaction& t)
{
    RackBmcDevice& d = m_devices[j.unit];
    const RackRegisterMap& map = m_maps[j.map];
    if (t.status == ModbusResultStatus::Ok && t.response.registers.size() == j.count)
    {
        m_counters.reads++;
        d.reads++;
        d.lastSeen = Simulator::Now();
        d.consecutiveFailures = 0;
        for (auto& r : d.registers)
        {
            if (r.address < j.start || r.address + r.length > j.start + j.count)
            {
                continue;
            }
            const RackRegisterSpec* spec = map.At(r.address);
            const uint16_t* raw = &t.response.registers[r.address - j.start];
            const bool changed =
                !r.valid || !std::equal(r.raw.begin(), r.raw.end(), raw, raw + r.length);
            static_cast<RackRegisterValue&>(r) = RackDecodeRegister(*spec, raw);
            r.valid = true;
            r.updated = Simulator::Now();
            if (changed)
            {
                m_changedTrace(d.address, r.name);
            }
        }
        m_pollTrace(j.unit, j.start, j.count, true);
        return;
    }
    if (t.status == ModbusResultStatus::Exception)
    {
        // The device is there but refuses the span (rackmon2 disables such registers).
        m_counters.exceptions++;
        d.lastSeen = Simulator::Now();
        d.consecutiveFailures = 0;
        m_pollTrace(j.unit, j.start, j.count, false);
        return;
    }
    m_counters.readFailures++;
    Failure(d);
    m_pollTrace(j.unit, j.start, j.count, false);
}

void
RackBmc::TimeWriteDone(const Job& j, const ModbusTransaction& t)
{
    RackBmcDevice& d = m_devices[j.unit];
    if (t.status == ModbusResultStatus::Ok)
    {
        m_counters.timeWrites++;
        d.lastSeen = d.lastUnixTimeWrite = Simulator::Now();
        d.consecutiveFailures = 0;
        return;
    }
    m_counters.timeWriteFailures++;
    if (t.status == ModbusResultStatus::Exception)
    {
        d.lastSeen = d.lastUnixTimeWrite = Simulator::Now();
        return;
    }
    Failure(d);
}

void
RackBmc::ScanComplete()
{
    m_scanComplete = true;
    NS_LOG_INFO("start-up scan complete: " << m_devices.size() << " devices");
    for (const auto& [a, d] : m_devices)
    {
        QueueTimeWrite(a);
    }
    MonitorTick();
    m_scanEvent = Simulator::Schedule(m_scanInterval, &RackBmc::ScanTick, this);
}

void
RackBmc::QueueReads(uint8_t address)
{
    const std::size_t m = m_deviceMap[address];
    RackBmcDevice& d = m_devices[address];
    std::vector<std::pair<uint16_t, uint16_t>> each;
    if (m_firstReloadPerRegister && !d.reloaded)
    {
        for (const auto& r : m_maps[m].registers)
        {
            each.emplace_back(r.address, r.length);
        }
    }
    d.reloaded = true;
    for (const auto& [start, count] : each.empty() ? m_spans[m] : each)
    {
        Job j;
        j.kind = JobKind::Read;
        j.unit = address;
        j.map = m;
        j.start = start;
        j.count = count;
        Enqueue(j);
    }
}

void
RackBmc::QueueTimeWrite(uint8_t address)
{
    const std::size_t m = m_deviceMap[address];
    if (!m_maps[m].hasUnixTime)
    {
        return;
    }
    Job j;
    j.kind = JobKind::TimeWrite;
    j.unit = address;
    j.map = m;
    Enqueue(j);
}

void
RackBmc::MonitorTick()
{
    if (!m_running)
    {
        return;
    }
    m_monitorEvent = Simulator::Schedule(m_monitorInterval, &RackBmc::MonitorTick, this);
    if (m_cycleOpen || m_paused)
    {
        return; // the previous cycle is still running: skip this one
    }
    m_cycle++;
    m_counters.monitorCycles++;
    m_cycleStart = Simulator::Now();
    m_cycleOpen = true;
    const Time now = Simulator::Now();
    for (auto& [a, d] : m_devices)
    {
        const RackRegisterMap& map = m_maps[m_deviceMap[a]];
        if (d.dormant)
        {
            if (now - d.lastSeen >= m_dormantReprobe)
            {
                Job j;
                j.kind = JobKind::Probe;
                j.unit = a;
                j.map = m_deviceMap[a];
                Enqueue(j);
            }
            continue;
        }
        if (map.hasUnixTime && d.lastUnixTimeWrite.IsStrictlyPositive() &&
            now - d.lastUnixTimeWrite >= Seconds(map.unixTimePeriodSeconds))
        {
            QueueTimeWrite(a);
        }
        QueueReads(a);
    }
    if (!m_busy)
    {
        Simulator::ScheduleNow(&RackBmc::RunNext, this);
        m_busy = true;
    }
}

void
RackBmc::ScanTick()
{
    if (!m_running)
    {
        return;
    }
    m_scanEvent = Simulator::Schedule(m_scanInterval, &RackBmc::ScanTick, this);
    if (m_paused)
    {
        return;
    }
    // The next (map, address) pair not in the inventory, round robin.
    std::vector<std::pair<std::size_t, uint8_t>> all;
    for (std::size_t i = 0; i < m_maps.size(); ++i)
    {
        for (uint8_t a : m_maps[i].Addresses())
        {
            all.emplace_back(i, a);
        }
    }
    for (std::size_t k = 0; k < all.size(); ++k)
    {
        const auto& [m, a] = all[(m_scanCursor + k) % all.size()];
        if (!Known(a))
        {
            m_scanCursor = (m_scanCursor + k + 1) % all.size();
            Job j;
            j.kind = JobKind::Probe;
            j.unit = a;
            j.map = m;
            Enqueue(j);
            return;
        }
    }
}

} // namespace ns3
