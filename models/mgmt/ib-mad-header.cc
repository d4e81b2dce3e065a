#include "ib-mad-header.h"

#include "models/rdma/ib-wire-bytes.h"

#include <ostream>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbMadHeader);

TypeId
IbMadHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbMadHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbMadHeader>();
    return tid;
}

void
IbMadHeader::WriteTo(uint8_t* out) const
{
    out[0] = m_baseVersion;
    out[1] = m_mgmtClass;
    out[2] = m_classVersion;
    out[3] = m_method;
    IbMadStore16(out + 4, m_status);
    IbMadStore16(out + 6, m_classSpecific);
    IbWireStore64(out + 8, m_tid);
    IbMadStore16(out + 16, m_attrId);
    out[18] = 0;
    out[19] = 0;
    IbWireStore32(out + 20, m_attrMod);
}

void
IbMadHeader::ReadFrom(const uint8_t* in)
{
    m_baseVersion = in[0];
    m_mgmtClass = in[1];
    m_classVersion = in[2];
    m_method = in[3];
    m_status = IbMadLoad16(in + 4);
    m_classSpecific = IbMadLoad16(in + 6);
    m_tid = IbWireLoad64(in + 8);
    m_attrId = IbMadLoad16(in + 16);
    m_attrMod = IbWireLoad32(in + 20);
}

void
IbMadHeader::Print(std::ostream& os) const
{
    const auto flags = os.flags();
    os << std::hex << "MAD class=0x" << unsigned(m_mgmtClass) << " method=0x" << unsigned(m_method)
       << " status=0x" << m_status << " attr=0x" << m_attrId << " mod=0x" << m_attrMod
       << " tid=0x" << m_tid;
    os.flags(flags);
}

} // namespace ns3
