// The congestion point of InfiniBand congestion control (IBA vol. 1 annex A10) at a switch:
// which packets leaving an output port get FECN, from the SwitchCongestionSetting and
// SwitchPortCongestionSetting a congestion-control manager programs.
#ifndef CNUAS_IB_CC_SWITCH_MARKER_H
#define CNUAS_IB_CC_SWITCH_MARKER_H

#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

/// SwitchCongestionSetting (annex A10; CC class attribute 0x0014), as the switch keeps it.
struct IbCcSwitchSetting
{
    uint32_t controlMap = 0;             ///< which of the fields below are valid (bit 0..4)
    std::array<uint8_t, 32> victimMask{}; ///< bit per port: mark even when the port is a victim
    std::array<uint8_t, 32> creditMask{}; ///< bit per port: credit starvation (not modelled)
    uint8_t threshold = 0;               ///< 0 = off, 1 (least) .. 15 (most aggressive)
    uint8_t packetSize = 0;              ///< packets of fewer 64-byte blocks are not marked
    uint8_t csThreshold = 0;             ///< credit starvation threshold (not modelled)
    uint16_t csReturnDelay = 0;          ///< credit starvation return delay (not modelled)
    uint16_t markingRate = 0;            ///< eligible packets skipped between two marks

    bool PortBit(const std::array<uint8_t, 32>& mask, uint8_t port) const
    {
        // Bit 0 of the 256-bit mask is port 0, carried in the last byte (the field is one
        // big-endian number).
        return (mask[31 - port / 8] >> (port % 8)) & 1;
    }
    static void SetPortBit(std::array<uint8_t, 32>& mask, uint8_t port, bool on)
    {
        uint8_t& b = mask[31 - port / 8];
        b = on ? uint8_t(b | (1u << (port % 8))) : uint8_t(b & ~(1u << (port % 8)));
    }
};

/// SwitchPortCongestionSettingElement (annex A10; one per port, Control_Type 0 = congestion).
struct IbCcSwitchPortSetting
{
    bool valid = false;       ///< overrides the switch-wide threshold/size/rate for the port
    uint8_t controlType = 0;  ///< 0: congestion settings; 1: credit starvation (not modelled)
    uint8_t threshold = 0;
    uint8_t packetSize = 0;
    uint16_t markingRate = 0;
};

/**
 * \brief Decides FECN marking for the packets a switch sends (annex A10 congestion point).
 *
 * A port VL is congested while its output queue exceeds the threshold (the switch passes the
 * data waiting for the port VL at the heads of its input buffers, see IbSwitch): Threshold t
 * in 1..15 stands for (16 - t)/16 of one VL receive buffer;
 * 0 turns marking off. The annex only orders the thresholds (15 the most aggressive) and leaves
 * the levels to the implementation, so this linear map is the model's choice. A congested port
 * that is a victim (out of credit: it is throttled by congestion further down) marks only if
 * its Victim_Mask bit is set. Of the eligible packets (at least Packet_Size blocks) one is
 * marked, then Marking_Rate are skipped.
 */
class IbCcSwitchMarker : public Object
{
  public:
    static TypeId GetTypeId();
    IbCcSwitchMarker();

    void SetSwitchSetting(const IbCcSwitchSetting& s);
    const IbCcSwitchSetting& GetSwitchSetting() const;
    /// Port 0..N (0 is the switch's management port, never used for data).
    void SetPortSetting(uint8_t port, const IbCcSwitchPortSetting& s);
    IbCcSwitchPortSetting GetPortSetting(uint8_t port) const;

    /**
     * A data packet of `blocks` credit blocks is about to leave `port` on `vl`; `queuedBlocks`
     * is the port VL's output queue including it, `bufferBlocks` one VL receive buffer and
     * `victim` whether the port is short of credit. True: set FECN.
     */
    bool ShouldMark(uint8_t port,
                    uint8_t vl,
                    uint32_t queuedBlocks,
                    uint32_t bufferBlocks,
                    bool victim,
                    uint16_t blocks);

    /// The queue level above which (port, vl) counts as congested (blocks); UINT32_MAX = off.
    uint32_t ThresholdBlocks(uint8_t port, uint32_t bufferBlocks) const;

    uint64_t GetMarked() const
    {
        return m_marked;
    }
    uint64_t GetCongestedDepartures() const
    {
        return m_congested;
    }

    typedef void (*MarkCallback)(uint8_t port, uint8_t vl, uint32_t queuedBlocks);

  private:
    IbCcSwitchSetting m_setting;
    std::vector<IbCcSwitchPortSetting> m_ports;
    std::vector<uint32_t> m_skip; ///< [port * 16 + vl] eligible packets still to skip
    uint64_t m_marked = 0;
    uint64_t m_congested = 0;
    TracedCallback<uint8_t, uint8_t, uint32_t> m_markTrace;
};

} // namespace ns3

#endif
