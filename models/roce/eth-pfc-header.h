// The 802.1Qbb priority-based flow control PDU: the MAC Control payload of a PFC frame.
#ifndef CNUAS_ETH_PFC_HEADER_H
#define CNUAS_ETH_PFC_HEADER_H

#include "models/common/fixed-size-header.h"

#include <array>
#include <cstdint>

namespace ns3
{

/// MAC Control EtherType, IEEE 802.3 §31.4.1.
constexpr uint16_t kEthTypeMacControl = 0x8808;
/// PFC opcode ("Priority-based flow control"), IEEE 802.1Qbb §36.1.3 / 802.3 Annex 31A.
constexpr uint16_t kMacControlOpcodePfc = 0x0101;
/// The 802.3x PAUSE opcode (not modelled: counted as an unsupported control frame).
constexpr uint16_t kMacControlOpcodePause = 0x0001;
/// Bits per pause quantum: 802.3 §31B.2 (and 802.1Qbb §36.1.3 reuses it per priority).
constexpr uint32_t kPauseQuantumBits = 512;

/**
 * \brief PFC MAC Control PDU (802.1Qbb §36.1.3, 802.3 Annex 31D): opcode 0x0101, a 16-bit
 * priority-enable vector (bits 0..7, bit i for priority i; the upper octet is reserved and sent
 * as zero), then eight 16-bit pause times time[0]..time[7] in pause quanta (512 bit times at the
 * link's speed). All fields are big-endian. 20 bytes; the frame that carries it is padded to the
 * 64-byte minimum.
 */
class EthPfcHeader : public FixedSizeHeader<EthPfcHeader, 20>
{
  public:
    static TypeId GetTypeId();
    void Print(std::ostream& os) const override;
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);

    uint16_t opcode = kMacControlOpcodePfc;
    uint16_t classEnable = 0; ///< priority-enable vector (only the low 8 bits are defined)
    std::array<uint16_t, 8> quanta{};
};

} // namespace ns3

#endif
