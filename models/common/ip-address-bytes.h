// The 16-byte addresses that name both IPv6 and, IPv4-mapped, IPv4 hosts and groups: a RoCE v2
// GID (IBA vol. 1 annex A17.4.5.4), a multicast group on the Ethernet side, an rdma_cm address.
// Whether one is IPv4-mapped and whether it names a group is asked by the fabric-independent
// RDMA device (ibv_attach_mcast), the RoCE port and the multicast router alike: one answer.
#ifndef CNUAS_IP_ADDRESS_BYTES_H
#define CNUAS_IP_ADDRESS_BYTES_H

#include <array>
#include <cstdint>

namespace ns3
{

/// Whether `a` is an IPv4-mapped IPv6 address (::ffff:a.b.c.d, RFC 4291 §2.5.5.2); if so `ip`
/// gets the IPv4 address in host order.
inline bool
Ipv4FromMapped(const std::array<uint8_t, 16>& a, uint32_t& ip)
{
    for (int i = 0; i < 10; ++i)
    {
        if (a[i] != 0)
        {
            return false;
        }
    }
    if (a[10] != 0xFF || a[11] != 0xFF)
    {
        return false;
    }
    ip = uint32_t{a[12]} << 24 | uint32_t{a[13]} << 16 | uint32_t{a[14]} << 8 | a[15];
    return true;
}

/// Whether `a` names a multicast group, as the kernel's rdma_is_multicast_addr decides: an IPv6
/// group (ff00::/8, RFC 4291 §2.7) or an IPv4-mapped IPv4 group (224.0.0.0/4, RFC 5771).
inline bool
IsMulticastAddress(const std::array<uint8_t, 16>& a)
{
    uint32_t ip4 = 0;
    return Ipv4FromMapped(a, ip4) ? (ip4 >> 28) == 0xE : a[0] == 0xFF;
}

} // namespace ns3

#endif // CNUAS_IP_ADDRESS_BYTES_H
