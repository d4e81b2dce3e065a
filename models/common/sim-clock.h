// The simulated clock and the current event's context for the models' per-packet paths: what
// Simulator::Now() and Simulator::GetContext() answer, read straight from Cnuas's simulator core
// while it runs the simulation.
#ifndef CNUAS_SIM_CLOCK_H
#define CNUAS_SIM_CLOCK_H

#include "lean-simulator-impl.h"

#include "ns3/event-id.h"
#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"

#include <cstdint>

namespace ns3
{

/**
 * \brief Simulator::Now(), Simulator::GetContext() and Simulator::ScheduleWithContext() for the
 * per-packet paths, without ns-3's two calls through the simulator singleton.
 *
 * Why: Simulator::Now() is a call into libns3-core, a check that the singleton exists, a virtual
 * call to the core and a Time built and destroyed (ns3::Time's constructor and destructor each
 * test a global): about 50 instructions. A RoCE run reads the clock about twice per event
 * (callgrind, WebSearch 30 % under DCQCN: 16.9 M calls in 1 ms of simulated time, with as many
 * GetContext/ScheduleWithContext pairs for the frames' arrivals), so the clock alone was about
 * 5 % of all instructions.
 *
 * While LeanSimulatorImpl runs the simulation (LeanSimulatorImpl::Running, set for the duration
 * of its Run), these read its clock and context and insert into its queue directly: the same
 * values and the same insertion order as the Simulator:: calls, which is what they call
 * otherwise (another simulator core, the emulation's real-time one, set-up before Run, reads
 * after it, or a time resolution other than Cnuas's picoseconds).
 */
class SimClock
{
  public:
    /// Simulator::Now().GetPicoSeconds().
    static int64_t NowPs()
    {
        if (const LeanSimulatorImpl* core = LeanSimulatorImpl::Running())
        {
            return static_cast<int64_t>(core->CurrentTimeStep());
        }
        return Simulator::Now().GetPicoSeconds();
    }

    /// Simulator::Now().GetTimeStep().
    static int64_t NowTimeStep()
    {
        if (const LeanSimulatorImpl* core = LeanSimulatorImpl::Running())
        {
            return static_cast<int64_t>(core->CurrentTimeStep());
        }
        return Simulator::Now().GetTimeStep();
    }

    /// Simulator::Now().
    static Time Now()
    {
        if (const LeanSimulatorImpl* core = LeanSimulatorImpl::Running())
        {
            return TimeStep(core->CurrentTimeStep());
        }
        return Simulator::Now();
    }

    /// Simulator::IsFinished().
    static bool IsFinished()
    {
        if (const LeanSimulatorImpl* core = LeanSimulatorImpl::Running())
        {
            return core->IsFinished();
        }
        return Simulator::IsFinished();
    }

    /// Simulator::GetContext().
    static uint32_t Context()
    {
        if (const LeanSimulatorImpl* core = LeanSimulatorImpl::Running())
        {
            return core->CurrentContext();
        }
        return Simulator::GetContext();
    }

    /// Simulator::ScheduleWithContext(context, PicoSeconds(delayPs), event); delayPs >= 0.
    static void ScheduleWithContext(uint32_t context, int64_t delayPs, EventImpl* event)
    {
        if (LeanSimulatorImpl* core = LeanSimulatorImpl::Running())
        {
            core->ScheduleWithContextSteps(context, static_cast<uint64_t>(delayPs), event);
            return;
        }
        Simulator::ScheduleWithContext(context, PicoSeconds(delayPs), event);
    }
};

/**
 * \brief An EventId for an event that its holder cancels only through it: EventId's
 * Cancel, IsRunning and GetTs, with IsRunning answered without asking the simulator.
 *
 * Why: EventId::IsRunning() goes through five calls into libns3-core (IsExpired, the
 * singleton, the core's IsExpired, and accessors that each check a log component): about 190
 * instructions. The RDMA engine asks it of its pump and its retry timers a few times per packet
 * (3.6 M calls in 1 ms of the WebSearch run, 4 % of all instructions). Kept beside the id: its
 * timestamp and insertion number (taken once, when it is set) and whether it was cancelled here;
 * while LeanSimulatorImpl runs, "still to run" is the core's own rule (QueueSimulatorImpl::
 * IsExpired): not cancelled, and the clock not yet past (timestamp, insertion number).
 * Otherwise it asks the EventId. An event cancelled through another copy of its EventId would
 * go unseen here: the holder keeps the only one.
 */
class PendingEvent
{
  public:
    PendingEvent() = default;

    /// Holds the id of an event just scheduled (Simulator::Schedule's answer).
    PendingEvent& operator=(const EventId& id)
    {
        m_id = id;
        m_ts = id.GetTs();
        m_uid = id.GetUid();
        m_cancelled = false;
        return *this;
    }

    /// EventId::Cancel. An event that has run, or was never set or already cancelled, has
    /// nothing to cancel (EventId::Cancel finds it expired): answered here, without the five
    /// calls into libns3-core that EventId::Cancel makes to learn it (about 140 instructions;
    /// the RDMA engine cancels its ACK timer with every ACK it sends, and the rate limiter's
    /// wake-up with every packet it paces). One still to run is marked cancelled as the core
    /// would (QueueSimulatorImpl::Cancel).
    void Cancel()
    {
        if (LeanSimulatorImpl::Running())
        {
            if (IsRunning())
            {
                m_id.PeekEventImpl()->Cancel();
            }
        }
        else
        {
            m_id.Cancel();
        }
        m_cancelled = true;
    }

    /// EventId::IsRunning: the event is still to run.
    bool IsRunning() const
    {
        if (const LeanSimulatorImpl* core = LeanSimulatorImpl::Running())
        {
            if (m_cancelled || m_uid < EventId::UID::VALID)
            {
                return false; // cancelled, or never set (or a destroy event: none is held here)
            }
            const uint64_t now = core->CurrentTimeStep();
            return m_ts > now || (m_ts == now && m_uid > core->CurrentUid());
        }
        return m_id.IsRunning();
    }

    /// EventId::GetTs (time steps).
    uint64_t GetTs() const
    {
        return m_ts;
    }

  private:
    EventId m_id;
    uint64_t m_ts = 0;
    uint32_t m_uid = EventId::UID::INVALID;
    bool m_cancelled = false;
};

} // namespace ns3

#endif
