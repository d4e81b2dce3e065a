// The performance management attributes a PMA serves, byte-exact in the 192-byte PerfMgt data
// field: PortCounters (IBA vol. 1 §16.1.3.5), PortCountersExtended (§16.1.4.11) and
// ClassPortInfo (§13.4.8.1).
#ifndef CNUAS_IB_PERF_ATTRIBUTES_H
#define CNUAS_IB_PERF_ATTRIBUTES_H

#include <array>
#include <cstdint>

namespace ns3
{

/// PortCounters.CounterSelect bits, IBA vol. 1 §16.1.3.5 (Table 233); CounterSelect2 bit 0
/// selects PortXmitWait.
namespace IbCounterSelect
{
constexpr uint16_t SymbolError = 1u << 0;
constexpr uint16_t LinkErrorRecovery = 1u << 1;
constexpr uint16_t LinkDowned = 1u << 2;
constexpr uint16_t PortRcvErrors = 1u << 3;
constexpr uint16_t PortRcvRemotePhysicalErrors = 1u << 4;
constexpr uint16_t PortRcvSwitchRelayErrors = 1u << 5;
constexpr uint16_t PortXmitDiscards = 1u << 6;
constexpr uint16_t PortXmitConstraintErrors = 1u << 7;
constexpr uint16_t PortRcvConstraintErrors = 1u << 8;
constexpr uint16_t LocalLinkIntegrityErrors = 1u << 9;
constexpr uint16_t ExcessiveBufferOverrunErrors = 1u << 10;
constexpr uint16_t Vl15Dropped = 1u << 11;
constexpr uint16_t PortXmitData = 1u << 12;
constexpr uint16_t PortRcvData = 1u << 13;
constexpr uint16_t PortXmitPkts = 1u << 14;
constexpr uint16_t PortRcvPkts = 1u << 15;
constexpr uint8_t PortXmitWait = 1u << 0; ///< in CounterSelect2
} // namespace IbCounterSelect

/// PortCounters (PerfMgt attribute 0x0012), 44 bytes, IBA vol. 1 §16.1.3.5 (Table 232).
struct IbPortCountersAttr
{
    static constexpr uint32_t kSize = 44;
    uint8_t portSelect = 0;
    uint16_t counterSelect = 0;
    uint16_t symbolErrorCounter = 0;
    uint8_t linkErrorRecoveryCounter = 0;
    uint8_t linkDownedCounter = 0;
    uint16_t portRcvErrors = 0;
    uint16_t portRcvRemotePhysicalErrors = 0;
    uint16_t portRcvSwitchRelayErrors = 0;
    uint16_t portXmitDiscards = 0;
    uint8_t portXmitConstraintErrors = 0;
    uint8_t portRcvConstraintErrors = 0;
    uint8_t counterSelect2 = 0;
    uint8_t localLinkIntegrityErrors = 0;     ///< 4 bits
    uint8_t excessiveBufferOverrunErrors = 0; ///< 4 bits
    uint16_t vl15Dropped = 0;
    uint32_t portXmitData = 0;
    uint32_t portRcvData = 0;
    uint32_t portXmitPkts = 0;
    uint32_t portRcvPkts = 0;
    uint32_t portXmitWait = 0;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// PortCountersExtended (0x001D), 72 bytes, IBA vol. 1 §16.1.4.11 (Table 260): reserved (8),
/// PortSelect, CounterSelect (16), reserved (32), then eight 64-bit counters.
struct IbPortCountersExtendedAttr
{
    static constexpr uint32_t kSize = 72;
    uint8_t portSelect = 0;
    uint16_t counterSelect = 0; ///< bit i selects the i-th counter below
    uint64_t portXmitData = 0;
    uint64_t portRcvData = 0;
    uint64_t portXmitPkts = 0;
    uint64_t portRcvPkts = 0;
    uint64_t portUnicastXmitPkts = 0;
    uint64_t portUnicastRcvPkts = 0;
    uint64_t portMulticastXmitPkts = 0;
    uint64_t portMulticastRcvPkts = 0;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/// PerfMgt ClassPortInfo.CapabilityMask bits (IBA vol. 1 §16.1.2 Table 227; opensm's
/// IB_PM_* values): which optional counters the agent keeps.
namespace IbPerfCap
{
constexpr uint16_t AllPortSelect = 1u << 8;
constexpr uint16_t ExtendedWidthSupported = 1u << 9;
constexpr uint16_t ExtendedWidthNoIetf = 1u << 10;
constexpr uint16_t PortCountersXmitWaitSupported = 1u << 12;
} // namespace IbPerfCap

/// ClassPortInfo (0x0001), 72 bytes, IBA vol. 1 §13.4.8.1 (Table 114). Redirect and trap
/// addressing are kept as raw fields; the agents here never redirect.
struct IbClassPortInfo
{
    static constexpr uint32_t kSize = 72;
    uint8_t baseVersion = 1;
    uint8_t classVersion = 1;
    uint16_t capabilityMask = 0;
    uint32_t capabilityMask2 = 0; ///< 27 bits
    uint8_t respTimeValue = 0;    ///< 5 bits
    std::array<uint8_t, 16> redirectGid{};
    uint32_t redirectTcSlFl = 0;
    uint16_t redirectLid = 0;
    uint16_t redirectPkey = 0;
    uint32_t redirectQp = 0;
    uint32_t redirectQkey = 0;
    std::array<uint8_t, 16> trapGid{};
    uint32_t trapTcSlFl = 0;
    uint16_t trapLid = 0;
    uint16_t trapPkey = 0;
    uint8_t trapHopLimit = 0;
    uint32_t trapQp = 0;
    uint32_t trapQkey = 0;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

} // namespace ns3

#endif
