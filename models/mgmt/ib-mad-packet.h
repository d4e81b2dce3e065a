// How a MAD travels: as the payload of a UD SEND Only packet, LRH [GRH] BTH DETH MAD ICRC
// VCRC (IBA vol. 1 §13.5.1; SMPs to and from QP0 on VL15, GMPs to QP1 on a data VL).
#ifndef CNUAS_IB_MAD_PACKET_H
#define CNUAS_IB_MAD_PACKET_H

#include "ib-mad-header.h"

#include "models/ib/ib-frame.h"
#include "models/ib/ib-grh-header.h"
#include "models/ib/ib-lrh-header.h"
#include "models/rdma/ib-bth-header.h"
#include "models/rdma/ib-deth-header.h"

#include "ns3/packet.h"

#include <array>
#include <cstdint>
#include <string>

namespace ns3
{

/// The subnet management QP and the general services QP, IBA vol. 1 §13.5.1.
constexpr uint32_t kIbSmiQp = 0;
constexpr uint32_t kIbGsiQp = 1;
/// BTH opcode of a UD SEND Only (IBA vol. 1 §9.2, Table 38).
constexpr uint8_t kIbUdSendOnly = 0x64;

/// BTH + DETH: what comes before the MAD in a UD packet.
constexpr uint32_t kIbMadTransportBytes = IbBthHeader::kSize + IbDethHeader::kSize;
/// The longest packet that can be a MAD: LRH, GRH, BTH, DETH, the MAD, ICRC and VCRC.
constexpr uint32_t kIbMaxMadPacketBytes = IbLrhHeader::kSize + IbGrhHeader::kSize +
                                          kIbMadTransportBytes + kIbMadBytes + kIbIcrcBytes +
                                          kIbVcrcBytes;

/// The parts of a received MAD packet an agent needs.
struct IbMadPacketView
{
    IbLrhHeader lrh;
    IbBthHeader bth;
    IbDethHeader deth;
    std::array<uint8_t, kIbMadBytes> mad{};
};

/**
 * Builds what a port's SendIb/SendManagement takes for a MAD: BTH (UD SEND Only, P_Key, DestQP,
 * PSN) + DETH (Q_Key, SrcQP) + the 256 MAD bytes. MADs are 4-byte aligned, so PadCnt is 0.
 */
Ptr<Packet> IbMakeMadPacket(const uint8_t* mad, uint32_t destQp, uint32_t srcQp, uint32_t qkey,
                            uint16_t pkey = IbBthHeader::kDefaultPkey, uint32_t psn = 0);
/// The same bytes without a Packet: kIbMadTransportBytes + kIbMadBytes of them into `out` (the
/// MAD is copied unless `mad` already points at `out + kIbMadTransportBytes`).
void IbWriteMadPacket(uint8_t* out, const uint8_t* mad, uint32_t destQp, uint32_t srcQp,
                      uint32_t qkey, uint16_t pkey = IbBthHeader::kDefaultPkey,
                      uint32_t psn = 0);

/**
 * Parses a whole received packet (LRH .. VCRC) as a MAD packet. Returns false, with the reason
 * in `why`, if it is not one: too short or too long for LRH (+GRH) + BTH + DETH + 256 + ICRC +
 * VCRC, not IBA transport, or not a UD SEND Only (§13.5.1: MADs are single-packet UD sends).
 */
bool IbParseMadPacket(Ptr<const Packet> packet, IbMadPacketView& out, std::string* why);
/**
 * The same from bytes: `size` is the packet's length, `bytes` holds its first
 * min(size, kIbMaxMadPacketBytes) bytes (a longer packet is not a MAD; its LRH says why).
 */
bool IbParseMadBytes(const uint8_t* bytes, uint32_t size, IbMadPacketView& out, std::string* why);

/// DestQP of a packet's BTH (LRH .. VCRC), or -1 if it carries none (raw packets, too short).
int64_t IbPeekDestQp(Ptr<const Packet> packet);

} // namespace ns3

#endif
