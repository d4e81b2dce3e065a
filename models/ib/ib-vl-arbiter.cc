#include "ib-vl-arbiter.h"

namespace ns3
{

void
IbVlArbiter::SetDefault(uint8_t n)
{
    std::vector<IbVlArbEntry> low;
    for (uint8_t vl = 0; vl < n; ++vl)
    {
        low.push_back({vl, 64});
    }
    SetTables({}, low, 255);
}

void
IbVlArbiter::SetTables(std::vector<IbVlArbEntry> high, std::vector<IbVlArbEntry> low,
                       uint8_t limit)
{
    m_high = std::move(high);
    m_low = std::move(low);
    m_limit = limit;
    m_highState = TableState();
    m_lowState = TableState();
    m_highBytesSinceLow = 0;
}

int
IbVlArbiter::Scan(const std::vector<IbVlArbEntry>& table, const TableState& st,
                  const std::function<bool(uint8_t)>& eligible, size_t* entry) const
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

int
IbVlArbiter::Select(const std::function<bool(uint8_t)>& eligible) const
{
    size_t entry = 0;
    int lowVl = Scan(m_low, m_lowState, eligible, &entry);
    size_t lowEntry = entry;
    // High priority is served unless it has used its allowance while low-priority data waits.
    bool highAllowed = m_limit == 255 || lowVl < 0 ||
                       (m_limit == 0 ? m_highBytesSinceLow == 0
                                     : m_highBytesSinceLow < uint64_t(m_limit) * 4096);
    if (highAllowed)
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

void
IbVlArbiter::Advance(const std::vector<IbVlArbEntry>& table, TableState& st, size_t entry,
                     uint32_t bytes)
{
    if (entry != st.index || st.fresh || st.remaining <= 0)
    {
        st.index = entry;
        st.remaining = int64_t(table[entry].weight) * 64;
    }
    st.fresh = false;
    st.remaining -= bytes;
    if (st.remaining <= 0)
    {
        st.index = (entry + 1) % table.size();
        st.fresh = true;
    }
}

void
IbVlArbiter::Commit(uint8_t vl, uint32_t bytes)
{
    if (m_lastFromHigh)
    {
        Advance(m_high, m_highState, m_lastEntry, bytes);
        m_highBytesSinceLow += bytes;
    }
    else if (!m_low.empty())
    {
        Advance(m_low, m_lowState, m_lastEntry, bytes);
        m_highBytesSinceLow = 0;
    }
}

} // namespace ns3
