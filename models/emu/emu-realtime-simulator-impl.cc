#include "emu-realtime-simulator-impl.h"

#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/map-scheduler.h"
#include "ns3/simulator.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EmuRealtimeSimulatorImpl");
NS_OBJECT_ENSURE_REGISTERED(EmuRealtimeSimulatorImpl);

TypeId
EmuRealtimeSimulatorImpl::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EmuRealtimeSimulatorImpl")
            .SetParent<QueueSimulatorImpl>()
            .SetGroupName("Cnuas")
            .AddConstructor<EmuRealtimeSimulatorImpl>()
            .AddAttribute("TimeDilation",
                          "Wall seconds per simulated second (>= 1e-3): 1 is real time, 10 runs "
                          "the model ten times slower than the wall clock (simulated time = "
                          "wall time / 10), for fabrics faster than the machine can follow.",
                          DoubleValue(1.0),
                          MakeDoubleAccessor(&EmuRealtimeSimulatorImpl::m_dilation),
                          MakeDoubleChecker<double>(1e-3, 1e6))
            .AddAttribute("SpinWindow",
                          "The last stretch before an event's wall deadline that is spun "
                          "instead of slept (a sleeping thread wakes tens of microseconds late).",
                          TimeValue(MicroSeconds(200)),
                          MakeTimeAccessor(&EmuRealtimeSimulatorImpl::m_spinWindow),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("IdleSpin",
                          "After input from a watched descriptor, keep polling this long before "
                          "sleeping (the answer to a frame usually follows within "
                          "microseconds; waking from sleep costs tens of them).",
                          TimeValue(MicroSeconds(100)),
                          MakeTimeAccessor(&EmuRealtimeSimulatorImpl::m_idleSpin),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("SpinPreemptedGap",
                          "A turn of a spin that comes this long after the previous one means "
                          "the thread was off its CPU in between (preempted by another thread "
                          "or its virtual CPU descheduled): the cores are contended, and a "
                          "spinning simulator takes CPU from the processes it serves. 0: never "
                          "back off.",
                          TimeValue(MicroSeconds(50)),
                          MakeTimeAccessor(&EmuRealtimeSimulatorImpl::m_spinPreemptedGap),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("SpinBackoff",
                          "After a spin was found preempted (SpinPreemptedGap), spin neither "
                          "after input nor before deadlines for this long: waits sleep in epoll, "
                          "and a woken thread is scheduled ahead of busy ones.",
                          TimeValue(MilliSeconds(100)),
                          MakeTimeAccessor(&EmuRealtimeSimulatorImpl::m_spinBackoff),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("LateThreshold",
                          "An event that runs later than this behind its wall deadline is "
                          "counted as late (the lag report's lateEvents).",
                          TimeValue(MilliSeconds(1)),
                          MakeTimeAccessor(&EmuRealtimeSimulatorImpl::m_lateThreshold),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("LagWindow",
                          "The wall time the recent lag figures cover (GetLagStats' recent*: "
                          "the last whole window and the one in progress).",
                          TimeValue(Seconds(1)),
                          MakeTimeAccessor(&EmuRealtimeSimulatorImpl::m_lagWindow),
                          MakeTimeChecker(NanoSeconds(1)));
    return tid;
}

EmuRealtimeSimulatorImpl::EmuRealtimeSimulatorImpl()
{
    ObjectFactory f;
    f.SetTypeId(MapScheduler::GetTypeId());
    SetScheduler(f);
    m_epoll = epoll_create1(EPOLL_CLOEXEC);
    m_wakeFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    NS_ABORT_MSG_IF(m_epoll < 0 || m_wakeFd < 0,
                    "EmuRealtimeSimulatorImpl: cannot make its epoll/eventfd: "
                        << std::strerror(errno));
    epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.fd = m_wakeFd;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_wakeFd, &ev);
}

EmuRealtimeSimulatorImpl::~EmuRealtimeSimulatorImpl()
{
    if (m_epoll >= 0)
    {
        close(m_epoll);
    }
    if (m_wakeFd >= 0)
    {
        close(m_wakeFd);
    }
}

bool
EmuRealtimeSimulatorImpl::WatchFd(int fd, uint32_t context, std::function<void()> onReadable)
{
    epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev) != 0)
    {
        return false;
    }
    m_watches[fd] = FdWatch{context, std::move(onReadable)};
    return true;
}

void
EmuRealtimeSimulatorImpl::UnwatchFd(int fd)
{
    if (m_watches.erase(fd) > 0)
    {
        epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr);
    }
}

void
EmuRealtimeSimulatorImpl::PauseFd(int fd, bool paused)
{
    if (m_watches.count(fd) == 0)
    {
        return;
    }
    epoll_event ev = {};
    ev.events = paused ? 0u : static_cast<uint32_t>(EPOLLIN);
    ev.data.fd = fd;
    epoll_ctl(m_epoll, EPOLL_CTL_MOD, fd, &ev);
}

uint64_t
EmuRealtimeSimulatorImpl::AddIdleHook(std::function<bool(int64_t untilNextNs)> hook)
{
    const uint64_t id = m_nextIdleHook++;
    m_idleHooks[id] = std::move(hook);
    return id;
}

void
EmuRealtimeSimulatorImpl::ArmIdleHook(uint64_t id)
{
    if (std::find(m_armedIdleHooks.begin(), m_armedIdleHooks.end(), id) ==
        m_armedIdleHooks.end())
    {
        m_armedIdleHooks.push_back(id);
    }
}

void
EmuRealtimeSimulatorImpl::RemoveIdleHook(uint64_t id)
{
    m_idleHooks.erase(id);
    m_armedIdleHooks.erase(std::remove(m_armedIdleHooks.begin(), m_armedIdleHooks.end(), id),
                           m_armedIdleHooks.end());
}

void
EmuRealtimeSimulatorImpl::RunIdleHooks(int64_t untilNextNs)
{
    // A hook may arm itself or another, or remove one, while it runs: the armed list is taken
    // first and what stays armed is put back.
    m_runningIdleHooks.swap(m_armedIdleHooks);
    m_armedIdleHooks.clear();
    for (uint64_t id : m_runningIdleHooks)
    {
        auto it = m_idleHooks.find(id);
        if (it != m_idleHooks.end() && it->second(untilNextNs))
        {
            ArmIdleHook(id);
        }
    }
    m_runningIdleHooks.clear();
}

Ptr<EmuRealtimeSimulatorImpl>
EmuRealtimeSimulatorImpl::Current()
{
    return DynamicCast<EmuRealtimeSimulatorImpl>(Simulator::GetImplementation());
}

void
EmuRealtimeSimulatorImpl::DoDispose()
{
    DisposeQueue();
    std::lock_guard<std::mutex> lock(m_mutex);
    for (auto& f : m_foreign)
    {
        f.impl->Unref();
    }
    m_foreign.clear();
    QueueSimulatorImpl::DoDispose();
}

bool
EmuRealtimeSimulatorImpl::OnSimulationThread() const
{
    return !m_running.load(std::memory_order_acquire) ||
           std::this_thread::get_id() == m_mainThread;
}

uint64_t
EmuRealtimeSimulatorImpl::WallToSim(Clock::time_point t) const
{
    const double wallNs =
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t - m_wallStart)
                                .count());
    const double simNs = std::max(0.0, wallNs / m_dilation);
    return m_simStart + static_cast<uint64_t>(std::llround(
                            simNs * static_cast<double>(Time(NanoSeconds(1)).GetTimeStep())));
}

EmuRealtimeSimulatorImpl::Clock::time_point
EmuRealtimeSimulatorImpl::SimToWall(uint64_t ts) const
{
    const double simNs = static_cast<double>(ts - m_simStart) /
                         static_cast<double>(Time(NanoSeconds(1)).GetTimeStep());
    return m_wallStart + std::chrono::nanoseconds(std::llround(simNs * m_dilation));
}

EventId
EmuRealtimeSimulatorImpl::Schedule(const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(OnSimulationThread(),
                  "EmuRealtimeSimulatorImpl: Schedule from another thread (use "
                  "ScheduleWithContext)");
    NS_ASSERT_MSG(!delay.IsStrictlyNegative(), "Schedule: negative delay " << delay);
    return InsertInCurrentContext(m_currentTs + static_cast<uint64_t>(delay.GetTimeStep()), event);
}

EventId
EmuRealtimeSimulatorImpl::ScheduleNow(EventImpl* event)
{
    return Schedule(Time(0), event);
}

void
EmuRealtimeSimulatorImpl::ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(!delay.IsStrictlyNegative(), "ScheduleWithContext: negative delay " << delay);
    if (OnSimulationThread())
    {
        const uint64_t ts = m_currentTs + static_cast<uint64_t>(delay.GetTimeStep());
        Insert(ts, context, event, m_uid++);
        return;
    }
    // Another thread: the event happens when it is handed in, on the simulated clock that the
    // wall clock defines (plus the delay asked for).
    const uint64_t ts = WallToSim(Clock::now()) + static_cast<uint64_t>(delay.GetTimeStep());
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_foreign.push_back({context, ts, event, delay.IsZero()});
        m_foreignCount.store(static_cast<uint32_t>(m_foreign.size()), std::memory_order_release);
    }
    m_foreignTotal.fetch_add(1, std::memory_order_relaxed);
    const uint64_t one = 1;
    if (write(m_wakeFd, &one, sizeof(one)) < 0)
    {
        // EAGAIN: the counter is saturated, so a wake-up is pending anyway
    }
}

void
EmuRealtimeSimulatorImpl::TakeForeign()
{
    if (m_foreignCount.load(std::memory_order_acquire) == 0)
    {
        return;
    }
    std::vector<ForeignEvent> taken;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        taken.swap(m_foreign);
        m_foreignCount.store(0, std::memory_order_release);
    }
    const uint64_t head = m_events->IsEmpty() ? UINT64_MAX : m_events->PeekNext().key.m_ts;
    for (auto& f : taken)
    {
        // Never before the event being run: the model's own time is the floor. An event due
        // now that comes while the model lags (its wall stamp lies past the next pending event)
        // enters at the model's present instead of waiting for the model to catch up, as input
        // read from a descriptor does: a status request or a frame is taken late, not never,
        // and the lag says how late.
        uint64_t ts = f.ts;
        if (f.now && head != UINT64_MAX && ts > head)
        {
            ts = head;
        }
        Insert(std::max(ts, m_currentTs), f.context, f.impl, m_uid++);
    }
}

bool
EmuRealtimeSimulatorImpl::PollInput(Clock::time_point deadline, uint64_t nextTs)
{
    epoll_event evs[32];
    const auto now = Clock::now();
    timespec wait = {0, 0};
    if (deadline > now)
    {
        const int64_t ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
        wait.tv_sec = ns / 1000000000;
        wait.tv_nsec = ns % 1000000000;
    }
    const int n = epoll_pwait2(m_epoll, evs, 32, &wait, nullptr);
    bool handled = false;
    for (int i = 0; i < n; ++i)
    {
        const int fd = evs[i].data.fd;
        if (fd == m_wakeFd)
        {
            uint64_t v;
            if (read(m_wakeFd, &v, sizeof(v)) < 0)
            {
                // EAGAIN: already drained
            }
            continue; // the events themselves are taken by TakeForeign
        }
        auto it = m_watches.find(fd);
        if (it == m_watches.end())
        {
            continue;
        }
        // The input happens now on the wall clock, but never at or past the next pending event
        // (that would reorder the model's own events) and never before the present.
        uint64_t ts = WallToSim(Clock::now());
        if (nextTs != UINT64_MAX && ts >= nextTs)
        {
            ts = nextTs - 1;
        }
        m_currentTs = std::max(m_currentTs, ts);
        m_currentContext = it->second.context;
        m_currentUid = m_uid++;
        m_eventCount++;
        m_inputCallbacks++;
        it->second.onReadable();
        handled = true;
    }
    return handled;
}

void
EmuRealtimeSimulatorImpl::Run()
{
    m_mainThread = std::this_thread::get_id();
    m_stop = false;
    m_simStart = m_currentTs;
    m_wallStart = Clock::now();
    m_lagWindowEndNs = 0; // the wall clock counts from here: the next event opens a window
    m_running.store(true, std::memory_order_release);
    const auto spin = std::chrono::nanoseconds(m_spinWindow.GetNanoSeconds());
    const auto idleSpin = std::chrono::nanoseconds(m_idleSpin.GetNanoSeconds());
    const int64_t lateNs = m_lateThreshold.GetNanoSeconds();
    const double tsPerNs = static_cast<double>(Time(NanoSeconds(1)).GetTimeStep());
    // No input yet: nothing to spin for until the first.
    Clock::time_point lastInput = m_wallStart - idleSpin - std::chrono::nanoseconds(1);
    Clock::time_point lastPoll = m_wallStart;
    // While the model lags it never catches up with the wall clock, so input is also taken
    // every so often between events (stamped at the model's present): a model that cannot keep
    // real time still hears its hosts, late, and its lag says how late.
    const auto pollWhileLagging = std::chrono::microseconds(100);
    const auto kChainGap = std::chrono::microseconds(5);
    const auto preemptedGap = std::chrono::nanoseconds(m_spinPreemptedGap.GetNanoSeconds());
    const auto backoff = std::chrono::nanoseconds(m_spinBackoff.GetNanoSeconds());
    bool spinning = false; ///< the last turn of the loop chose to spin
    Clock::time_point lastSpinTurn = m_wallStart;
    Clock::time_point spinBackoffUntil = m_wallStart;
    while (!m_stop)
    {
        TakeForeign();
        const bool haveNext = !m_events->IsEmpty();
        const uint64_t nextTs = haveNext ? m_events->PeekNext().key.m_ts : UINT64_MAX;
        // Read once per turn, and kept for the work of the turn's event (WallClockAtEvent). A
        // reading shared by several events would save 5 % of a busy daemon, but after a long
        // event it would understate the lag of those behind it.
        Clock::time_point now = Clock::now();
        m_clockRead = now;
        const Clock::time_point deadline =
            haveNext ? SimToWall(nextTs) : now + std::chrono::milliseconds(100);
        if (haveNext && now >= deadline)
        {
            const int64_t lag =
                std::chrono::duration_cast<std::chrono::nanoseconds>(now - deadline).count();
            ProcessOneEvent();
            spinning = false; // a spin's turns are timed only back to back
            // Publish the lag figures for other threads (status queries).
            const uint64_t n = m_lagEvents.load(std::memory_order_relaxed) + 1;
            m_lagSumNs += static_cast<double>(lag);
            m_lagEvents.store(n, std::memory_order_relaxed);
            m_currentLagNs.store(lag, std::memory_order_relaxed);
            if (lag > m_maxLagNs.load(std::memory_order_relaxed))
            {
                m_maxLagNs.store(lag, std::memory_order_relaxed);
            }
            if (lag > lateNs)
            {
                m_lateEvents.fetch_add(1, std::memory_order_relaxed);
            }
            m_meanLagNs.store(m_lagSumNs / static_cast<double>(n), std::memory_order_relaxed);
            CountLagInWindow(
                std::chrono::duration_cast<std::chrono::nanoseconds>(now - m_wallStart).count(),
                lag, lag > lateNs);
            m_simNowNs.store(static_cast<int64_t>(static_cast<double>(m_currentTs - m_simStart) /
                                                  tsPerNs),
                             std::memory_order_relaxed);
            if (now - lastPoll > pollWhileLagging &&
                (!m_watches.empty() || !m_armedIdleHooks.empty()))
            {
                lastPoll = now;
                RunIdleHooks(0);
                const uint64_t head =
                    m_events->IsEmpty() ? UINT64_MAX : m_events->PeekNext().key.m_ts;
                // Not while events of the present instant are pending: input is stamped
                // strictly between the present and the next event.
                if (head > m_currentTs + 1 && PollInput(now, head))
                {
                    lastInput = Clock::now();
                }
            }
            continue;
        }
        // Caught up with the wall clock: real input is taken now, and then waited for. Not when
        // the next event is due within a few microseconds and input was looked at as recently:
        // a packet crossing the fabric is a chain of events tens to hundreds of nanoseconds
        // apart, and an epoll call between each two of them (a system call, microseconds on a
        // virtual machine) would make the chain many times slower than the time it models.
        if (haveNext && deadline - now < kChainGap && now - lastPoll < kChainGap)
        {
            continue;
        }
        lastPoll = now;
        if (!m_armedIdleHooks.empty())
        {
            RunIdleHooks(
                std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count());
        }
        if (PollInput(now, nextTs))
        {
            lastInput = Clock::now();
            spinning = false;
            continue;
        }
        if (m_foreignCount.load(std::memory_order_acquire) != 0)
        {
            continue;
        }
        // Spinning pays only on a core the simulator has to itself: there it saves the wake-up
        // of a sleeping thread (about 5 us a hop on this virtual machine, whose idle vCPUs halt
        // at once: docs/performance.md, "Latency through the daemon"). On a contended core it is the reverse: the verbs programs and
        // host kernels the fabric serves wait behind the spinning thread for the scheduler's
        // slice, where a thread woken from sleep is run ahead of busy ones. A spin turn that
        // comes long after the previous one shows the thread was preempted: then stop spinning
        // for SpinBackoff.
        if (spinning)
        {
            const auto gap = now - lastSpinTurn;
            if (preemptedGap.count() > 0 && gap > preemptedGap)
            {
                spinBackoffUntil = now + backoff;
                m_spinBackoffs.fetch_add(1, std::memory_order_relaxed);
            }
            else
            {
                m_spinNs.fetch_add(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(gap).count(),
                    std::memory_order_relaxed);
            }
            spinning = false;
        }
        const bool backingOff = now < spinBackoffUntil;
        const auto spinHere = backingOff ? Clock::duration::zero() : Clock::duration(spin);
        const auto idleSpinHere =
            backingOff ? Clock::duration::zero() : Clock::duration(idleSpin);
        if (deadline - now > spinHere && now - lastInput > idleSpinHere)
        {
            // Sleep in epoll until input comes or the spin window before the deadline opens.
            if (PollInput(deadline - spinHere, nextTs))
            {
                lastInput = Clock::now();
            }
        }
        else
        {
            // Spin: the loop polls input without blocking on every turn.
            spinning = true;
            lastSpinTurn = now;
        }
    }
    m_wallAtStopNs.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - m_wallStart).count(),
        std::memory_order_relaxed);
    m_running.store(false, std::memory_order_release);
}

void
EmuRealtimeSimulatorImpl::CountLagInWindow(int64_t wallNs, int64_t lag, bool late)
{
    // Every event passes here: the window's index is worked out once, when it begins.
    if (wallNs >= m_lagWindowEndNs)
    {
        const int64_t window = std::max<int64_t>(1, m_lagWindow.GetNanoSeconds());
        const int64_t index = wallNs / window;
        m_lagWindowEndNs = (index + 1) * window;
        // A new window: the one that ends becomes the last (readers may see the two halfway
        // through the move, a figure off by one window for one status query).
        if (m_lagNow.events.load(std::memory_order_relaxed) > 0)
        {
            m_lagLast.index.store(m_lagNow.index.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
            m_lagLast.events.store(m_lagNow.events.load(std::memory_order_relaxed),
                                   std::memory_order_relaxed);
            m_lagLast.late.store(m_lagNow.late.load(std::memory_order_relaxed),
                                 std::memory_order_relaxed);
            m_lagLast.sumNs.store(m_lagNow.sumNs.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
            m_lagLast.maxNs.store(m_lagNow.maxNs.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
        }
        m_lagNow.events.store(0, std::memory_order_relaxed);
        m_lagNow.late.store(0, std::memory_order_relaxed);
        m_lagNow.sumNs.store(0, std::memory_order_relaxed);
        m_lagNow.maxNs.store(0, std::memory_order_relaxed);
        m_lagNow.index.store(index, std::memory_order_relaxed);
    }
    m_lagNow.events.store(m_lagNow.events.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
    if (late)
    {
        m_lagNow.late.store(m_lagNow.late.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
    }
    m_lagNow.sumNs.store(m_lagNow.sumNs.load(std::memory_order_relaxed) + static_cast<double>(lag),
                         std::memory_order_relaxed);
    if (lag > m_lagNow.maxNs.load(std::memory_order_relaxed))
    {
        m_lagNow.maxNs.store(lag, std::memory_order_relaxed);
    }
}

EmuLagStats
EmuRealtimeSimulatorImpl::GetLagStats() const
{
    EmuLagStats s;
    s.dilation = m_dilation;
    s.events = m_lagEvents.load(std::memory_order_relaxed);
    s.lateEvents = m_lateEvents.load(std::memory_order_relaxed);
    s.currentLagNs = m_currentLagNs.load(std::memory_order_relaxed);
    s.maxLagNs = m_maxLagNs.load(std::memory_order_relaxed);
    s.meanLagNs = m_meanLagNs.load(std::memory_order_relaxed);
    s.simNs = m_simNowNs.load(std::memory_order_relaxed);
    s.wallNs = m_running.load(std::memory_order_acquire)
                   ? std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                                          m_wallStart)
                         .count()
                   : m_wallAtStopNs.load(std::memory_order_relaxed);
    s.foreignEvents = m_foreignTotal.load(std::memory_order_relaxed);
    s.pendingForeign = m_foreignCount.load(std::memory_order_relaxed);
    s.spinNs = m_spinNs.load(std::memory_order_relaxed);
    s.spinBackoffs = m_spinBackoffs.load(std::memory_order_relaxed);
    // The recent past: the window in progress and the whole one before it, each if it had
    // events (an idle fabric's windows have none, and its recent figures are zero).
    const int64_t window = std::max<int64_t>(1, m_lagWindow.GetNanoSeconds());
    const int64_t nowIndex = s.wallNs / window;
    s.recentWindowS = static_cast<double>(s.wallNs - (nowIndex - 1) * window) / 1e9;
    double sum = 0;
    for (const LagWindowFigures* w : {&m_lagNow, &m_lagLast})
    {
        const int64_t index = w->index.load(std::memory_order_relaxed);
        if (index < nowIndex - 1 || index > nowIndex)
        {
            continue;
        }
        s.recentEvents += w->events.load(std::memory_order_relaxed);
        s.recentLateEvents += w->late.load(std::memory_order_relaxed);
        sum += w->sumNs.load(std::memory_order_relaxed);
        s.recentMaxLagNs = std::max(s.recentMaxLagNs, w->maxNs.load(std::memory_order_relaxed));
    }
    s.recentMeanLagNs = s.recentEvents > 0 ? sum / static_cast<double>(s.recentEvents) : 0;
    return s;
}

} // namespace ns3
