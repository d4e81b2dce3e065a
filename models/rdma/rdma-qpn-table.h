// A table of per-QP pointers indexed by QP number, for the lookups every packet makes (the QP
// of a received packet, the engine's context of a QP), beside the map that owns the objects.
#ifndef CNUAS_RDMA_QPN_TABLE_H
#define CNUAS_RDMA_QPN_TABLE_H

#include <cstdint>
#include <vector>

namespace ns3
{

/**
 * \brief Pointers to T by QP number, for numbers in a window that starts at the first number
 * stored; the owner keeps its map for the rest.
 *
 * Why: a device gives QP numbers counting up from its FirstQpNumber (RdmaDevice::NewQpn), so
 * the numbers alive are nearly dense. A lookup here is one load, where the std::map of the
 * device walked a tree whose nodes a busy NIC's QPs had scattered out of the caches, and an
 * unordered_map divided by its bucket count and walked a bucket (perf: RdmaDevice::LookupQp
 * 3 % of a RoCE run's time). The window starts at the first number stored, not at 0, so that a
 * device whose numbers start at 0x100 keeps no 256 empty slots per table.
 *
 * Lookup answers whether the table decides: true with the pointer (null: no such QP) for a
 * number in the window, false outside it (a number below the first, or 2^16 beyond it, after
 * the 24-bit numbers wrapped): then the owner looks in its map. Not owning.
 */
template <typename T>
class RdmaQpnTable
{
  public:
    /// Numbers from the first stored that the table holds.
    static constexpr uint32_t kWindow = 1u << 16;

    bool Lookup(uint32_t qpn, T** out) const
    {
        const uint32_t i = qpn - m_base; // wraps for qpn < m_base: outside the window
        if (!m_started || i >= kWindow)
        {
            return false;
        }
        *out = i < m_slots.size() ? m_slots[i] : nullptr;
        return true;
    }

    /// Stores `p` for `qpn` if the number is in the window (which the first call places).
    void Set(uint32_t qpn, T* p)
    {
        if (!m_started)
        {
            m_started = true;
            m_base = qpn;
        }
        const uint32_t i = qpn - m_base;
        if (i >= kWindow)
        {
            return;
        }
        if (i >= m_slots.size())
        {
            m_slots.resize(i + 1, nullptr);
        }
        m_slots[i] = p;
    }

    /// Forgets `qpn` (no effect outside the window).
    void Erase(uint32_t qpn)
    {
        const uint32_t i = qpn - m_base;
        if (m_started && i < m_slots.size())
        {
            m_slots[i] = nullptr;
        }
    }

    void Clear()
    {
        m_slots.clear();
        m_started = false;
        m_base = 0;
    }

  private:
    std::vector<T*> m_slots;
    uint32_t m_base = 0;
    bool m_started = false;
};

} // namespace ns3

#endif
