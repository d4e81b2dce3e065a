#include "ib-smp.h"

#include "models/ib/ib-lrh-header.h"
#include "models/rdma/ib-wire-bytes.h"

#include <cstring>
#include <ostream>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbSmp);

TypeId
IbSmp::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbSmp")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbSmp>();
    return tid;
}

IbSmp
IbSmp::MakeDirected(uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t tid,
                    const uint8_t* path, uint8_t hops)
{
    IbSmp s;
    s.m_mad.SetMgmtClass(IbMgmtClass::SubnDirected);
    s.m_mad.SetClassVersion(kIbSmpClassVersion);
    s.m_mad.SetMethod(method);
    s.m_mad.SetAttributeId(attrId);
    s.m_mad.SetAttributeModifier(attrMod);
    s.m_mad.SetTransactionId(tid);
    s.SetHopCount(hops);
    s.SetHopPointer(0);
    s.m_drSlid = IbLrhHeader::kPermissiveLid;
    s.m_drDlid = IbLrhHeader::kPermissiveLid;
    for (uint8_t i = 0; i < hops && i < kMaxHops; ++i)
    {
        s.m_initialPath[i + 1] = path[i];
    }
    return s;
}

IbSmp
IbSmp::MakeLidRouted(uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t tid)
{
    IbSmp s;
    s.m_mad.SetMgmtClass(IbMgmtClass::SubnLid);
    s.m_mad.SetClassVersion(kIbSmpClassVersion);
    s.m_mad.SetMethod(method);
    s.m_mad.SetAttributeId(attrId);
    s.m_mad.SetAttributeModifier(attrMod);
    s.m_mad.SetTransactionId(tid);
    return s;
}

void
IbSmp::SetDirection(bool returning)
{
    uint16_t st = m_mad.GetStatus() & static_cast<uint16_t>(~IbMadStatus::DirectionBit);
    m_mad.SetStatus(returning ? (st | IbMadStatus::DirectionBit) : st);
}

uint16_t
IbSmp::GetSmpStatus() const
{
    return IsDirectedRoute() ? (m_mad.GetStatus() & 0x7FFF) : m_mad.GetStatus();
}

void
IbSmp::SetSmpStatus(uint16_t status)
{
    if (IsDirectedRoute())
    {
        m_mad.SetStatus((m_mad.GetStatus() & IbMadStatus::DirectionBit) | (status & 0x7FFF));
    }
    else
    {
        m_mad.SetStatus(status);
    }
}

void
IbSmp::SetHopPointer(uint8_t p)
{
    m_mad.SetClassSpecific(static_cast<uint16_t>((p << 8) | GetHopCount()));
}

void
IbSmp::SetHopCount(uint8_t n)
{
    m_mad.SetClassSpecific(static_cast<uint16_t>((GetHopPointer() << 8) | n));
}

void
IbSmp::WriteTo(uint8_t* out) const
{
    std::memset(out, 0, kIbMadBytes);
    m_mad.WriteTo(out);
    IbWireStore64(out + 24, m_mKey);
    std::memcpy(out + kDataOffset, m_data.data(), kDataBytes);
    if (IsDirectedRoute())
    {
        IbMadStore16(out + 32, m_drSlid);
        IbMadStore16(out + 34, m_drDlid);
        std::memcpy(out + kInitialPathOffset, m_initialPath.data(), 64);
        std::memcpy(out + kReturnPathOffset, m_returnPath.data(), 64);
    }
}

void
IbSmp::ReadFrom(const uint8_t* in)
{
    m_mad.ReadFrom(in);
    m_mKey = IbWireLoad64(in + 24);
    std::memcpy(m_data.data(), in + kDataOffset, kDataBytes);
    if (IsDirectedRoute())
    {
        m_drSlid = IbMadLoad16(in + 32);
        m_drDlid = IbMadLoad16(in + 34);
        std::memcpy(m_initialPath.data(), in + kInitialPathOffset, 64);
        std::memcpy(m_returnPath.data(), in + kReturnPathOffset, 64);
    }
    else
    {
        m_drSlid = 0;
        m_drDlid = 0;
        m_initialPath.fill(0);
        m_returnPath.fill(0);
    }
}

void
IbSmp::Canonicalize(uint8_t* mad)
{
    mad[18] = 0; // IbMadHeader::WriteTo: reserved
    mad[19] = 0;
    if (mad[1] == IbMgmtClass::SubnDirected)
    {
        std::memset(mad + 36, 0, kDataOffset - 36); // after DrSLID and DrDLID
        return;
    }
    std::memset(mad + 32, 0, kDataOffset - 32);
    std::memset(mad + kDataOffset + kDataBytes, 0, kIbMadBytes - kDataOffset - kDataBytes);
}

void
IbSmp::Print(std::ostream& os) const
{
    m_mad.Print(os);
    if (IsDirectedRoute())
    {
        os << " D=" << GetDirection() << " hop=" << unsigned(GetHopPointer()) << "/"
           << unsigned(GetHopCount()) << " DrSLID=" << m_drSlid << " DrDLID=" << m_drDlid;
    }
}

} // namespace ns3
