// LeanSimulatorImpl against ns-3's DefaultSimulatorImpl: the same calls give the same run, call
// for call (order, clock, contexts, event ids, expiry, delays left, stops, destroy events), and
// SimClock, which reads LeanSimulatorImpl directly while it runs, answers what Simulator:: does.
#include "models/common/cnuas-init.h"
#include "models/common/lean-simulator-impl.h"
#include "models/common/reusable-event.h"
#include "models/common/sim-clock.h"

#include "ns3/global-value.h"
#include "ns3/make-event.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace ns3;

namespace
{

/// A pseudo-random program of simulator calls whose every observable result goes into `log`.
class Workload
{
  public:
    Workload(uint32_t seed, std::vector<std::string>* log)
        : m_rng(seed),
          m_log(log)
    {
    }

    void Start()
    {
        for (int i = 0; i < 40; ++i)
        {
            ScheduleOne();
        }
        // A destroy event, one cancelled and one removed again: only the first runs.
        m_destroy.push_back(Simulator::ScheduleDestroy(&Workload::Destroyed, this, 1));
        EventId cancelled = Simulator::ScheduleDestroy(&Workload::Destroyed, this, 2);
        EventId removed = Simulator::ScheduleDestroy(&Workload::Destroyed, this, 3);
        Note("destroy ids " + std::to_string(cancelled.GetUid()) + " expired " +
             std::to_string(Simulator::IsExpired(cancelled)));
        Simulator::Cancel(cancelled);
        Simulator::Remove(removed);
        Note("after cancel " + std::to_string(Simulator::IsExpired(cancelled)) + " remove " +
             std::to_string(Simulator::IsExpired(removed)));
        Simulator::Stop(PicoSeconds(2500));
    }

    void Destroyed(int which)
    {
        Note("destroy event " + std::to_string(which));
    }

  private:
    void Note(const std::string& what)
    {
        std::ostringstream os;
        os << Simulator::Now().GetPicoSeconds() << " ctx " << Simulator::GetContext() << " n "
           << Simulator::GetEventCount() << " clock " << SimClock::NowPs() << "/"
           << SimClock::NowTimeStep() << "/" << SimClock::Now().GetPicoSeconds() << " ctx "
           << SimClock::Context() << " finished " << SimClock::IsFinished() << ": " << what;
        m_log->push_back(os.str());
    }

    uint32_t Pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(m_rng); }

    void ScheduleOne()
    {
        const int kind = static_cast<int>(Pick(8));
        const uint32_t tag = m_nextTag++;
        // Few distinct delays: many events share a picosecond, so the insertion order decides.
        const Time delay = PicoSeconds(Pick(4) * 50 + (Pick(3) == 0 ? 0 : Pick(2) * 7));
        if (kind == 0)
        {
            EventId id = Simulator::ScheduleNow(&Workload::Run, this, tag);
            m_pending.push_back(id);
            Note("now tag " + std::to_string(tag) + " uid " + std::to_string(id.GetUid()));
        }
        else if (kind == 1)
        {
            const uint32_t context = Pick(5);
            Simulator::ScheduleWithContext(context, delay, &Workload::Run, this, tag);
            Note("ctx " + std::to_string(context) + " tag " + std::to_string(tag));
        }
        else if (kind == 3)
        {
            // Held only as a PendingEvent (cancelled only through it), asked below.
            PendingEvent held;
            held = Simulator::Schedule(delay, &Workload::Run, this, tag);
            m_held.push_back(held);
            Note("held +" + std::to_string(delay.GetPicoSeconds()) + " tag " +
                 std::to_string(tag) + " ts " + std::to_string(held.GetTs()) + " running " +
                 std::to_string(held.IsRunning()));
        }
        else if (kind == 2)
        {
            // SimClock's insertion (straight into LeanSimulatorImpl's queue while it runs) in
            // the running event's context: the same place in the order as ns-3's.
            SimClock::ScheduleWithContext(SimClock::Context(), delay.GetPicoSeconds(),
                                          MakeEvent(&Workload::Run, this, tag));
            Note("simclock +" + std::to_string(delay.GetPicoSeconds()) + " tag " +
                 std::to_string(tag));
        }
        else
        {
            EventId id = Simulator::Schedule(delay, &Workload::Run, this, tag);
            m_pending.push_back(id);
            Note("at +" + std::to_string(delay.GetPicoSeconds()) + " tag " + std::to_string(tag) +
                 " uid " + std::to_string(id.GetUid()) + " ts " + std::to_string(id.GetTs()));
        }
    }

    void Run(uint32_t tag)
    {
        Note("run tag " + std::to_string(tag));
        if (m_ran++ > 3000)
        {
            return; // enough: the queue drains
        }
        const uint32_t more = Pick(4);
        for (uint32_t i = 0; i < more; ++i)
        {
            ScheduleOne();
        }
        if (!m_held.empty())
        {
            PendingEvent& held = m_held[Pick(static_cast<uint32_t>(m_held.size()))];
            std::ostringstream os;
            os << "held ts " << held.GetTs() << " running " << held.IsRunning();
            if (Pick(4) == 0)
            {
                held.Cancel();
                os << " cancelled -> running " << held.IsRunning();
            }
            Note(os.str());
        }
        if (!m_pending.empty())
        {
            // Ask about, cancel or remove an event seen earlier (pending, run or cancelled).
            const EventId& id = m_pending[Pick(static_cast<uint32_t>(m_pending.size()))];
            std::ostringstream os;
            os << "uid " << id.GetUid() << " expired " << Simulator::IsExpired(id) << " left "
               << Simulator::GetDelayLeft(id).GetPicoSeconds() << " running " << id.IsRunning();
            switch (Pick(5))
            {
            case 0:
                Simulator::Cancel(id);
                os << " cancelled";
                break;
            case 1:
                Simulator::Remove(id);
                os << " removed";
                break;
            default:
                break;
            }
            os << " -> expired " << Simulator::IsExpired(id);
            Note(os.str());
        }
    }

    std::mt19937 m_rng;
    std::vector<std::string>* m_log;
    std::vector<EventId> m_pending;
    std::vector<EventId> m_destroy;
    std::vector<PendingEvent> m_held;
    uint32_t m_nextTag = 0;
    uint32_t m_ran = 0;
};

/// Runs the workload on the simulator core `impl`: to its Stop, then again to the end, then
/// Destroy (its destroy events); returns the log.
std::vector<std::string>
RunOn(const std::string& impl, uint32_t seed)
{
    GlobalValue::Bind("SimulatorImplementationType", StringValue(impl));
    std::vector<std::string> log;
    {
        Workload w(seed, &log);
        Simulator::ScheduleNow(&Workload::Start, &w);
        Simulator::Run();
        log.push_back("stopped at " + std::to_string(Simulator::Now().GetPicoSeconds()) +
                      " finished " + std::to_string(Simulator::IsFinished()));
        Simulator::Run();
        log.push_back("ended at " + std::to_string(Simulator::Now().GetPicoSeconds()) +
                      " events " + std::to_string(Simulator::GetEventCount()));
        Simulator::Destroy();
    }
    GlobalValue::Bind("SimulatorImplementationType", StringValue(kCnuasSimulatorImplementation));
    return log;
}

} // namespace

TEST(LeanSimulatorImpl, RunsEveryProgramOfCallsAsDefaultSimulatorImplDoes)
{
    for (uint32_t seed : {1u, 2u, 3u, 42u, 1234u})
    {
        SCOPED_TRACE("seed " + std::to_string(seed));
        const auto lean = RunOn("ns3::LeanSimulatorImpl", seed);
        const auto ns3 = RunOn("ns3::DefaultSimulatorImpl", seed);
        ASSERT_GT(lean.size(), 1000u);
        ASSERT_EQ(lean.size(), ns3.size());
        for (size_t i = 0; i < lean.size(); ++i)
        {
            ASSERT_EQ(lean[i], ns3[i]) << "line " << i;
        }
    }
}

namespace
{

/// An event hands a thread a ScheduleWithContext (as a real host's input thread does) and waits
/// for it: the simulation thread takes that event in after the current one, with the delay
/// counted from then.
std::vector<std::string>
RunWithForeignThread(const std::string& impl)
{
    GlobalValue::Bind("SimulatorImplementationType", StringValue(impl));
    std::vector<std::string> log;
    auto note = [&log](const std::string& what) {
        log.push_back(std::to_string(Simulator::Now().GetPicoSeconds()) + " ctx " +
                      std::to_string(Simulator::GetContext()) + " " + what);
    };
    Simulator::Schedule(PicoSeconds(100), [&]() {
        note("spawn");
        std::thread t([&]() {
            Simulator::ScheduleWithContext(7, PicoSeconds(5), [&]() { note("foreign +5"); });
            Simulator::ScheduleWithContext(8, PicoSeconds(0), [&]() { note("foreign +0"); });
        });
        t.join();
        Simulator::Schedule(PicoSeconds(0), [&]() { note("local +0"); });
    });
    Simulator::Schedule(PicoSeconds(100), [&]() { note("same instant, scheduled first"); });
    Simulator::Schedule(PicoSeconds(105), [&]() { note("at 105, scheduled first"); });
    Simulator::Run();
    log.push_back("events " + std::to_string(Simulator::GetEventCount()));
    Simulator::Destroy();
    GlobalValue::Bind("SimulatorImplementationType", StringValue(kCnuasSimulatorImplementation));
    return log;
}

} // namespace

TEST(LeanSimulatorImpl, TakesEventsFromOtherThreadsAsDefaultSimulatorImplDoes)
{
    const auto lean = RunWithForeignThread("ns3::LeanSimulatorImpl");
    const auto ns3 = RunWithForeignThread("ns3::DefaultSimulatorImpl");
    EXPECT_EQ(lean, ns3);
    ASSERT_EQ(lean.size(), 7u);
    EXPECT_EQ(lean.back(), "events 6");
}

TEST(LeanSimulatorImpl, SimClockReadsTheRunningCoreAndFallsBackOutsideRun)
{
    // Before Run, after it and on ns-3's core SimClock asks Simulator::; inside LeanSimulatorImpl's
    // Run it reads the core itself (Running()), and the two agree at every event.
    for (const std::string impl : {"ns3::LeanSimulatorImpl", "ns3::DefaultSimulatorImpl"})
    {
        SCOPED_TRACE(impl);
        GlobalValue::Bind("SimulatorImplementationType", StringValue(impl));
        const bool lean = impl == "ns3::LeanSimulatorImpl";
        EXPECT_EQ(SimClock::NowPs(), 0);
        EXPECT_EQ(LeanSimulatorImpl::Running(), nullptr);
        int checked = 0;
        int left = 20;
        std::function<void()> step = [&]() {
            EXPECT_EQ(LeanSimulatorImpl::Running() != nullptr, lean);
            EXPECT_EQ(SimClock::NowPs(), Simulator::Now().GetPicoSeconds());
            EXPECT_EQ(SimClock::Now(), Simulator::Now());
            EXPECT_EQ(SimClock::Context(), Simulator::GetContext());
            ++checked;
            if (left > 0)
            {
                Simulator::ScheduleWithContext(static_cast<uint32_t>(left),
                                               PicoSeconds(1000 + 13 * left),
                                               [&step]() { step(); });
                --left;
            }
        };
        Simulator::ScheduleWithContext(99, PicoSeconds(5), [&step]() { step(); });
        Simulator::Stop(PicoSeconds(9000));
        Simulator::Run();
        EXPECT_EQ(LeanSimulatorImpl::Running(), nullptr);
        EXPECT_EQ(SimClock::NowPs(), 9000);
        EXPECT_TRUE(SimClock::IsFinished()); // stopped (ns-3: until the next Run)
        Simulator::Run();
        EXPECT_EQ(checked, 21);
        EXPECT_EQ(SimClock::NowPs(), Simulator::Now().GetPicoSeconds());
        EXPECT_TRUE(SimClock::IsFinished());
        Simulator::Destroy();
        EXPECT_EQ(SimClock::NowPs(), 0); // a new simulation starts at 0
        Simulator::Destroy();
    }
    GlobalValue::Bind("SimulatorImplementationType", StringValue(kCnuasSimulatorImplementation));
}

namespace
{

/// A port-like owner that re-plans one wake-up at a time, through ReusableEvent or through
/// Simulator::Schedule and EventId::Cancel; every call is logged with the clock and the count.
class Waker
{
  public:
    Waker(bool reusable, uint32_t seed, std::vector<std::string>* log)
        : m_reusable(reusable),
          m_rng(seed),
          m_log(log)
    {
    }

    void Start()
    {
        for (int i = 0; i < 2000; ++i)
        {
            // Other events around the wake-ups, some at the same picoseconds.
            Simulator::Schedule(PicoSeconds(Pick(40) * 25), &Waker::Poke, this);
        }
    }

    void Fire()
    {
        Note("fire");
        m_wakeAt = -1;
        if (Pick(3) == 0)
        {
            Plan(Pick(5) * 25); // sometimes re-plan from inside the call
        }
    }

  private:
    uint32_t Pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(m_rng); }

    void Note(const std::string& what)
    {
        m_log->push_back(std::to_string(Simulator::Now().GetPicoSeconds()) + " n " +
                         std::to_string(Simulator::GetEventCount()) + ": " + what);
    }

    void Poke()
    {
        switch (Pick(4))
        {
        case 0:
            if (m_wakeAt >= 0)
            {
                Note("cancel");
                m_reusable ? m_reusableWake.Cancel() : m_eventWake.Cancel();
                m_wakeAt = -1;
            }
            break;
        default:
            Plan(Pick(6) * 25);
            break;
        }
    }

    /// An earlier wake-up replaces a later one (as the ports' ScheduleWake does).
    void Plan(int64_t delayPs)
    {
        const int64_t at = Simulator::Now().GetPicoSeconds() + delayPs;
        if (m_wakeAt >= 0)
        {
            if (m_wakeAt <= at)
            {
                return;
            }
            m_reusable ? m_reusableWake.Cancel() : m_eventWake.Cancel();
        }
        m_wakeAt = at;
        Note("plan +" + std::to_string(delayPs));
        if (m_reusable)
        {
            m_reusableWake.Schedule(delayPs);
        }
        else
        {
            m_eventWake = Simulator::Schedule(PicoSeconds(delayPs), &Waker::Fire, this);
        }
    }

    bool m_reusable;
    std::mt19937 m_rng;
    std::vector<std::string>* m_log;
    int64_t m_wakeAt = -1;
    ReusableEvent<Waker, &Waker::Fire> m_reusableWake{this};
    EventId m_eventWake;
};

std::vector<std::string>
RunWaker(const std::string& impl, bool reusable, uint32_t seed)
{
    GlobalValue::Bind("SimulatorImplementationType", StringValue(impl));
    std::vector<std::string> log;
    {
        Waker w(reusable, seed, &log);
        Simulator::ScheduleNow(&Waker::Start, &w);
        Simulator::Run();
        log.push_back("events " + std::to_string(Simulator::GetEventCount()));
        Simulator::Destroy();
    }
    GlobalValue::Bind("SimulatorImplementationType", StringValue(kCnuasSimulatorImplementation));
    return log;
}

} // namespace

TEST(ReusableEvent, RunsAsSimulatorScheduleAndEventIdCancelDo)
{
    // The same re-planned wake-ups through ReusableEvent and through Schedule/Cancel: the same
    // calls at the same picoseconds, and the same event counts (a cancelled call still runs as
    // a no-op event), on Cnuas's core and on ns-3's.
    for (const std::string impl : {"ns3::LeanSimulatorImpl", "ns3::DefaultSimulatorImpl"})
    {
        for (uint32_t seed : {1u, 7u, 99u})
        {
            SCOPED_TRACE(impl + " seed " + std::to_string(seed));
            const auto reusable = RunWaker(impl, true, seed);
            const auto eventId = RunWaker(impl, false, seed);
            ASSERT_GT(reusable.size(), 500u);
            ASSERT_EQ(reusable.size(), eventId.size());
            for (size_t i = 0; i < reusable.size(); ++i)
            {
                ASSERT_EQ(reusable[i], eventId[i]) << "line " << i;
            }
        }
    }
}
