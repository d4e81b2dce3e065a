#include "eth-tap-bridge.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EthTapBridge");
NS_OBJECT_ENSURE_REGISTERED(EthTapBridge);

TypeId
EthTapBridge::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EthTapBridge")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<EthTapBridge>()
            .AddAttribute("RxRingFrames",
                          "Reader-thread mode (a simulator other than EmuRealtimeSimulatorImpl): "
                          "frames the host sent that the simulator has not taken yet (the "
                          "NIC's receive ring); beyond it frames are dropped and counted.",
                          UintegerValue(1024),
                          MakeUintegerAccessor(&EthTapBridge::m_rxRingFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("RxBatchFrames",
                          "Frames read from the TAP at most per poll of the simulation thread "
                          "(EmuRealtimeSimulatorImpl), before the model's events get a turn.",
                          UintegerValue(64),
                          MakeUintegerAccessor(&EthTapBridge::m_rxBatchFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("InlineBurst",
                          "Frames for the host that the simulation thread writes itself within "
                          "100 us; beyond, they go to the writer thread.",
                          UintegerValue(4),
                          MakeUintegerAccessor(&EthTapBridge::m_inlineBurst),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("TxRingFrames",
                          "Frames for the host that may wait for the writer thread; beyond, "
                          "they are dropped and counted.",
                          UintegerValue(1024),
                          MakeUintegerAccessor(&EthTapBridge::m_txRingFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddTraceSource("FromHost",
                            "A frame the host's kernel sent, as read from the TAP (bytes, "
                            "length), when the simulator takes it.",
                            MakeTraceSourceAccessor(&EthTapBridge::m_fromHostTrace),
                            "ns3::EthTapBridge::BytesCallback")
            .AddTraceSource("ToHost",
                            "A frame written to the TAP for the host's kernel (bytes, length).",
                            MakeTraceSourceAccessor(&EthTapBridge::m_toHostTrace),
                            "ns3::EthTapBridge::BytesCallback");
    return tid;
}

EthTapBridge::EthTapBridge() = default;

EthTapBridge::~EthTapBridge()
{
    Stop();
}

void
EthTapBridge::DoDispose()
{
    Stop();
    if (m_port)
    {
        m_port->SetEthReceiveCallback(EthNetDevice::EthReceiveCallback());
    }
    m_port = nullptr;
    m_modelFrame = EthNetDevice::EthReceiveCallback();
    Object::DoDispose();
}

bool
EthTapBridge::Start(Ptr<EthNetDevice> port, int tapFd, std::string* why)
{
    m_port = port;
    port->SetEthReceiveCallback(MakeCallback(&EthTapBridge::ToHost, this));
    TapPortConfig config;
    config.rxRingFrames = m_rxRingFrames;
    config.rxBatchFrames = m_rxBatchFrames;
    config.inlineBurst = m_inlineBurst;
    config.txRingFrames = m_txRingFrames;
    const uint32_t context = port->GetNode() ? port->GetNode()->GetId() : Simulator::NO_CONTEXT;
    return m_tap.Start(tapFd,
                       context,
                       config,
                       [this](const uint8_t* b, uint32_t n) { FromHost(b, n); },
                       why);
}

void
EthTapBridge::Stop()
{
    m_tap.Stop();
}

void
EthTapBridge::FromHost(const uint8_t* bytes, uint32_t length)
{
    if (!m_port)
    {
        return; // disposed while the frame was on its way
    }
    m_fromHostTrace(bytes, length);
    if (m_port->SendFromHost(bytes, length))
    {
        m_sent++;
    }
    else
    {
        m_refused++;
    }
}

void
EthTapBridge::ToHost(Ptr<EthNetDevice> port, const EthFrame& frame)
{
    if (frame.kind != EthFrameKind::Verbatim)
    {
        m_notForKernel++;
        if (!m_modelFrame.IsNull())
        {
            m_modelFrame(port, frame);
        }
        return;
    }
    frame.Materialize(m_scratch, false);
    m_toHostTrace(m_scratch.data(), static_cast<uint32_t>(m_scratch.size()));
    m_tap.Write(m_scratch.data(), m_scratch.size());
}

EthTapBridgeCounters
EthTapBridge::GetCounters() const
{
    EthTapBridgeCounters c;
    static_cast<TapPortCounters&>(c) = m_tap.GetCounters();
    c.sentToFabric = m_sent;
    c.refusedByPort = m_refused;
    c.notForKernel = m_notForKernel;
    return c;
}

} // namespace ns3
