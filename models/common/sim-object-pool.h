// A free-list pool for the small per-packet objects of the hot path (IbFrame, EthFrame): the
// per-hop path allocates nothing, and objects still held by events the simulator discarded come
// back at Simulator::Destroy instead of leaking.
#ifndef CNUAS_SIM_OBJECT_POOL_H
#define CNUAS_SIM_OBJECT_POOL_H

#include "ns3/simulator.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace ns3
{

/**
 * \brief Recycles objects of type T, which must be default-constructible, assignable and have a
 * `bool inPool` member (true while the object sits on the free list).
 *
 * One pool per T for the whole process. Objects are never freed before exit: the pool owns every
 * one it made, so a pointer handed out stays valid across Simulator::Destroy.
 */
template <typename T>
class SimObjectPool
{
  public:
    /// A fresh object (all fields as T() makes them), reused from the free list when it can be.
    static T* Allocate()
    {
        State& p = The();
        if (!p.reclaimScheduled)
        {
            Simulator::ScheduleDestroy(&ReclaimAll);
            p.reclaimScheduled = true;
        }
        T* obj;
        if (p.free.empty())
        {
            p.all.push_back(std::make_unique<T>());
            obj = p.all.back().get();
        }
        else
        {
            obj = p.free.back();
            p.free.pop_back();
            *obj = T(); // nothing of a previous life may leak into this one
        }
        obj->inPool = false;
        return obj;
    }

    /**
     * Puts `obj` back on the free list. `dropRefs(*obj)` runs first so that what the object holds
     * (a Packet's bytes) is let go now, not when the object is next reused. A second release of
     * the same object is ignored: a device disposing after Simulator::Destroy finds its frames
     * already reclaimed.
     */
    template <typename DropRefs>
    static void Release(T* obj, DropRefs dropRefs)
    {
        if (obj->inPool)
        {
            return;
        }
        dropRefs(*obj);
        obj->inPool = true;
        The().free.push_back(obj);
    }

    /// Objects made so far (for memory accounting).
    static size_t Created()
    {
        return The().all.size();
    }

  private:
    struct State
    {
        std::vector<std::unique_ptr<T>> all; ///< every object ever made (the pool owns them)
        std::vector<T*> free;
        bool reclaimScheduled = false;
    };

    static State& The()
    {
        static State state;
        return state;
    }

    /// At Simulator::Destroy, objects still referenced only by discarded events (packets in
    /// flight when the run stopped) come back to the pool.
    static void ReclaimAll()
    {
        State& p = The();
        p.reclaimScheduled = false;
        p.free.clear();
        for (auto& obj : p.all)
        {
            *obj = T();
            obj->inPool = true;
            p.free.push_back(obj.get());
        }
    }
};

} // namespace ns3

#endif
