#include "ib-bth-header.h"

#include <iomanip>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbBthHeader);

TypeId
IbBthHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbBthHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbBthHeader>();
    return tid;
}



void
IbBthHeader::WriteTo(uint8_t* out) const
{
    out[0] = m_opCode;
    out[1] = static_cast<uint8_t>((m_se ? 0x80 : 0) | (m_migReq ? 0x40 : 0) | (m_padCnt << 4) |
                                  m_tver);
    out[2] = static_cast<uint8_t>(m_pkey >> 8);
    out[3] = static_cast<uint8_t>(m_pkey);
    out[4] = m_resv8a;
    out[5] = static_cast<uint8_t>(m_destQp >> 16);
    out[6] = static_cast<uint8_t>(m_destQp >> 8);
    out[7] = static_cast<uint8_t>(m_destQp);
    out[8] = m_ackReq ? 0x80 : 0x00;
    out[9] = static_cast<uint8_t>(m_psn >> 16);
    out[10] = static_cast<uint8_t>(m_psn >> 8);
    out[11] = static_cast<uint8_t>(m_psn);
}

void
IbBthHeader::ReadFrom(const uint8_t* in)
{
    m_opCode = in[0];
    m_se = (in[1] & 0x80) != 0;
    m_migReq = (in[1] & 0x40) != 0;
    m_padCnt = (in[1] >> 4) & 0x03;
    m_tver = in[1] & 0x0F;
    m_pkey = static_cast<uint16_t>((in[2] << 8) | in[3]);
    m_resv8a = in[4];
    m_destQp = (static_cast<uint32_t>(in[5]) << 16) | (static_cast<uint32_t>(in[6]) << 8) | in[7];
    m_ackReq = (in[8] & 0x80) != 0;
    m_psn = (static_cast<uint32_t>(in[9]) << 16) | (static_cast<uint32_t>(in[10]) << 8) | in[11];
}



void
IbBthHeader::Print(std::ostream& os) const
{
    const auto flags = os.flags();
    os << "BTH OpCode=0x" << std::hex << std::setw(2) << std::setfill('0') << +m_opCode
       << std::dec << std::setfill(' ') << " SE=" << m_se << " M=" << m_migReq
       << " PadCnt=" << +m_padCnt << " TVer=" << +m_tver << " P_Key=0x" << std::hex << m_pkey
       << std::dec << " FECN=" << GetFecn() << " BECN=" << GetBecn() << " DestQP=" << m_destQp
       << " AckReq=" << m_ackReq << " PSN=" << m_psn;
    os.flags(flags);
}

} // namespace ns3
