// The Congestion Control management class (0x21) of IBA vol. 1 annex A10: the CC MAD layout
// and the attributes a congestion-control manager reads and programs, byte-exact.
#ifndef CNUAS_IB_CC_ATTRIBUTES_H
#define CNUAS_IB_CC_ATTRIBUTES_H

#include "models/ib/ib-cc-switch-marker.h"
#include "models/rdma/rdma-cc-iba.h"

#include <array>
#include <cstdint>

namespace ns3
{

/// CC class constants (annex A10): the class, and where a CC MAD keeps its fields. A CC MAD is
/// the 24-byte common header, the 64-bit CC_Key, 32 bytes of log data (CongestionLog only) and
/// 192 bytes of attribute data.
namespace IbCc
{
constexpr uint8_t kMgmtClass = 0x21;
constexpr uint8_t kClassVersion = 2;
constexpr uint32_t kCcKeyOffset = 24;
constexpr uint32_t kLogDataOffset = 32;
constexpr uint32_t kLogDataSize = 32;
constexpr uint32_t kDataOffset = 64;
constexpr uint32_t kDataSize = 192;

// Attribute IDs.
constexpr uint16_t kClassPortInfo = 0x0001;
constexpr uint16_t kNotice = 0x0002;
constexpr uint16_t kCongestionInfo = 0x0011;
constexpr uint16_t kCongestionKeyInfo = 0x0012;
constexpr uint16_t kCongestionLog = 0x0013;
constexpr uint16_t kSwitchCongestionSetting = 0x0014;
constexpr uint16_t kSwitchPortCongestionSetting = 0x0015;
constexpr uint16_t kCaCongestionSetting = 0x0016;
constexpr uint16_t kCongestionControlTable = 0x0017;
constexpr uint16_t kTimeStamp = 0x0018;

/// Ports per SwitchPortCongestionSetting block; CCT entries per CongestionControlTable block.
constexpr uint32_t kPortsPerBlock = 32;
constexpr uint32_t kCctEntriesPerBlock = 64;
} // namespace IbCc

/// CongestionInfo (0x0011), 4 bytes: CongestionInfo (16, capability bits), ControlTableCap (8:
/// how many 64-entry CCT blocks a CA supports), reserved.
struct IbCongestionInfoAttr
{
    static constexpr uint32_t kSize = 4;
    uint16_t congestionInfo = 0;
    uint8_t controlTableCap = 0;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// CongestionKeyInfo (0x0012), 16 bytes: CC_Key (64), CC_KeyProtectBit (1) + 15 reserved,
/// CC_KeyLeasePeriod (16), CC_KeyViolations (16), reserved (16).
struct IbCongestionKeyInfoAttr
{
    static constexpr uint32_t kSize = 16;
    uint64_t ccKey = 0;
    bool protectBit = false;
    uint16_t leasePeriod = 0;
    uint16_t violations = 0;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// SwitchCongestionSetting (0x0014), 76 bytes: Control_Map (32), Victim_Mask (256), Credit_Mask
/// (256), Threshold (4) + 4 reserved, Packet_Size (8), CS_Threshold (4) + 12 reserved,
/// CS_ReturnDelay (16), Marking_Rate (16).
struct IbSwitchCongestionSettingAttr
{
    static constexpr uint32_t kSize = 76;
    IbCcSwitchSetting s;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// SwitchPortCongestionSetting (0x0015), 128 bytes: 32 elements of 4 bytes for ports
/// 32*AttributeModifier ..: Valid (1), Control_Type (1), reserved (2), Threshold (4),
/// Packet_Size (8), Cong_Parm (16: Marking_Rate when Control_Type is 0).
struct IbSwitchPortCongestionSettingAttr
{
    static constexpr uint32_t kSize = 128;
    std::array<IbCcSwitchPortSetting, 32> ports{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// CACongestionSetting (0x0016), 132 bytes: Port_Control (16), Control_Map (16), then one
/// 8-byte CACongestionEntry per SL: CCTI_Timer (16), CCTI_Increase (8), Trigger_Threshold (8),
/// CCTI_Min (8), reserved (24).
struct IbCaCongestionSettingAttr
{
    static constexpr uint32_t kSize = 132;
    uint16_t portControl = 0;
    uint16_t controlMap = 0;
    std::array<IbCaCongestionEntry, 16> entries{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// CongestionControlTable (0x0017), 132 bytes: CCTI_Limit (16), reserved (16), 64 entries of
/// 16 bits (CCT_Shift 2, CCT_Multiplier 14) for indices 64*AttributeModifier ...
struct IbCongestionControlTableAttr
{
    static constexpr uint32_t kSize = 132;
    uint16_t cctiLimit = 0;
    std::array<IbCctEntry, 64> entries{};
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

} // namespace ns3

#endif
