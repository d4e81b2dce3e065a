// The data-VL counts InfiniBand can configure: what PortInfo.VLCap and OperationalVLs encode
// (IBA vol. 1 §14.2.5.6: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14). The port, the
// subnet manager's attribute and the scenarios' `vls` parameter all check against this list.
#ifndef CNUAS_IB_VL_COUNTS_H
#define CNUAS_IB_VL_COUNTS_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ns3
{

/// 1, 2, 4, 8 and 15 data VLs.
inline const std::vector<uint64_t>&
IbDataVlCounts()
{
    static const std::vector<uint64_t> counts{1, 2, 4, 8, 15};
    return counts;
}

/// True if `n` data VLs is a count a port can be configured with.
inline bool
IbIsDataVlCount(uint64_t n)
{
    const auto& c = IbDataVlCounts();
    return std::find(c.begin(), c.end(), n) != c.end();
}

} // namespace ns3

#endif
