// Port counters with the semantics of the IBA PortCounters and PortCountersExtended attributes
// (IBA vol. 1 §16.1.3.5 and §16.1.4.11), kept by the link layer so that a performance
// management agent can serve them unchanged.
#ifndef CNUAS_IB_PORT_COUNTERS_H
#define CNUAS_IB_PORT_COUNTERS_H

#include <cstdint>

namespace ns3
{

/**
 * \brief PortCounters: fixed-width counters that stop at their maximum instead of wrapping
 * (IBA vol. 1 §16.1.3.5: "counters ... shall not wrap"), and the 64-bit extended set.
 *
 * Data counters count octets divided by 4, from the first LRH byte through the ICRC (the VCRC
 * and link packets excluded), per the PortXmitData/PortRcvData definitions.
 */
struct IbPortCounters
{
    // PortCounters (widths per §16.1.3.5)
    uint16_t symbolErrorCounter = 0;
    uint8_t linkErrorRecoveryCounter = 0;
    uint8_t linkDownedCounter = 0;
    uint16_t portRcvErrors = 0;
    uint16_t portRcvRemotePhysicalErrors = 0;
    uint16_t portRcvSwitchRelayErrors = 0;
    uint16_t portXmitDiscards = 0;
    uint8_t portXmitConstraintErrors = 0;
    uint8_t portRcvConstraintErrors = 0;
    uint8_t localLinkIntegrityErrors = 0;    ///< 4 bits
    uint8_t excessiveBufferOverrunErrors = 0; ///< 4 bits
    uint16_t vl15Dropped = 0;
    uint32_t portXmitData = 0;
    uint32_t portRcvData = 0;
    uint32_t portXmitPkts = 0;
    uint32_t portRcvPkts = 0;
    uint32_t portXmitWait = 0;

    // PortCountersExtended (§16.1.4.11): 64-bit, independent reset.
    uint64_t extXmitData = 0;
    uint64_t extRcvData = 0;
    uint64_t extXmitPkts = 0;
    uint64_t extRcvPkts = 0;
    uint64_t extUnicastXmitPkts = 0;
    uint64_t extUnicastRcvPkts = 0;
    uint64_t extMulticastXmitPkts = 0;
    uint64_t extMulticastRcvPkts = 0;

    /// Saturating increment of a counter `bits` wide.
    template <typename T>
    static void Add(T& counter, uint64_t delta, unsigned bits = sizeof(T) * 8)
    {
        const uint64_t max = bits >= 64 ? ~0ULL : ((1ULL << bits) - 1);
        uint64_t v = static_cast<uint64_t>(counter) + delta;
        counter = static_cast<T>(v > max ? max : v);
    }

    void CountXmit(uint32_t wireBytesWithoutVcrc, bool multicast);
    void CountRcv(uint32_t wireBytesWithoutVcrc, bool multicast);
    /// Clears the PortCounters set (a Set(PortCounters) with every CounterSelect bit).
    void ResetPortCounters();
    /// Clears the PortCountersExtended set.
    void ResetExtended();
};

} // namespace ns3

#endif
