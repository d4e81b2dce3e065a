#include "eth-frame.h"

#include "models/common/big-endian.h"
#include "models/common/sim-object-pool.h"
#include "models/ib/ib-crc.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

const char*
EthParseErrorName(EthParseError e)
{
    switch (e)
    {
    case EthParseError::None:
        return "None";
    case EthParseError::Runt:
        return "Runt";
    case EthParseError::BadFcs:
        return "BadFcs";
    case EthParseError::UnknownEthertype:
        return "UnknownEthertype";
    case EthParseError::BadControl:
        return "BadControl";
    case EthParseError::BadIpv4:
        return "BadIpv4";
    case EthParseError::BadUdp:
        return "BadUdp";
    case EthParseError::BadIpv6:
        return "BadIpv6";
    case EthParseError::BadArp:
        return "BadArp";
    }
    return "?";
}

namespace
{
struct Crc32Table
{
    uint32_t t[256];
    Crc32Table()
    {
        for (uint32_t i = 0; i < 256; ++i)
        {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k)
            {
                c = (c & 1) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
            }
            t[i] = c;
        }
    }
};

/// One's-complement sum of 16-bit words, not yet folded or inverted (RFC 1071).
uint32_t
SumWords(const uint8_t* data, size_t len, uint32_t sum)
{
    for (size_t i = 0; i + 1 < len; i += 2)
    {
        sum += LoadBe16(data + i);
    }
    if (len & 1)
    {
        sum += static_cast<uint32_t>(data[len - 1]) << 8;
    }
    return sum;
}

/// The UDP checksum over IPv6 (RFC 8200 §8.1): pseudo-header (addresses, upper-layer length,
/// next header 17) plus the UDP header and payload, with the checksum field taken as zero;
/// a result of 0 is sent as 0xFFFF (RFC 768).
uint16_t
Udp6Checksum(const uint8_t* ip, const uint8_t* udp, uint16_t udpLen)
{
    uint32_t sum = SumWords(ip + 8, 32, 0);
    sum += udpLen;
    sum += kIpProtoUdp;
    sum = SumWords(udp, 6, sum); // ports and length, not the checksum field
    sum = SumWords(udp + 8, udpLen - kUdpHeaderBytes, sum);
    while (sum >> 16)
    {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    const uint16_t c = static_cast<uint16_t>(~sum);
    return c == 0 ? 0xFFFF : c;
}
} // namespace

uint32_t
EthCrc32(const uint8_t* data, size_t len)
{
    static const Crc32Table table;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; ++i)
    {
        c = table.t[(c ^ data[i]) & 0xFF] ^ (c >> 8);
    }
    return c ^ 0xFFFFFFFFu;
}

uint16_t
InternetChecksum(const uint8_t* data, size_t len)
{
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
    {
        sum += LoadBe16(data + i);
    }
    if (len & 1)
    {
        sum += static_cast<uint32_t>(data[len - 1]) << 8;
    }
    while (sum >> 16)
    {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return static_cast<uint16_t>(~sum);
}

void
EthFrame::ComputeSize()
{
    if (kind == EthFrameKind::Pfc)
    {
        bytes = EthFrameBytes(EthPfcHeader::kSize, vlanTagged, intBytes);
    }
    else if (kind == EthFrameKind::Verbatim)
    {
        // The host's network-layer bytes (the EtherType is in the header).
        bytes = EthFrameBytes(payloadBytes, vlanTagged, intBytes);
    }
    else
    {
        bytes = EthUdpFrameBytes(payloadBytes, ipv6, vlanTagged, intBytes);
    }
}

void
EthFrame::StorePayload(const uint8_t* data, uint32_t len)
{
    if (len > 0 && len <= kInlinePayloadBytes)
    {
        std::memcpy(inlinePayload.data(), data, len);
        inlineLength = static_cast<uint8_t>(len);
        payload = nullptr;
        return;
    }
    inlineLength = 0;
    payload = len > 0 ? Create<Packet>(data, len) : nullptr;
}

uint32_t
EthFrame::CopyPayload(uint8_t* dst, uint32_t len) const
{
    if (inlineLength)
    {
        const uint32_t n = std::min<uint32_t>(len, inlineLength);
        std::memcpy(dst, inlinePayload.data(), n);
        return n;
    }
    return payload && len > 0 ? payload->CopyData(dst, len) : 0;
}

void
EthFrame::FillPendingIcrc(uint8_t* ip, uint32_t ipHeaderBytes) const
{
    if (!icrcPending || StoredPayloadBytes() == 0 || payloadBytes < kIbIcrcSize)
    {
        return;
    }
    // Annex A17.4.5.3: the ICRC covers the IP header through the end of the transport payload
    // (variant fields masked); the IP and UDP headers written above are the ones on the wire.
    const size_t before = ipHeaderBytes + kUdpHeaderBytes + payloadBytes - kIbIcrcSize;
    IbStoreIcrc(ip + before, IbComputeRoceIcrc(ip, before));
}

void
EthFrame::Materialize(std::vector<uint8_t>& out, bool withFcs) const
{
    // The INT bytes are accounted, not materialized (see intBytes): the frame as captured is
    // the one without them, padded on its own.
    uint32_t bytes = this->bytes;
    if (intBytes != 0)
    {
        bytes = std::max(kEthMinFrameBytes, bytes - intBytes);
    }
    out.assign(bytes, 0); // zeros are also the padding (802.3 §3.2.8)
    uint8_t* p = out.data();
    StoreBe48(p, dstMac);
    StoreBe48(p + 6, srcMac);
    uint32_t off = 12;
    if (vlanTagged)
    {
        StoreBe16(p + off, kEthTypeVlan);
        StoreBe16(p + off + 2, static_cast<uint16_t>((pcp & 7) << 13 | (vid & 0x0FFF)));
        off += kEthVlanTagBytes;
    }
    if (kind == EthFrameKind::Pfc)
    {
        StoreBe16(p + off, kEthTypeMacControl);
        pfc.WriteTo(p + off + 2);
    }
    else if (kind == EthFrameKind::Verbatim)
    {
        StoreBe16(p + off, etherType);
        CopyPayload(p + off + 2, payloadBytes);
        MaterializeVerbatim(p + off + 2);
    }
    else if (ipv6)
    {
        StoreBe16(p + off, kEthTypeIpv6);
        uint8_t* ip = p + off + 2;
        const uint16_t udpLen = static_cast<uint16_t>(kUdpHeaderBytes + payloadBytes);
        // RFC 8200 §3: version 6, traffic class (DSCP << 2 | ECN), flow label, payload length,
        // next header 17 (UDP), hop limit, addresses.
        const uint8_t tc = static_cast<uint8_t>(dscp << 2 | (ecn & 3));
        ip[0] = static_cast<uint8_t>(0x60 | tc >> 4);
        ip[1] = static_cast<uint8_t>((tc & 0x0F) << 4 | ((flowLabel >> 16) & 0x0F));
        StoreBe16(ip + 2, static_cast<uint16_t>(flowLabel));
        StoreBe16(ip + 4, udpLen);
        ip[6] = kIpProtoUdp;
        ip[7] = ttl;
        std::memcpy(ip + 8, srcIp6.data(), 16);
        std::memcpy(ip + 24, dstIp6.data(), 16);
        uint8_t* udp = ip + kIpv6HeaderBytes;
        StoreBe16(udp, srcPort);
        StoreBe16(udp + 2, dstPort);
        StoreBe16(udp + 4, udpLen);
        CopyPayload(udp + kUdpHeaderBytes, payloadBytes);
        FillPendingIcrc(ip, kIpv6HeaderBytes);
        StoreBe16(udp + 6, Udp6Checksum(ip, udp, udpLen));
    }
    else
    {
        StoreBe16(p + off, kEthTypeIpv4);
        uint8_t* ip = p + off + 2;
        const uint16_t udpLen = static_cast<uint16_t>(kUdpHeaderBytes + payloadBytes);
        // RFC 791 §3.1: version 4, IHL 5, TOS = DSCP << 2 | ECN (RFC 2474, RFC 3168).
        ip[0] = 0x45;
        ip[1] = static_cast<uint8_t>(dscp << 2 | (ecn & 3));
        StoreBe16(ip + 2, static_cast<uint16_t>(kIpv4HeaderBytes + udpLen));
        StoreBe16(ip + 4, ipId);
        StoreBe16(ip + 6, 0x4000); // DF, as RoCEv2 senders set it
        ip[8] = ttl;
        ip[9] = kIpProtoUdp;
        StoreBe32(ip + 12, srcIp);
        StoreBe32(ip + 16, dstIp);
        StoreBe16(ip + 10, InternetChecksum(ip, kIpv4HeaderBytes));
        uint8_t* udp = ip + kIpv4HeaderBytes;
        StoreBe16(udp, srcPort);
        StoreBe16(udp + 2, dstPort);
        StoreBe16(udp + 4, udpLen);
        CopyPayload(udp + kUdpHeaderBytes, payloadBytes);
        FillPendingIcrc(ip, kIpv4HeaderBytes);
    }
    if (!withFcs)
    {
        out.resize(bytes - kEthFcsBytes); // a capture's view: no FCS, and none to compute
        return;
    }
    const uint32_t fcs = EthCrc32(p, bytes - kEthFcsBytes);
    for (int i = 0; i < 4; ++i)
    {
        p[bytes - 4 + i] = static_cast<uint8_t>(fcs >> (8 * i));
    }
}

void
EthFrame::ParseMacHeader(const uint8_t* data, EthFrame& f, uint32_t* off, uint16_t* type)
{
    // 802.3 §3.1.1 and 802.1Q §9.5: addresses, an optional C-tag, the EtherType.
    f.dstMac = LoadBe48(data);
    f.srcMac = LoadBe48(data + 6);
    uint32_t o = 12;
    uint16_t t = LoadBe16(data + o);
    f.vlanTagged = false;
    if (t == kEthTypeVlan)
    {
        const uint16_t tci = LoadBe16(data + o + 2);
        f.vlanTagged = true;
        f.pcp = static_cast<uint8_t>(tci >> 13);
        f.vid = tci & 0x0FFF;
        o += kEthVlanTagBytes;
        t = LoadBe16(data + o);
    }
    *off = o + 2;
    *type = t;
}

EthParseError
EthFrame::ParseIpv6(const uint8_t* ip, uint32_t avail, EthFrame& f)
{
    f.kind = EthFrameKind::Udp;
    f.ipv6 = true;
    if (avail < kIpv6HeaderBytes + kUdpHeaderBytes || ip[0] >> 4 != 6)
    {
        return EthParseError::BadIpv6;
    }
    const uint16_t payloadLen = LoadBe16(ip + 4);
    // Extension headers (next header other than UDP) are not modelled.
    if (ip[6] != kIpProtoUdp || payloadLen < kUdpHeaderBytes ||
        kIpv6HeaderBytes + payloadLen > avail)
    {
        return EthParseError::BadIpv6;
    }
    const uint8_t tc = static_cast<uint8_t>((ip[0] & 0x0F) << 4 | ip[1] >> 4);
    f.dscp = tc >> 2;
    f.ecn = tc & 3;
    f.flowLabel = static_cast<uint32_t>(ip[1] & 0x0F) << 16 | LoadBe16(ip + 2);
    f.ttl = ip[7];
    std::memcpy(f.srcIp6.data(), ip + 8, 16);
    std::memcpy(f.dstIp6.data(), ip + 24, 16);
    const uint8_t* udp = ip + kIpv6HeaderBytes;
    const uint16_t sent = LoadBe16(udp + 6);
    // RFC 8200 §8.1: a zero UDP checksum over IPv6 is discarded, as is a wrong one.
    if (LoadBe16(udp + 4) != payloadLen || sent == 0 || Udp6Checksum(ip, udp, payloadLen) != sent)
    {
        return EthParseError::BadUdp;
    }
    f.srcPort = LoadBe16(udp);
    f.dstPort = LoadBe16(udp + 2);
    f.payloadBytes = payloadLen - kUdpHeaderBytes;
    f.inlineLength = 0;
    f.payload = f.payloadBytes > 0 ? Create<Packet>(udp + kUdpHeaderBytes, f.payloadBytes)
                                   : nullptr;
    return EthParseError::None;
}

EthParseError
EthFrame::Parse(const uint8_t* data, uint32_t len, EthFrame& f)
{
    f.icrcPending = false; // bytes from outside carry their own ICRC, to be checked
    if (len < kEthMinFrameBytes)
    {
        return EthParseError::Runt;
    }
    const uint32_t fcsRx = static_cast<uint32_t>(data[len - 4]) |
                           static_cast<uint32_t>(data[len - 3]) << 8 |
                           static_cast<uint32_t>(data[len - 2]) << 16 |
                           static_cast<uint32_t>(data[len - 1]) << 24;
    if (EthCrc32(data, len - kEthFcsBytes) != fcsRx)
    {
        return EthParseError::BadFcs;
    }
    const uint32_t end = len - kEthFcsBytes;
    uint32_t off = 0;
    uint16_t type = 0;
    ParseMacHeader(data, f, &off, &type); // 64 bytes hold any header
    f.bytes = len;
    if (type == kEthTypeMacControl)
    {
        f.kind = EthFrameKind::Pfc;
        f.pfc.ReadFrom(data + off); // 64-byte minimum guarantees the 20 bytes are there
        // 802.1Qbb §36.1.3: the upper octet of the class-enable vector is reserved, ignored on
        // receipt; any opcode but PFC is a control frame this model does not implement.
        if (f.pfc.opcode != kMacControlOpcodePfc)
        {
            return EthParseError::BadControl;
        }
        return EthParseError::None;
    }
    if (type == kEthTypeIpv6)
    {
        return ParseIpv6(data + off, end - off, f);
    }
    if (type != kEthTypeIpv4)
    {
        return EthParseError::UnknownEthertype;
    }
    f.kind = EthFrameKind::Udp;
    f.ipv6 = false;
    const uint8_t* ip = data + off;
    if (off + kIpv4HeaderBytes > end || ip[0] != 0x45)
    {
        return EthParseError::BadIpv4; // not IPv4, or options (not modelled)
    }
    const uint16_t total = LoadBe16(ip + 2);
    if (total < kIpv4HeaderBytes + kUdpHeaderBytes || off + total > end ||
        InternetChecksum(ip, kIpv4HeaderBytes) != 0 || (LoadBe16(ip + 6) & 0x3FFF) != 0 ||
        ip[9] != kIpProtoUdp)
    {
        return EthParseError::BadIpv4;
    }
    f.dscp = ip[1] >> 2;
    f.ecn = ip[1] & 3;
    f.ipId = LoadBe16(ip + 4);
    f.ttl = ip[8];
    f.srcIp = LoadBe32(ip + 12);
    f.dstIp = LoadBe32(ip + 16);
    const uint8_t* udp = ip + kIpv4HeaderBytes;
    if (LoadBe16(udp + 4) != total - kIpv4HeaderBytes)
    {
        return EthParseError::BadUdp;
    }
    f.srcPort = LoadBe16(udp);
    f.dstPort = LoadBe16(udp + 2);
    f.payloadBytes = total - kIpv4HeaderBytes - kUdpHeaderBytes;
    f.inlineLength = 0;
    f.payload = f.payloadBytes > 0 ? Create<Packet>(udp + kUdpHeaderBytes, f.payloadBytes)
                                   : nullptr;
    return EthParseError::None;
}

void
EthFrame::MaterializeVerbatim(uint8_t* ip) const
{
    if (etherType == kEthTypeIpv4)
    {
        // A router rewrites TTL (RFC 1812 §5.3.1) and may set CE (RFC 3168 §5), and then
        // recomputes the header checksum (RFC 1624 allows it incrementally; the whole header is
        // as cheap here). DSCP is written too: a switch may re-mark it.
        const uint32_t ihl = static_cast<uint32_t>(ip[0] & 0x0F) * 4;
        ip[1] = static_cast<uint8_t>(dscp << 2 | (ecn & 3));
        ip[8] = ttl;
        StoreBe16(ip + 10, 0);
        StoreBe16(ip + 10, InternetChecksum(ip, ihl));
    }
    else if (etherType == kEthTypeIpv6)
    {
        // RFC 8200 §3: the traffic class straddles bytes 0 and 1; the hop limit is byte 7.
        const uint8_t tc = static_cast<uint8_t>(dscp << 2 | (ecn & 3));
        ip[0] = static_cast<uint8_t>(0x60 | tc >> 4);
        ip[1] = static_cast<uint8_t>((tc & 0x0F) << 4 | (ip[1] & 0x0F));
        ip[7] = ttl;
    }
}

EthParseError
EthFrame::ParseFromHost(const uint8_t* data, uint32_t len, EthFrame& f)
{
    f.icrcPending = false;
    f.intRec = nullptr;
    f.intPush = false;
    f.intBytes = 0;
    if (len < kEthHeaderBytes)
    {
        return EthParseError::Runt;
    }
    if (LoadBe16(data + 12) == kEthTypeVlan && len < kEthHeaderBytes + kEthVlanTagBytes)
    {
        return EthParseError::Runt;
    }
    uint32_t off = 0;
    uint16_t type = 0;
    ParseMacHeader(data, f, &off, &type);
    if (type == kEthTypeMacControl)
    {
        // A host may send PFC itself (its own receive buffer backing up): parse it as the wire
        // parser does, which needs the padded 64-byte frame with its FCS.
        std::vector<uint8_t> padded(data, data + len);
        padded.resize(std::max<uint32_t>(len, kEthMinFrameBytes - kEthFcsBytes), 0);
        const uint32_t fcs = EthCrc32(padded.data(), padded.size());
        for (int i = 0; i < 4; ++i)
        {
            padded.push_back(static_cast<uint8_t>(fcs >> (8 * i)));
        }
        return Parse(padded.data(), static_cast<uint32_t>(padded.size()), f);
    }
    const uint8_t* l3 = data + off;
    const uint32_t avail = len - off;
    uint32_t l3Len = 0;
    uint32_t l4Off = 0; // where TCP/UDP ports start, if any
    f.kind = EthFrameKind::Verbatim;
    f.etherType = type;
    f.srcPort = 0;
    f.dstPort = 0;
    f.flowLabel = 0;
    if (type == kEthTypeIpv4)
    {
        f.ipv6 = false;
        if (avail < kIpv4HeaderBytes || l3[0] >> 4 != 4)
        {
            return EthParseError::BadIpv4;
        }
        const uint32_t ihl = static_cast<uint32_t>(l3[0] & 0x0F) * 4;
        if (ihl < kIpv4HeaderBytes || ihl > avail)
        {
            return EthParseError::BadIpv4;
        }
        l3Len = LoadBe16(l3 + 2);
        // RFC 1812 §5.2.2: a router checks the length fields and the header checksum.
        if (l3Len < ihl || l3Len > avail || InternetChecksum(l3, ihl) != 0)
        {
            return EthParseError::BadIpv4;
        }
        f.dscp = l3[1] >> 2;
        f.ecn = l3[1] & 3;
        f.ipId = LoadBe16(l3 + 4);
        f.ttl = l3[8];
        f.ipProtocol = l3[9];
        f.srcIp = LoadBe32(l3 + 12);
        f.dstIp = LoadBe32(l3 + 16);
        // Ports only in a first (or only) fragment: later ones carry no transport header.
        if ((LoadBe16(l3 + 6) & 0x1FFF) == 0)
        {
            l4Off = ihl;
        }
    }
    else if (type == kEthTypeIpv6)
    {
        f.ipv6 = true;
        if (avail < kIpv6HeaderBytes || l3[0] >> 4 != 6)
        {
            return EthParseError::BadIpv6;
        }
        l3Len = kIpv6HeaderBytes + LoadBe16(l3 + 4);
        if (l3Len > avail)
        {
            return EthParseError::BadIpv6;
        }
        const uint8_t tc = static_cast<uint8_t>((l3[0] & 0x0F) << 4 | l3[1] >> 4);
        f.dscp = tc >> 2;
        f.ecn = tc & 3;
        f.flowLabel = static_cast<uint32_t>(l3[1] & 0x0F) << 16 | LoadBe16(l3 + 2);
        f.ttl = l3[7];
        f.ipProtocol = l3[6];
        std::memcpy(f.srcIp6.data(), l3 + 8, 16);
        std::memcpy(f.dstIp6.data(), l3 + 24, 16);
        l4Off = kIpv6HeaderBytes; // extension headers: hashed without ports
    }
    else if (type == kEthTypeArp)
    {
        f.ipv6 = false;
        // RFC 826: hardware type 1 (Ethernet), protocol 0x0800, lengths 6 and 4.
        if (avail < kArpIpv4Bytes || LoadBe16(l3) != 1 || LoadBe16(l3 + 2) != kEthTypeIpv4 ||
            l3[4] != 6 || l3[5] != 4)
        {
            return EthParseError::BadArp;
        }
        l3Len = kArpIpv4Bytes;
        f.dscp = 0;
        f.ecn = kEcnNotEct;
        f.ttl = 64; // no TTL in ARP: enough for any path, never written back
        f.ipProtocol = 0;
        f.srcIp = LoadBe32(l3 + 14); // sender protocol address
        f.dstIp = LoadBe32(l3 + 24); // target protocol address: where the frame goes
    }
    else
    {
        return EthParseError::UnknownEthertype;
    }
    if (l4Off != 0 && (f.ipProtocol == kIpProtoTcp || f.ipProtocol == kIpProtoUdp) &&
        l4Off + 4 <= l3Len)
    {
        f.srcPort = LoadBe16(l3 + l4Off);
        f.dstPort = LoadBe16(l3 + l4Off + 2);
    }
    f.payloadBytes = l3Len; // trailing bytes past the IP length (padding) are not carried
    f.inlineLength = 0;
    f.payload = nullptr;
    f.StorePayload(l3, l3Len);
    f.ComputeSize();
    return EthParseError::None;
}

namespace
{
SimObjectPool<EthFrame>&
ThePool()
{
    // Never destroyed: ports release frames when they are disposed, and a program that exits
    // without Simulator::Destroy disposes them from exit handlers, after function-local
    // statics like this one would be gone (found by tests/fuzz). The OS takes the memory back.
    static auto* pool = new SimObjectPool<EthFrame>;
    return *pool;
}
} // namespace

EthFrame*
EthFramePool::Allocate()
{
    return ThePool().Allocate();
}

// flatten: GCC 12 otherwise calls an out-of-line copy of Ptr::operator= for the nulling, some 20
// instructions more per frame than when the pool was written out here (measured with callgrind).
__attribute__((flatten)) void
EthFramePool::Release(EthFrame* frame)
{
    if (ThePool().Release(frame))
    {
        frame->payload = nullptr;
        if (frame->intRec)
        {
            EthIntPool::Release(frame->intRec);
            frame->intRec = nullptr;
        }
    }
}

EthFrame*
EthFramePool::Copy(const EthFrame& frame)
{
    EthFrame* copy = Allocate();
    *copy = frame; // the fields; the reference count stays the fresh frame's
    copy->inPool = false;
    copy->receiver = nullptr;
    copy->mmuBucket = 0;
    copy->intRec = nullptr;
    if (frame.intRec)
    {
        EthIntRecord* rec = EthIntPool::Allocate();
        rec->maxHops = frame.intRec->maxHops;
        rec->stack.CopyHopsFrom(frame.intRec->stack);
        copy->intRec = rec;
    }
    return copy;
}

namespace
{
SimObjectPool<EthIntRecord>&
TheIntPool()
{
    // Never destroyed: ports release frames when they are disposed, and a program that exits
    // without Simulator::Destroy disposes them from exit handlers, after function-local
    // statics like this one would be gone (found by tests/fuzz). The OS takes the memory back.
    static auto* pool = new SimObjectPool<EthIntRecord>;
    return *pool;
}
} // namespace

EthIntRecord*
EthIntPool::Allocate()
{
    return TheIntPool().Allocate();
}

void
EthIntPool::Release(EthIntRecord* rec)
{
    TheIntPool().Release(rec);
}

size_t
EthIntPool::Created()
{
    return TheIntPool().Created();
}

size_t
EthFramePool::Created()
{
    return ThePool().Created();
}

} // namespace ns3
