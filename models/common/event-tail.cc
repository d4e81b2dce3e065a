#include "event-tail.h"

#include "fifo-heap-scheduler.h"
#include "sim-clock.h"

#include "ns3/simulator.h"


namespace ns3
{

bool
EventTail::TryDefer(Function fn, void* object)
{
    // The last check guards against a FifoHeapScheduler that some code drives outside the
    // simulation (a test of the scheduler itself): its clock is not the simulator's.
    if ((s_depth == 0 && !s_flushing) || !FifoHeapScheduler::NothingElsePendingNow() ||
        static_cast<int64_t>(FifoHeapScheduler::DrivingNow()) != SimClock::NowTimeStep())
    {
        return false;
    }
    s_pending.push_back(Entry{fn, object});
    return true;
}

void
EventTail::Forget(const void* object)
{
    for (size_t i = s_next; i < s_pending.size(); ++i)
    {
        if (s_pending[i].object == object)
        {
            s_pending[i].fn = nullptr;
        }
    }
}

void
EventTail::Flush()
{
    s_flushing = true;
    // Entries deferred by the work run here join the back of the list (TryDefer), in the order
    // their events would have had.
    while (s_next < s_pending.size())
    {
        const Entry e = s_pending[s_next++];
        if (!e.fn)
        {
            continue;
        }
        if (SimClock::IsFinished())
        {
            // Stopped during the event (or nothing left to run): the work stays pending as the
            // events would have, in the same order.
            Simulator::ScheduleNow(e.fn, e.object);
            continue;
        }
        ++s_runs;
        e.fn(e.object);
    }
    s_pending.clear();
    s_next = 0;
    s_flushing = false;
}

} // namespace ns3
