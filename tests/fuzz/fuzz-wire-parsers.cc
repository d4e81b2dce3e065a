// Fuzz target: the wire parsers on their own, as bytes from anywhere reach them.
//  - EthFrame::ParseFromHost (what a TAP delivers) and EthFrame::Parse (a wire frame with FCS);
//    a frame ParseFromHost accepts is made into bytes again (Materialize) and must come out the
//    size the parser computed.
//  - IbTransportHeaders::Parse on the bytes from the BTH on (RoCEv2's UDP payload, or an IB
//    packet's transport part); a packet it accepts is written back (Write) and the headers'
//    bytes must equal the input's.
//  - IbParseMadPacket on a whole IB packet (LRH .. VCRC).
// The first input byte picks the parser, so one corpus serves all three.
#include "models/mgmt/ib-mad-packet.h"
#include "models/rdma/ib-transport-headers.h"
#include "models/roce/eth-frame.h"

#include "ns3/packet.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

void
Fail(const char* what)
{
    std::fprintf(stderr, "fuzz-wire-parsers: %s\n", what);
    std::abort();
}

void
Ethernet(const uint8_t* data, uint32_t size)
{
    EthFrame host;
    if (EthFrame::ParseFromHost(data, size, host) == EthParseError::None)
    {
        std::vector<uint8_t> bytes;
        host.Materialize(bytes, true);
        if (bytes.size() != host.bytes)
        {
            Fail("a frame from a host materializes to another size than its parse computed");
        }
        EthFrame again;
        EthFrame::Parse(bytes.data(), static_cast<uint32_t>(bytes.size()), again);
    }
    EthFrame wire;
    EthFrame::Parse(data, size, wire);
}

void
Transport(const uint8_t* data, size_t size)
{
    for (size_t icrc : {size_t(4), size_t(0)})
    {
        IbTransportHeaders h;
        if (!h.Parse(data, size, icrc))
        {
            continue;
        }
        if (h.payloadOffset + h.payloadLength + h.bth.GetPadCnt() + icrc != size)
        {
            Fail("a parsed packet's parts do not add up to its length");
        }
        std::vector<uint8_t> out(h.payloadOffset + 64);
        const uint32_t n = h.Write(out.data(), out.size());
        if (n != h.payloadOffset || std::memcmp(out.data(), data, n) != 0)
        {
            // Reserved fields the parser does not keep may differ; the BTH's first byte
            // (opcode) and the length must not.
            if (n != h.payloadOffset || out[0] != data[0])
            {
                Fail("Write does not give back the headers Parse read");
            }
        }
    }
}

void
Mad(const uint8_t* data, uint32_t size)
{
    Ptr<Packet> p = Create<Packet>(data, size);
    IbMadPacketView view;
    std::string why;
    IbParseMadPacket(p, view, &why);
    IbPeekDestQp(p);
}

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1 || size > (1u << 20))
    {
        return 0;
    }
    const uint8_t which = data[0] % 3;
    const uint8_t* rest = data + 1;
    const uint32_t n = static_cast<uint32_t>(size - 1);
    switch (which)
    {
    case 0:
        Ethernet(rest, n);
        break;
    case 1:
        Transport(n ? rest : nullptr, n);
        break;
    default:
        Mad(rest, n);
        break;
    }
    return 0;
}
