#include "ib-atomic-eth-header.h"

#include "ib-wire-bytes.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbAtomicEthHeader);

TypeId
IbAtomicEthHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbAtomicEthHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbAtomicEthHeader>();
    return tid;
}

void
IbAtomicEthHeader::WriteTo(uint8_t* out) const
{
    IbWireStore64(out, m_va);
    IbWireStore32(out + 8, m_rkey);
    IbWireStore64(out + 12, m_swapAdd);
    IbWireStore64(out + 20, m_compare);
}

void
IbAtomicEthHeader::ReadFrom(const uint8_t* in)
{
    m_va = IbWireLoad64(in);
    m_rkey = IbWireLoad32(in + 8);
    m_swapAdd = IbWireLoad64(in + 12);
    m_compare = IbWireLoad64(in + 20);
}

void
IbAtomicEthHeader::Print(std::ostream& os) const
{
    const auto flags = os.flags();
    os << "AtomicETH VA=0x" << std::hex << m_va << " R_Key=0x" << m_rkey << " SwapAdd=0x"
       << m_swapAdd << " Compare=0x" << m_compare;
    os.flags(flags);
}

} // namespace ns3
