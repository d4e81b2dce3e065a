// Subnet administration records the built-in SM's SA answers, byte-exact, with the field lists
// that ComponentMask bits select, and the SA-specific MAD status codes. IBA vol. 1 §15.2.5.
#ifndef CNUAS_IB_SA_RECORDS_H
#define CNUAS_IB_SA_RECORDS_H

#include "ib-mad-header.h"
#include "ib-smp-attributes.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

/// SA class-specific MAD status (bits 15:8), IBA vol. 1 §15.2.1.2 (Table 183).
namespace IbSaStatus
{
constexpr uint16_t NoResources = 0x0100;       ///< ERR_NO_RESOURCES
constexpr uint16_t ReqInvalid = 0x0200;        ///< ERR_REQ_INVALID
constexpr uint16_t NoRecords = 0x0300;         ///< ERR_NO_RECORDS
constexpr uint16_t TooManyRecords = 0x0400;    ///< ERR_TOO_MANY_RECORDS
constexpr uint16_t InvalidGid = 0x0500;        ///< ERR_REQ_INVALID_GID
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
 * PathRecord (attribute 0x0035), 64 bytes, IBA vol. 1 §15.2.5.16 (Table 201): ServiceID (8; reserved
 * before release 1.2.1, whose two ComponentMask bits name its halves), DGID (16, byte 8), SGID (16, byte 24), DLID (2, byte 40), SLID (2, byte 42), RawTraffic(1)
 * reserved(3) FlowLabel(20) HopLimit(8) (byte 44), TClass (byte 48), Reversible(1) NumbPath(7)
 * (byte 49), P_Key (byte 50), QoSClass(12) SL(4) (byte 52), MTUSelector(2) MTU(6) (byte 54),
 * RateSelector(2) Rate(6) (byte 55), PacketLifeTimeSelector(2) PacketLifeTime(6) (byte 56),
 * Preference (byte 57), reserved (6).
 */
struct IbPathRecord
{
    static constexpr uint32_t kSize = 64;
    // ComponentMask bits (§15.2.5.16).
    static constexpr uint64_t kCompServiceId = (1u << 0) | (1u << 1);
    static constexpr uint64_t kCompDgid = 1u << 2;
    static constexpr uint64_t kCompSgid = 1u << 3;
    static constexpr uint64_t kCompDlid = 1u << 4;
    static constexpr uint64_t kCompSlid = 1u << 5;
    static constexpr uint64_t kCompTClass = 1u << 10;
    static constexpr uint64_t kCompReversible = 1u << 11;
    static constexpr uint64_t kCompNumbPath = 1u << 12;
    static constexpr uint64_t kCompPkey = 1u << 13;
    static constexpr uint64_t kCompQosClass = 1u << 14;
    static constexpr uint64_t kCompSl = 1u << 15;
    static constexpr uint64_t kCompMtuSelector = 1u << 16;
    static constexpr uint64_t kCompMtu = 1u << 17;
    static constexpr uint64_t kCompRateSelector = 1u << 18;
    static constexpr uint64_t kCompRate = 1u << 19;
    uint64_t serviceId = 0;
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
    /// A SubnAdm MAD carrying this record with `method` and component `mask`.
    std::array<uint8_t, kIbMadBytes> Request(uint8_t method, uint64_t mask, uint64_t tid) const;
};

/**
 * MCMemberRecord (attribute 0x0038), 52 bytes, IBA vol. 1 §15.2.5.17: MGID (16, byte 0),
 * PortGID (16, byte 16), Q_Key (4, byte 32), MLID (2, byte 36), MTUSelector(2) MTU(6) (byte 38),
 * TClass (byte 39), P_Key (2, byte 40), RateSelector(2) Rate(6) (byte 42),
 * PacketLifeTimeSelector(2) PacketLifeTime(6) (byte 43), SL(4) FlowLabel(20) HopLimit(8)
 * (byte 44), Scope(4) JoinState(4) (byte 48), ProxyJoin(1) reserved(23) (byte 49). The layout
 * and the ComponentMask bits are those of opensm's ib_member_rec_t and IB_MCR_COMPMASK_* and of
 * libibmad's IB_SA_MCM_* field offsets. JoinState bits: 0 FullMember, 1 NonMember, 2
 * SendOnlyNonMember (bit 3, SendOnlyFullMember, in later releases).
 */
struct IbMcMemberRecord
{
    static constexpr uint32_t kSize = 52;
    // ComponentMask bits, one per field in layout order (§15.2.4.1).
    static constexpr uint64_t kCompMgid = 1u << 0;
    static constexpr uint64_t kCompPortGid = 1u << 1;
    static constexpr uint64_t kCompQkey = 1u << 2;
    static constexpr uint64_t kCompMlid = 1u << 3;
    static constexpr uint64_t kCompMtuSelector = 1u << 4;
    static constexpr uint64_t kCompMtu = 1u << 5;
    static constexpr uint64_t kCompTClass = 1u << 6;
    static constexpr uint64_t kCompPkey = 1u << 7;
    static constexpr uint64_t kCompRateSelector = 1u << 8;
    static constexpr uint64_t kCompRate = 1u << 9;
    static constexpr uint64_t kCompPacketLifeTimeSelector = 1u << 10;
    static constexpr uint64_t kCompPacketLifeTime = 1u << 11;
    static constexpr uint64_t kCompSl = 1u << 12;
    static constexpr uint64_t kCompFlowLabel = 1u << 13;
    static constexpr uint64_t kCompHopLimit = 1u << 14;
    static constexpr uint64_t kCompScope = 1u << 15;
    static constexpr uint64_t kCompJoinState = 1u << 16;
    static constexpr uint64_t kCompProxyJoin = 1u << 17;
    /// What a join that may create a group gives (opensm's REQUIRED_MC_CREATE_COMP_MASK; the
    /// kernel's rdma_cm sends these): MGID, PortGID, Q_Key, P_Key, SL, FlowLabel, TClass and
    /// JoinState.
    static constexpr uint64_t kCreateMask = kCompMgid | kCompPortGid | kCompQkey | kCompPkey |
                                            kCompSl | kCompFlowLabel | kCompTClass |
                                            kCompJoinState;
    /// JoinState.FullMember: only a full member may create a group.
    static constexpr uint8_t kFullMember = 0x1;
    std::array<uint8_t, 16> mgid{};
    std::array<uint8_t, 16> portGid{};
    uint32_t qkey = 0;
    uint16_t mlid = 0;
    uint8_t mtuSelector = 0;
    uint8_t mtu = 0;  ///< 6 bits: 1 = 256 .. 5 = 4096
    uint8_t tClass = 0;
    uint16_t pkey = 0;
    uint8_t rateSelector = 0;
    uint8_t rate = 0; ///< 6 bits, PathRecord's encoding
    uint8_t packetLifeTimeSelector = 0;
    uint8_t packetLifeTime = 0;
    uint8_t sl = 0;         ///< 4 bits
    uint32_t flowLabel = 0; ///< 20 bits
    uint8_t hopLimit = 0;
    uint8_t scope = 0;      ///< 4 bits
    uint8_t joinState = 0;  ///< 4 bits
    bool proxyJoin = false;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
    /// The 256-byte SA MAD of a request about this record: SubnAdmSet (join), Delete (leave)
    /// or Get, with ComponentMask `mask` and transaction ID `tid`.
    std::array<uint8_t, kIbMadBytes> Request(uint8_t method, uint64_t mask, uint64_t tid) const;
};

/**
 * The IPv4 broadcast group of IP over InfiniBand in partition `pkey` (RFC 4391 §4: MGID
 * ff12:401b:<P_Key>:0:0:0:ffff:ffff, link-local scope, the IPv4 signature 0x401B; the P_Key
 * with its full-member bit set), with the parameters opensm gives it when its partition policy
 * says `ipoib` and names none (osm_prtn_config.c; read from a running opensm with `saquery
 * MCMR`): Q_Key 0x0B1B, MTU exactly 2048, rate exactly 10 Gb/s, packet lifetime exactly 18, SL,
 * TClass, FlowLabel and HopLimit 0, MLID 0xC000 asked for. Every IPoIB interface joins it
 * before it sends (its Q_Key is the interface's) and sends ARP and IP broadcasts to it.
 */
IbMcMemberRecord IbIpoibBroadcastGroup(uint16_t pkey = 0xFFFF);

/**
 * One field of an SA record: its first bit counted from the record's start (most significant
 * bit of byte 0 first, as the tables of IBA vol. 1 §15.2.5 give offsets) and its width.
 * ComponentMask bit i selects field i of a record's list: every field, reserved ones included,
 * has its bit, in the order the record lays them out (§15.2.4.1).
 */
struct IbSaField
{
    uint16_t bit;
    uint16_t width;
};

/// The fields of each record the SA serves, in ComponentMask order (IBA vol. 1 §15.2.5; the
/// bit numbers agree with those libibmad's iba_types.h gives the diagnostics).
namespace IbSaLayout
{
/// NodeRecord, §15.2.5.2: LID, reserved, then NodeInfo's fields, NodeDescription (108 bytes).
extern const std::vector<IbSaField> kNodeRecord;
/// PortInfoRecord, §15.2.5.3: EndportLID, PortNum, Options, then PortInfo's 55 fields (72 bytes
/// with 4 bytes of padding).
extern const std::vector<IbSaField> kPortInfoRecord;
/// LinkRecord, §15.2.5.13: FromLID, FromPort, ToPort, ToLID (8 bytes with padding).
extern const std::vector<IbSaField> kLinkRecord;
/// SwitchInfoRecord, §15.2.5.4: LID, reserved, then SwitchInfo's fields (24 bytes).
extern const std::vector<IbSaField> kSwitchInfoRecord;
/// LinearForwardingTableRecord, §15.2.5.6: LID, BlockNum, reserved, the 64-entry block (72).
extern const std::vector<IbSaField> kLftRecord;
/// GUIDInfoRecord, §15.2.5.18: LID, BlockNum, two reserved, GUID 0..7 (72 bytes).
extern const std::vector<IbSaField> kGuidInfoRecord;
/// P_KeyTableRecord, §15.2.5.11: LID, BlockNum, PortNum, reserved, the 32-entry block (72).
extern const std::vector<IbSaField> kPKeyTableRecord;
/// SMInfoRecord, §15.2.5.9: LID, reserved, GUID, SM_Key, ActCount, Priority, SMState (32 bytes
/// with padding).
extern const std::vector<IbSaField> kSmInfoRecord;
/// MCMemberRecord, §15.2.5.17: MGID, PortGID, Q_Key, MLID, MTUSelector, MTU, TClass, P_Key,
/// RateSelector, Rate, PacketLifeTimeSelector, PacketLifeTime, SL, FlowLabel, HopLimit, Scope,
/// JoinState, ProxyJoin, reserved (52 bytes).
extern const std::vector<IbSaField> kMcMemberRecord;
/// MulticastForwardingTableRecord, §15.2.5.8: LID, Position, reserved, BlockNum, reserved, the
/// 32 port masks of the block (72 bytes).
extern const std::vector<IbSaField> kMftRecord;
} // namespace IbSaLayout

/// Record sizes in bytes (the SA lays records out at 8-byte-word strides, §15.2.1.1).
namespace IbSaRecordBytes
{
constexpr uint32_t ClassPortInfo = 72; ///< §13.4.8.1
constexpr uint32_t PortInfoRecord = 72;
constexpr uint32_t LinkRecord = 8;
constexpr uint32_t SwitchInfoRecord = 24;
constexpr uint32_t LftRecord = 72;
constexpr uint32_t GuidInfoRecord = 72;
constexpr uint32_t PKeyTableRecord = 72;
constexpr uint32_t SmInfoRecord = 32;
constexpr uint32_t McMemberRecord = IbMcMemberRecord::kSize;
constexpr uint32_t MftRecord = 72;
} // namespace IbSaRecordBytes

/// Bits [f.bit, f.bit + f.width) of `record` as an unsigned integer (f.width <= 64).
uint64_t IbSaFieldValue(const uint8_t* record, IbSaField f);

/**
 * Whether `candidate` agrees with `query` on every field of `fields` that `mask` selects
 * (fields wider than 64 bits, which are whole bytes, compared byte for byte). Bits of `mask`
 * beyond the list select nothing. For the component bits in `subsetMask` a field matches when
 * every bit set in the query's value is set in the candidate's: PortInfoRecord's
 * CapabilityMask, as IBA vol. 1 §15.2.5.3 allows an SA to advertise
 * (ClassPortInfo.CapabilityMask bit 13), which is how `saquery -s` finds the SMs.
 */
bool IbSaComponentsMatch(const uint8_t* candidate, const uint8_t* query, uint64_t mask,
                         const std::vector<IbSaField>& fields, uint64_t subsetMask = 0);

/// A port GID as the SA reports it: the default subnet prefix and the port GUID (§4.1.1).
std::array<uint8_t, 16> IbPortGid(uint64_t portGuid);
/// The port GUID of a GID with the default subnet prefix, 0 for any other prefix.
uint64_t IbGidPortGuid(const std::array<uint8_t, 16>& gid);
/// Nominal data rate in Gb/s of a port's active link, from its PortInfo (LinkWidthActive,
/// LinkSpeedActive, LinkSpeedExtActive, §14.2.5.6); 0 if not known.
double IbSaPortGbps(const IbPortInfo& info);
/// PathRecord.Rate encoding of a link's data rate in Gb/s (nominal, as ibstat shows it); 0 if
/// the value has no code.
uint8_t IbSaRateCode(double gbps);
/// The data rate in Gb/s a PathRecord.Rate code stands for; 0 for a code with no rate.
double IbSaRateGbps(uint8_t code);

} // namespace ns3

#endif
