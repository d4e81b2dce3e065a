#include "rdma-memory.h"

#include "ns3/log.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaMemory");
NS_OBJECT_ENSURE_REGISTERED(RdmaMemory);
NS_OBJECT_ENSURE_REGISTERED(RdmaSimulatedMemory);

TypeId
RdmaMemory::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaMemory").SetParent<Object>().SetGroupName("Cnuas");
    return tid;
}

RdmaMemory::~RdmaMemory() = default;

TypeId
RdmaSimulatedMemory::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaSimulatedMemory")
                            .SetParent<RdmaMemory>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RdmaSimulatedMemory>();
    return tid;
}

RdmaSimulatedMemory::RdmaSimulatedMemory() = default;
RdmaSimulatedMemory::~RdmaSimulatedMemory() = default;

void
RdmaSimulatedMemory::PageSpan(uint64_t addr, uint64_t len, uint64_t& first, uint64_t& last)
{
    first = addr / kPageSize;
    last = (addr + (len - 1)) / kPageSize;
}

bool
RdmaSimulatedMemory::PagesMapped(uint64_t first, uint64_t last) const
{
    // Intervals are disjoint and never adjacent, so [first, last] is mapped exactly when one
    // interval covers it.
    auto it = m_mapped.upper_bound(first);
    if (it == m_mapped.begin())
    {
        return false;
    }
    --it;
    return it->first <= first && it->second >= last;
}

bool
RdmaSimulatedMemory::IsMapped(uint64_t addr, uint64_t len) const
{
    if (Wraps(addr, len))
    {
        return false;
    }
    if (len == 0)
    {
        return true;
    }
    uint64_t first;
    uint64_t last;
    PageSpan(addr, len, first, last);
    return PagesMapped(first, last);
}

bool
RdmaSimulatedMemory::Read(uint64_t addr, uint8_t* dst, uint64_t len) const
{
    if (!IsMapped(addr, len))
    {
        NS_LOG_LOGIC("read fault at 0x" << std::hex << addr << std::dec << " len " << len);
        return false;
    }
    uint64_t done = 0;
    while (done < len)
    {
        const uint64_t a = addr + done;
        const uint64_t page = a / kPageSize;
        const uint64_t off = a % kPageSize;
        const uint64_t n = std::min(len - done, kPageSize - off);
        auto it = m_pages.find(page);
        if (it == m_pages.end())
        {
            std::memset(dst + done, 0, n);
        }
        else
        {
            std::memcpy(dst + done, it->second->data() + off, n);
        }
        done += n;
    }
    return true;
}

bool
RdmaSimulatedMemory::Write(uint64_t addr, const uint8_t* src, uint64_t len)
{
    if (!IsMapped(addr, len))
    {
        NS_LOG_LOGIC("write fault at 0x" << std::hex << addr << std::dec << " len " << len);
        return false;
    }
    uint64_t done = 0;
    while (done < len)
    {
        const uint64_t a = addr + done;
        const uint64_t page = a / kPageSize;
        const uint64_t off = a % kPageSize;
        const uint64_t n = std::min(len - done, kPageSize - off);
        auto& slot = m_pages[page];
        if (!slot)
        {
            slot = std::make_unique<Page>();
            slot->fill(0);
        }
        std::memcpy(slot->data() + off, src + done, n);
        done += n;
    }
    return true;
}

bool
RdmaSimulatedMemory::Map(uint64_t addr, uint64_t len)
{
    if (len == 0 || Wraps(addr, len))
    {
        return false;
    }
    uint64_t first;
    uint64_t last;
    PageSpan(addr, len, first, last);
    // Merge with every interval that overlaps or touches [first, last].
    auto it = m_mapped.upper_bound(first);
    if (it != m_mapped.begin())
    {
        auto prev = std::prev(it);
        if (prev->second == UINT64_MAX || prev->second + 1 >= first)
        {
            it = prev;
        }
    }
    while (it != m_mapped.end() && (last == UINT64_MAX || it->first <= last + 1))
    {
        first = std::min(first, it->first);
        last = std::max(last, it->second);
        it = m_mapped.erase(it);
    }
    m_mapped[first] = last;
    return true;
}

bool
RdmaSimulatedMemory::Unmap(uint64_t addr, uint64_t len)
{
    if (len == 0 || Wraps(addr, len))
    {
        return false;
    }
    uint64_t first;
    uint64_t last;
    PageSpan(addr, len, first, last);
    auto it = m_mapped.upper_bound(first);
    if (it != m_mapped.begin())
    {
        --it;
    }
    while (it != m_mapped.end() && it->first <= last)
    {
        const uint64_t a = it->first;
        const uint64_t b = it->second;
        if (b < first)
        {
            ++it;
            continue;
        }
        it = m_mapped.erase(it);
        if (a < first)
        {
            m_mapped[a] = first - 1;
        }
        if (b > last)
        {
            m_mapped[last + 1] = b;
        }
    }
    // Drop the storage of the unmapped pages: a later Map() gives zero-filled pages again.
    auto p = m_pages.lower_bound(first);
    while (p != m_pages.end() && p->first <= last)
    {
        p = m_pages.erase(p);
    }
    return true;
}

uint64_t
RdmaSimulatedMemory::GetResidentPages() const
{
    return m_pages.size();
}

uint64_t
RdmaSimulatedMemory::GetMappedBytes() const
{
    uint64_t pages = 0;
    for (const auto& [a, b] : m_mapped)
    {
        pages += b - a + 1;
    }
    return pages * kPageSize; // wraps to 0 only if all 2^52 pages are mapped
}

} // namespace ns3
