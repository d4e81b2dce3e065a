// InfiniBand congestion control at a channel adapter (IBA vol. 1 annex A10): the source side
// keeps a Congestion Control Table Index (CCTI) per QP, raises it on each BECN and lets a per-SL
// timer lower it; the table entry it indexes gives the injection rate delay between packets.
#ifndef CNUAS_RDMA_CC_IBA_H
#define CNUAS_RDMA_CC_IBA_H

#include "rdma-congestion-control.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace ns3
{

/// One CongestionControlTable entry (annex A10: CCT_Shift 2 bits, CCT_Multiplier 14 bits).
struct IbCctEntry
{
    uint8_t shift = 0;       ///< 0..3
    uint16_t multiplier = 0; ///< 0..16383

    /// The 16-bit wire form: shift in the top two bits.
    uint16_t Pack() const
    {
        return static_cast<uint16_t>(((shift & 0x3) << 14) | (multiplier & 0x3FFF));
    }
    static IbCctEntry Unpack(uint16_t v)
    {
        IbCctEntry e;
        e.shift = static_cast<uint8_t>(v >> 14);
        e.multiplier = static_cast<uint16_t>(v & 0x3FFF);
        return e;
    }
};

/// CACongestionEntry for one SL (annex A10, CACongestionSetting).
struct IbCaCongestionEntry
{
    uint16_t cctiTimer = 0;       ///< units of 1.024 us; 0 = the index never decreases
    uint8_t cctiIncrease = 0;     ///< added to the CCTI per BECN
    uint8_t triggerThreshold = 0; ///< CCTI at which a CA logs an event (logging not modelled)
    uint8_t cctiMin = 0;          ///< the CCTI never drops below this
};

/**
 * \brief The annex A10 reaction point as an RdmaCongestionControl policy ("iba").
 *
 * State per QP: its CCTI. A BECN (in an acknowledgment, or a CNP for the unreliable types)
 * adds CCTI_Increase of the QP's SL, saturating at CCTI_Limit. Each SL whose congestion control
 * is enabled (Control_Map bit) runs a free-running CCTI_Timer; at each expiry every QP on that
 * SL loses 1 from its CCTI, down to CCTI_Min. The packet gap is the time the packet takes at
 * the line rate plus the injection rate delay of entry CCT[CCTI]:
 *   IRD = (CCT_Multiplier << CCT_Shift) * IrdUnit.
 * The annex leaves the time base of the delay to the implementation: IrdUnit is an attribute.
 * Port_Control bit 0 chooses QP-based (0) or SL-based (1) control; this model keeps the index
 * per QP and maps every QP to the SL set by SetQpSl (default 0).
 */
class RdmaCcIba : public RdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    RdmaCcIba();
    ~RdmaCcIba() override;

    void OnQpStart(uint32_t qpn, uint64_t lineRateBps) override;
    void OnQpStop(uint32_t qpn) override;
    void OnSend(uint32_t qpn, uint32_t bytes, bool retransmission) override;
    void OnAck(uint32_t qpn, uint32_t ackedPackets, Time rtt) override;
    void OnCnp(uint32_t qpn) override;
    void OnBecn(uint32_t qpn) override;
    bool OnEcnMarkedReceive(uint32_t qpn) override;
    uint64_t GetRate(uint32_t qpn) const override;
    uint64_t GetWindow(uint32_t qpn) const override;
    Time GetPacketGap(uint32_t qpn, uint32_t bytes) const override;

    // ---- what CACongestionSetting and CongestionControlTable MADs set ---------------------
    /// Port_Control (bit 0: SL-based) and Control_Map (bit n: SL n is controlled).
    void SetPortControl(uint16_t portControl);
    uint16_t GetPortControl() const;
    void SetControlMap(uint16_t map);
    uint16_t GetControlMap() const;
    void SetCaEntry(uint8_t sl, const IbCaCongestionEntry& e);
    IbCaCongestionEntry GetCaEntry(uint8_t sl) const;
    /// CCTI_Limit: the highest usable index (also the last table entry).
    void SetCctiLimit(uint16_t limit);
    uint16_t GetCctiLimit() const;
    /// Sets entries [first, first + n) of the table (grown as needed).
    void SetCctEntries(uint16_t first, const std::vector<IbCctEntry>& entries);
    IbCctEntry GetCctEntry(uint16_t index) const;
    /// Fills the table with `n` entries whose delay grows linearly: entry i = (0, i * step).
    void SetLinearCct(uint16_t n, uint16_t step);

    /// The SL a QP sends on (which CACongestionEntry governs it).
    void SetQpSl(uint32_t qpn, uint8_t sl);
    /// The QP's current index (0 for an unknown QP).
    uint16_t GetCcti(uint32_t qpn) const;
    /// The injection rate delay the QP's current index gives.
    Time GetIrd(uint32_t qpn) const;

    uint64_t GetBecnCount() const
    {
        return m_becns;
    }
    uint64_t GetFecnCount() const
    {
        return m_fecns;
    }

    typedef void (*CctiChangeCallback)(uint32_t qpn, uint16_t oldCcti, uint16_t newCcti);

  protected:
    void DoDispose() override;
    /// Applies the attribute defaults (a configuration before any MAD arrives).
    void NotifyConstructionCompleted() override;

  private:
    struct QpState
    {
        uint64_t lineRate = 0;
        uint16_t ccti = 0;
        uint8_t sl = 0;
    };

    void SetCcti(uint32_t qpn, QpState& q, uint16_t v);
    void ArmTimer(uint8_t sl);
    void TimerExpired(uint8_t sl);
    bool SlControlled(uint8_t sl) const;

    std::map<uint32_t, QpState> m_qps;
    std::map<uint32_t, uint8_t> m_qpSl; ///< SL set before the QP started
    std::array<IbCaCongestionEntry, 16> m_ca{};
    std::array<EventId, 16> m_timers{};
    uint16_t m_portControl = 0;
    uint16_t m_controlMap = 0;
    uint16_t m_cctiLimit = 0;
    std::vector<IbCctEntry> m_cct;
    Time m_irdUnit;
    // Attribute defaults, applied to every SL once constructed (CACongestionSetting and
    // CongestionControlTable MADs replace them).
    uint32_t m_initControlMap = 0;
    uint32_t m_initTimer = 0;
    uint32_t m_initIncrease = 1;
    uint32_t m_initMin = 0;
    uint32_t m_initLimit = 0;
    uint32_t m_initStep = 0;
    bool m_returnBecn = true;
    uint64_t m_becns = 0;
    uint64_t m_fecns = 0;
    TracedCallback<uint32_t, uint16_t, uint16_t> m_cctiTrace;
};

} // namespace ns3

#endif
