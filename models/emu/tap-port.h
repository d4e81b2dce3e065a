// The host side of an emulated NIC: a Linux TAP device whose frames a bridge (Ethernet port,
// IPoIB) takes into the model and into which it writes the model's frames for the host.
#ifndef CNUAS_TAP_PORT_H
#define CNUAS_TAP_PORT_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ns3
{

/// What a TapPort counted since it started.
struct TapPortCounters
{
    uint64_t readsFromHost = 0;  ///< reads from the TAP (one frame each, or one GSO frame)
    uint64_t framesFromHost = 0; ///< wire frames those reads made (as the frame callback says)
    uint64_t bytesFromHost = 0;  ///< bytes read (virtio headers included)
    uint64_t rxRingOverruns = 0; ///< dropped before the simulator saw them (reader-thread mode)
    uint64_t writesToHost = 0;   ///< writes to the TAP the kernel took
    uint64_t framesToHost = 0;   ///< wire frames in them (more than one in a coalesced write)
    uint64_t bytesToHost = 0;
    uint64_t toHostErrors = 0;   ///< frames in writes the kernel refused (device gone, no memory)
    uint64_t toHostRingFull = 0; ///< frames for the host dropped: the writer's ring was full
    uint64_t writtenByWriter = 0; ///< of writesToHost, written by the writer thread
};

/// Sizes of a TapPort's queues (the bridges' attributes).
struct TapPortConfig
{
    uint32_t rxRingFrames = 1024; ///< reader-thread mode: frames waiting for the simulator
    uint32_t rxBatchFrames = 64;  ///< polled mode: frames read per poll
    uint32_t inlineBurst = 4;     ///< frames per 100 us written by the simulation thread itself
    uint32_t txRingFrames = 1024; ///< writes (frames or merges) waiting for the writer thread
};

/**
 * \brief A TAP descriptor driven from the simulator.
 *
 * From the host: under EmuRealtimeSimulatorImpl the simulation thread polls the descriptor
 * (WatchFd) and reads up to rxBatchFrames frames whenever it has caught up with the wall clock;
 * no thread hands frames over. Under another real-time simulator a reader thread reads and
 * hands each frame over with Simulator::ScheduleWithContext, at most rxRingFrames pending
 * (beyond: dropped, counted). Either way the frame callback runs on the simulation thread.
 *
 * To the host: a TAP write runs the receiving kernel's receive path in the writing thread
 * (microseconds a frame). A lone frame is written by the simulation thread at once; frames in
 * bursts (more than inlineBurst within 100 us) and every merged write (more than one frame,
 * TapCoalescer) go to a writer thread through a ring of txRingFrames writes (full: dropped,
 * counted), so the model keeps real time while the kernel works on another core. Order is kept: the simulation thread writes only when the writer is idle
 * with nothing queued.
 */
class TapPort
{
  public:
    /// Gets one read's bytes; returns how many wire frames they made (a GSO frame makes many,
    /// a refused one none), counted and charged to the poll's rxBatchFrames budget.
    using FrameCallback = std::function<uint32_t(const uint8_t* bytes, uint32_t length)>;
    TapPort() = default;
    ~TapPort();
    TapPort(const TapPort&) = delete;
    TapPort& operator=(const TapPort&) = delete;

    /// Takes `fd` (closed by Stop) and starts; `onFrame` gets each frame the host sent, on the
    /// simulation thread in `context`. False with the reason if it cannot start.
    bool Start(int fd, uint32_t context, const TapPortConfig& config, FrameCallback onFrame,
               std::string* why);
    /// Stops the threads, stops polling and closes the TAP. Idempotent.
    void Stop();
    /// Writes one buffer for the host (simulation thread): a frame, or with a virtio header a
    /// merged one that carries `frames` wire frames.
    void Write(const uint8_t* bytes, size_t length, uint32_t frames = 1);
    /// The same for a buffer the port may keep: when it is queued for the writer thread,
    /// `buffer` is swapped with a recycled one (its contents then unspecified).
    void Write(std::vector<uint8_t>& buffer, uint32_t frames);
    /// Polled mode (the simulation thread reads): stops or resumes reading the TAP, so that
    /// the host's frames wait in the kernel. No effect in reader-thread mode.
    void PauseReading(bool paused);
    bool IsPolled() const { return m_polled; }
    /// Wire frames a bridge took from a read it held back, counted when they enter.
    void AddFramesFromHost(uint32_t frames)
    {
        m_framesRead.fetch_add(frames, std::memory_order_relaxed);
    }
    /// Counters (any thread; each is read atomically).
    TapPortCounters GetCounters() const;
    /// Frames handed over by the reader thread that the simulator has not taken yet.
    uint32_t GetPendingFrames() const { return m_pending.load(std::memory_order_relaxed); }

  private:
    void ReaderLoop();
    void Drain();
    void FromReader(std::vector<uint8_t> bytes);
    void WriterLoop();
    /// Whether a write of `frames` may go straight to the TAP as far as bursts go.
    bool BurstAllowsInline(uint32_t frames);
    void WriteNow(const uint8_t* bytes, size_t length, uint32_t frames, bool byWriter);
    void CountRead(size_t bytes, uint32_t frames);

    /// A buffer waiting for the writer thread.
    struct Pending
    {
        std::vector<uint8_t> bytes;
        uint32_t frames = 1;
    };

    int m_fd = -1;
    int m_stopFd = -1;
    uint32_t m_context = 0;
    TapPortConfig m_config;
    FrameCallback m_onFrame;
    bool m_polled = false;
    bool m_paused = false;
    std::vector<uint8_t> m_readBuf;
    std::thread m_reader;
    std::atomic<uint32_t> m_pending{0};

    std::thread m_writer;
    std::mutex m_wmutex;
    std::condition_variable m_wcv;
    std::deque<Pending> m_wqueue;              ///< guarded by m_wmutex
    std::vector<std::vector<uint8_t>> m_wfree; ///< recycled buffers, guarded by m_wmutex
    bool m_writerBusy = false;                 ///< guarded by m_wmutex
    bool m_writerStop = false;                 ///< guarded by m_wmutex
    std::chrono::steady_clock::time_point m_burstStart;
    uint32_t m_burstFrames = 0;

    std::atomic<uint64_t> m_reads{0};
    std::atomic<uint64_t> m_framesRead{0};
    std::atomic<uint64_t> m_bytesRead{0};
    std::atomic<uint64_t> m_overruns{0};
    std::atomic<uint64_t> m_writes{0};
    std::atomic<uint64_t> m_framesWritten{0};
    std::atomic<uint64_t> m_bytesWritten{0};
    std::atomic<uint64_t> m_writeErrors{0};
    std::atomic<uint64_t> m_ringFull{0};
    std::atomic<uint64_t> m_writerFrames{0};
};

} // namespace ns3

#endif
