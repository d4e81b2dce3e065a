// The congestion control manager (IBA vol. 1 annex A10): after each heavy sweep of the subnet
// manager it programs every switch and channel adapter the sweep found with CC class Set MADs.
#ifndef CNUAS_IB_CC_MANAGER_H
#define CNUAS_IB_CC_MANAGER_H

#include "ib-cc-agent.h"
#include "ib-mad-dispatcher.h"
#include "ib-subnet-manager.h"

#include "ns3/object.h"
#include "ns3/traced-callback.h"

namespace ns3
{

/**
 * \brief Sends SwitchCongestionSetting to each switch, CACongestionSetting and the
 * CongestionControlTable blocks to each CA port, once per heavy sweep (the nodes the SM's
 * subnet view holds, addressed by the LIDs it assigned; GMPs on QP1 from the SM's node).
 *
 * The answers go to the SM node's manager handler, which belongs to the SM: this manager does
 * not read them back (fire and forget), and a node that drops a Set stays unconfigured until the
 * next heavy sweep. All switches get the same setting and all CAs the same table: the usual
 * practice of one fabric-wide CC profile (opensm's congestion control does the same).
 */
class IbCcManager : public Object
{
  public:
    static TypeId GetTypeId();
    IbCcManager();
    ~IbCcManager() override;

    /// Run beside `sm` on the node of `dispatcher`, sending from CA port `port` (0: a switch).
    void Install(Ptr<IbSubnetManager> sm, Ptr<IbMadDispatcher> dispatcher, uint8_t port);
    /// The CC agent of the manager's own node: MADs for its own LID are handed to it directly
    /// (a GMP to one's own LID would have to leave by the port it is for, and a switch does not
    /// send a packet back out of the port it came in on).
    void SetLocalAgent(Ptr<IbCcAgent> agent);
    /// Programs every node of the SM's current subnet view now.
    void ConfigureAll();

    uint64_t GetMadsSent() const
    {
        return m_sent;
    }
    uint64_t GetSendFailures() const
    {
        return m_failed;
    }

    /// MadSent: (destination LID, attribute ID, attribute modifier).
    typedef void (*MadSentCallback)(uint16_t dlid, uint16_t attrId, uint32_t attrMod);

  protected:
    void DoDispose() override;

  private:
    void SweepFinished(bool heavy, uint32_t nodes, Time duration);
    void SendSet(uint16_t dlid, uint16_t attr, uint32_t mod, const uint8_t* data, uint32_t len);

    Ptr<IbSubnetManager> m_sm;
    Ptr<IbMadDispatcher> m_disp;
    Ptr<IbCcAgent> m_local;
    uint8_t m_port = 1;
    uint64_t m_tid = 0x2100000000ULL;
    uint64_t m_sent = 0;
    uint64_t m_failed = 0;
    // The fabric-wide profile (attributes).
    uint32_t m_threshold = 15;
    uint32_t m_markingRate = 0;
    uint32_t m_packetSize = 0;
    bool m_markVictims = false;
    uint32_t m_controlMap = 0xFFFF;
    uint32_t m_cctiTimer = 2;
    uint32_t m_cctiIncrease = 1;
    uint32_t m_cctiMin = 0;
    uint32_t m_cctiLimit = 127;
    uint32_t m_cctStep = 64;
    TracedCallback<uint16_t, uint16_t, uint32_t> m_sentTrace;
};

} // namespace ns3

#endif
