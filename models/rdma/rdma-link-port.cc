#include "rdma-link-port.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaLinkPort);

TypeId
RdmaLinkPort::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaLinkPort").SetParent<Object>().SetGroupName("Cnuas");
    return tid;
}

RdmaLinkPort::~RdmaLinkPort() = default;

bool
RdmaPkeyMatch(uint16_t a, uint16_t b)
{
    constexpr uint16_t kKeyMask = 0x7FFF;
    constexpr uint16_t kFullMember = 0x8000;
    if ((a & kKeyMask) == 0 || (b & kKeyMask) == 0)
    {
        return false; // 0x0000 and 0x8000 are invalid P_Keys (IBA vol. 1 §10.9.1.2)
    }
    return (a & kKeyMask) == (b & kKeyMask) && ((a | b) & kFullMember) != 0;
}

} // namespace ns3
