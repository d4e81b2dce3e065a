#include "ib-crc.h"

#include "ns3/assert.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace ns3
{

namespace
{

// Offsets inside the headers that the ICRC masks (IBA vol. 1 §7.7 LRH, §8.3 GRH, §9.2 BTH).
constexpr size_t kLrhSize = 8;
constexpr size_t kGrhSize = 40;
constexpr size_t kBthSize = 12;
constexpr size_t kBthResv8aOffset = 4;
constexpr size_t kGrhHopLmtOffset = 7;
constexpr size_t kUdpSize = 8;
constexpr size_t kUdpChecksumOffset = 6;
constexpr size_t kIpv6Size = 40;
constexpr size_t kIpv6HopLimitOffset = 7;
constexpr size_t kIpv4TosOffset = 1;
constexpr size_t kIpv4TtlOffset = 8;
constexpr size_t kIpv4ChecksumOffset = 10;
constexpr size_t kIpv4MaxHeader = 60;
/// RoCEv2 replaces the LRH by eight bytes of ones in the ICRC (annex A17; rxe seeds its CRC with
/// 0xdebb20e3, which is the CRC-32 register after these eight bytes).
constexpr size_t kRoceLrhStandIn = 8;

/// Reflected form of the VCRC polynomial 0x100B (bit order reversed): 0xD008.
constexpr uint16_t kVcrcPolyReflected = 0xD008;

/**
 * Slicing-by-8 tables for the reflected CRC-16. Table 0 is the classic byte-at-a-time table;
 * table k advances a byte's contribution by k further zero bytes, so eight input bytes fold
 * into the register with eight lookups and no data-dependent loop.
 */
struct Crc16Tables
{
    std::array<std::array<uint16_t, 256>, 8> t{};

    constexpr Crc16Tables()
    {
        for (unsigned n = 0; n < 256; ++n)
        {
            uint16_t c = static_cast<uint16_t>(n);
            for (int k = 0; k < 8; ++k)
            {
                c = (c & 1) ? static_cast<uint16_t>((c >> 1) ^ kVcrcPolyReflected)
                            : static_cast<uint16_t>(c >> 1);
            }
            t[0][n] = c;
        }
        for (unsigned n = 0; n < 256; ++n)
        {
            for (int k = 1; k < 8; ++k)
            {
                const uint16_t prev = t[k - 1][n];
                t[k][n] = static_cast<uint16_t>((prev >> 8) ^ t[0][prev & 0xFF]);
            }
        }
    }
};

constexpr Crc16Tables kCrc16{};

/// Advance the CRC-16 register (no initial/final inversion here) over len bytes.
uint16_t
Crc16Update(uint16_t c, const uint8_t* p, size_t len)
{
    const auto& t = kCrc16.t;
    while (len >= 8)
    {
        c = static_cast<uint16_t>(
            t[7][(p[0] ^ c) & 0xFF] ^ t[6][(p[1] ^ (c >> 8)) & 0xFF] ^ t[5][p[2]] ^ t[4][p[3]] ^
            t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]]);
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
    {
        c = static_cast<uint16_t>((c >> 8) ^ t[0][(c ^ *p++) & 0xFF]);
    }
    return c;
}

/// zlib's crc32 continues from a finished CRC value; feed it in chunks that fit uInt.
uint32_t
Crc32Continue(uint32_t crc, const uint8_t* p, size_t len)
{
    uLong c = crc;
    while (len > 0)
    {
        const auto chunk = static_cast<uInt>(std::min<size_t>(len, 1U << 30));
        c = crc32(c, p, chunk);
        p += chunk;
        len -= chunk;
    }
    return static_cast<uint32_t>(c);
}

/// Set byte off of a masked copy to all ones if the copy reaches it.
inline void
MaskByte(uint8_t* prefix, size_t copied, size_t off)
{
    if (off < copied)
    {
        prefix[off] = 0xFF;
    }
}

} // namespace

uint16_t
IbComputeVcrc(const uint8_t* data, size_t len)
{
    // IBA vol. 1 §7.8.2: register preset to ones, complemented at the end.
    return static_cast<uint16_t>(Crc16Update(0xFFFF, data, len) ^ 0xFFFF);
}

uint16_t
IbComputeLpcrc(const uint8_t* first4Bytes)
{
    // IBA vol. 1 §7.9.4: the LPCRC covers the four bytes Op/FCTBS/VL/FCCL with the VCRC's CRC.
    return IbComputeVcrc(first4Bytes, 4);
}

uint32_t
IbComputeIcrc(const uint8_t* pkt, size_t lenBeforeIcrc)
{
    // The masked fields all sit in the first 60 bytes (LRH + GRH + BTH); mask a copy of that
    // prefix only and feed the rest of the packet to zlib straight from the caller's buffer.
    uint8_t prefix[kLrhSize + kGrhSize + kBthSize];
    const uint8_t lnh = lenBeforeIcrc >= 2 ? (pkt[1] & 0x03) : 0;
    const size_t prefixLen = (lnh == 3)   ? kLrhSize + kGrhSize + kBthSize
                             : (lnh == 2) ? kLrhSize + kBthSize
                                          : kLrhSize;
    const size_t copied = std::min(prefixLen, lenBeforeIcrc);
    if (copied > 0)
    {
        std::memcpy(prefix, pkt, copied); // pkt may be null when the length is 0
    }

    if (lnh == 3)
    {
        // IBA vol. 1 §7.8.1: a global packet may cross routers, which rebuild the LRH, so the
        // whole LRH is variant; in the GRH TClass, FlowLabel and HopLmt are variant.
        std::memset(prefix, 0xFF, std::min(kLrhSize, copied));
        const size_t grh = kLrhSize;
        if (grh < copied)
        {
            prefix[grh] |= 0x0F; // IPVer stays, the TClass high nibble is masked
        }
        for (size_t off = grh + 1; off < grh + 4; ++off)
        {
            MaskByte(prefix, copied, off); // rest of TClass and FlowLabel
        }
        MaskByte(prefix, copied, grh + kGrhHopLmtOffset);
        MaskByte(prefix, copied, grh + kGrhSize + kBthResv8aOffset);
    }
    else
    {
        // IBA vol. 1 §7.8.1: in a local packet only the VL (reassigned per hop by SL-to-VL
        // mapping) and BTH.Resv8a (FECN/BECN, set by switches) are variant.
        if (copied > 0)
        {
            prefix[0] |= 0xF0;
        }
        if (lnh == 2)
        {
            MaskByte(prefix, copied, kLrhSize + kBthResv8aOffset);
        }
    }

    uint32_t crc = Crc32Continue(0, prefix, copied);
    return Crc32Continue(crc, pkt + copied, lenBeforeIcrc - copied);
}

uint32_t
IbComputeRoceIcrc(const uint8_t* ipHeader, size_t lenBeforeIcrc)
{
    uint8_t prefix[kRoceLrhStandIn + kIpv4MaxHeader + kUdpSize + kBthSize];
    std::memset(prefix, 0xFF, kRoceLrhStandIn);
    uint8_t* masked = prefix + kRoceLrhStandIn;

    const bool v6 = lenBeforeIcrc > 0 && (ipHeader[0] >> 4) == 6;
    size_t ipLen = kIpv6Size;
    if (!v6)
    {
        // IHL counts 32-bit words; a nonsense IHL below 5 still masks the fixed 20 bytes.
        ipLen = lenBeforeIcrc > 0 ? std::max<size_t>(4u * (ipHeader[0] & 0x0F), 20) : 20;
    }
    const size_t prefixLen = ipLen + kUdpSize + kBthSize;
    const size_t copied = std::min(prefixLen, lenBeforeIcrc);
    if (copied > 0)
    {
        std::memcpy(masked, ipHeader, copied); // ipHeader may be null when the length is 0
    }

    if (v6)
    {
        // rxe_icrc.c: traffic class and flow label (everything after the version nibble of the
        // first word) and the hop limit are variant.
        if (copied > 0)
        {
            masked[0] |= 0x0F;
        }
        for (size_t off = 1; off < 4; ++off)
        {
            MaskByte(masked, copied, off);
        }
        MaskByte(masked, copied, kIpv6HopLimitOffset);
    }
    else
    {
        // rxe_icrc.c: TOS (DSCP/ECN, rewritten on ECN marking), TTL and header checksum.
        MaskByte(masked, copied, kIpv4TosOffset);
        MaskByte(masked, copied, kIpv4TtlOffset);
        MaskByte(masked, copied, kIpv4ChecksumOffset);
        MaskByte(masked, copied, kIpv4ChecksumOffset + 1);
    }
    MaskByte(masked, copied, ipLen + kUdpChecksumOffset);
    MaskByte(masked, copied, ipLen + kUdpChecksumOffset + 1);
    MaskByte(masked, copied, ipLen + kUdpSize + kBthResv8aOffset);

    uint32_t crc = Crc32Continue(0, prefix, kRoceLrhStandIn + copied);
    return Crc32Continue(crc, ipHeader + copied, lenBeforeIcrc - copied);
}

void
IbStoreIcrc(uint8_t* dst, uint32_t icrc)
{
    dst[0] = static_cast<uint8_t>(icrc);
    dst[1] = static_cast<uint8_t>(icrc >> 8);
    dst[2] = static_cast<uint8_t>(icrc >> 16);
    dst[3] = static_cast<uint8_t>(icrc >> 24);
}

uint32_t
IbLoadIcrc(const uint8_t* src)
{
    return static_cast<uint32_t>(src[0]) | (static_cast<uint32_t>(src[1]) << 8) |
           (static_cast<uint32_t>(src[2]) << 16) | (static_cast<uint32_t>(src[3]) << 24);
}

void
IbStoreVcrc(uint8_t* dst, uint16_t vcrc)
{
    dst[0] = static_cast<uint8_t>(vcrc);
    dst[1] = static_cast<uint8_t>(vcrc >> 8);
}

uint16_t
IbLoadVcrc(const uint8_t* src)
{
    return static_cast<uint16_t>(src[0] | (src[1] << 8));
}

namespace
{
/// IBA vol. 1 §7.8.1: only IBA transport packets (LNH 2 and 3) carry an ICRC.
inline bool
CarriesIcrc(const uint8_t* pkt, size_t len)
{
    return len >= kLrhSize + kIbIcrcSize + kIbVcrcSize && (pkt[1] & 0x03) >= 2;
}
} // namespace

void
IbFillCrcs(uint8_t* pkt, size_t len)
{
    NS_ASSERT_MSG(len >= kLrhSize + kIbVcrcSize, "packet shorter than LRH + VCRC");
    if (len < kLrhSize + kIbVcrcSize)
    {
        return; // release builds: nothing sensible to fill, and never write out of bounds
    }
    if (CarriesIcrc(pkt, len))
    {
        const size_t icrcAt = len - kIbVcrcSize - kIbIcrcSize;
        IbStoreIcrc(pkt + icrcAt, IbComputeIcrc(pkt, icrcAt));
    }
    // The VCRC covers the ICRC, so it is computed last.
    const size_t vcrcAt = len - kIbVcrcSize;
    IbStoreVcrc(pkt + vcrcAt, IbComputeVcrc(pkt, vcrcAt));
}

IbCrcCheck
IbCheckCrcs(const uint8_t* pkt, size_t len)
{
    IbCrcCheck r{false, false, false};
    if (len < kLrhSize + kIbVcrcSize)
    {
        return r;
    }
    const size_t vcrcAt = len - kIbVcrcSize;
    r.vcrcOk = IbComputeVcrc(pkt, vcrcAt) == IbLoadVcrc(pkt + vcrcAt);
    r.hasIcrc = CarriesIcrc(pkt, len);
    if (r.hasIcrc)
    {
        const size_t icrcAt = vcrcAt - kIbIcrcSize;
        r.icrcOk = IbComputeIcrc(pkt, icrcAt) == IbLoadIcrc(pkt + icrcAt);
    }
    else
    {
        r.icrcOk = true;
    }
    return r;
}

} // namespace ns3
