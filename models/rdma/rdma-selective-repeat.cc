// The state rules of IRN-style selective repeat (see rdma-selective-repeat.h).
#include "rdma-selective-repeat.h"

#include "rdma-qp-context.h"

#include <algorithm>

namespace ns3
{

void
RdmaSelectiveRepeat::Advance(uint32_t base)
{
    if (!m_haveBase)
    {
        m_haveBase = true;
        m_base = base;
        return;
    }
    const int32_t d = RdmaPsnDiff(base, m_base);
    if (d <= 0)
    {
        return;
    }
    const uint32_t n = static_cast<uint32_t>(d);
    const uint32_t drop = std::min<uint32_t>(n, static_cast<uint32_t>(m_flags.size()));
    m_flags.erase(m_flags.begin(), m_flags.begin() + drop);
    m_sackEnd = m_sackEnd > n ? m_sackEnd - n : 0;
    m_scan = m_scan > n ? m_scan - n : 0;
    m_base = base;
}

void
RdmaSelectiveRepeat::Grow(uint32_t n)
{
    if (m_flags.size() < n)
    {
        m_flags.resize(n, 0);
    }
}

bool
RdmaSelectiveRepeat::OnSack(uint32_t psn, uint32_t sentEnd, uint32_t window)
{
    const int32_t off = RdmaPsnDiff(psn, m_base);
    // A SACK names a packet that was sent and is not yet cumulatively acknowledged; anything
    // else is stale or malformed.
    if (!m_haveBase || off < 0 || RdmaPsnDiff(psn, sentEnd) >= 0 ||
        static_cast<uint32_t>(off) >= window)
    {
        return false;
    }
    const uint32_t i = static_cast<uint32_t>(off);
    Grow(i + 1);
    m_flags[i] |= kSacked;
    m_sackEnd = std::max(m_sackEnd, i + 1);
    return true;
}

void
RdmaSelectiveRepeat::OnTimeout(uint32_t lostEnd)
{
    const int32_t n = RdmaPsnDiff(lostEnd, m_base);
    if (!m_haveBase || n <= 0)
    {
        return;
    }
    Grow(static_cast<uint32_t>(n));
    for (int32_t i = 0; i < n; ++i)
    {
        if (!(m_flags[i] & kSacked))
        {
            m_flags[i] = kLost;
        }
    }
    m_scan = 0;
}

bool
RdmaSelectiveRepeat::NextLost(uint32_t& psn)
{
    const uint32_t end = static_cast<uint32_t>(m_flags.size());
    for (uint32_t i = m_scan; i < end; ++i)
    {
        const uint8_t f = m_flags[i];
        // IRN §3.1: lost = not SACKed while a later packet is; or marked by a timeout.
        if (!(f & kSacked) && !(f & kResent) && (i < m_sackEnd || (f & kLost)))
        {
            // Entries at or above m_sackEnd may turn lost with a later SACK: never skip them.
            m_scan = std::min(i, m_sackEnd);
            psn = RdmaPsnAdd(m_base, i);
            return true;
        }
    }
    m_scan = std::min(end, m_sackEnd);
    return false;
}

void
RdmaSelectiveRepeat::MarkResent(uint32_t psn, uint32_t count)
{
    const int32_t off = RdmaPsnDiff(psn, m_base);
    if (!m_haveBase || off < 0)
    {
        return;
    }
    Grow(static_cast<uint32_t>(off) + count);
    for (uint32_t i = 0; i < count; ++i)
    {
        uint8_t& f = m_flags[off + i];
        f = static_cast<uint8_t>((f | kResent) & ~kLost);
    }
}

bool
RdmaSelectiveRepeat::IsSacked(uint32_t psn) const
{
    const int32_t off = RdmaPsnDiff(psn, m_base);
    return m_haveBase && off >= 0 && static_cast<uint32_t>(off) < m_flags.size() &&
           (m_flags[off] & kSacked);
}

void
RdmaSelectiveRepeat::ClearRequester()
{
    m_flags.clear();
    m_sackEnd = 0;
    m_scan = 0;
}

bool
RdmaSelectiveRepeat::Hold(uint32_t psn, RdmaHeldRequest&& r)
{
    return m_held.emplace(psn, std::move(r)).second;
}

bool
RdmaSelectiveRepeat::Take(uint32_t psn, RdmaHeldRequest& out)
{
    auto it = m_held.find(psn);
    if (it == m_held.end())
    {
        return false;
    }
    out = std::move(it->second);
    m_held.erase(it);
    return true;
}

void
RdmaSelectiveRepeat::DropBehind(uint32_t ePsn)
{
    for (auto it = m_held.begin(); it != m_held.end();)
    {
        it = RdmaPsnDiff(it->first, ePsn) < 0 ? m_held.erase(it) : std::next(it);
    }
}

} // namespace ns3
