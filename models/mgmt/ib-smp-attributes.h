// The subnet management attributes an SMA serves, each as a record with a byte-exact layout in
// the 64-byte SMP data field. IBA vol. 1 §14.2.5. Field values are the raw encodings of the
// spec (e.g. PortState 4 = Active, LinkWidth 2 = 4x); the agent translates to and from the
// model's types.
#ifndef CNUAS_IB_SMP_ATTRIBUTES_H
#define CNUAS_IB_SMP_ATTRIBUTES_H

#include <array>
#include <cstdint>
#include <string>

namespace ns3
{

/// NodeInfo.NodeType, IBA vol. 1 §14.2.5.3.
namespace IbNodeType
{
constexpr uint8_t ChannelAdapter = 1;
constexpr uint8_t Switch = 2;
constexpr uint8_t Router = 3;
} // namespace IbNodeType

/// NodeInfo (attribute 0x0011), 40 bytes, IBA vol. 1 §14.2.5.3 (Table 146).
struct IbNodeInfo
{
    static constexpr uint32_t kSize = 40;
    uint8_t baseVersion = 1;
    uint8_t classVersion = 1;
    uint8_t nodeType = IbNodeType::ChannelAdapter;
    uint8_t numPorts = 1;
    uint64_t systemImageGuid = 0;
    uint64_t nodeGuid = 0;
    uint64_t portGuid = 0;
    uint16_t partitionCap = 0;
    uint16_t deviceId = 0;
    uint32_t revision = 0;
    uint8_t localPortNum = 0;
    uint32_t vendorId = 0; ///< 24 bits
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// NodeDescription (0x0010): 64 bytes of UTF-8 text, zero-padded (§14.2.5.2).
struct IbNodeDescription
{
    static constexpr uint32_t kSize = 64;
    std::string text;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// SwitchInfo (0x0012), IBA vol. 1 §14.2.5.4 (Table 147): the first 19 bytes are defined,
/// the rest of the 64-byte data field is reserved.
struct IbSwitchInfo
{
    static constexpr uint32_t kSize = 64;
    uint16_t linearFdbCap = 0;
    uint16_t randomFdbCap = 0;
    uint16_t multicastFdbCap = 0;
    uint16_t linearFdbTop = 0;
    uint8_t defaultPort = 0;
    uint8_t defaultMulticastPrimaryPort = 0;
    uint8_t defaultMulticastNotPrimaryPort = 0;
    uint8_t lifeTimeValue = 0;          ///< 5 bits
    bool portStateChange = false;       ///< 1 bit: a port changed state (cleared by writing 1)
    uint8_t optimizedSlToVlMapping = 0; ///< 2 bits
    uint16_t lidsPerPort = 0;
    uint16_t partitionEnforcementCap = 0;
    uint8_t enforcementCaps = 0; ///< Inbound, Outbound, FilterRawIn, FilterRawOut, EnhancedPort0
    uint16_t multicastFdbTop = 0;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// PortInfo.CapabilityMask bits, IBA vol. 1 §14.2.5.6 (Table 151).
namespace IbPortCap
{
constexpr uint32_t IsSm = 1u << 1;
constexpr uint32_t IsNoticeSupported = 1u << 2;
constexpr uint32_t IsTrapSupported = 1u << 3;
constexpr uint32_t IsSlMappingSupported = 1u << 6;
constexpr uint32_t IsSystemImageGuidSupported = 1u << 11;
constexpr uint32_t IsExtendedSpeedsSupported = 1u << 14;
constexpr uint32_t IsCommunicationManagementSupported = 1u << 16;
constexpr uint32_t IsVendorClassSupported = 1u << 20;
} // namespace IbPortCap

/// PortInfo (0x0015), 64 bytes, IBA vol. 1 §14.2.5.6 (Table 150). Every field as on the wire.
struct IbPortInfo
{
    static constexpr uint32_t kSize = 64;
    uint64_t mKey = 0;
    uint64_t gidPrefix = 0;
    uint16_t lid = 0;
    uint16_t masterSmLid = 0;
    uint32_t capabilityMask = 0;
    uint16_t diagCode = 0;
    uint16_t mKeyLeasePeriod = 0;
    uint8_t localPortNum = 0;
    uint8_t linkWidthEnabled = 0;
    uint8_t linkWidthSupported = 0;
    uint8_t linkWidthActive = 0;
    uint8_t linkSpeedSupported = 0; ///< 4 bits
    uint8_t portState = 0;          ///< 4 bits
    uint8_t portPhysicalState = 0;  ///< 4 bits
    uint8_t linkDownDefaultState = 0; ///< 4 bits
    uint8_t mKeyProtectBits = 0;    ///< 2 bits
    uint8_t lmc = 0;                ///< 3 bits
    uint8_t linkSpeedActive = 0;    ///< 4 bits
    uint8_t linkSpeedEnabled = 0;   ///< 4 bits
    uint8_t neighborMtu = 0;        ///< 4 bits
    uint8_t masterSmSl = 0;         ///< 4 bits
    uint8_t vlCap = 0;              ///< 4 bits
    uint8_t initType = 0;           ///< 4 bits
    uint8_t vlHighLimit = 0;
    uint8_t vlArbitrationHighCap = 0;
    uint8_t vlArbitrationLowCap = 0;
    uint8_t initTypeReply = 0;      ///< 4 bits
    uint8_t mtuCap = 0;             ///< 4 bits
    uint8_t vlStallCount = 0;       ///< 3 bits
    uint8_t hoqLife = 0;            ///< 5 bits
    uint8_t operationalVls = 0;     ///< 4 bits
    uint8_t enforcementBits = 0;    ///< P_Key in/out, FilterRaw in/out (4 bits)
    uint16_t mKeyViolations = 0;
    uint16_t pKeyViolations = 0;
    uint16_t qKeyViolations = 0;
    uint8_t guidCap = 0;
    bool clientReregister = false;
    uint8_t subnetTimeOut = 0;      ///< 5 bits
    uint8_t respTimeValue = 0;      ///< 5 bits
    uint8_t localPhyErrors = 0;     ///< 4 bits
    uint8_t overrunErrors = 0;      ///< 4 bits
    uint16_t maxCreditHint = 0;
    uint32_t linkRoundTripLatency = 0; ///< 24 bits
    uint16_t capabilityMask2 = 0;
    uint8_t linkSpeedExtActive = 0;    ///< 4 bits
    uint8_t linkSpeedExtSupported = 0; ///< 4 bits
    uint8_t linkSpeedExtEnabled = 0;   ///< 5 bits
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// P_KeyTable (0x0016): one block of 32 16-bit P_Keys (membership bit 15), §14.2.5.7.
struct IbPKeyTableBlock
{
    static constexpr uint32_t kSize = 64;
    static constexpr uint32_t kEntries = 32;
    std::array<uint16_t, kEntries> pkey{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// GUIDInfo (0x0014): one block of 8 GUIDs, §14.2.5.5.
struct IbGuidInfoBlock
{
    static constexpr uint32_t kSize = 64;
    static constexpr uint32_t kEntries = 8;
    std::array<uint64_t, kEntries> guid{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// LinearForwardingTable (0x0019): output ports of 64 consecutive LIDs, §14.2.5.10.
struct IbLftBlock
{
    static constexpr uint32_t kSize = 64;
    std::array<uint8_t, 64> port{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/**
 * MulticastForwardingTable (0x001B), IBA vol. 1 §14.2.5.12: for 32 consecutive MLIDs (block
 * n: 0xC000 + 32n ..), a 16-bit PortMask each, big-endian; bit i is port 16 * position + i,
 * where AttributeModifier bits 31:28 give the position and bits 8:0 the block.
 */
struct IbMftBlock
{
    static constexpr uint32_t kSize = 64;
    static constexpr uint32_t kEntries = 32;
    std::array<uint16_t, kEntries> mask{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
    /// The AttributeModifier for `block` at port-mask `position`.
    static uint32_t Modifier(uint16_t block, uint8_t position)
    {
        return (uint32_t(position & 0xF) << 28) | (block & 0x1FF);
    }
};

/// SLtoVLMappingTable (0x0017): 16 four-bit VLs, SL0 in the high nibble of byte 0, §14.2.5.8.
struct IbSlToVlTable
{
    static constexpr uint32_t kSize = 8;
    std::array<uint8_t, 16> vl{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// VLArbitrationTable (0x0018): one block of 32 (VL, weight) entries, each byte 0 = reserved
/// (4 bits) + VL (4 bits), byte 1 = weight, §14.2.5.9.
struct IbVlArbTableBlock
{
    static constexpr uint32_t kSize = 64;
    static constexpr uint32_t kEntries = 32;
    std::array<uint8_t, kEntries> vl{};
    std::array<uint8_t, kEntries> weight{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// Notice (0x0002) as a trap carries it in the SMP data field, IBA vol. 1 §13.4.8.2 (Table
/// 118): IsGeneric(1) Type(7); ProducerType or VendorID (24); TrapNumber or DeviceID (16);
/// IssuerLID (16); NoticeToggle(1) NoticeCount(15); DataDetails (54 bytes). The IssuerGID that
/// follows in the full attribute does not fit an SMP and is not sent there.
struct IbNotice
{
    static constexpr uint32_t kSize = 64;
    bool isGeneric = true;
    uint8_t type = 0;            ///< 0 fatal, 1 urgent, 2 security, 3 SM, 4 info
    uint32_t producerType = 0;   ///< 24 bits: 1 CA, 2 switch, 3 router, 4 class manager
    uint16_t trapNumber = 0;
    uint16_t issuerLid = 0;
    bool noticeToggle = false;
    uint16_t noticeCount = 0;    ///< 15 bits
    std::array<uint8_t, 54> dataDetails{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

} // namespace ns3

#endif
