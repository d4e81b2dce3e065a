#include "eth-tap-bridge.h"

#include "emu-realtime-simulator-impl.h"

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
            .AddAttribute("RxBatchFrames",
                          "Frames read from the TAP at most per poll of the simulation thread "
                          "(EmuRealtimeSimulatorImpl), before the model's events get a turn.",
                          UintegerValue(64),
                          MakeUintegerAccessor(&EthTapBridge::m_batchFrames),
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
    m_writer = std::thread(&EthTapBridge::WriterLoop, this);
    if (auto emu = EmuRealtimeSimulatorImpl::Current())
    {
        m_readBuf.resize(65536 + 64);
        if (!emu->WatchFd(m_fd, m_context, [this]() { DrainTap(); }))
        {
            *why = std::string("cannot poll the TAP: ") + std::strerror(errno);
            return false;
        }
        m_polled = true;
        return true;
    }
    m_reader = std::thread(&EthTapBridge::ReaderLoop, this);
    return true;
}

void
EthTapBridge::DrainTap()
{
    for (uint32_t i = 0; i < m_batchFrames && m_port; ++i)
    {
        const ssize_t n = read(m_fd, m_readBuf.data(), m_readBuf.size());
        if (n <= 0)
        {
            if (n < 0 && errno != EAGAIN && errno != EINTR)
            {
                NS_LOG_WARN("read from the TAP failed: " << std::strerror(errno));
            }
            return;
        }
        m_framesRead.fetch_add(1, std::memory_order_relaxed);
        m_bytesRead.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
        m_fromHostTrace(m_readBuf.data(), static_cast<uint32_t>(n));
        if (m_port->SendFromHost(m_readBuf.data(), static_cast<uint32_t>(n)))
        {
            m_counters.sentToFabric++;
        }
        else
        {
            m_counters.refusedByPort++;
        }
    }
}

void
EthTapBridge::Stop()
{
    if (m_polled)
    {
        if (auto emu = EmuRealtimeSimulatorImpl::Current())
        {
            emu->UnwatchFd(m_fd);
        }
        m_polled = false;
    }
    if (m_reader.joinable())
    {
        const uint64_t one = 1;
        if (write(m_stopFd, &one, sizeof(one)) < 0)
        {
            NS_LOG_WARN("cannot wake the TAP reader: " << std::strerror(errno));
        }
        m_reader.join();
    }
    if (m_writer.joinable())
    {
        {
            std::lock_guard<std::mutex> lock(m_wmutex);
            m_writerStop = true;
        }
        m_wcv.notify_one();
        m_writer.join();
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
    // A burst is more than InlineBurst frames within 100 us of wall time.
    const auto now = std::chrono::steady_clock::now();
    if (now - m_burstStart > std::chrono::microseconds(100))
    {
        m_burstStart = now;
        m_burstFrames = 0;
    }
    ++m_burstFrames;
    std::unique_lock<std::mutex> lock(m_wmutex);
    if (m_wqueue.empty() && !m_writerBusy && m_burstFrames <= m_inlineBurst)
    {
        lock.unlock(); // the writer is idle with nothing queued: order is kept
        WriteToTap(m_scratch.data(), m_scratch.size(), false);
        return;
    }
    if (m_wqueue.size() >= m_txRingFrames)
    {
        m_counters.toHostRingFull++;
        return;
    }
    std::vector<uint8_t> buf;
    if (!m_wfree.empty())
    {
        buf.swap(m_wfree.back());
        m_wfree.pop_back();
    }
    buf.assign(m_scratch.begin(), m_scratch.end());
    const bool wake = m_wqueue.empty() && !m_writerBusy;
    m_wqueue.push_back(std::move(buf));
    lock.unlock();
    if (wake)
    {
        m_wcv.notify_one();
    }
}

void
EthTapBridge::WriteToTap(const uint8_t* bytes, size_t length, bool byWriter)
{
    // The TAP's write queues the frame to the kernel's receive path and does not block; it
    // fails only when the kernel cannot take it (the device is gone, or memory is short), and
    // the frame is then lost as a NIC's would be: counted.
    const ssize_t w = m_fd >= 0 ? write(m_fd, bytes, length) : -1;
    if (w == static_cast<ssize_t>(length))
    {
        m_framesWritten.fetch_add(1, std::memory_order_relaxed);
        m_bytesWritten.fetch_add(length, std::memory_order_relaxed);
        if (byWriter)
        {
            m_writerFrames.fetch_add(1, std::memory_order_relaxed);
        }
    }
    else
    {
        m_writeErrors.fetch_add(1, std::memory_order_relaxed);
    }
}

void
EthTapBridge::WriterLoop()
{
    std::deque<std::vector<uint8_t>> batch;
    std::unique_lock<std::mutex> lock(m_wmutex);
    while (true)
    {
        m_wcv.wait(lock, [this] { return m_writerStop || !m_wqueue.empty(); });
        if (m_writerStop)
        {
            return;
        }
        batch.swap(m_wqueue);
        m_writerBusy = true;
        lock.unlock();
        for (auto& b : batch)
        {
            WriteToTap(b.data(), b.size(), true);
        }
        lock.lock();
        for (auto& b : batch)
        {
            if (m_wfree.size() < 256)
            {
                m_wfree.push_back(std::move(b));
            }
        }
        batch.clear();
        m_writerBusy = false;
    }
}

EthTapBridgeCounters
EthTapBridge::GetCounters() const
{
    EthTapBridgeCounters c = m_counters;
    c.framesFromHost = m_framesRead.load(std::memory_order_relaxed);
    c.bytesFromHost = m_bytesRead.load(std::memory_order_relaxed);
    c.rxRingOverruns = m_overruns.load(std::memory_order_relaxed);
    c.framesToHost = m_framesWritten.load(std::memory_order_relaxed);
    c.bytesToHost = m_bytesWritten.load(std::memory_order_relaxed);
    c.toHostErrors = m_writeErrors.load(std::memory_order_relaxed);
    c.writtenByWriter = m_writerFrames.load(std::memory_order_relaxed);
    return c;
}

} // namespace ns3
