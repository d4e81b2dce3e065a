// Global Identifier (GID): the 128-bit port address carried in the GRH.
// IBA vol. 1 §4.1 (GID = 64-bit subnet prefix followed by a 64-bit interface ID, the port GUID
// for the default GID) and §8.3 (SGID/DGID of the GRH, transmitted most significant byte first).
#ifndef CNUAS_IB_GID_H
#define CNUAS_IB_GID_H

#include <array>
#include <cstdint>
#include <string>

namespace ns3
{

/// A GID in wire (network) byte order: byte 0 is the most significant byte.
using IbGid = std::array<uint8_t, 16>;

/// Default subnet prefix, IBA vol. 1 §4.1: the link-local prefix fe80::/64.
constexpr uint64_t kIbDefaultSubnetPrefix = 0xFE80000000000000ULL;

/// Build a GID from a 64-bit subnet prefix (upper half) and a 64-bit GUID (lower half).
inline IbGid
IbMakeGid(uint64_t subnetPrefix, uint64_t guid)
{
    IbGid gid{};
    for (int i = 0; i < 8; ++i)
    {
        gid[i] = static_cast<uint8_t>(subnetPrefix >> (56 - 8 * i));
        gid[8 + i] = static_cast<uint8_t>(guid >> (56 - 8 * i));
    }
    return gid;
}

/// The subnet prefix (upper 64 bits) of a GID.
inline uint64_t
IbGidSubnetPrefix(const IbGid& gid)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
    {
        v = (v << 8) | gid[i];
    }
    return v;
}

/// The interface ID / GUID (lower 64 bits) of a GID.
inline uint64_t
IbGidGuid(const IbGid& gid)
{
    uint64_t v = 0;
    for (int i = 8; i < 16; ++i)
    {
        v = (v << 8) | gid[i];
    }
    return v;
}

/**
 * Format a GID the way `ibv_devinfo -v` prints it: eight groups of four lower-case hex digits
 * with no zero compression (Wireshark shows the same 16 bytes as a compressed IPv6 address),
 * e.g. "fe80:0000:0000:0000:0002:c903:0000:0001".
 */
inline std::string
IbGidToString(const IbGid& gid)
{
    static const char kHex[] = "0123456789abcdef";
    std::string s;
    s.reserve(39);
    for (int i = 0; i < 16; ++i)
    {
        if (i > 0 && i % 2 == 0)
        {
            s.push_back(':');
        }
        s.push_back(kHex[gid[i] >> 4]);
        s.push_back(kHex[gid[i] & 0x0F]);
    }
    return s;
}

} // namespace ns3

#endif
