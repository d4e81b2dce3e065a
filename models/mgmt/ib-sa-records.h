// Subnet administration records the built-in SM's SA answers: NodeRecord and PathRecord, byte-
// exact, and the SA-specific MAD status codes. IBA vol. 1 §15.2.5.
#ifndef CNUAS_IB_SA_RECORDS_H
#define CNUAS_IB_SA_RECORDS_H

#include "ib-smp-attributes.h"

#include <array>
#include <cstdint>

namespace ns3
{

/// SA class-specific MAD status (bits 15:8), IBA vol. 1 §15.2.1.2 (Table 183).
namespace IbSaStatus
{
constexpr uint16_t NoResources = 0x0100;       ///< ERR_NO_RESOURCES
constexpr uint16_t ReqInvalid = 0x0200;        ///< ERR_REQ_INVALID
constexpr uint16_t NoRecords = 0x0300;         ///< ERR_NO_RECORDS
constexpr uint16_t TooManyRecords = 0x0400;    ///< ERR_TOO_MANY_RECORDS
constexpr uint16_t InsufficientComponents = 0x0600; ///< ERR_REQ_INSUFFICIENT_COMPONENTS
} // namespace IbSaStatus

/**
 * NodeRecord (attribute 0x0011), IBA vol. 1 §15.2.5.2: LID (2), reserved (2), NodeInfo (40),
 * NodeDescription (64): 108 bytes, laid out in an SA response at 8-byte-word strides of 14.
 * ComponentMask bit 0 selects by LID.
 */
struct IbNodeRecord
{
    static constexpr uint32_t kSize = 108;
    static constexpr uint64_t kCompLid = 1u << 0;
    uint16_t lid = 0;
    IbNodeInfo nodeInfo;
    IbNodeDescription description;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/**
 * PathRecord (attribute 0x0035), 64 bytes, IBA vol. 1 §15.2.5.16 (Table 201): reserved (8),
 * DGID (16, byte 8), SGID (16, byte 24), DLID (2, byte 40), SLID (2, byte 42), RawTraffic(1)
 * reserved(3) FlowLabel(20) HopLimit(8) (byte 44), TClass (byte 48), Reversible(1) NumbPath(7)
 * (byte 49), P_Key (byte 50), QoSClass(12) SL(4) (byte 52), MTUSelector(2) MTU(6) (byte 54),
 * RateSelector(2) Rate(6) (byte 55), PacketLifeTimeSelector(2) PacketLifeTime(6) (byte 56),
 * Preference (byte 57), reserved (6).
 */
struct IbPathRecord
{
    static constexpr uint32_t kSize = 64;
    // ComponentMask bits (§15.2.5.16).
    static constexpr uint64_t kCompDgid = 1u << 2;
    static constexpr uint64_t kCompSgid = 1u << 3;
    static constexpr uint64_t kCompDlid = 1u << 4;
    static constexpr uint64_t kCompSlid = 1u << 5;
    std::array<uint8_t, 16> dgid{};
    std::array<uint8_t, 16> sgid{};
    uint16_t dlid = 0;
    uint16_t slid = 0;
    bool rawTraffic = false;
    uint32_t flowLabel = 0; ///< 20 bits
    uint8_t hopLimit = 0;
    uint8_t tClass = 0;
    bool reversible = false;
    uint8_t numbPath = 0;   ///< 7 bits
    uint16_t pkey = 0;
    uint16_t qosClass = 0;  ///< 12 bits
    uint8_t sl = 0;         ///< 4 bits
    uint8_t mtuSelector = 0;
    uint8_t mtu = 0;        ///< 6 bits: 1 = 256 .. 5 = 4096
    uint8_t rateSelector = 0;
    uint8_t rate = 0;       ///< 6 bits, the encoding of §15.2.5.16 (e.g. 17 = 200 Gb/s)
    uint8_t packetLifeTimeSelector = 0;
    uint8_t packetLifeTime = 0;
    uint8_t preference = 0;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// A port GID as the SA reports it: the default subnet prefix and the port GUID (§4.1.1).
std::array<uint8_t, 16> IbPortGid(uint64_t portGuid);
/// The port GUID of a GID with the default subnet prefix, 0 for any other prefix.
uint64_t IbGidPortGuid(const std::array<uint8_t, 16>& gid);
/// PathRecord.Rate encoding of a link's data rate in Gb/s (nominal, as ibstat shows it); 0 if
/// the value has no code.
uint8_t IbSaRateCode(double gbps);

} // namespace ns3

#endif
