#include "tap-offload.h"

#include "models/common/big-endian.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

namespace
{

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the virtio header and OnesComplementSum assume a little-endian machine");

constexpr uint16_t kTypeIpv4 = 0x0800;
constexpr uint16_t kTypeVlan = 0x8100; // 802.1Q §9.5
constexpr uint8_t kProtoTcp = 6;
constexpr uint32_t kIpv4MinHeader = 20;
constexpr uint32_t kTcpMinHeader = 20;
constexpr uint32_t kIpv4MaxTotal = 65535; // RFC 791 §3.1: Total Length is 16 bits
// TCP flags (RFC 793 §3.1, RFC 3168 §6.1 for ECE and CWR)
constexpr uint8_t kFin = 0x01;
constexpr uint8_t kSyn = 0x02;
constexpr uint8_t kRst = 0x04;
constexpr uint8_t kPsh = 0x08;
constexpr uint8_t kUrg = 0x20;
constexpr uint8_t kCwr = 0x80;

uint16_t
GetLe16(const uint8_t* p)
{
    return static_cast<uint16_t>(p[0] | p[1] << 8);
}

void
PutLe16(uint8_t* p, uint16_t v)
{
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}

/// Ethernet header length (one 802.1Q tag allowed) and the EtherType after it; 0 if short.
uint32_t
L2Length(const uint8_t* frame, uint32_t length, uint16_t* type)
{
    if (length < 14)
    {
        return 0;
    }
    *type = LoadBe16(frame + 12);
    if (*type != kTypeVlan)
    {
        return 14;
    }
    if (length < 18)
    {
        return 0;
    }
    *type = LoadBe16(frame + 16);
    return 18;
}

/// The IPv4 header checksum (RFC 791 §3.1) written into a header of `ihl` bytes.
void
SetIpv4Checksum(uint8_t* ip, uint32_t ihl)
{
    StoreBe16(ip + 10, 0);
    StoreBe16(ip + 10, static_cast<uint16_t>(~OnesComplementSum(ip, ihl)));
}

} // namespace

void
VirtioNetHeader::ReadFrom(const uint8_t* p)
{
    flags = p[0];
    gsoType = p[1];
    hdrLen = GetLe16(p + 2);
    gsoSize = GetLe16(p + 4);
    csumStart = GetLe16(p + 6);
    csumOffset = GetLe16(p + 8);
}

void
VirtioNetHeader::WriteTo(uint8_t* p) const
{
    p[0] = flags;
    p[1] = gsoType;
    PutLe16(p + 2, hdrLen);
    PutLe16(p + 4, gsoSize);
    PutLe16(p + 6, csumStart);
    PutLe16(p + 8, csumOffset);
}

const char*
TapOffloadErrorName(TapOffloadError e)
{
    switch (e)
    {
    case TapOffloadError::None:
        return "None";
    case TapOffloadError::Runt:
        return "Runt";
    case TapOffloadError::UnsupportedGso:
        return "UnsupportedGso";
    case TapOffloadError::BadGsoFrame:
        return "BadGsoFrame";
    case TapOffloadError::BadGsoSize:
        return "BadGsoSize";
    case TapOffloadError::BadChecksumSpan:
        return "BadChecksumSpan";
    }
    return "?";
}

uint16_t
OnesComplementSum(const uint8_t* data, size_t len, uint16_t initial)
{
    // RFC 1071 §2: the sum may be taken over wider words with the carries added back later
    // (C), and in the machine's byte order, swapping once at the end (B). 32-bit words summed
    // into 64-bit accumulators cannot overflow below 2^32 words, so the carries wait until the
    // fold; two accumulators let the additions overlap.
    uint64_t a = 0;
    uint64_t b = 0;
    while (len >= 16)
    {
        uint32_t w[4];
        std::memcpy(w, data, 16);
        a += w[0];
        b += w[1];
        a += w[2];
        b += w[3];
        data += 16;
        len -= 16;
    }
    while (len >= 4)
    {
        uint32_t w;
        std::memcpy(&w, data, 4);
        a += w;
        data += 4;
        len -= 4;
    }
    if (len >= 2)
    {
        uint16_t w;
        std::memcpy(&w, data, 2);
        b += w;
        data += 2;
        len -= 2;
    }
    if (len == 1)
    {
        b += data[0]; // a last odd byte is the high byte of a zero-padded word (RFC 1071 §4.1)
    }
    uint64_t sum = a + b; // both below 2^62: no carry out
    sum = (sum & 0xFFFFFFFFu) + (sum >> 32);
    sum = (sum & 0xFFFFFFFFu) + (sum >> 32);
    sum = (sum & 0xFFFFu) + (sum >> 16);
    sum = (sum & 0xFFFFu) + (sum >> 16);
    sum = (sum & 0xFFFFu) + (sum >> 16);
    const uint16_t native = static_cast<uint16_t>(sum);
    uint32_t be = static_cast<uint16_t>(native << 8 | native >> 8);
    be += initial;
    be = (be & 0xFFFFu) + (be >> 16);
    return static_cast<uint16_t>(be);
}

uint16_t
Ipv4PseudoHeaderSum(const uint8_t* srcDst8, uint8_t protocol, uint16_t l4Length)
{
    uint32_t s = OnesComplementSum(srcDst8, 8);
    s += protocol;
    s += l4Length;
    s = (s & 0xFFFFu) + (s >> 16);
    s = (s & 0xFFFFu) + (s >> 16);
    return static_cast<uint16_t>(s);
}

// --- host to fabric ------------------------------------------------------------------------

TapOffloadError
TapSegmenter::Process(const uint8_t* bytes,
                      uint32_t length,
                      const Emit& emit,
                      uint32_t* segments,
                      uint64_t* checksumsFilled)
{
    *segments = 0;
    uint32_t filled = 0;
    if (length < VirtioNetHeader::kSize)
    {
        return TapOffloadError::Runt;
    }
    VirtioNetHeader h;
    h.ReadFrom(bytes);
    const uint8_t* frame = bytes + VirtioNetHeader::kSize;
    const uint32_t flen = length - VirtioNetHeader::kSize;
    const uint8_t gso = h.gsoType & static_cast<uint8_t>(~VirtioNetHeader::kGsoEcn);
    if (gso == VirtioNetHeader::kGsoTcpV4)
    {
        const TapOffloadError e = Segment(h, frame, flen, emit, segments, &filled);
        if (checksumsFilled)
        {
            *checksumsFilled += filled;
        }
        return e;
    }
    if (gso != VirtioNetHeader::kGsoNone)
    {
        return TapOffloadError::UnsupportedGso; // only TUN_F_TSO4 is offered
    }
    if ((h.flags & VirtioNetHeader::kFlagNeedsCsum) == 0)
    {
        *segments = 1;
        emit(frame, flen);
        return TapOffloadError::None;
    }
    // CHECKSUM_PARTIAL: sum from csum_start to the end, the partial pseudo-header sum in the
    // field included, and store the complement (the kernel's skb_checksum_help).
    const uint32_t field = static_cast<uint32_t>(h.csumStart) + h.csumOffset;
    if (h.csumStart < 14 || field + 2 > flen)
    {
        return TapOffloadError::BadChecksumSpan;
    }
    m_frame.assign(frame, frame + flen);
    uint16_t c = static_cast<uint16_t>(
        ~OnesComplementSum(m_frame.data() + h.csumStart, flen - h.csumStart));
    // UDP only (its checksum field is at offset 6, TCP's at 16): a computed zero is sent as all
    // ones, zero meaning "no checksum" (RFC 768). TCP sends the zero it computed: a receiver's
    // sum checks either way, but 0xFFFF is not what a TCP sender computes, and Wireshark marks
    // it bad ("should be 0x0000", RFC 1624).
    if (c == 0 && h.csumOffset == 6)
    {
        c = 0xFFFF;
    }
    StoreBe16(m_frame.data() + field, c);
    if (checksumsFilled)
    {
        *checksumsFilled += 1;
    }
    *segments = 1;
    emit(m_frame.data(), flen);
    return TapOffloadError::None;
}

uint32_t
TapSegmenter::CountTsoSegments(const uint8_t* bytes, uint32_t length, uint8_t* trafficClass)
{
    if (length < VirtioNetHeader::kSize)
    {
        return 0;
    }
    VirtioNetHeader h;
    h.ReadFrom(bytes);
    if ((h.gsoType & static_cast<uint8_t>(~VirtioNetHeader::kGsoEcn)) !=
            VirtioNetHeader::kGsoTcpV4 ||
        h.gsoSize == 0)
    {
        return 0;
    }
    const uint8_t* frame = bytes + VirtioNetHeader::kSize;
    const uint32_t flen = length - VirtioNetHeader::kSize;
    uint16_t type = 0;
    const uint32_t l3 = L2Length(frame, flen, &type);
    if (l3 == 0 || type != kTypeIpv4 || l3 + kIpv4MinHeader > flen)
    {
        return 0;
    }
    const uint8_t* ip = frame + l3;
    const uint32_t ihl = static_cast<uint32_t>(ip[0] & 0x0F) * 4;
    const uint32_t total = LoadBe16(ip + 2);
    if (ihl < kIpv4MinHeader || l3 + ihl + kTcpMinHeader > flen || total < ihl + kTcpMinHeader)
    {
        return 0;
    }
    const uint32_t thl = static_cast<uint32_t>(ip[ihl + 12] >> 4) * 4;
    const uint32_t payload = total > ihl + thl ? total - ihl - thl : 0;
    *trafficClass = l3 == 18 ? static_cast<uint8_t>(frame[14] >> 5) : static_cast<uint8_t>(ip[1] >> 5);
    return payload == 0 ? 1 : (payload + h.gsoSize - 1) / h.gsoSize;
}

TapOffloadError
TapSegmenter::Segment(const VirtioNetHeader& h,
                      const uint8_t* frame,
                      uint32_t length,
                      const Emit& emit,
                      uint32_t* segments,
                      uint32_t* checksumsFilled)
{
    uint16_t type = 0;
    const uint32_t l3 = L2Length(frame, length, &type);
    if (l3 == 0)
    {
        return TapOffloadError::Runt;
    }
    if (type != kTypeIpv4 || l3 + kIpv4MinHeader > length)
    {
        return TapOffloadError::BadGsoFrame;
    }
    const uint8_t* ip = frame + l3;
    const uint32_t ihl = static_cast<uint32_t>(ip[0] & 0x0F) * 4;
    const uint32_t total = LoadBe16(ip + 2);
    // A TSO frame is one IPv4 datagram, never a fragment (inet_gso_segment refuses those).
    if (ip[0] >> 4 != 4 || ihl < kIpv4MinHeader || ip[9] != kProtoTcp ||
        (LoadBe16(ip + 6) & 0x3FFF) != 0 || total < ihl + kTcpMinHeader || l3 + total > length)
    {
        return TapOffloadError::BadGsoFrame;
    }
    const uint32_t l4 = l3 + ihl;
    const uint32_t thl = static_cast<uint32_t>(frame[l4 + 12] >> 4) * 4;
    if (thl < kTcpMinHeader || l4 + thl > l3 + total)
    {
        return TapOffloadError::BadGsoFrame;
    }
    const uint32_t headers = l4 + thl;
    const uint32_t payload = l3 + total - headers;
    const uint32_t mss = h.gsoSize;
    if (mss == 0)
    {
        return TapOffloadError::BadGsoSize;
    }
    const uint32_t n = payload == 0 ? 1 : (payload + mss - 1) / mss;
    if (n > kMaxSegments)
    {
        return TapOffloadError::BadGsoSize;
    }
    const uint32_t seq0 = LoadBe32(frame + l4 + 4);
    const uint16_t id0 = LoadBe16(ip + 4);
    const uint8_t flags0 = frame[l4 + 13];
    for (uint32_t i = 0; i < n; ++i)
    {
        const uint32_t at = i * mss;
        const uint32_t chunk = std::min(mss, payload - std::min(payload, at));
        m_frame.resize(headers + chunk);
        uint8_t* out = m_frame.data();
        std::memcpy(out, frame, headers);
        std::memcpy(out + headers, frame + headers + at, chunk);
        uint8_t* oip = out + l3;
        uint8_t* tcp = out + l4;
        StoreBe16(oip + 2, static_cast<uint16_t>(ihl + thl + chunk));
        StoreBe16(oip + 4, static_cast<uint16_t>(id0 + i)); // inet_gso_segment: id++ per segment
        SetIpv4Checksum(oip, ihl);
        StoreBe32(tcp + 4, seq0 + at);
        uint8_t f = flags0;
        if (i > 0)
        {
            f &= static_cast<uint8_t>(~kCwr); // tcp_gso_segment: CWR on the first only
        }
        if (i + 1 < n)
        {
            f &= static_cast<uint8_t>(~(kFin | kPsh)); // FIN and PSH on the last only
        }
        tcp[13] = f;
        StoreBe16(tcp + 16, 0);
        const uint16_t pseudo = Ipv4PseudoHeaderSum(oip + 12, kProtoTcp,
                                                    static_cast<uint16_t>(thl + chunk));
        StoreBe16(tcp + 16, static_cast<uint16_t>(~OnesComplementSum(tcp, thl + chunk, pseudo)));
        emit(out, headers + chunk);
    }
    *segments = n;
    *checksumsFilled += n;
    return TapOffloadError::None;
}

// --- fabric to host ------------------------------------------------------------------------

struct TapCoalescer::Parsed
{
    uint32_t l3 = 0;
    uint32_t l4 = 0;
    uint32_t headers = 0;  ///< Ethernet + IP + TCP
    uint32_t frameEnd = 0; ///< end of the IP datagram (padding excluded)
    uint32_t payload = 0;
    uint32_t seq = 0;
    uint16_t ipId = 0;
    uint8_t flags = 0;
};

bool
TapCoalescer::Parse(const uint8_t* frame, uint32_t length, Parsed& p) const
{
    uint16_t type = 0;
    p.l3 = L2Length(frame, length, &type);
    if (p.l3 == 0 || type != kTypeIpv4 || p.l3 + kIpv4MinHeader > length)
    {
        return false;
    }
    const uint8_t* ip = frame + p.l3;
    const uint32_t total = LoadBe16(ip + 2);
    // inet_gro_receive: IPv4 without options, not a fragment, a valid header checksum.
    if (ip[0] != 0x45 || ip[9] != kProtoTcp || (LoadBe16(ip + 6) & 0x3FFF) != 0 ||
        total < kIpv4MinHeader + kTcpMinHeader || p.l3 + total > length ||
        OnesComplementSum(ip, kIpv4MinHeader) != 0xFFFF)
    {
        return false;
    }
    p.l4 = p.l3 + kIpv4MinHeader;
    const uint8_t* tcp = frame + p.l4;
    const uint32_t thl = static_cast<uint32_t>(tcp[12] >> 4) * 4;
    if (thl < kTcpMinHeader || kIpv4MinHeader + thl > total)
    {
        return false;
    }
    p.headers = p.l4 + thl;
    p.frameEnd = p.l3 + total;
    p.payload = p.frameEnd - p.headers;
    p.flags = tcp[13];
    p.seq = LoadBe32(tcp + 4);
    p.ipId = LoadBe16(ip + 4);
    // Only data segments without SYN, RST or URG are merged (tcp_gro_receive flushes on them).
    if (p.payload == 0 || (p.flags & (kSyn | kRst | kUrg)) != 0)
    {
        return false;
    }
    // GRO merges only segments whose checksum it verified: the merged one reaches the kernel
    // as verified, so a corrupt segment must not hide in it.
    const uint16_t pseudo =
        Ipv4PseudoHeaderSum(ip + 12, kProtoTcp, static_cast<uint16_t>(total - kIpv4MinHeader));
    return OnesComplementSum(tcp, total - kIpv4MinHeader, pseudo) == 0xFFFF;
}

bool
TapCoalescer::CanAppend(const uint8_t* frame, const Parsed& p) const
{
    if (m_segments == 0 || p.l3 != m_l3 || p.headers != m_headerBytes)
    {
        return false;
    }
    const uint8_t* head = m_buf.data() + VirtioNetHeader::kSize;
    const uint8_t* ip = frame + p.l3;
    const uint8_t* hip = head + m_l3;
    const uint8_t* tcp = frame + p.l4;
    const uint8_t* htcp = head + m_l4;
    // Ethernet header (addresses, tag), then IPv4: TOS (DSCP and ECN), DF, TTL, protocol and
    // addresses must be equal (inet_gro_receive); a CE segment therefore never joins ECT ones.
    if (std::memcmp(frame, head, m_l3) != 0 || ip[1] != hip[1] || ip[6] != hip[6] ||
        ip[8] != hip[8] || std::memcmp(ip + 12, hip + 12, 8) != 0)
    {
        return false;
    }
    const bool df = (ip[6] & 0x40) != 0;
    if (p.ipId != m_nextIpId && !(df && p.ipId == LoadBe16(hip + 4)))
    {
        return false;
    }
    // TCP (tcp_gro_receive): ports, the next sequence number, the acknowledgement, header
    // length, flags but PSH/FIN, window, and every option byte (timestamps included) equal; a
    // segment with CWR starts a merge of its own; no payload larger than the first's.
    if (std::memcmp(tcp, htcp, 4) != 0 || p.seq != m_nextSeq ||
        std::memcmp(tcp + 8, htcp + 8, 4) != 0 || tcp[12] != htcp[12] ||
        (p.flags & kCwr) != 0 || ((p.flags ^ htcp[13]) & ~(kCwr | kFin | kPsh)) != 0 ||
        std::memcmp(tcp + 14, htcp + 14, 2) != 0 ||
        std::memcmp(tcp + 20, htcp + 20, p.headers - p.l4 - 20) != 0 || p.payload > m_mss)
    {
        return false;
    }
    const uint32_t heldTotal = static_cast<uint32_t>(m_buf.size()) - VirtioNetHeader::kSize - m_l3;
    return heldTotal + p.payload <= kIpv4MaxTotal;
}

void
TapCoalescer::Start(const uint8_t* frame, const Parsed& p, int64_t nowNs)
{
    // Room for the largest merge, so that appending never reallocates.
    m_buf.reserve(VirtioNetHeader::kSize + p.l3 + kIpv4MaxTotal);
    m_buf.resize(VirtioNetHeader::kSize + p.frameEnd);
    std::memcpy(m_buf.data() + VirtioNetHeader::kSize, frame, p.frameEnd);
    m_segments = 1;
    m_heldSinceNs = nowNs;
    m_l3 = p.l3;
    m_l4 = p.l4;
    m_headerBytes = p.headers;
    m_mss = p.payload;
    m_nextSeq = p.seq + p.payload;
    m_nextIpId = static_cast<uint16_t>(p.ipId + 1);
    m_headCwr = (p.flags & kCwr) != 0;
}

void
TapCoalescer::Append(const uint8_t* frame, const Parsed& p)
{
    m_buf.insert(m_buf.end(), frame + p.headers, frame + p.frameEnd);
    // tcp_gro_receive: the merged header takes PSH and FIN from the segments it swallowed.
    m_buf[VirtioNetHeader::kSize + m_l4 + 13] |= p.flags & (kFin | kPsh);
    m_segments++;
    m_nextSeq += p.payload;
    m_nextIpId++;
}

void
TapCoalescer::Offer(const uint8_t* frame, uint32_t length, int64_t nowNs)
{
    Parsed p;
    if (!Parse(frame, length, p))
    {
        Flush();
        WriteAlone(frame, length);
        return;
    }
    if (CanAppend(frame, p))
    {
        Append(frame, p);
        // tcp_gro_receive's final check: PSH or FIN, or a short segment, ends the merge; so
        // does a datagram too full for another segment of this size.
        const uint32_t heldTotal =
            static_cast<uint32_t>(m_buf.size()) - VirtioNetHeader::kSize - m_l3;
        if ((p.flags & (kPsh | kFin)) != 0 || p.payload < m_mss ||
            heldTotal + m_mss > kIpv4MaxTotal)
        {
            Flush();
        }
        return;
    }
    Flush();
    if ((p.flags & (kPsh | kFin)) != 0)
    {
        WriteAlone(frame, length); // nothing may follow it in the same merge
        return;
    }
    Start(frame, p, nowNs);
}

void
TapCoalescer::WriteAlone(const uint8_t* frame, uint32_t length)
{
    m_alone.resize(VirtioNetHeader::kSize + length);
    VirtioNetHeader().WriteTo(m_alone.data());
    std::memcpy(m_alone.data() + VirtioNetHeader::kSize, frame, length);
    m_counters.writes++;
    m_counters.frames++;
    m_write(m_alone, 1);
}

void
TapCoalescer::Flush()
{
    if (m_segments == 0)
    {
        return;
    }
    VirtioNetHeader h; // a lone segment goes as it came: no offload, its checksum as computed
    if (m_segments > 1)
    {
        uint8_t* frame = m_buf.data() + VirtioNetHeader::kSize;
        uint8_t* ip = frame + m_l3;
        uint8_t* tcp = frame + m_l4;
        const uint32_t total = static_cast<uint32_t>(m_buf.size()) - VirtioNetHeader::kSize - m_l3;
        StoreBe16(ip + 2, static_cast<uint16_t>(total));
        SetIpv4Checksum(ip, kIpv4MinHeader);
        // CHECKSUM_PARTIAL: the field holds the pseudo-header sum, as the kernel's TCP leaves
        // it for a device (tcp_v4_send_check); the receiving kernel takes it as verified.
        StoreBe16(tcp + 16, Ipv4PseudoHeaderSum(ip + 12, kProtoTcp,
                                            static_cast<uint16_t>(total - kIpv4MinHeader)));
        h.flags = VirtioNetHeader::kFlagNeedsCsum;
        h.gsoType = static_cast<uint8_t>(VirtioNetHeader::kGsoTcpV4 |
                                         (m_headCwr ? VirtioNetHeader::kGsoEcn : 0));
        h.hdrLen = static_cast<uint16_t>(m_headerBytes);
        h.gsoSize = static_cast<uint16_t>(m_mss);
        h.csumStart = static_cast<uint16_t>(m_l4);
        h.csumOffset = 16;
        m_counters.coalescedWrites++;
        m_counters.coalescedSegments += m_segments;
    }
    h.WriteTo(m_buf.data());
    m_counters.writes++;
    m_counters.frames += m_segments;
    const uint32_t frames = m_segments;
    m_segments = 0;
    m_write(m_buf, frames);
}

bool
TapCoalescer::FlushIfDue(int64_t nowNs, int64_t untilNextNs, int64_t idleGapNs, int64_t holdNs)
{
    if (m_segments == 0)
    {
        return false;
    }
    if (nowNs - m_heldSinceNs >= holdNs)
    {
        if (m_segments > 1)
        {
            m_counters.flushHold++;
        }
        Flush();
        return true;
    }
    if (untilNextNs > idleGapNs)
    {
        if (m_segments > 1)
        {
            m_counters.flushIdle++;
        }
        Flush();
        return true;
    }
    return false;
}

} // namespace ns3
