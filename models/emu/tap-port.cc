#include "tap-port.h"

#include "emu-realtime-simulator-impl.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TapPort");

TapPort::~TapPort()
{
    Stop();
}

bool
TapPort::Start(int fd,
               uint32_t context,
               const TapPortConfig& config,
               FrameCallback onFrame,
               std::string* why)
{
    NS_ABORT_MSG_IF(m_fd >= 0, "TapPort::Start called twice");
    m_fd = fd;
    m_context = context;
    m_config = config;
    m_onFrame = std::move(onFrame);
    // One read is one Ethernet frame, at most MTU + header + tag bytes; with IFF_VNET_HDR and
    // TSO, a 10-byte virtio header and one IPv4 datagram of at most 64 KiB (RFC 791 §3.1).
    m_readBuf.resize(65536 + 64);
    m_writer = std::thread(&TapPort::WriterLoop, this);
    if (auto emu = EmuRealtimeSimulatorImpl::Current())
    {
        if (!emu->WatchFd(m_fd, m_context, [this]() { Drain(); }))
        {
            *why = std::string("cannot poll the TAP: ") + std::strerror(errno);
            return false;
        }
        m_polled = true;
        return true;
    }
    m_stopFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m_stopFd < 0)
    {
        *why = std::string("eventfd: ") + std::strerror(errno);
        return false;
    }
    m_reader = std::thread(&TapPort::ReaderLoop, this);
    return true;
}

void
TapPort::Stop()
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
    m_onFrame = nullptr;
}

void
TapPort::Drain()
{
    // The budget is in wire frames: one read of a GSO frame may make dozens, and what a poll
    // queues on the port must stay well inside its transmit queue.
    uint32_t frames = 0;
    while (frames < m_config.rxBatchFrames && m_onFrame && !m_paused)
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
        const uint32_t made = m_onFrame(m_readBuf.data(), static_cast<uint32_t>(n));
        CountRead(static_cast<size_t>(n), made);
        frames += std::max<uint32_t>(made, 1);
    }
}

void
TapPort::PauseReading(bool paused)
{
    if (!m_polled || paused == m_paused)
    {
        return;
    }
    if (auto emu = EmuRealtimeSimulatorImpl::Current())
    {
        emu->PauseFd(m_fd, paused);
        m_paused = paused;
    }
}

void
TapPort::CountRead(size_t bytes, uint32_t frames)
{
    m_reads.fetch_add(1, std::memory_order_relaxed);
    m_framesRead.fetch_add(frames, std::memory_order_relaxed);
    m_bytesRead.fetch_add(bytes, std::memory_order_relaxed);
}

void
TapPort::ReaderLoop()
{
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
        // The ring: a frame the simulator has not taken yet occupies a slot.
        if (m_pending.load(std::memory_order_relaxed) >= m_config.rxRingFrames)
        {
            m_overruns.fetch_add(1, std::memory_order_relaxed);
            CountRead(static_cast<size_t>(n), 1);
            continue;
        }
        m_pending.fetch_add(1, std::memory_order_relaxed);
        std::vector<uint8_t> frame(buf.data(), buf.data() + n);
        Simulator::ScheduleWithContext(m_context,
                                       Time(0),
                                       &TapPort::FromReader,
                                       this,
                                       std::move(frame));
    }
}

void
TapPort::FromReader(std::vector<uint8_t> bytes)
{
    uint32_t made = 0;
    if (m_onFrame)
    {
        made = m_onFrame(bytes.data(), static_cast<uint32_t>(bytes.size()));
    }
    // Counted when handled: then frames read = frames handled + overruns, at any time.
    CountRead(bytes.size(), made);
    m_pending.fetch_sub(1, std::memory_order_relaxed);
}

bool
TapPort::BurstAllowsInline(uint32_t frames)
{
    // A merged write (frames > 1, a 64 KB GSO frame) runs the receiving kernel's TCP over all
    // its bytes: tens of microseconds that the model would lag by, so it always goes to the
    // writer thread. A lone frame is written at once (when the writer is idle with nothing
    // queued, so that order is kept) unless frames come in a burst: more than inlineBurst
    // within 100 us of wall time. Simulation thread only: the burst state needs no lock.
    if (frames != 1)
    {
        return false;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - m_burstStart > std::chrono::microseconds(100))
    {
        m_burstStart = now;
        m_burstFrames = 0;
    }
    ++m_burstFrames;
    return m_burstFrames <= m_config.inlineBurst;
}

void
TapPort::Write(const uint8_t* bytes, size_t length, uint32_t frames)
{
    const bool burstAllows = BurstAllowsInline(frames);
    std::unique_lock<std::mutex> lock(m_wmutex);
    if (burstAllows && m_wqueue.empty() && !m_writerBusy)
    {
        lock.unlock(); // the writer is idle with nothing queued: order is kept
        WriteNow(bytes, length, frames, false);
        return;
    }
    if (m_wqueue.size() >= m_config.txRingFrames)
    {
        m_ringFull.fetch_add(frames, std::memory_order_relaxed);
        return;
    }
    std::vector<uint8_t> buf;
    if (!m_wfree.empty())
    {
        buf.swap(m_wfree.back());
        m_wfree.pop_back();
    }
    buf.assign(bytes, bytes + length);
    const bool wake = m_wqueue.empty() && !m_writerBusy;
    m_wqueue.push_back(Pending{std::move(buf), frames});
    lock.unlock();
    if (wake)
    {
        m_wcv.notify_one();
    }
}

void
TapPort::Write(std::vector<uint8_t>& buffer, uint32_t frames)
{
    const bool burstAllows = BurstAllowsInline(frames);
    std::unique_lock<std::mutex> lock(m_wmutex);
    if (burstAllows && m_wqueue.empty() && !m_writerBusy)
    {
        lock.unlock(); // the writer is idle with nothing queued: order is kept
        WriteNow(buffer.data(), buffer.size(), frames, false);
        return;
    }
    if (m_wqueue.size() >= m_config.txRingFrames)
    {
        m_ringFull.fetch_add(frames, std::memory_order_relaxed);
        return;
    }
    // The buffer itself is queued (no copy of up to 64 KB); the caller gets a recycled one.
    std::vector<uint8_t> spare;
    if (!m_wfree.empty())
    {
        spare.swap(m_wfree.back());
        m_wfree.pop_back();
    }
    const bool wake = m_wqueue.empty() && !m_writerBusy;
    m_wqueue.push_back(Pending{std::move(buffer), frames});
    buffer.swap(spare);
    lock.unlock();
    if (wake)
    {
        m_wcv.notify_one();
    }
}

void
TapPort::WriteNow(const uint8_t* bytes, size_t length, uint32_t frames, bool byWriter)
{
    // The TAP's write hands the frame to the kernel's receive path and does not block; it
    // fails only when the kernel cannot take it (the device is gone, or memory is short), and
    // the frame is then lost as a NIC's would be: counted.
    const ssize_t w = m_fd >= 0 ? write(m_fd, bytes, length) : -1;
    if (w == static_cast<ssize_t>(length))
    {
        m_writes.fetch_add(1, std::memory_order_relaxed);
        m_framesWritten.fetch_add(frames, std::memory_order_relaxed);
        m_bytesWritten.fetch_add(length, std::memory_order_relaxed);
        if (byWriter)
        {
            m_writerFrames.fetch_add(1, std::memory_order_relaxed);
        }
    }
    else
    {
        m_writeErrors.fetch_add(frames, std::memory_order_relaxed);
    }
}

void
TapPort::WriterLoop()
{
    std::deque<Pending> batch;
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
            WriteNow(b.bytes.data(), b.bytes.size(), b.frames, true);
        }
        lock.lock();
        for (auto& b : batch)
        {
            if (m_wfree.size() < 256)
            {
                m_wfree.push_back(std::move(b.bytes));
            }
        }
        batch.clear();
        m_writerBusy = false;
    }
}

TapPortCounters
TapPort::GetCounters() const
{
    TapPortCounters c;
    c.readsFromHost = m_reads.load(std::memory_order_relaxed);
    c.framesFromHost = m_framesRead.load(std::memory_order_relaxed);
    c.bytesFromHost = m_bytesRead.load(std::memory_order_relaxed);
    c.rxRingOverruns = m_overruns.load(std::memory_order_relaxed);
    c.writesToHost = m_writes.load(std::memory_order_relaxed);
    c.framesToHost = m_framesWritten.load(std::memory_order_relaxed);
    c.bytesToHost = m_bytesWritten.load(std::memory_order_relaxed);
    c.toHostErrors = m_writeErrors.load(std::memory_order_relaxed);
    c.toHostRingFull = m_ringFull.load(std::memory_order_relaxed);
    c.writtenByWriter = m_writerFrames.load(std::memory_order_relaxed);
    return c;
}

} // namespace ns3
