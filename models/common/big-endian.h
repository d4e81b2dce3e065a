// Loads and stores of 16-, 32- and 48-bit fields in network byte order (most significant byte
// first), as every header on the modelled wires carries them: Ethernet's EtherType and MAC
// addresses, IPv4, UDP and TCP (RFC 791 Appendix B, RFC 768, RFC 793), the IPoIB encapsulation
// header (RFC 4391 §6). The
// InfiniBand transport headers' 24- and 64-bit fields have their own (models/rdma/ib-wire-bytes.h).
#ifndef CNUAS_BIG_ENDIAN_H
#define CNUAS_BIG_ENDIAN_H

#include <cstdint>

namespace ns3
{

inline uint16_t
LoadBe16(const uint8_t* p)
{
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

inline uint32_t
LoadBe32(const uint8_t* p)
{
    return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
           static_cast<uint32_t>(p[2]) << 8 | p[3];
}

inline void
StoreBe16(uint8_t* p, uint16_t v)
{
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

inline void
StoreBe32(uint8_t* p, uint32_t v)
{
    StoreBe16(p, static_cast<uint16_t>(v >> 16));
    StoreBe16(p + 2, static_cast<uint16_t>(v));
}

/// A 48-bit field, a MAC address (IEEE 802 order: the first byte sent is the most significant).
inline uint64_t
LoadBe48(const uint8_t* p)
{
    return static_cast<uint64_t>(LoadBe16(p)) << 32 | LoadBe32(p + 2);
}

inline void
StoreBe48(uint8_t* p, uint64_t v)
{
    StoreBe16(p, static_cast<uint16_t>(v >> 32));
    StoreBe32(p + 2, static_cast<uint32_t>(v));
}

} // namespace ns3

#endif
