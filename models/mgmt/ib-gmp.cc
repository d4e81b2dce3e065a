#include "ib-gmp.h"

#include "models/rdma/ib-wire-bytes.h"

#include <cstring>
#include <ostream>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbPerfMgtMad);
NS_OBJECT_ENSURE_REGISTERED(IbSaMad);

TypeId
IbPerfMgtMad::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbPerfMgtMad")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbPerfMgtMad>();
    return tid;
}

IbPerfMgtMad
IbPerfMgtMad::Make(uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t tid)
{
    IbPerfMgtMad m;
    m.m_mad.SetMgmtClass(IbMgmtClass::PerfMgt);
    m.m_mad.SetClassVersion(kIbPerfMgtClassVersion);
    m.m_mad.SetMethod(method);
    m.m_mad.SetAttributeId(attrId);
    m.m_mad.SetAttributeModifier(attrMod);
    m.m_mad.SetTransactionId(tid);
    return m;
}

void
IbPerfMgtMad::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kIbMadBytes);
    m_mad.WriteTo(out);
    std::memcpy(out + kDataOffset, m_data.data(), kDataBytes);
}

void
IbPerfMgtMad::ReadFrom(const uint8_t* in)
{
    m_mad.ReadFrom(in);
    std::memcpy(m_data.data(), in + kDataOffset, kDataBytes);
}

void
IbPerfMgtMad::Print(std::ostream& os) const
{
    m_mad.Print(os);
}

TypeId
IbSaMad::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbSaMad")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbSaMad>();
    return tid;
}

IbSaMad
IbSaMad::Make(uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t tid)
{
    IbSaMad m;
    m.m_mad.SetMgmtClass(IbMgmtClass::SubnAdm);
    m.m_mad.SetClassVersion(kIbSaClassVersion);
    m.m_mad.SetMethod(method);
    m.m_mad.SetAttributeId(attrId);
    m.m_mad.SetAttributeModifier(attrMod);
    m.m_mad.SetTransactionId(tid);
    return m;
}

void
IbSaMad::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kIbMadBytes);
    m_mad.WriteTo(out);
    out[24] = m_rmppVersion;
    out[25] = m_rmppType;
    out[26] = m_rmppTimeFlags;
    out[27] = m_rmppStatus;
    IbWireStore32(out + 28, m_rmppData1);
    IbWireStore32(out + 32, m_rmppData2);
    IbWireStore64(out + 36, m_smKey);
    IbMadStore16(out + 44, m_attrOffset);
    IbWireStore64(out + 48, m_componentMask);
    std::memcpy(out + kDataOffset, m_data.data(), kDataBytes);
}

void
IbSaMad::ReadFrom(const uint8_t* in)
{
    m_mad.ReadFrom(in);
    m_rmppVersion = in[24];
    m_rmppType = in[25];
    m_rmppTimeFlags = in[26];
    m_rmppStatus = in[27];
    m_rmppData1 = IbWireLoad32(in + 28);
    m_rmppData2 = IbWireLoad32(in + 32);
    m_smKey = IbWireLoad64(in + 36);
    m_attrOffset = IbMadLoad16(in + 44);
    m_componentMask = IbWireLoad64(in + 48);
    std::memcpy(m_data.data(), in + kDataOffset, kDataBytes);
}

void
IbSaMad::Print(std::ostream& os) const
{
    m_mad.Print(os);
    const auto flags = os.flags();
    os << std::hex << " SM_Key=0x" << m_smKey << " ComponentMask=0x" << m_componentMask;
    os.flags(flags);
}

} // namespace ns3
