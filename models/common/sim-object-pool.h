// A free-list pool for the small per-packet objects of the hot path (IbFrame, EthFrame): the
// per-hop path allocates nothing, and objects still held by events the simulator discarded come
// back at Simulator::Destroy instead of leaking.
#ifndef CNUAS_SIM_OBJECT_POOL_H
#define CNUAS_SIM_OBJECT_POOL_H

#include "fresh-value.h"

#include "ns3/simulator.h"

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace ns3
{

/**
 * \brief Recycles objects of type T, which must be default-constructible, assignable and have a
 * `bool inPool` member (true while the object sits on the free list).
 *
 * The pool owns every object it made and frees none before it is destroyed itself, so a pointer
 * handed out stays valid across Simulator::Destroy. Keep one pool per T with internal linkage
 * (a function-local static in the .cc that owns T's pool): a template-level static would be
 * reached through the GOT from a shared library, a few instructions more on every packet.
 */
/// Whether T has a member `void ResetForReuse()` (SimObjectPool then uses it instead of T()).
template <typename T, typename = void>
struct HasResetForReuse : std::false_type
{
};

template <typename T>
struct HasResetForReuse<T, std::void_t<decltype(std::declval<T&>().ResetForReuse())>>
    : std::true_type
{
};

template <typename T>
class SimObjectPool
{
  public:
    /// A fresh object (all fields as T() makes them, see HasResetForReuse), reused from the free list when it can be.
    T* Allocate()
    {
        if (!m_reclaimScheduled)
        {
            Simulator::ScheduleDestroy(&SimObjectPool::ReclaimAll, this);
            m_reclaimScheduled = true;
        }
        T* obj;
        if (m_free.empty())
        {
            m_all.push_back(std::make_unique<T>());
            obj = m_all.back().get();
        }
        else
        {
            obj = m_free.back();
            m_free.pop_back();
            // Nothing of a previous life may leak into this one: T() assigned, or T's own
            // ResetForReuse() where it has one (the same fields, fewer stores).
            if constexpr (HasResetForReuse<T>::value)
            {
                obj->ResetForReuse();
            }
            else
            {
                *obj = FreshValue<T>();
            }
        }
        obj->inPool = false;
        return obj;
    }

    /**
     * Puts `obj` back on the free list; false if it was there already (a device disposing after
     * Simulator::Destroy finds its frames reclaimed), and then the caller must not touch it.
     * On true the caller lets go of what the object holds (a Packet's bytes) now, rather than
     * when the object is next reused.
     */
    bool Release(T* obj)
    {
        if (obj->inPool)
        {
            return false;
        }
        obj->inPool = true;
        m_free.push_back(obj);
        return true;
    }

    /// Objects made so far (for memory accounting).
    size_t Created() const
    {
        return m_all.size();
    }

  private:
    /// At Simulator::Destroy, objects still referenced only by discarded events (packets in
    /// flight when the run stopped) come back to the pool.
    void ReclaimAll()
    {
        m_reclaimScheduled = false;
        m_free.clear();
        for (auto& obj : m_all)
        {
            *obj = T();
            obj->inPool = true;
            m_free.push_back(obj.get());
        }
    }

    std::vector<std::unique_ptr<T>> m_all; ///< every object ever made (the pool owns them)
    std::vector<T*> m_free;
    bool m_reclaimScheduled = false;
};

} // namespace ns3

#endif
