#include "ib-crc.h"
#include "ib-frame.h"

#include "ns3/assert.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

namespace
{
/// Zeros to compare a payload's end with, a block at a time.
constexpr uint32_t kZeroBlockBytes = 256;
const uint8_t kZeroBlock[kZeroBlockBytes] = {};

/// `len` minus the zeros that end the `len` bytes at `b`. Real data stops it at once; a zero
/// payload is skipped 256 bytes per memcmp (glibc's vectorised compare), then 8, then 1: a
/// 4 KiB zero payload costs 16 compares instead of the 512 of an 8-byte loop (callgrind: the
/// 8-byte loop was 3.6 % of an RDMA fat-tree run's instructions).
uint32_t
WithoutTrailingZeros(const uint8_t* b, uint32_t len)
{
    while (len >= kZeroBlockBytes &&
           std::memcmp(b + len - kZeroBlockBytes, kZeroBlock, kZeroBlockBytes) == 0)
    {
        len -= kZeroBlockBytes;
    }
    while (len >= 8)
    {
        uint64_t w;
        std::memcpy(&w, b + len - 8, 8);
        if (w != 0)
        {
            break;
        }
        len -= 8;
    }
    while (len > 0 && b[len - 1] == 0)
    {
        --len;
    }
    return len;
}
} // namespace

void
IbFrame::StoreBytes(const uint8_t* lead, uint32_t leadLen, const uint8_t* rest, uint32_t restLen)
{
    NS_ASSERT(leadLen <= kInlineBytes);
    const uint32_t restKept = restLen > 0 ? WithoutTrailingZeros(rest, restLen) : 0;
    const uint32_t leadKept = restKept > 0 ? leadLen : WithoutTrailingZeros(lead, leadLen);
    if (leadKept > 0) // an empty packet may come with a null pointer (memcpy's is nonnull)
    {
        std::memcpy(head.data(), lead, leadKept);
    }
    const uint32_t restInline = std::min(restKept, kInlineBytes - leadKept);
    if (restInline > 0)
    {
        std::memcpy(head.data() + leadKept, rest, restInline);
    }
    storedBytes = leadKept + restKept;
    tail.Assign(rest + restInline, restKept > restInline ? restKept - restInline : 0);
}

void
IbFrame::CopyStoredBytes(uint8_t* out) const
{
    NS_ASSERT(storedBytes <= bytes);
    if (storedBytes == 0)
    {
        return; // `out` may be null for an empty packet
    }
    std::memcpy(out, head.data(), std::min(storedBytes, kInlineBytes));
    if (tail)
    {
        std::memcpy(out + kInlineBytes, tail.Data(), tail.Size());
    }
}

void
IbFrame::CopyBytes(uint8_t* out) const
{
    CopyStoredBytes(out);
    if (bytes > storedBytes)
    {
        std::memset(out + storedBytes, 0, bytes - storedBytes);
    }
}

void
IbFrame::CopyHead(uint8_t* out, uint32_t n) const
{
    NS_ASSERT(n <= kInlineBytes);
    const uint32_t have = std::min(n, storedBytes);
    if (have > 0)
    {
        std::memcpy(out, head.data(), have);
    }
    if (n > have)
    {
        std::memset(out + have, 0, n - have);
    }
}

uint8_t&
IbFrame::HeadByte(uint32_t offset)
{
    NS_ASSERT(offset < kInlineBytes && offset < bytes);
    if (offset >= storedBytes)
    {
        // Not stored, so an implied zero (and so are the bytes before it, from storedBytes on,
        // which never exceeds kInlineBytes here: a tail exists only past a full head).
        std::memset(head.data() + storedBytes, 0, offset + 1 - storedBytes);
        storedBytes = offset + 1;
    }
    return head[offset];
}

void
IbFrameTail::Assign(const uint8_t* data, uint32_t n)
{
    if (n > m_capacity)
    {
        // Whole cache lines, and room for any MAD's tail at once (kIbMaxMadPacketBytes less
        // the inline head), so a frame's storage grows at most once on the management path.
        m_capacity = std::max<uint32_t>(256, (n + 63) & ~63u);
        m_buf.reset(new uint8_t[m_capacity]);
    }
    if (n > 0)
    {
        std::memcpy(m_buf.get(), data, n);
    }
    m_size = n;
}

Ptr<Packet>
IbFrame::ToPacket() const
{
    Ptr<Packet> p;
    if (tail)
    {
        std::vector<uint8_t> stored(storedBytes);
        CopyStoredBytes(stored.data());
        p = Create<Packet>(stored.data(), storedBytes);
    }
    else
    {
        p = Create<Packet>(head.data(), std::min(storedBytes, kInlineBytes));
    }
    if (bytes > storedBytes)
    {
        p->AddAtEnd(Create<Packet>(bytes - storedBytes)); // ns-3 keeps a zero area virtual
    }
    return p;
}

void
IbFrame::Materialize(std::vector<uint8_t>& out)
{
    const uint32_t len = bytes;
    out.resize(len);
    CopyBytes(out.data());
    if (len < IbLrhHeader::kSize + kIbVcrcBytes)
    {
        return;
    }
    // The VL is rewritten at every hop (SL-to-VL mapping, IBA vol. 1 §7.6.6).
    out[0] = static_cast<uint8_t>((vl << 4) | (out[0] & 0x0F));
    if (HasIcrc() && len >= IbLrhHeader::kSize + kIbIcrcBytes + kIbVcrcBytes)
    {
        uint8_t* icrcAt = out.data() + len - kIbVcrcBytes - kIbIcrcBytes;
        if (!icrcKnown)
        {
            // The ICRC is invariant end to end (its variant fields are masked): computed once.
            icrc = IbComputeIcrc(out.data(), len - kIbVcrcBytes - kIbIcrcBytes);
            icrcKnown = true;
        }
        IbStoreIcrc(icrcAt, icrc);
    }
    IbStoreVcrc(out.data() + len - kIbVcrcBytes, IbComputeVcrc(out.data(), len - kIbVcrcBytes));
}

} // namespace ns3
