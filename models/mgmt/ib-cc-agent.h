// The congestion control agent of a node (IBA vol. 1 annex A10): answers CongestionControl
// class (0x21) MADs on QP1 from a switch's marker or a channel adapter's RdmaCcIba policy.
#ifndef CNUAS_IB_CC_AGENT_H
#define CNUAS_IB_CC_AGENT_H

#include "ib-mad-dispatcher.h"

#include "models/ib/ib-cc-switch-marker.h"
#include "models/rdma/rdma-cc-iba.h"

#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <map>

namespace ns3
{

/**
 * \brief CC agent: ClassPortInfo and CongestionInfo (Get), CongestionKeyInfo (Get, Set), and
 * on a switch SwitchCongestionSetting and SwitchPortCongestionSetting, on a CA
 * CACongestionSetting and CongestionControlTable (Get, Set).
 *
 * A request whose CC_Key does not match the node's (when the node's is not 0) gets no answer
 * and counts a CC_KeyViolation (annex A10 CC_Key checking). A block-indexed attribute
 * (AttributeModifier = block) beyond the node's ports or table answers InvalidField.
 */
class IbCcAgent : public Object
{
  public:
    static TypeId GetTypeId();
    IbCcAgent();
    ~IbCcAgent() override;

    /// Serve a switch: registers for class 0x21 on `dispatcher`.
    void InstallSwitch(Ptr<IbMadDispatcher> dispatcher, Ptr<IbCcSwitchMarker> marker);
    /// Serve a channel adapter whose engine runs `policy`.
    void InstallCa(Ptr<IbMadDispatcher> dispatcher, Ptr<RdmaCcIba> policy);

    uint64_t GetCcKey() const;
    uint16_t GetKeyViolations() const;
    /// Requests answered with `status`.
    uint64_t GetAnsweredCount(uint16_t status) const;

    /// The answer to one CC MAD (256 bytes, in place); false: no answer (CC_Key mismatch).
    bool Answer(uint8_t* mad);

    /// MadAnswered: (attribute ID, request method, status).
    typedef void (*AnsweredCallback)(uint16_t attrId, uint8_t method, uint16_t status);

  protected:
    void DoDispose() override;

  private:
    void Handle(const IbReceivedMad& req);
    uint16_t Attribute(uint16_t attr, uint32_t mod, bool set, uint8_t* data);

    Ptr<IbMadDispatcher> m_disp;
    Ptr<IbCcSwitchMarker> m_marker;
    Ptr<RdmaCcIba> m_policy;
    uint64_t m_ccKey = 0;
    bool m_keyProtect = false;
    uint16_t m_keyLease = 0;
    uint16_t m_keyViolations = 0;
    uint8_t m_cctBlocks = 2; ///< ControlTableCap: 64-entry CCT blocks supported (CA)
    std::map<uint16_t, uint64_t> m_answered;
    TracedCallback<uint16_t, uint8_t, uint16_t> m_answeredTrace;
};

} // namespace ns3

#endif
