// The CRCs of InfiniBand packets: ICRC (end to end), VCRC (per hop), LPCRC (flow-control
// packets), plus the RoCEv2 ICRC. IBA vol. 1 §7.8 (CRCs), §7.9.4 (flow-control packets),
// RoCEv2 = IBA vol. 1 annex A17.
//
// Wire byte order (see docs/ib-wire.md):
//  * ICRC: little-endian, i.e. the least significant byte of the CRC-32 value comes first. This
//    is what Linux rxe puts on RoCE wires (it stores ~crc as a native u32 on a little-endian
//    host) and what RoCE hardware interoperates with; InfiniBand uses the same ICRC.
//  * VCRC and LPCRC: little-endian too. Both are reflected CRCs (bits enter the register least
//    significant first), and for a reflected CRC the low byte of the register is the one the
//    shift register completes first, the same convention as the Ethernet FCS and the HDLC/PPP
//    FCS-16 (RFC 1662 §C.2). With that order a CRC over "data + CRC" yields a constant residue
//    (0xAA90 for this CRC-16, 0x2144DF1C for CRC-32), which tests assert. Not yet confirmed
//    against a capture from real InfiniBand hardware (Wireshark 4.0 does not check it).
#ifndef CNUAS_IB_CRC_H
#define CNUAS_IB_CRC_H

#include <cstddef>
#include <cstdint>

namespace ns3
{

/// Size of the ICRC trailer (IBA vol. 1 §7.8.1).
constexpr size_t kIbIcrcSize = 4;
/// Size of the VCRC trailer (IBA vol. 1 §7.8.2).
constexpr size_t kIbVcrcSize = 2;
/// CRC-16 over "data + VCRC" (VCRC stored little-endian) of an intact packet.
constexpr uint16_t kIbVcrcResidue = 0xAA90;

/**
 * VCRC: CRC-16, polynomial 0x100B (x^16+x^12+x^3+x+1), initial value 0xFFFF, final XOR 0xFFFF,
 * reflected input and output (IBA vol. 1 §7.8.2). The VCRC of a packet covers every byte from
 * the first LRH byte through the ICRC. Check value over "123456789": 0x0A3D.
 */
uint16_t IbComputeVcrc(const uint8_t* data, size_t len);

/**
 * ICRC of an InfiniBand packet: standard CRC-32 (the zlib/Ethernet one) over the packet from
 * the first LRH byte up to the ICRC, with the fields a switch or router may change replaced by
 * ones (IBA vol. 1 §7.8.1):
 *  * LNH = 2 (local): LRH.VL and BTH.Resv8a;
 *  * LNH = 3 (global): the whole LRH, GRH.TClass, GRH.FlowLabel, GRH.HopLmt, BTH.Resv8a.
 * LNH 0 and 1 are raw packets that carry no ICRC; for them only LRH.VL is masked.
 * \param pkt the packet, starting at the LRH
 * \param lenBeforeIcrc bytes from the first LRH byte up to (not including) the ICRC
 */
uint32_t IbComputeIcrc(const uint8_t* pkt, size_t lenBeforeIcrc);

/**
 * ICRC of a RoCEv2 packet (IBA vol. 1 annex A17; masking as Linux rxe_icrc.c): CRC-32 over
 * eight 0xFF bytes (the stand-in for a masked LRH), the IP header with IPv4 TOS, TTL and header
 * checksum (IPv6: traffic class, flow label, hop limit) set to ones, the UDP header with its
 * checksum set to ones, the BTH with Resv8a set to ones, and the rest up to the ICRC.
 * \param ipHeader the packet, starting at the IPv4 or IPv6 header (version from its first nibble)
 * \param lenBeforeIcrc bytes from the first IP header byte up to (not including) the ICRC
 */
uint32_t IbComputeRoceIcrc(const uint8_t* ipHeader, size_t lenBeforeIcrc);

/// LPCRC of a link flow-control packet: the VCRC's CRC-16 over its first 4 bytes
/// (IBA vol. 1 §7.9.4).
uint16_t IbComputeLpcrc(const uint8_t* first4Bytes);

/// Write an ICRC in wire order (little-endian, see the file comment).
void IbStoreIcrc(uint8_t* dst, uint32_t icrc);
/// Read an ICRC in wire order.
uint32_t IbLoadIcrc(const uint8_t* src);
/// Write a VCRC or LPCRC in wire order (little-endian, see the file comment).
void IbStoreVcrc(uint8_t* dst, uint16_t vcrc);
/// Read a VCRC or LPCRC in wire order.
uint16_t IbLoadVcrc(const uint8_t* src);

/**
 * Fill the ICRC (only when LNH is 2 or 3, the packets that carry one) and the VCRC of a complete
 * packet laid out LRH .. [ICRC] VCRC, in place.
 * \param len the whole packet including the VCRC; at least 10 bytes (14 with an ICRC)
 */
void IbFillCrcs(uint8_t* pkt, size_t len);

/// Result of IbCheckCrcs.
struct IbCrcCheck
{
    bool hasIcrc; ///< LNH is 2 or 3 and the packet is long enough to hold an ICRC
    bool icrcOk;  ///< the ICRC matches (true when the packet has none)
    bool vcrcOk;  ///< the VCRC matches
};

/// Verify the CRCs of a complete packet (LRH .. [ICRC] VCRC). A packet shorter than an LRH plus
/// a VCRC has no valid CRC: all three flags are false.
IbCrcCheck IbCheckCrcs(const uint8_t* pkt, size_t len);

} // namespace ns3

#endif
