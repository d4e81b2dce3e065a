#include "modbus-rtu-endpoint.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ModbusRtuEndpoint");
NS_OBJECT_ENSURE_REGISTERED(ModbusRtuEndpoint);

TypeId
ModbusRtuEndpoint::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::ModbusRtuEndpoint")
            .SetParent<Application>()
            .SetGroupName("Cnuas")
            .AddAttribute("InterCharacterTimeout",
                          "t1.5; zero: 1.5 character times at 19200 baud and below, 750 us above "
                          "(Modbus over serial line v1.02 §2.5.1.1).",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&ModbusRtuEndpoint::m_t15Override),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("InterFrameDelay",
                          "t3.5; zero: 3.5 character times at 19200 baud and below, 1.75 ms "
                          "above (Modbus over serial line v1.02 §2.5.1.1).",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&ModbusRtuEndpoint::m_t35Override),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("FrameRx",
                            "The framer delimited a frame (good or not).",
                            MakeTraceSourceAccessor(&ModbusRtuEndpoint::m_frameRxTrace),
                            "ns3::ModbusRtuEndpoint::FrameCallback")
            .AddTraceSource("FrameTx",
                            "An ADU was handed to the transceiver.",
                            MakeTraceSourceAccessor(&ModbusRtuEndpoint::m_frameTxTrace),
                            "ns3::ModbusRtuEndpoint::BytesCallback");
    return tid;
}

ModbusRtuEndpoint::ModbusRtuEndpoint() = default;

ModbusRtuEndpoint::~ModbusRtuEndpoint() = default;

void
ModbusRtuEndpoint::DoDispose()
{
    m_framer.Stop();
    if (m_device)
    {
        m_device->SetCharacterReceiveCallback(MakeNullCallback<void, const Rs485Character&>());
        m_device->SetTxCompleteCallback(MakeNullCallback<void>());
    }
    m_device = nullptr;
    Application::DoDispose();
}

void
ModbusRtuEndpoint::SetDevice(Ptr<Rs485Device> device)
{
    m_device = device;
}

Ptr<Rs485Device>
ModbusRtuEndpoint::GetDevice() const
{
    return m_device;
}

ModbusRtuTiming
ModbusRtuEndpoint::GetTiming() const
{
    ModbusRtuTiming t =
        ModbusRtuTiming::ForFormat(m_device ? m_device->GetFormat() : Rs485Format());
    if (!m_t15Override.IsZero())
    {
        t.t15 = m_t15Override;
    }
    if (!m_t35Override.IsZero())
    {
        t.t35 = m_t35Override;
    }
    return t;
}

void
ModbusRtuEndpoint::SetLineFormat(const Rs485Format& f)
{
    NS_ABORT_MSG_IF(!m_device, "ModbusRtuEndpoint::SetLineFormat: no device");
    m_device->SetFormat(f);
    m_framer.SetTiming(GetTiming());
    if (m_running)
    {
        m_framer.Start(); // a receiver reconfigured mid-frame loses the frame
    }
}

const ModbusRtuFramerCounters&
ModbusRtuEndpoint::GetFramerCounters() const
{
    return m_framer.GetCounters();
}

void
ModbusRtuEndpoint::StartApplication()
{
    if (!m_device)
    {
        Ptr<Node> node = GetNode();
        for (uint32_t i = 0; node && i < node->GetNDevices(); ++i)
        {
            m_device = DynamicCast<Rs485Device>(node->GetDevice(i));
            if (m_device)
            {
                break;
            }
        }
    }
    NS_ABORT_MSG_IF(!m_device || !m_device->GetRs485Channel(),
                    "ModbusRtuEndpoint: no Rs485Device on a bus for this application");
    m_device->SetCharacterReceiveCallback(MakeCallback(&ModbusRtuEndpoint::ReceiveCharacter, this));
    m_device->SetTxCompleteCallback(MakeCallback(&ModbusRtuEndpoint::OnTxComplete, this));
    m_framer.SetTiming(GetTiming());
    m_framer.SetFrameCallback(MakeCallback(&ModbusRtuEndpoint::OnFrame, this));
    m_framer.SetArrivalQuery(MakeCallback(&ModbusRtuEndpoint::Arriving, this));
    m_framer.Start();
    m_running = true;
}

void
ModbusRtuEndpoint::StopApplication()
{
    m_running = false;
    m_framer.Stop();
    m_echoExpected.clear();
}

bool
ModbusRtuEndpoint::Arriving() const
{
    return m_device && m_device->IsCharacterArriving();
}

bool
ModbusRtuEndpoint::LineBusy() const
{
    return m_framer.IsReceiving() || Arriving() || (m_device && m_device->IsTransmitting());
}

Time
ModbusRtuEndpoint::EarliestFrameStart() const
{
    // §2.5.1.1: frames are separated by a silent interval of at least 3.5 character times.
    Time last = m_lastTxEnd;
    if (m_device && m_device->GetLastRxEnd() > last)
    {
        last = m_device->GetLastRxEnd();
    }
    return last + GetTiming().t35;
}

void
ModbusRtuEndpoint::SendAdu(const std::vector<uint8_t>& adu)
{
    NS_ASSERT(m_device);
    if (m_device->DeliversEcho())
    {
        m_echoExpected.insert(m_echoExpected.end(), adu.begin(), adu.end());
    }
    m_frameTxTrace(adu);
    m_device->Send(adu);
}

void
ModbusRtuEndpoint::TransmitComplete()
{
}

void
ModbusRtuEndpoint::OnTxComplete()
{
    m_lastTxEnd = Simulator::Now();
    if (m_running)
    {
        TransmitComplete();
    }
}

void
ModbusRtuEndpoint::ReceiveCharacter(const Rs485Character& c)
{
    if (!m_running)
    {
        return;
    }
    if (!m_echoExpected.empty())
    {
        // Reading back the local echo: it must be what we sent (rackmon LocalEcho).
        const uint8_t expected = m_echoExpected.front();
        m_echoExpected.pop_front();
        if (c.status != Rs485RxStatus::Ok || c.byte != expected)
        {
            m_echoErrors++;
        }
        return;
    }
    m_framer.Receive(c);
}

void
ModbusRtuEndpoint::OnFrame(const ModbusRtuFrame& f)
{
    m_frameRxTrace(f);
    FrameReceived(f);
}

} // namespace ns3
