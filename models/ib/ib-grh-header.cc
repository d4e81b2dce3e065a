#include "ib-grh-header.h"

#include <cstring>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbGrhHeader);

TypeId
IbGrhHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbGrhHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbGrhHeader>();
    return tid;
}



void
IbGrhHeader::WriteTo(uint8_t* out) const
{
    // IBA vol. 1 §8.3: IPVer(4) TClass(8) FlowLabel(20) share the first 32-bit word.
    const uint32_t w0 = (static_cast<uint32_t>(m_ipVer) << 28) |
                        (static_cast<uint32_t>(m_tClass) << 20) | m_flowLabel;
    out[0] = static_cast<uint8_t>(w0 >> 24);
    out[1] = static_cast<uint8_t>(w0 >> 16);
    out[2] = static_cast<uint8_t>(w0 >> 8);
    out[3] = static_cast<uint8_t>(w0);
    out[4] = static_cast<uint8_t>(m_payLen >> 8);
    out[5] = static_cast<uint8_t>(m_payLen);
    out[6] = m_nxtHdr;
    out[7] = m_hopLmt;
    std::memcpy(out + 8, m_sgid.data(), 16);
    std::memcpy(out + 24, m_dgid.data(), 16);
}

void
IbGrhHeader::ReadFrom(const uint8_t* in)
{
    const uint32_t w0 = (static_cast<uint32_t>(in[0]) << 24) |
                        (static_cast<uint32_t>(in[1]) << 16) |
                        (static_cast<uint32_t>(in[2]) << 8) | in[3];
    m_ipVer = static_cast<uint8_t>(w0 >> 28);
    m_tClass = static_cast<uint8_t>(w0 >> 20);
    m_flowLabel = w0 & kMaxFlowLabel;
    m_payLen = static_cast<uint16_t>((in[4] << 8) | in[5]);
    m_nxtHdr = in[6];
    m_hopLmt = in[7];
    std::memcpy(m_sgid.data(), in + 8, 16);
    std::memcpy(m_dgid.data(), in + 24, 16);
}



void
IbGrhHeader::Print(std::ostream& os) const
{
    os << "GRH IPVer=" << +m_ipVer << " TClass=" << +m_tClass << " FlowLabel=" << m_flowLabel
       << " PayLen=" << m_payLen << " NxtHdr=" << +m_nxtHdr << " HopLmt=" << +m_hopLmt
       << " SGID=" << IbGidToString(m_sgid) << " DGID=" << IbGidToString(m_dgid);
}

} // namespace ns3
