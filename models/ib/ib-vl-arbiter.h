// Output VL arbitration, IBA vol. 1 §7.6.9: a high- and a low-priority table of (VL, weight)
// entries and LimitOfHighPriority, as the VLArbitrationTable attribute (§14.2.5.9) configures.
#ifndef CNUAS_IB_VL_ARBITER_H
#define CNUAS_IB_VL_ARBITER_H

#include <cstdint>
#include <functional>
#include <vector>

namespace ns3
{

/// One VLArbitrationTable entry: a VL and its weight in 64-byte units (0 = entry skipped).
struct IbVlArbEntry
{
    uint8_t vl = 0;
    uint8_t weight = 0;
};

/**
 * \brief The VL arbiter of one output port.
 *
 * VL15 is not in the tables: it always goes first (§7.6.9). Among data VLs the high-priority
 * table is served while it has an eligible VL and fewer than LimitOfHighPriority x 4096 bytes of
 * high-priority data have gone since the last low-priority packet (255 = unlimited, 0 = one
 * packet); then the low-priority table. Within a table the current entry's VL sends while its
 * weight lasts (a packet may start whenever weight remains, and its size is subtracted), then
 * the next entry takes over; an entry whose VL has nothing eligible is skipped.
 */
class IbVlArbiter
{
  public:
    /// Equal weights (64 x 64 B) for VLs 0..n-1 in the low table, empty high table.
    void SetDefault(uint8_t operationalDataVls);
    void SetTables(std::vector<IbVlArbEntry> high, std::vector<IbVlArbEntry> low,
                   uint8_t limitOfHighPriority);
    const std::vector<IbVlArbEntry>& High() const { return m_high; }
    const std::vector<IbVlArbEntry>& Low() const { return m_low; }
    uint8_t LimitOfHighPriority() const { return m_limit; }

    /**
     * Chooses the data VL to send next. `eligible(vl)` says whether the VL has a packet that can
     * go now (data and credit); returns -1 if none. Does not change state: call Commit() with the
     * chosen VL and the packet's size once it is sent.
     */
    template <typename Eligible>
    int Select(Eligible&& eligible) const;
    /// Account a packet of `bytes` sent on `vl` (which Select returned).
    void Commit(uint8_t vl, uint32_t bytes);

  private:
    struct TableState
    {
        size_t index = 0;
        int64_t remaining = 0; ///< bytes left in the current entry's weight
        bool fresh = true;     ///< `remaining` not yet loaded for `index`
    };
    /// First eligible entry from the table's current position, or -1.
    template <typename Eligible>
    int Scan(const std::vector<IbVlArbEntry>& table, const TableState& st, Eligible& eligible,
             size_t* entry) const;
    void Advance(const std::vector<IbVlArbEntry>& table, TableState& st, size_t entry,
                 uint32_t bytes);

    std::vector<IbVlArbEntry> m_high;
    std::vector<IbVlArbEntry> m_low;
    uint8_t m_limit = 255;
    TableState m_highState;
    TableState m_lowState;
    uint64_t m_highBytesSinceLow = 0;
    mutable bool m_lastFromHigh = false;
    mutable size_t m_lastEntry = 0;
};

template <typename Eligible>
int
IbVlArbiter::Scan(const std::vector<IbVlArbEntry>& table, const TableState& st,
                  Eligible& eligible, size_t* entry) const
{
    const size_t n = table.size();
    for (size_t i = 0; i < n; ++i)
    {
        size_t idx = (st.index + i) % n;
        const IbVlArbEntry& e = table[idx];
        if (e.weight == 0 || e.vl >= 15)
        {
            continue;
        }
        // The current entry keeps the turn only while weight remains; any other entry starts
        // with its full weight.
        if (i == 0 && !st.fresh && st.remaining <= 0)
        {
            continue;
        }
        if (eligible(e.vl))
        {
            *entry = idx;
            return e.vl;
        }
    }
    return -1;
}

template <typename Eligible>
int
IbVlArbiter::Select(Eligible&& eligible) const
{
    size_t entry = 0;
    int lowVl = Scan(m_low, m_lowState, eligible, &entry);
    size_t lowEntry = entry;
    // High priority is served unless it has used its allowance while low-priority data waits.
    bool highAllowed = m_limit == 255 || lowVl < 0 ||
                       (m_limit == 0 ? m_highBytesSinceLow == 0
                                     : m_highBytesSinceLow < uint64_t(m_limit) * 4096);
    if (highAllowed && !m_high.empty())
    {
        int highVl = Scan(m_high, m_highState, eligible, &entry);
        if (highVl >= 0)
        {
            m_lastFromHigh = true;
            m_lastEntry = entry;
            return highVl;
        }
    }
    if (lowVl >= 0)
    {
        m_lastFromHigh = false;
        m_lastEntry = lowEntry;
    }
    return lowVl;
}

} // namespace ns3

#endif
