// Fuzz target: the wire parsers on their own, as bytes from anywhere reach them.
//  - EthFrame::ParseFromHost (what a TAP delivers) and EthFrame::Parse (a wire frame with FCS);
//    a frame ParseFromHost accepts is made into bytes again (Materialize) and must come out the
//    size the parser computed.
//  - IbTransportHeaders::Parse on the bytes from the BTH on (RoCEv2's UDP payload, or an IB
//    packet's transport part); a packet it accepts is written back (Write) and the headers'
//    bytes must equal the input's.
//  - IbParseMadPacket on a whole IB packet (LRH .. VCRC).
//  - The emulated NIC's offloads (models/emu/tap-offload.h) on a read from a host's TAP (virtio
//    header + frame): TapSegmenter either refuses it and emits nothing, or emits the segments it
//    counts; those segments offered to a TapCoalescer come out as writes that carry every one
//    of them, and each merged write is one TapSegmenter takes back into as many segments.
// The first input byte picks the parser, so one corpus serves all four.
#include "models/emu/tap-offload.h"
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

void
TapOffload(const uint8_t* data, uint32_t size)
{
    TapSegmenter segmenter;
    std::vector<std::vector<uint8_t>> frames;
    uint32_t segments = 0;
    const TapOffloadError e = segmenter.Process(
        data,
        size,
        [&frames](const uint8_t* f, uint32_t n) { frames.emplace_back(f, f + n); },
        &segments);
    if (e != TapOffloadError::None)
    {
        if (!frames.empty())
        {
            Fail("TapSegmenter refused a read but emitted frames");
        }
        if (size <= VirtioNetHeader::kSize)
        {
            return;
        }
        // The coalescer still gets the frame itself (what the port could deliver).
        frames.emplace_back(data + VirtioNetHeader::kSize, data + size);
    }
    else if (frames.size() != segments)
    {
        Fail("TapSegmenter emitted another number of frames than it counted");
    }
    uint64_t written = 0;
    TapCoalescer coalescer([&written](std::vector<uint8_t>& bytes, uint32_t n) {
        written += n;
        if (n < 2)
        {
            return;
        }
        TapSegmenter again;
        uint32_t back = 0;
        if (again.Process(bytes.data(),
                          static_cast<uint32_t>(bytes.size()),
                          [](const uint8_t*, uint32_t) {},
                          &back) != TapOffloadError::None ||
            back != n)
        {
            Fail("a merged write does not segment back into the segments merged");
        }
    });
    int64_t now = 0;
    for (const auto& f : frames)
    {
        coalescer.Offer(f.data(), static_cast<uint32_t>(f.size()), now++);
    }
    coalescer.Flush();
    if (written != frames.size())
    {
        Fail("the coalescer's writes do not carry every frame offered");
    }
}

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1 || size > (1u << 20))
    {
        return 0;
    }
    const uint8_t which = data[0] % 4;
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
    case 2:
        Mad(rest, n);
        break;
    default:
        TapOffload(rest, n);
        break;
    }
    return 0;
}
