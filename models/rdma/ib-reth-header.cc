#include "ib-reth-header.h"

#include "ib-wire-bytes.h"

#include <iomanip>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbRethHeader);

TypeId
IbRethHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbRethHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbRethHeader>();
    return tid;
}

void
IbRethHeader::WriteTo(uint8_t* out) const
{
    IbWireStore64(out, m_va);
    IbWireStore32(out + 8, m_rkey);
    IbWireStore32(out + 12, m_dmaLength);
}

void
IbRethHeader::ReadFrom(const uint8_t* in)
{
    m_va = IbWireLoad64(in);
    m_rkey = IbWireLoad32(in + 8);
    m_dmaLength = IbWireLoad32(in + 12);
}

void
IbRethHeader::Print(std::ostream& os) const
{
    const auto flags = os.flags();
    os << "RETH VA=0x" << std::hex << m_va << " R_Key=0x" << m_rkey << std::dec
       << " DMALen=" << m_dmaLength;
    os.flags(flags);
}

} // namespace ns3
