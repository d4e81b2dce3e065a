#include "eth-tap-bridge.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
                          "Frames the host may have sent that the simulator has not taken yet "
                          "(the NIC's receive ring); beyond it frames are dropped and counted.",
                          UintegerValue(1024),
                          MakeUintegerAccessor(&EthTapBridge::m_ringFrames),
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
    NS_ABORT_MSG_IF(m_fd >= 0, "EthTapBridge::Start called twice");
    m_port = port;
    m_fd = tapFd;
    m_context = port->GetNode() ? port->GetNode()->GetId() : Simulator::NO_CONTEXT;
    m_stopFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m_stopFd < 0)
    {
        *why = std::string("eventfd: ") + std::strerror(errno);
        return false;
    }
    port->SetEthReceiveCallback(MakeCallback(&EthTapBridge::ToHost, this));
    m_reader = std::thread(&EthTapBridge::ReaderLoop, this);
    return true;
}

void
EthTapBridge::Stop()
{
    if (m_reader.joinable())
    {
        const uint64_t one = 1;
        if (write(m_stopFd, &one, sizeof(one)) < 0)
        {
            NS_LOG_WARN("cannot wake the TAP reader: " << std::strerror(errno));
        }
        m_reader.join();
    }
    if (m_stopFd >= 0)
    {
        close(m_stopFd);
        m_stopFd = -1;
    }
    if (m_fd >= 0)
    {
        close(m_fd);
        m_fd = -1;
    }
}

void
EthTapBridge::ReaderLoop()
{
    // A TAP without IFF_VNET_HDR and without offloads hands over one Ethernet frame per read,
    // at most MTU + header + tag bytes; 64 KiB covers any MTU the device can be given.
    std::vector<uint8_t> buf(65536 + 64);
    pollfd fds[2] = {{m_fd, POLLIN, 0}, {m_stopFd, POLLIN, 0}};
    while (true)
    {
        if (poll(fds, 2, -1) < 0)
        {
            if (errno == EINTR)
            {
                continue;
            }
            NS_LOG_WARN("poll on the TAP failed: " << std::strerror(errno));
            return;
        }
        if (fds[1].revents != 0)
        {
            return;
        }
        if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0)
        {
            NS_LOG_WARN("the TAP device went away");
            return;
        }
        if ((fds[0].revents & POLLIN) == 0)
        {
            continue;
        }
        const ssize_t n = read(m_fd, buf.data(), buf.size());
        if (n <= 0)
        {
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
            {
                continue;
            }
            NS_LOG_WARN("read from the TAP failed: " << (n < 0 ? std::strerror(errno) : "EOF"));
            return;
        }
        m_framesRead.fetch_add(1, std::memory_order_relaxed);
        m_bytesRead.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
        // The ring: a frame the simulator has not taken yet occupies a slot.
        if (m_pending.load(std::memory_order_relaxed) >= m_ringFrames)
        {
            m_overruns.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        m_pending.fetch_add(1, std::memory_order_relaxed);
        std::vector<uint8_t> frame(buf.data(), buf.data() + n);
        Simulator::ScheduleWithContext(m_context,
                                       Time(0),
                                       &EthTapBridge::FromHost,
                                       this,
                                       std::move(frame));
    }
}

void
EthTapBridge::FromHost(std::vector<uint8_t> bytes)
{
    m_pending.fetch_sub(1, std::memory_order_relaxed);
    if (!m_port)
    {
        return; // disposed while the frame was on its way
    }
    const uint32_t n = static_cast<uint32_t>(bytes.size());
    m_fromHostTrace(bytes.data(), n);
    if (m_port->SendFromHost(bytes.data(), n))
    {
        m_counters.sentToFabric++;
    }
    else
    {
        m_counters.refusedByPort++;
    }
}

void
EthTapBridge::ToHost(Ptr<EthNetDevice> port, const EthFrame& frame)
{
    if (frame.kind != EthFrameKind::Verbatim)
    {
        m_counters.notForKernel++;
        if (!m_modelFrame.IsNull())
        {
            m_modelFrame(port, frame);
        }
        return;
    }
    frame.Materialize(m_scratch, false);
    m_toHostTrace(m_scratch.data(), static_cast<uint32_t>(m_scratch.size()));
    // The TAP's write queues the frame to the kernel's receive path and does not block; it
    // fails only when the kernel cannot take it (the device is gone, or memory is short), and
    // the frame is then lost as a NIC's would be: counted.
    const ssize_t w = m_fd >= 0 ? write(m_fd, m_scratch.data(), m_scratch.size()) : -1;
    if (w == static_cast<ssize_t>(m_scratch.size()))
    {
        m_counters.framesToHost++;
        m_counters.bytesToHost += m_scratch.size();
    }
    else
    {
        m_counters.toHostErrors++;
    }
}

EthTapBridgeCounters
EthTapBridge::GetCounters() const
{
    EthTapBridgeCounters c = m_counters;
    c.framesFromHost = m_framesRead.load(std::memory_order_relaxed);
    c.bytesFromHost = m_bytesRead.load(std::memory_order_relaxed);
    c.rxRingOverruns = m_overruns.load(std::memory_order_relaxed);
    return c;
}

} // namespace ns3
