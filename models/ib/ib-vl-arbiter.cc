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
