// The simulator that drives an emulated fabric: ns-3 events run when the wall clock reaches
// them (optionally dilated), real processes' frames enter from other threads, and how far the
// model trails the wall clock is measured on every event.
#ifndef CNUAS_EMU_REALTIME_SIMULATOR_IMPL_H
#define CNUAS_EMU_REALTIME_SIMULATOR_IMPL_H

#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/ptr.h"
#include "ns3/scheduler.h"
#include "ns3/simulator-impl.h"

#include "models/common/queue-simulator-impl.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace ns3
{

/// How well the simulator kept to the wall clock (EmuRealtimeSimulatorImpl::GetLagStats).
struct EmuLagStats
{
    double dilation = 1;        ///< wall seconds per simulated second
    uint64_t events = 0;        ///< events run while the clock ran
    uint64_t lateEvents = 0;    ///< of which later than LateThreshold behind their wall time
    int64_t currentLagNs = 0;   ///< lateness of the last event run (0 when on time)
    int64_t maxLagNs = 0;       ///< the largest lateness seen
    double meanLagNs = 0;       ///< mean lateness over the events run
    int64_t wallNs = 0;         ///< wall time since the clock started
    int64_t simNs = 0;          ///< simulated time since the clock started
    uint64_t foreignEvents = 0; ///< events handed in by other threads (real hosts)
    uint32_t pendingForeign = 0; ///< of those, waiting to be taken now
    int64_t spinNs = 0;          ///< wall time spent spinning (a core's worth of CPU)
    uint64_t spinBackoffs = 0;   ///< spins found preempted, each followed by SpinBackoff asleep
    /// The same for the recent past only: the events run in the last whole LagWindow of wall
    /// time and the one in progress (so a fabric's lag now, not its bring-up's burst).
    double recentWindowS = 0;    ///< how much wall time the recent figures cover
    uint64_t recentEvents = 0;
    uint64_t recentLateEvents = 0;
    double recentMeanLagNs = 0;  ///< 0 when no event ran then
    int64_t recentMaxLagNs = 0;
};

/**
 * \brief A real-time SimulatorImpl with time dilation and lag accounting, for emulation.
 *
 * An event stamped t runs at wall time start + (t - t0) x TimeDilation, where start and t0 are
 * the wall and simulated times at which Run began. A dilation of 10 runs the model ten times
 * slower than the wall clock: simulated time = wall time / 10. That is how a fabric faster than
 * the machine can follow is emulated honestly: everything the real hosts measure is stretched
 * by the stated factor, and the model itself keeps exact simulated time.
 *
 * Real input without threads: WatchFd registers a descriptor (a TAP, a socket) that the
 * simulation thread itself polls (epoll) whenever it has caught up with the wall clock; its
 * callback runs on the simulation thread at the simulated time the wall clock reads (never at or
 * past the next pending event), as an event would. No hand-over between threads, no lock and no
 * context switch per frame: a frame a real host sends is read and queued on its simulated port
 * by the same thread that runs the model. While the model lags, input waits in the kernel's
 * queue (a TAP's holds txqueuelen frames and drops beyond, counted by the host's kernel).
 *
 * Waiting: a wait longer than SpinWindow sleeps in epoll (woken at once by a watched descriptor
 * or by an event from another thread); the last SpinWindow before a deadline is spun, and so
 * is IdleSpin after the last input, because a thread asleep on a halted virtual CPU wakes
 * microseconds late and a frame crossing the fabric, and the answer to it, are chains of
 * events microseconds apart. Spinning stops for SpinBackoff whenever a spin turn shows the
 * thread was preempted (SpinPreemptedGap): on contended cores a spinning simulator delays the
 * very processes it serves, and a woken thread is scheduled sooner than a busy one.
 *
 * Other threads (TAP readers, the pty bridge, the control socket) may call only
 * ScheduleWithContext; their events are stamped with the simulated time that corresponds to
 * the wall clock when they were handed in (never before the current event), so a real host's
 * frame enters the model when it was sent. Everything else is for the simulation thread, as in
 * ns-3's other implementations.
 *
 * Lag: each event's lateness (wall time when it runs minus its wall deadline) is measured; a
 * model that cannot keep up shows a growing lag (GetLagStats), never a silent slowdown.
 */
class EmuRealtimeSimulatorImpl : public QueueSimulatorImpl
{
  public:
    static TypeId GetTypeId();
    EmuRealtimeSimulatorImpl();
    ~EmuRealtimeSimulatorImpl() override;

    // ns3::SimulatorImpl (the queue's rules: QueueSimulatorImpl)
    EventId Schedule(const Time& delay, EventImpl* event) override;
    void ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event) override;
    EventId ScheduleNow(EventImpl* event) override;
    void Run() override;

    /// Lag figures. Any thread (a consistent snapshot of the counters the simulation thread
    /// publishes after each event).
    EmuLagStats GetLagStats() const;
    double GetDilation() const { return m_dilation; }
    /// How far behind its wall deadline the event now running (or the last one) began, ns.
    int64_t CurrentLagNs() const { return m_currentLagNs.load(std::memory_order_relaxed); }
    /// The running instance, or null when the simulator in use is another implementation.
    static Ptr<EmuRealtimeSimulatorImpl> Current();
    /**
     * The wall clock (steady_clock) as the loop last read it: during an event, no earlier than
     * a few microseconds before the event began. For work that wants the wall time per frame
     * but not a clock read per frame. Simulation thread.
     */
    std::chrono::steady_clock::time_point WallClockAtEvent() const { return m_clockRead; }
    /**
     * Polls `fd` for input on the simulation thread: `onReadable` runs (in `context`) whenever
     * it is readable and the model has caught up with the wall clock; it should read what is
     * there without blocking. Simulation thread; false with errno if epoll refuses the fd.
     */
    bool WatchFd(int fd, uint32_t context, std::function<void()> onReadable);
    /// Stops polling `fd` (before it is closed).
    void UnwatchFd(int fd);
    /// Pauses or resumes polling a watched `fd` (its input waits in the kernel meanwhile).
    void PauseFd(int fd, bool paused);
    /**
     * Registers `hook` for work a bridge holds back to batch it (TapCoalescer) and must not hold
     * past a bound. Once armed (ArmIdleHook) it runs on the simulation thread whenever that has
     * caught up with the wall clock and looks for input (before it spins or sleeps), with the
     * wall nanoseconds until the next event is due (100 ms when none is pending), and every
     * 100 us of wall time while the model lags, with 0; it stays armed while it returns true
     * (work still held). Only armed hooks run: a fabric of a thousand hosts, each with its
     * bridge's hook, ran all of them at every turn of the loop, and every event came later the
     * more hosts there were (k=16, 1,024 hosts: 1.5 ms late on average at idle). Returns an id
     * for ArmIdleHook and RemoveIdleHook. Simulation thread.
     */
    uint64_t AddIdleHook(std::function<bool(int64_t untilNextNs)> hook);
    /// Has hook `id` run from the next idle turn on, until it returns false. Simulation thread.
    void ArmIdleHook(uint64_t id);
    void RemoveIdleHook(uint64_t id);
    /// How many hooks are armed (for tests).
    size_t GetArmedIdleHooks() const { return m_armedIdleHooks.size(); }

  protected:
    void DoDispose() override;

  private:
    using Clock = std::chrono::steady_clock;
    struct ForeignEvent
    {
        uint32_t context;
        uint64_t ts; ///< stamped from the wall clock when handed in
        EventImpl* impl;
        bool now;    ///< handed in with no delay: due as soon as the model can take it
    };

    /// Moves events handed in by other threads into the scheduler. Simulation thread.
    void TakeForeign();
    /// The simulated time stamp that the wall clock reads now (running clock only).
    uint64_t WallToSim(Clock::time_point t) const;
    Clock::time_point SimToWall(uint64_t ts) const;
    /**
     * Waits for input until `deadline` at the latest (now: just looks) and runs the callbacks of
     * watched descriptors that are readable, stamped no later than just before `nextTs` (the
     * next pending event; UINT64_MAX for none). Returns whether any input was handled.
     */
    bool PollInput(Clock::time_point deadline, uint64_t nextTs);
    void RunIdleHooks(int64_t untilNextNs);
    bool OnSimulationThread() const;

    std::thread::id m_mainThread;

    // the clock
    double m_dilation = 1;
    Time m_spinWindow;
    Time m_idleSpin;
    Time m_spinPreemptedGap;
    Time m_spinBackoff;
    Time m_lateThreshold;
    Time m_lagWindow;
    std::atomic<bool> m_running{false};
    Clock::time_point m_wallStart;
    Clock::time_point m_clockRead; ///< the loop's last wall clock reading (WallClockAtEvent)
    uint64_t m_simStart = 0;

    // input: watched descriptors and the eventfd that other threads' events ring
    struct FdWatch
    {
        uint32_t context;
        std::function<void()> onReadable;
    };
    int m_epoll = -1;
    int m_wakeFd = -1;
    std::map<int, FdWatch> m_watches;
    std::map<uint64_t, std::function<bool(int64_t)>> m_idleHooks;
    std::vector<uint64_t> m_armedIdleHooks; ///< ids to run, each once
    std::vector<uint64_t> m_runningIdleHooks; ///< RunIdleHooks's copy (kept for its capacity)
    uint64_t m_nextIdleHook = 1;
    uint64_t m_inputCallbacks = 0;

    // hand-over from other threads
    mutable std::mutex m_mutex;
    std::vector<ForeignEvent> m_foreign; ///< guarded by m_mutex
    std::atomic<uint32_t> m_foreignCount{0};
    std::atomic<uint64_t> m_foreignTotal{0};

    // lag figures, published by the simulation thread
    std::atomic<uint64_t> m_lagEvents{0};
    std::atomic<uint64_t> m_lateEvents{0};
    std::atomic<int64_t> m_currentLagNs{0};
    std::atomic<int64_t> m_maxLagNs{0};
    std::atomic<int64_t> m_simNowNs{0};
    std::atomic<int64_t> m_wallAtStopNs{0}; ///< wall time the last Run lasted
    std::atomic<int64_t> m_spinNs{0};
    std::atomic<uint64_t> m_spinBackoffs{0};
    double m_lagSumNs = 0;
    std::atomic<double> m_meanLagNs{0};
    /// One LagWindow of wall time's lag figures (window `index` counts from the clock's start).
    struct LagWindowFigures
    {
        std::atomic<int64_t> index{-1};
        std::atomic<uint64_t> events{0};
        std::atomic<uint64_t> late{0};
        std::atomic<double> sumNs{0};
        std::atomic<int64_t> maxNs{0};
    };
    LagWindowFigures m_lagNow;  ///< the window in progress
    LagWindowFigures m_lagLast; ///< the one before it that had events
    int64_t m_lagWindowEndNs = 0; ///< wall time (since the start) m_lagNow ends at
    /// Adds one event's lag to the windows (simulation thread).
    void CountLagInWindow(int64_t wallNs, int64_t lag, bool late);
};

} // namespace ns3

#endif
