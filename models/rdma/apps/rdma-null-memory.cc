#include "rdma-null-memory.h"

#include "ns3/uinteger.h"

#include <cstring>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaNullMemory);

TypeId
RdmaNullMemory::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaNullMemory")
            .SetParent<RdmaMemory>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaNullMemory>()
            .AddAttribute("Base",
                          "First virtual address of the window, bytes.",
                          UintegerValue(0x7f0000000000ULL),
                          MakeUintegerAccessor(&RdmaNullMemory::m_base),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("Size",
                          "Length of the window, bytes (default 1 TiB).",
                          UintegerValue(1ULL << 40),
                          MakeUintegerAccessor(&RdmaNullMemory::m_size),
                          MakeUintegerChecker<uint64_t>(1));
    return tid;
}

RdmaNullMemory::RdmaNullMemory() = default;
RdmaNullMemory::~RdmaNullMemory() = default;

bool
RdmaNullMemory::IsMapped(uint64_t addr, uint64_t len) const
{
    if (Wraps(addr, len) || addr < m_base)
    {
        return false;
    }
    // Differences, never sums, so that nothing overflows.
    const uint64_t off = addr - m_base;
    return off <= m_size && len <= m_size - off;
}

bool
RdmaNullMemory::Read(uint64_t addr, uint8_t* dst, uint64_t len) const
{
    if (!IsMapped(addr, len))
    {
        return false;
    }
    if (len)
    {
        std::memset(dst, 0, len);
    }
    return true;
}

bool
RdmaNullMemory::Write(uint64_t addr, const uint8_t* src, uint64_t len)
{
    if (!IsMapped(addr, len))
    {
        return false;
    }
    m_written += len;
    return true;
}

} // namespace ns3
