#include "ib-sm-info.h"

#include "models/rdma/ib-wire-bytes.h"

#include <cstring>

namespace ns3
{

const char*
IbSmStateName(IbSmState s)
{
    switch (s)
    {
    case IbSmState::NotActive:
        return "NOT_ACTIVE";
    case IbSmState::Discovering:
        return "DISCOVERING";
    case IbSmState::Standby:
        return "STANDBY";
    case IbSmState::Master:
        return "MASTER";
    }
    return "?";
}

const char*
IbSmInfoControlName(uint32_t attributeModifier)
{
    switch (static_cast<IbSmInfoControl>(attributeModifier))
    {
    case IbSmInfoControl::Handover:
        return "HANDOVER";
    case IbSmInfoControl::Acknowledge:
        return "ACKNOWLEDGE";
    case IbSmInfoControl::Disable:
        return "DISABLE";
    case IbSmInfoControl::Standby:
        return "STANDBY";
    case IbSmInfoControl::Discover:
        return "DISCOVER";
    }
    return "?";
}

void
IbSmInfo::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kSize);
    IbWireStore64(out + 0, guid);
    IbWireStore64(out + 8, smKey);
    IbWireStore32(out + 16, actCount);
    out[20] = static_cast<uint8_t>(((priority & 0x0F) << 4) | (smState & 0x0F));
}

void
IbSmInfo::ReadFrom(const uint8_t* in)
{
    guid = IbWireLoad64(in + 0);
    smKey = IbWireLoad64(in + 8);
    actCount = IbWireLoad32(in + 16);
    priority = in[20] >> 4;
    smState = in[20] & 0x0F;
}

bool
IbSmOutranks(uint8_t a, uint64_t ga, uint8_t b, uint64_t gb)
{
    return a != b ? a > b : ga < gb;
}

} // namespace ns3
