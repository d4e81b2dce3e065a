#include "ib-deth-header.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbDethHeader);

TypeId
IbDethHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbDethHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbDethHeader>();
    return tid;
}



void
IbDethHeader::WriteTo(uint8_t* out) const
{
    out[0] = static_cast<uint8_t>(m_qkey >> 24);
    out[1] = static_cast<uint8_t>(m_qkey >> 16);
    out[2] = static_cast<uint8_t>(m_qkey >> 8);
    out[3] = static_cast<uint8_t>(m_qkey);
    out[4] = 0;
    out[5] = static_cast<uint8_t>(m_srcQp >> 16);
    out[6] = static_cast<uint8_t>(m_srcQp >> 8);
    out[7] = static_cast<uint8_t>(m_srcQp);
}

void
IbDethHeader::ReadFrom(const uint8_t* in)
{
    m_qkey = (static_cast<uint32_t>(in[0]) << 24) | (static_cast<uint32_t>(in[1]) << 16) |
             (static_cast<uint32_t>(in[2]) << 8) | in[3];
    m_srcQp = (static_cast<uint32_t>(in[5]) << 16) | (static_cast<uint32_t>(in[6]) << 8) | in[7];
}



void
IbDethHeader::Print(std::ostream& os) const
{
    const auto flags = os.flags();
    os << "DETH Q_Key=0x" << std::hex << m_qkey << std::dec << " SrcQP=" << m_srcQp;
    os.flags(flags);
}

} // namespace ns3
