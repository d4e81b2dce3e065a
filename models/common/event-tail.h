// Work for the current instant that runs at the end of the current event instead of in an event
// of its own, where no run of the simulation could tell the difference.
#ifndef CNUAS_EVENT_TAIL_H
#define CNUAS_EVENT_TAIL_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ns3
{

/**
 * \brief Runs "now" work at the end of the current event when it would be the next event.
 *
 * Why: a NIC's transmit scheduler (RdmaEngine::Pump) is asked to run "now" two or three times
 * per packet (a transmitter that took a frame, a pacing timer, a packet that arrived), and
 * Simulator::ScheduleNow makes each of those a whole event: an EventImpl, an EventId, an entry in
 * the event queue and a turn of the simulator's loop, and the event count of a run (events per
 * packet, issue 17) counts it.
 *
 * When nothing else is pending for the current instant, an event scheduled now is the very next
 * one to run: ns-3 orders events by timestamp, then by insertion number (Scheduler::EventKey),
 * and every event at this instant still to come would be inserted after it. Running the work
 * right after the current event's handler returns is then the same run, event for event: the
 * same state when it starts, the same order of everything it and the handler schedule (their
 * insertion numbers all shift by one, which keeps their order). TryDefer grants exactly that
 * case and nothing else, and asks the event queue (FifoHeapScheduler::NothingElsePendingNow)
 * whether it holds; with another scheduler it always declines and the caller schedules an
 * event as before. Work deferred while earlier deferred work waits queues behind it, in order,
 * as the events would.
 *
 * "The end of the current event" is the end of the outermost Scope: the handlers that may defer
 * work (a port's arrival and wake-up, the NIC scheduler's pump and pacing timer) open one.
 * Outside any Scope nothing is deferred. If the simulation was stopped during the event
 * (Simulator::Stop, or nothing left to run) the deferred work is scheduled as ordinary events at
 * the end of it instead, so that it stays pending exactly as those events would.
 */
class EventTail
{
  public:
    using Function = void (*)(void* object);

    /// Marks an event handler whose end runs the work deferred during it.
    class Scope
    {
      public:
        Scope()
        {
            ++s_depth;
        }
        ~Scope()
        {
            if (--s_depth == 0 && !s_pending.empty() && !s_flushing)
            {
                Flush();
            }
        }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;
    };

    /**
     * Queues fn(object) to run at the end of the current event if that is equivalent to
     * Simulator::ScheduleNow (see the class comment). Returns false, queuing nothing, otherwise:
     * the caller then schedules its event.
     */
    static bool TryDefer(Function fn, void* object);

    /// Drops the deferred work of object (it is being disposed).
    static void Forget(const void* object);

    /// Deferred calls run so far (tests compare it with the events saved).
    static uint64_t GetRunCount()
    {
        return s_runs;
    }

  private:
    struct Entry
    {
        Function fn;
        void* object;
    };

    static void Flush();

    static inline unsigned s_depth = 0;
    static inline bool s_flushing = false;
    static inline std::vector<Entry> s_pending;
    static inline size_t s_next = 0; ///< next entry of s_pending to run during a flush
    static inline uint64_t s_runs = 0;
};

} // namespace ns3

#endif
