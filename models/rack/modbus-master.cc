#include "modbus-master.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ModbusMaster");
NS_OBJECT_ENSURE_REGISTERED(ModbusMaster);

const char*
ModbusResultStatusName(ModbusResultStatus s)
{
    switch (s)
    {
    case ModbusResultStatus::Ok:
        return "ok";
    case ModbusResultStatus::Exception:
        return "exception";
    case ModbusResultStatus::Timeout:
        return "timeout";
    case ModbusResultStatus::FrameError:
        return "frame-error";
    case ModbusResultStatus::InvalidResponse:
        return "invalid-response";
    case ModbusResultStatus::Broadcast:
        return "broadcast";
    case ModbusResultStatus::Cancelled:
        return "cancelled";
    }
    return "?";
}

TypeId
ModbusMaster::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::ModbusMaster")
            .SetParent<ModbusRtuEndpoint>()
            .SetGroupName("Cnuas")
            .AddConstructor<ModbusMaster>()
            .AddAttribute("ResponseTimeout",
                          "Time from the request's last stop bit within which the response "
                          "must begin (Modbus over serial line v1.02 §2.4.1; rackmon uses 300 ms "
                          "for commands and 70 ms for probes, phosphor-modbus 100 ms).",
                          TimeValue(MilliSeconds(300)),
                          MakeTimeAccessor(&ModbusMaster::m_responseTimeout),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("Retries",
                          "Further attempts after a timeout or a frame error (phosphor-modbus: 3, "
                          "rackmon: 5).",
                          UintegerValue(3),
                          MakeUintegerAccessor(&ModbusMaster::m_retries),
                          MakeUintegerChecker<uint32_t>(0, 1000))
            .AddAttribute("TurnaroundDelay",
                          "Wait after a broadcast before the next request (Modbus over serial "
                          "line v1.02 §2.4.1: typically 100 to 200 ms).",
                          TimeValue(MilliSeconds(100)),
                          MakeTimeAccessor(&ModbusMaster::m_turnaroundDelay),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("InterRequestDelay",
                          "Minimum time from the end of one transaction to the next request's "
                          "driver enable, on top of the t3.5 silence (rackmon's min_delay, "
                          "2-3 ms).",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&ModbusMaster::m_interRequestDelay),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("Transaction",
                            "A transaction completed (any status).",
                            MakeTraceSourceAccessor(&ModbusMaster::m_transactionTrace),
                            "ns3::ModbusMaster::TransactionCallback");
    return tid;
}

ModbusMaster::ModbusMaster()
    : m_responseTimeout(MilliSeconds(300)),
      m_turnaroundDelay(MilliSeconds(100))
{
}

ModbusMaster::~ModbusMaster() = default;

void
ModbusMaster::DoDispose()
{
    m_sendEvent.Cancel();
    m_timeoutEvent.Cancel();
    m_queue.clear();
    ModbusRtuEndpoint::DoDispose();
}

void
ModbusMaster::StartApplication()
{
    ModbusRtuEndpoint::StartApplication();
    m_running = true;
    // Like any RTU device after power-up, the master keeps t3.5 of silence before it talks.
    m_lastCompleted = Simulator::Now();
    ScheduleNext();
}

void
ModbusMaster::StopApplication()
{
    m_running = false;
    m_sendEvent.Cancel();
    m_timeoutEvent.Cancel();
    while (!m_queue.empty())
    {
        Complete(ModbusResultStatus::Cancelled);
    }
    ModbusRtuEndpoint::StopApplication();
}

uint64_t
ModbusMaster::Submit(uint8_t unit, const ModbusRequest& request, ResultCallback cb)
{
    return Submit(unit, request, cb, ModbusSubmitOptions());
}

uint64_t
ModbusMaster::Submit(uint8_t unit,
                     const ModbusRequest& request,
                     ResultCallback cb,
                     const ModbusSubmitOptions& options)
{
    Pending p;
    p.options = options;
    p.t.id = m_nextId++;
    p.t.unit = unit;
    p.t.request = request;
    p.t.submitted = Simulator::Now();
    p.cb = cb;
    m_queue.push_back(p);
    if (m_running && m_state == State::Idle)
    {
        ScheduleNext();
    }
    return p.t.id;
}

std::size_t
ModbusMaster::GetPending() const
{
    return m_queue.size();
}

bool
ModbusMaster::IsIdle() const
{
    return m_state == State::Idle && m_queue.empty();
}

void
ModbusMaster::ScheduleNext()
{
    if (!m_running || m_queue.empty())
    {
        m_state = State::Idle;
        return;
    }
    m_state = State::WaitingToSend;
    m_sendEvent.Cancel();
    // The driver goes on so that the first start bit comes no earlier than t3.5 after the last
    // character on the line, and no earlier than InterRequestDelay after the last transaction.
    const Time enableDelay = GetDevice()->GetTxEnableDelay();
    Time at = std::max(Simulator::Now(), m_lastCompleted + m_interRequestDelay);
    at = std::max(at, EarliestFrameStart() - enableDelay);
    m_sendEvent = Simulator::Schedule(at - Simulator::Now(), &ModbusMaster::TrySend, this);
}

void
ModbusMaster::TrySend()
{
    const Time earliest = EarliestFrameStart() - GetDevice()->GetTxEnableDelay();
    if (LineBusy() || Simulator::Now() < earliest)
    {
        // Someone is talking (or just was): wait for t3.5 of silence after it. Always move on
        // by at least a bit time, so that a frame the framer has not closed yet at this very
        // instant cannot make this spin.
        m_sendEvent = Simulator::Schedule(
            std::max(earliest - Simulator::Now(), GetDevice()->GetFormat().BitTime()),
            &ModbusMaster::TrySend,
            this);
        return;
    }
    Pending& p = m_queue.front();
    p.t.attempts++;
    m_counters.requestsSent++;
    if (p.t.attempts > 1)
    {
        m_counters.retries++;
    }
    m_state = State::Sending;
    m_timeoutExpired = false;
    p.t.requestStart = Simulator::Now() + GetDevice()->GetTxEnableDelay();
    SendAdu(ModbusRtuBuildAdu(p.t.unit, p.t.request.Encode()));
}

void
ModbusMaster::TransmitComplete()
{
    if (m_state != State::Sending || m_queue.empty())
    {
        return;
    }
    Pending& p = m_queue.front();
    p.t.requestEnd = Simulator::Now();
    if (p.t.unit == kModbusBroadcastAddress)
    {
        // §2.4.1: "Waiting turnaround delay", then Idle.
        m_state = State::WaitingTurnaround;
        m_timeoutEvent = Simulator::Schedule(m_turnaroundDelay,
                                             &ModbusMaster::Complete,
                                             this,
                                             ModbusResultStatus::Broadcast);
        return;
    }
    m_state = State::WaitingReply;
    const Time timeout =
        p.options.responseTimeout.IsZero() ? m_responseTimeout : p.options.responseTimeout;
    m_timeoutEvent = Simulator::Schedule(timeout, &ModbusMaster::ResponseTimeout, this);
}

void
ModbusMaster::ResponseTimeout()
{
    if (m_state != State::WaitingReply)
    {
        return;
    }
    const ModbusRtuFramer::State fs = m_framer.GetState();
    const bool frameOpen = fs == ModbusRtuFramer::State::Reception ||
                           fs == ModbusRtuFramer::State::ControlAndWaiting;
    if (frameOpen || (fs == ModbusRtuFramer::State::Idle && GetDevice()->IsCharacterArriving()))
    {
        // A frame began in time: receive it to its end, then decide. (A framer still in its
        // Initial wait will not make a frame of it: that is a timeout.)
        m_timeoutExpired = true;
        return;
    }
    m_counters.noResponse++;
    AttemptFailed(ModbusResultStatus::Timeout);
}

void
ModbusMaster::AttemptFailed(ModbusResultStatus status)
{
    m_timeoutEvent.Cancel();
    Pending& p = m_queue.front();
    const uint32_t retries =
        p.options.retries < 0 ? m_retries : static_cast<uint32_t>(p.options.retries);
    if (p.t.attempts <= retries)
    {
        m_lastCompleted = Simulator::Now();
        ScheduleNext(); // §2.4.1: back to Idle, "enabling a retry of the request"
        return;
    }
    if (status == ModbusResultStatus::Timeout)
    {
        m_counters.timeouts++;
    }
    Complete(status);
}

void
ModbusMaster::FrameReceived(const ModbusRtuFrame& f)
{
    if (m_state != State::WaitingReply)
    {
        m_counters.unexpectedFrames++;
        return;
    }
    Pending& p = m_queue.front();
    if (f.status != ModbusFrameStatus::Ok)
    {
        // §2.4.1: "In case of an error detected on the frame, a retry may be performed."
        m_counters.frameErrors++;
        AttemptFailed(ModbusResultStatus::FrameError);
        return;
    }
    if (f.Address() != p.t.unit)
    {
        // §2.4.1: a reply from an unexpected slave; the response time-out keeps running.
        m_counters.unexpectedFrames++;
        if (m_timeoutExpired)
        {
            m_counters.noResponse++;
            AttemptFailed(ModbusResultStatus::Timeout);
        }
        return;
    }
    const std::vector<uint8_t> pdu = f.Pdu();
    std::string why;
    if (!ModbusResponse::Decode(p.t.request, pdu.data(), pdu.size(), p.t.response, &why))
    {
        m_counters.invalidResponses++;
        p.t.detail = why;
        p.t.responseStart = f.start;
        p.t.responseEnd = f.end;
        Complete(ModbusResultStatus::InvalidResponse);
        return;
    }
    p.t.responseStart = f.start;
    p.t.responseEnd = f.end;
    if (p.t.response.IsException())
    {
        m_counters.exceptions++;
        Complete(ModbusResultStatus::Exception);
    }
    else
    {
        m_counters.ok++;
        Complete(ModbusResultStatus::Ok);
    }
}

void
ModbusMaster::Complete(ModbusResultStatus status)
{
    if (m_queue.empty())
    {
        return;
    }
    m_timeoutEvent.Cancel();
    Pending p = m_queue.front();
    m_queue.pop_front();
    p.t.status = status;
    p.t.completed = Simulator::Now();
    m_counters.transactions++;
    if (status == ModbusResultStatus::Broadcast)
    {
        m_counters.broadcasts++;
    }
    m_lastCompleted = Simulator::Now();
    m_state = State::Idle;
    NS_LOG_LOGIC("transaction " << p.t.id << " unit " << static_cast<int>(p.t.unit) << ": "
                                << ModbusResultStatusName(status));
    m_transactionTrace(p.t);
    if (!p.cb.IsNull())
    {
        p.cb(p.t);
    }
    if (m_running && m_state == State::Idle)
    {
        ScheduleNext();
    }
}

} // namespace ns3
