// SMInfo (attribute 0x0020): what subnet managers tell each other to elect a master, IBA vol. 1
// §14.2.5.13 and §14.4.
#ifndef CNUAS_IB_SM_INFO_H
#define CNUAS_IB_SM_INFO_H

#include <cstdint>

namespace ns3
{

/// SMInfo.SMState, IBA vol. 1 §14.4.1 (Table 168).
enum class IbSmState : uint8_t
{
    NotActive = 0,
    Discovering = 1,
    Standby = 2,
    Master = 3,
};

const char* IbSmStateName(IbSmState s);

/**
 * What a SubnSet(SMInfo) asks of the SM that receives it, in the AttributeModifier (IBA vol. 1
 * §14.4.1, the SM state machine of Table 169): a master hands the mastership over (Handover),
 * and the standby that takes it acknowledges (Acknowledge); a master tells a standby to stop
 * (Disable), a not-active SM to stand by (Standby) or a standby to rediscover (Discover).
 */
enum class IbSmInfoControl : uint32_t
{
    Handover = 1,
    Acknowledge = 2,
    Disable = 3,
    Standby = 4,
    Discover = 5,
};

/// "HANDOVER", ..., or "?" for an AttributeModifier that names no control.
const char* IbSmInfoControlName(uint32_t attributeModifier);

/**
 * SMInfo in the 64-byte SMP data field: GUID (8 bytes, offset 0), SM_Key (8, offset 8),
 * ActCount (4, offset 16), Priority (4 bits, byte 20 high nibble), SMState (4 bits, byte 20 low
 * nibble); the rest reserved (IBA vol. 1 §14.2.5.13, Table 167).
 */
struct IbSmInfo
{
    static constexpr uint32_t kSize = 64;
    uint64_t guid = 0;
    uint64_t smKey = 0;
    uint32_t actCount = 0;
    uint8_t priority = 0; ///< 4 bits
    uint8_t smState = 0;  ///< 4 bits, an IbSmState
    void WriteTo(uint8_t* out) const;
    void ReadFrom(const uint8_t* in);
};

/**
 * Whether an SM with (priority a, GUID ga) wins the mastership over one with (b, gb): the higher
 * priority, and on equal priority the lower GUID (IBA vol. 1 §14.4.1.1).
 */
bool IbSmOutranks(uint8_t a, uint64_t ga, uint8_t b, uint64_t gb);

} // namespace ns3

#endif
