#include "ib-flow-control-header.h"

#include "ib-crc.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbFlowControlHeader);

TypeId
IbFlowControlHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbFlowControlHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbFlowControlHeader>();
    return tid;
}



void
IbFlowControlHeader::WriteFields(uint8_t* out) const
{
    out[0] = static_cast<uint8_t>((m_op << 4) | (m_fctbs >> 8));
    out[1] = static_cast<uint8_t>(m_fctbs);
    out[2] = static_cast<uint8_t>((m_vl << 4) | (m_fccl >> 8));
    out[3] = static_cast<uint8_t>(m_fccl);
}

uint16_t
IbFlowControlHeader::ComputeLpcrc() const
{
    uint8_t raw[4];
    WriteFields(raw);
    return IbComputeLpcrc(raw);
}

void
IbFlowControlHeader::WriteTo(uint8_t* out) const
{
    WriteFields(out);
    IbStoreVcrc(out + 4, IbComputeLpcrc(out));
}

void
IbFlowControlHeader::ReadFrom(const uint8_t* in)
{
    m_op = in[0] >> 4;
    m_fctbs = static_cast<uint16_t>(((in[0] & 0x0F) << 8) | in[1]);
    m_vl = in[2] >> 4;
    m_fccl = static_cast<uint16_t>(((in[2] & 0x0F) << 8) | in[3]);
    m_lpcrc = IbLoadVcrc(in + 4);
}



void
IbFlowControlHeader::Print(std::ostream& os) const
{
    os << "FC Op=" << +m_op << " FCTBS=" << m_fctbs << " VL=" << +m_vl << " FCCL=" << m_fccl
       << " LPCRC=" << m_lpcrc;
}

} // namespace ns3
