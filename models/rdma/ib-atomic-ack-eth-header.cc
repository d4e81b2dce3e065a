#include "ib-atomic-ack-eth-header.h"

#include "ib-wire-bytes.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(IbAtomicAckEthHeader);

TypeId
IbAtomicAckEthHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbAtomicAckEthHeader")
                            .SetParent<Header>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbAtomicAckEthHeader>();
    return tid;
}

void
IbAtomicAckEthHeader::WriteTo(uint8_t* out) const
{
    IbWireStore64(out, m_orig);
}

void
IbAtomicAckEthHeader::ReadFrom(const uint8_t* in)
{
    m_orig = IbWireLoad64(in);
}

void
IbAtomicAckEthHeader::Print(std::ostream& os) const
{
    const auto flags = os.flags();
    os << "AtomicAckETH OrigRemData=0x" << std::hex << m_orig;
    os.flags(flags);
}

} // namespace ns3
