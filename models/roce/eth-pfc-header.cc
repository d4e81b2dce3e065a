#include "eth-pfc-header.h"

#include <iomanip>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(EthPfcHeader);

TypeId
EthPfcHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::EthPfcHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<EthPfcHeader>();
    return tid;
}

void
EthPfcHeader::WriteTo(uint8_t* out) const
{
    out[0] = static_cast<uint8_t>(opcode >> 8);
    out[1] = static_cast<uint8_t>(opcode);
    out[2] = static_cast<uint8_t>(classEnable >> 8);
    out[3] = static_cast<uint8_t>(classEnable);
    for (int i = 0; i < 8; ++i)
    {
        out[4 + 2 * i] = static_cast<uint8_t>(quanta[i] >> 8);
        out[5 + 2 * i] = static_cast<uint8_t>(quanta[i]);
    }
}

void
EthPfcHeader::ReadFrom(const uint8_t* in)
{
    opcode = static_cast<uint16_t>(in[0] << 8 | in[1]);
    classEnable = static_cast<uint16_t>(in[2] << 8 | in[3]);
    for (int i = 0; i < 8; ++i)
    {
        quanta[i] = static_cast<uint16_t>(in[4 + 2 * i] << 8 | in[5 + 2 * i]);
    }
}

void
EthPfcHeader::Print(std::ostream& os) const
{
    os << "PFC opcode=0x" << std::hex << std::setw(4) << std::setfill('0') << opcode
       << " cev=0x" << std::setw(2) << classEnable << std::dec << std::setfill(' ');
    for (int i = 0; i < 8; ++i)
    {
        if (classEnable & (1u << i))
        {
            os << " p" << i << "=" << quanta[i];
        }
    }
}

} // namespace ns3
