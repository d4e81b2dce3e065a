// A member-function event that a port schedules and cancels over and over (its transmitter's
// wake-up) without allocating an event per schedule.
#ifndef CNUAS_REUSABLE_EVENT_H
#define CNUAS_REUSABLE_EVENT_H

#include "sim-clock.h"

#include "ns3/event-impl.h"

#include <cstdint>
#include <vector>

namespace ns3
{

/**
 * \brief Schedules `(owner->*Fn)()` at most once at a time, reusing its event objects.
 *
 * Why: Simulator::Schedule(delay, &T::Fn, owner) allocates an event object (MakeEvent), builds
 * an EventId, and frees the object after it ran; a busy port's transmitter wakes about once per
 * packet, so that was about 8 % of an InfiniBand fabric's instructions (callgrind, k=8
 * all-to-all: the allocation and free, EventImpl's constructor and destructor in libns3, the
 * EventId). Here the objects stay with the owner and are scheduled again once the simulator has
 * let go of them (reference count back to the owner's one).
 *
 * The same run as Simulator::Schedule and EventId::Cancel: Schedule inserts in the current
 * context with the next insertion number (SimClock::ScheduleWithContext); Cancel leaves the
 * pending event in the queue, to run as a no-op at its time, as a cancelled ns-3 event does
 * (and it counts in Simulator::GetEventCount as one does). Destroying the holder cancels the
 * pending event; the simulator frees that object when it drops it.
 */
template <typename T, void (T::*Fn)()>
class ReusableEvent
{
  public:
    explicit ReusableEvent(T* owner)
        : m_owner(owner)
    {
    }
    ReusableEvent(const ReusableEvent&) = delete;
    ReusableEvent& operator=(const ReusableEvent&) = delete;

    ~ReusableEvent()
    {
        Cancel();
        for (Impl* impl : m_impls)
        {
            impl->home = nullptr;
            impl->Unref();
        }
    }

    /// Schedules the call `delayPs` picoseconds from now (delayPs >= 0). The previous one, if
    /// pending, stays pending: cancel it first to replace it.
    void Schedule(int64_t delayPs)
    {
        Impl* impl = nullptr;
        for (Impl* candidate : m_impls)
        {
            if (candidate->GetReferenceCount() == 1) // only ours: the simulator let go of it
            {
                impl = candidate;
                break;
            }
        }
        if (!impl)
        {
            impl = new Impl(); // reference count 1: ours
            impl->home = this;
            m_impls.push_back(impl);
        }
        impl->live = true;
        impl->Ref(); // the simulator's, dropped after it ran the event
        m_pending = impl;
        SimClock::ScheduleWithContext(SimClock::Context(), delayPs, impl);
    }

    /// The pending call, if any, will not happen (EventId::Cancel).
    void Cancel()
    {
        if (m_pending)
        {
            m_pending->live = false;
            m_pending = nullptr;
        }
    }

  private:
    class Impl : public EventImpl
    {
      public:
        ReusableEvent* home = nullptr;
        bool live = false;

      protected:
        void Notify() override
        {
            if (!live || !home)
            {
                return; // cancelled: a no-op at its time
            }
            live = false;
            if (home->m_pending == this)
            {
                home->m_pending = nullptr;
            }
            (home->m_owner->*Fn)();
        }
    };

    T* m_owner;
    Impl* m_pending = nullptr;    ///< the scheduled call not yet run or cancelled
    std::vector<Impl*> m_impls;   ///< every object made (one reference each is ours)
};

} // namespace ns3

#endif
