#include "ib-immdt-header.h"

#include "ib-wire-bytes.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbImmDtHeader);

TypeId
IbImmDtHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbImmDtHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbImmDtHeader>();
    return tid;
}

void
IbImmDtHeader::WriteTo(uint8_t* out) const
{
    IbWireStore32(out, m_imm);
}

void
IbImmDtHeader::ReadFrom(const uint8_t* in)
{
    m_imm = IbWireLoad32(in);
}

void
IbImmDtHeader::Print(std::ostream& os) const
{
    const auto flags = os.flags();
    os << "ImmDt 0x" << std::hex << m_imm;
    os.flags(flags);
}

} // namespace ns3
