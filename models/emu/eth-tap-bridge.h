// A Linux TAP device bridged to a simulated Ethernet host port: the kernel IP stack of a real
// host (a network namespace) sends and receives through the simulated NIC, so ARP, ICMP, TCP
// and UDP from ordinary programs cross the simulated switches in real time.
#ifndef CNUAS_ETH_TAP_BRIDGE_H
#define CNUAS_ETH_TAP_BRIDGE_H

#include "models/roce/eth-net-device.h"

#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ns3
{

/// What a bridge counted since it started.
struct EthTapBridgeCounters
{
    uint64_t framesFromHost = 0;   ///< frames the host's kernel wrote to the TAP, read by us
    uint64_t bytesFromHost = 0;
    uint64_t sentToFabric = 0;     ///< of those, accepted by the simulated port
    uint64_t refusedByPort = 0;    ///< refused by the port (malformed, MTU, queue full; see its drops)
    uint64_t rxRingOverruns = 0;   ///< dropped before the simulator saw them: the ring was full
    uint64_t framesToHost = 0;     ///< frames written to the TAP (delivered to the kernel)
    uint64_t bytesToHost = 0;
    uint64_t toHostErrors = 0;     ///< writes the kernel refused (its backlog full, device gone)
    uint64_t toHostRingFull = 0;   ///< frames for the host dropped: the writer's ring was full
    uint64_t writtenByWriter = 0;  ///< of framesToHost, written by the writer thread
    uint64_t notForKernel = 0;     ///< frames the port received that were the model's own traffic
};

/**
 * \brief Bridges a TAP device (IFF_TAP | IFF_NO_PI, no offloads) to an EthNetDevice host port.
 *
 * Host to fabric, under EmuRealtimeSimulatorImpl (the emulation daemon's simulator): the
 * simulation thread itself polls the TAP (EmuRealtimeSimulatorImpl::WatchFd) and reads up to
 * RxBatchFrames frames whenever it has caught up with the wall clock, each entering the port at
 * the simulated time the wall clock reads: no thread hand-over, no lock, no context switch per
 * frame. While the model lags, frames wait in the TAP's own queue, which the kernel bounds
 * (txqueuelen) and counts drops of, as for a NIC whose ring is full.
 * Under another real-time simulator (ns-3's RealtimeSimulatorImpl) a reader thread reads the TAP
 * and hands each frame over with Simulator::ScheduleWithContext; between the thread and the
 * simulator sit at most RxRingFrames frames, beyond which frames are dropped and counted
 * (rxRingOverruns), never queued without bound.
 * Either way the port parses the frame (EthNetDevice::SendFromHost) and queues it like any frame
 * of its class.
 *
 * Fabric to host: every frame of the host's kernel (EthFrameKind::Verbatim) that the port
 * receives is written to the TAP, so the namespace's kernel receives it and tcpdump inside the
 * namespace sees it. A TAP write runs the receiving kernel's whole receive path (IP, TCP, the
 * ACK it sends) in the writing thread, several microseconds a frame: a lone frame is written at
 * once by the simulation thread (the answer to a ping is then ready before it returns), but
 * when frames come in bursts (more than InlineBurst within 100 us) they go to a writer thread
 * through a ring of TxRingFrames frames (full: dropped and counted), so that the model keeps
 * real time while the kernel works on another core. Frames keep their order either way. Frames the model itself made (RoCEv2 from the simulated HCA) are passed to
 * the ModelFrame callback instead (the verbs bridge), never to the kernel, whose UDP would answer
 * port 4791 with ICMP unreachable.
 */
class EthTapBridge : public Object
{
  public:
    static TypeId GetTypeId();
    EthTapBridge();
    ~EthTapBridge() override;

    /**
     * Takes `tapFd` (an open TAP device; the bridge closes it) and starts bridging it to `port`.
     * Call from the simulation thread before or while the simulator runs. Returns false with
     * the reason in *why if the thread cannot be started.
     */
    bool Start(Ptr<EthNetDevice> port, int tapFd, std::string* why);
    /// Stops the reader thread and closes the TAP. Idempotent; called by Dispose.
    void Stop();
    /// Counters (simulation thread, or after the simulator stopped).
    EthTapBridgeCounters GetCounters() const;
    /// Frames waiting between the reader thread and the simulator now.
    uint32_t GetPendingFrames() const { return m_pending.load(std::memory_order_relaxed); }
    Ptr<EthNetDevice> GetPort() const { return m_port; }
    /// Receives the frames the port got that the model made (not the kernel's).
    void SetModelFrameCallback(EthNetDevice::EthReceiveCallback cb) { m_modelFrame = cb; }

  protected:
    void DoDispose() override;

  private:
    void ReaderLoop();
    void WriterLoop();
    /// Writes one frame to the TAP and counts it. Either thread (counters are atomic).
    void WriteToTap(const uint8_t* bytes, size_t length, bool byWriter);
    /// Simulation thread (polled mode): reads what the TAP holds, up to RxBatchFrames.
    void DrainTap();
    /// Simulation thread: one frame from the host.
    void FromHost(std::vector<uint8_t> bytes);
    /// Simulation thread: one frame the port received.
    void ToHost(Ptr<EthNetDevice> port, const EthFrame& frame);

    Ptr<EthNetDevice> m_port;
    uint32_t m_context = 0;
    uint32_t m_ringFrames = 1024;
    uint32_t m_batchFrames = 64;
    bool m_polled = false; ///< read by the simulation thread (EmuRealtimeSimulatorImpl)
    std::vector<uint8_t> m_readBuf;
    // the writer thread and its ring
    uint32_t m_inlineBurst = 4;
    uint32_t m_txRingFrames = 1024;
    std::thread m_writer;
    std::mutex m_wmutex;
    std::condition_variable m_wcv;
    std::deque<std::vector<uint8_t>> m_wqueue; ///< guarded by m_wmutex
    std::vector<std::vector<uint8_t>> m_wfree; ///< recycled buffers, guarded by m_wmutex
    bool m_writerBusy = false;                 ///< guarded by m_wmutex
    bool m_writerStop = false;                 ///< guarded by m_wmutex
    std::chrono::steady_clock::time_point m_burstStart;
    uint32_t m_burstFrames = 0;
    std::atomic<uint64_t> m_framesWritten{0};
    std::atomic<uint64_t> m_bytesWritten{0};
    std::atomic<uint64_t> m_writeErrors{0};
    std::atomic<uint64_t> m_writerFrames{0};
    int m_fd = -1;
    int m_stopFd = -1; ///< eventfd that wakes the reader to stop
    std::thread m_reader;
    std::atomic<uint32_t> m_pending{0};
    std::atomic<uint64_t> m_overruns{0};
    std::atomic<uint64_t> m_framesRead{0};
    std::atomic<uint64_t> m_bytesRead{0};
    EthTapBridgeCounters m_counters; ///< the simulation thread's part
    std::vector<uint8_t> m_scratch;
    EthNetDevice::EthReceiveCallback m_modelFrame;
    TracedCallback<const uint8_t*, uint32_t> m_fromHostTrace;
    TracedCallback<const uint8_t*, uint32_t> m_toHostTrace;
};

} // namespace ns3

#endif
