// Big-endian loads and stores of the fixed-width fields of the transport headers. IBA vol. 1
// §9.2 and §9.3: every multi-byte field of the BTH and the extended transport headers is
// transmitted most significant byte first.
#ifndef CNUAS_IB_WIRE_BYTES_H
#define CNUAS_IB_WIRE_BYTES_H

#include <cstdint>

namespace ns3
{

inline void
IbWireStore24(uint8_t* out, uint32_t v)
{
    out[0] = static_cast<uint8_t>(v >> 16);
    out[1] = static_cast<uint8_t>(v >> 8);
    out[2] = static_cast<uint8_t>(v);
}

inline void
IbWireStore32(uint8_t* out, uint32_t v)
{
    out[0] = static_cast<uint8_t>(v >> 24);
    IbWireStore24(out + 1, v);
}

inline void
IbWireStore64(uint8_t* out, uint64_t v)
{
    IbWireStore32(out, static_cast<uint32_t>(v >> 32));
    IbWireStore32(out + 4, static_cast<uint32_t>(v));
}

inline uint32_t
IbWireLoad24(const uint8_t* in)
{
    return (static_cast<uint32_t>(in[0]) << 16) | (static_cast<uint32_t>(in[1]) << 8) | in[2];
}

inline uint32_t
IbWireLoad32(const uint8_t* in)
{
    return (static_cast<uint32_t>(in[0]) << 24) | IbWireLoad24(in + 1);
}

inline uint64_t
IbWireLoad64(const uint8_t* in)
{
    return (static_cast<uint64_t>(IbWireLoad32(in)) << 32) | IbWireLoad32(in + 4);
}

} // namespace ns3

#endif
