#include "ib-mad-packet.h"

#include "models/ib/ib-frame.h"
#include "models/ib/ib-grh-header.h"

#include <algorithm>

namespace ns3
{

void
IbWriteMadPacket(uint8_t* out, const uint8_t* mad, uint32_t destQp, uint32_t srcQp,
                 uint32_t qkey, uint16_t pkey, uint32_t psn)
{
    // Kept from call to call: constructing and destroying an ns-3 Header (with ns-3's logging
    // checks) cost more than the 20 bytes it writes, at every hop of every SMP. Every field
    // not set here keeps its default.
    thread_local IbBthHeader bth;
    thread_local IbDethHeader deth;
    bth.SetOpCode(kIbUdSendOnly);
    bth.SetPkey(pkey);
    bth.SetDestQp(destQp);
    bth.SetPsn(psn);
    bth.WriteTo(out);
    deth.SetQkey(qkey);
    deth.SetSrcQp(srcQp);
    deth.WriteTo(out + IbBthHeader::kSize);
    if (mad != out + kIbMadTransportBytes)
    {
        std::copy(mad, mad + kIbMadBytes, out + kIbMadTransportBytes);
    }
}

Ptr<Packet>
IbMakeMadPacket(const uint8_t* mad, uint32_t destQp, uint32_t srcQp, uint32_t qkey,
                uint16_t pkey, uint32_t psn)
{
    uint8_t buf[kIbMadTransportBytes + kIbMadBytes];
    IbWriteMadPacket(buf, mad, destQp, srcQp, qkey, pkey, psn);
    return Create<Packet>(buf, sizeof(buf));
}

namespace
{
/// Offset of the BTH in a packet that starts with an LRH of this LNH (-1: no BTH).
int
BthOffset(IbLnh lnh)
{
    switch (lnh)
    {
    case IbLnh::IbaLocal:
        return static_cast<int>(IbLrhHeader::kSize);
    case IbLnh::IbaGlobal:
        return static_cast<int>(IbLrhHeader::kSize + IbGrhHeader::kSize);
    default:
        return -1;
    }
}
} // namespace

int64_t
IbPeekDestQp(Ptr<const Packet> packet)
{
    uint8_t head[IbLrhHeader::kSize + IbGrhHeader::kSize + IbBthHeader::kSize];
    const uint32_t n = packet->CopyData(head, sizeof(head));
    if (n < IbLrhHeader::kSize)
    {
        return -1;
    }
    IbLrhHeader lrh;
    lrh.ReadFrom(head);
    const int off = BthOffset(lrh.GetLnh());
    if (off < 0 || n < static_cast<uint32_t>(off) + IbBthHeader::kSize)
    {
        return -1;
    }
    IbBthHeader bth;
    bth.ReadFrom(head + off);
    return bth.GetDestQp();
}

bool
IbParseMadPacket(Ptr<const Packet> packet, IbMadPacketView& out, std::string* why)
{
    // The longest packet that can be a MAD (with a GRH) fits on the stack. A longer packet is
    // not a MAD; its first bytes suffice to say why.
    uint8_t bytes[kIbMaxMadPacketBytes];
    const uint32_t size = packet->GetSize();
    packet->CopyData(bytes, std::min<uint32_t>(size, sizeof(bytes)));
    return IbParseMadBytes(bytes, size, out, why);
}

bool
IbParseMadBytes(const uint8_t* bytes, uint32_t size, IbMadPacketView& out, std::string* why)
{
    auto fail = [why](const char* w) {
        if (why)
        {
            *why = w;
        }
        return false;
    };
    if (size < IbLrhHeader::kSize)
    {
        return fail("shorter than an LRH");
    }
    out.lrh.ReadFrom(bytes);
    const int off = BthOffset(out.lrh.GetLnh());
    if (off < 0)
    {
        return fail("not an IBA transport packet (LNH 0 or 1)");
    }
    const uint32_t expect = static_cast<uint32_t>(off) + IbBthHeader::kSize +
                            IbDethHeader::kSize + kIbMadBytes + kIbIcrcBytes + kIbVcrcBytes;
    if (size != expect)
    {
        return fail("length is not that of one 256-byte MAD in a UD packet");
    }
    out.bth.ReadFrom(bytes + off);
    if (out.bth.GetOpCode() != kIbUdSendOnly)
    {
        return fail("not a UD SEND Only");
    }
    if (out.bth.GetPadCnt() != 0)
    {
        return fail("PadCnt of a MAD must be 0");
    }
    out.deth.ReadFrom(bytes + off + IbBthHeader::kSize);
    const uint8_t* mad = bytes + off + IbBthHeader::kSize + IbDethHeader::kSize;
    std::copy(mad, mad + kIbMadBytes, out.mad.begin());
    return true;
}

} // namespace ns3
