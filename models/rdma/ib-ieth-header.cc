#include "ib-ieth-header.h"

#include "ib-wire-bytes.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbIethHeader);

TypeId
IbIethHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbIethHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbIethHeader>();
    return tid;
}

void
IbIethHeader::WriteTo(uint8_t* out) const
{
    IbWireStore32(out, m_rkey);
}

void
IbIethHeader::ReadFrom(const uint8_t* in)
{
    m_rkey = IbWireLoad32(in);
}

void
IbIethHeader::Print(std::ostream& os) const
{
    const auto flags = os.flags();
    os << "IETH R_Key=0x" << std::hex << m_rkey;
    os.flags(flags);
}

} // namespace ns3
