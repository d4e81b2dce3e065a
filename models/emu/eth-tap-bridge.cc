#include "eth-tap-bridge.h"

#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <unistd.h>

#include <chrono>

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
            .AddAttribute("MirrorModelFrames",
                          "Whether the RoCEv2 frames the host's simulated HCA sends and "
                          "receives are also written to the TAP (marked so that the kernel "
                          "drops them), so that tcpdump in the host sees the host's RDMA traffic "
                          "as on a real RoCE NIC's interface: Never, WhenCaptured (while a packet "
                          "socket is open in the host, i.e. something captures; each copy costs "
                          "a TAP write), Always.",
                          EnumValue(static_cast<int>(MirrorMode::WhenCaptured)),
                          MakeEnumAccessor(&EthTapBridge::m_mirrorMode),
                          MakeEnumChecker(static_cast<int>(MirrorMode::Never),
                                          "Never",
                                          static_cast<int>(MirrorMode::WhenCaptured),
                                          "WhenCaptured",
                                          static_cast<int>(MirrorMode::Always),
                                          "Always"))
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
    if (m_mirrorMode != static_cast<int>(MirrorMode::Never))
    {
        port->TraceConnectWithoutContext("Tx", MakeCallback(&EthTapBridge::MirrorTx, this));
    }
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
    if (m_probeFd >= 0)
    {
        close(m_probeFd);
        m_probeFd = -1;
    }
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
        if (frame.kind == EthFrameKind::Udp && MirrorWanted())
        {
            Mirror(frame, false);
        }
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

void
EthTapBridge::MirrorTx(const EthFrame& frame)
{
    if (frame.kind == EthFrameKind::Udp && MirrorWanted())
    {
        Mirror(frame, true);
    }
}

void
EthTapBridge::SetCaptureProbe(int procNetPacketFd)
{
    if (m_probeFd >= 0)
    {
        close(m_probeFd);
    }
    m_probeFd = procNetPacketFd;
}

bool
EthTapBridge::MirrorWanted()
{
    const auto mode = static_cast<MirrorMode>(m_mirrorMode);
    if (mode != MirrorMode::WhenCaptured)
    {
        return mode == MirrorMode::Always;
    }
    if (m_probeFd < 0)
    {
        return false;
    }
    // The host's list of packet sockets (/proc/net/packet of its namespace), looked at no more
    // than every 20 ms of wall clock: a header line, then one line per open socket.
    const auto now = std::chrono::steady_clock::now();
    if (now - m_lastProbe >= std::chrono::milliseconds(20))
    {
        m_lastProbe = now;
        char buf[4096];
        const ssize_t n = pread(m_probeFd, buf, sizeof(buf) - 1, 0);
        int lines = 0;
        for (ssize_t i = 0; i < n; ++i)
        {
            lines += buf[i] == '\n';
        }
        m_captured = lines > 1;
    }
    return m_captured;
}

void
EthTapBridge::Mirror(const EthFrame& frame, bool transmitted)
{
    // The host's kernel must see these frames for tcpdump but not act on them, as a RoCE NIC's
    // own traffic never reaches the kernel's UDP. A frame the HCA sent is addressed to another
    // MAC, so the kernel treats it as another host's (PACKET_OTHERHOST) and drops it before IP;
    // one for this host's HCA goes to UDP port 4791, which the daemon holds open in the
    // namespace (as the kernel's soft-RoCE driver does) and drains.
    frame.Materialize(m_mirrorScratch, false);
    m_tap.Write(m_mirrorScratch.data(), m_mirrorScratch.size());
    (transmitted ? m_mirroredTx : m_mirroredRx)++;
}

EthTapBridgeCounters
EthTapBridge::GetCounters() const
{
    EthTapBridgeCounters c;
    static_cast<TapPortCounters&>(c) = m_tap.GetCounters();
    c.sentToFabric = m_sent;
    c.refusedByPort = m_refused;
    c.notForKernel = m_notForKernel;
    c.mirroredTx = m_mirroredTx;
    c.mirroredRx = m_mirroredRx;
    return c;
}

} // namespace ns3
