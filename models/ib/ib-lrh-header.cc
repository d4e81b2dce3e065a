#include "ib-lrh-header.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbLrhHeader);

TypeId
IbLrhHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbLrhHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbLrhHeader>();
    return tid;
}



void
IbLrhHeader::WriteTo(uint8_t* out) const
{
    out[0] = static_cast<uint8_t>((m_vl << 4) | m_lver);
    out[1] = static_cast<uint8_t>((m_sl << 4) | static_cast<uint8_t>(m_lnh));
    out[2] = static_cast<uint8_t>(m_dlid >> 8);
    out[3] = static_cast<uint8_t>(m_dlid);
    out[4] = static_cast<uint8_t>((m_pktLen >> 8) & 0x07);
    out[5] = static_cast<uint8_t>(m_pktLen);
    out[6] = static_cast<uint8_t>(m_slid >> 8);
    out[7] = static_cast<uint8_t>(m_slid);
}

void
IbLrhHeader::ReadFrom(const uint8_t* in)
{
    m_vl = in[0] >> 4;
    m_lver = in[0] & 0x0F;
    m_sl = in[1] >> 4;
    m_lnh = static_cast<IbLnh>(in[1] & 0x03);
    m_dlid = static_cast<uint16_t>((in[2] << 8) | in[3]);
    m_pktLen = static_cast<uint16_t>(((in[4] & 0x07) << 8) | in[5]);
    m_slid = static_cast<uint16_t>((in[6] << 8) | in[7]);
}



void
IbLrhHeader::Print(std::ostream& os) const
{
    os << "LRH VL=" << +m_vl << " LVer=" << +m_lver << " SL=" << +m_sl
       << " LNH=" << +static_cast<uint8_t>(m_lnh) << " DLID=" << m_dlid
       << " PktLen=" << m_pktLen << " SLID=" << m_slid;
}

} // namespace ns3
