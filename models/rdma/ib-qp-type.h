// The transport service types of IBA queue pairs. IBA vol. 1 §9.2 (the top three bits of the
// BTH OpCode name the service) and §9.8 (transport services).
#ifndef CNUAS_IB_QP_TYPE_H
#define CNUAS_IB_QP_TYPE_H

#include <cstdint>

namespace ns3
{

/// Transport service of a queue pair: Reliable/Unreliable Connection, Reliable/Unreliable
/// Datagram.
enum class IbQpType : uint8_t
{
    Rc = 0,
    Uc = 1,
    Rd = 2,
    Ud = 3,
};

/// The bit of a QP type in a set of QP types (IbOpcodeInfo::qpTypes).
constexpr uint8_t
IbQpTypeBit(IbQpType t)
{
    return static_cast<uint8_t>(1u << static_cast<uint8_t>(t));
}

/// "RC", "UC", "RD" or "UD".
constexpr const char*
IbQpTypeName(IbQpType t)
{
    switch (t)
    {
    case IbQpType::Rc:
        return "RC";
    case IbQpType::Uc:
        return "UC";
    case IbQpType::Rd:
        return "RD";
    case IbQpType::Ud:
        return "UD";
    }
    return "?";
}

} // namespace ns3

#endif
