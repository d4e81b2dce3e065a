// The subnet management agent of a node (IBA vol. 1 §14.2): answers SubnGet/SubnSet of the SMA
// attributes through the same port and switch setters a subnet manager's sweep uses, checks the
// M_Key, and sends traps to the subnet manager.
#ifndef CNUAS_IB_SMA_AGENT_H
#define CNUAS_IB_SMA_AGENT_H

#include "ib-mad-dispatcher.h"
#include "ib-smp-attributes.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <map>
#include <string>
#include <vector>

namespace ns3
{

struct IbPkeyViolation;

/// Why the SMA discarded an SMP without answering (trace source "SmpDropped").
enum class IbSmaDropReason : uint8_t
{
    BadMKey,     ///< M_Key check failed (§14.2.4.1): discarded, M_KeyViolations counted
    TrapRepress, ///< a TrapRepress needs no answer (§13.4.9); counted, not an error
    SendFailed,  ///< the answer could not be sent (port down, no route)
};

/**
 * \brief The SMA of one node: a channel adapter (serving each of its ports) or a switch (its
 * management port 0, §17.2.1).
 *
 * Attributes served (IBA vol. 1 §14.2.5): NodeInfo, NodeDescription (Get); SwitchInfo (switch),
 * PortInfo, P_KeyTable, GUIDInfo, SLtoVLMappingTable, VLArbitrationTable, LinearForwardingTable
 * (switch) (Get and Set). A Set is checked as a whole first: one invalid field answers status 7
 * (InvalidField) and changes nothing; then it is applied through the IbNetDevice / IbSwitch
 * setters and answered with the new values read back. Other statuses: bad base or class version
 * (1), a method other than Get/Set (2), an attribute this node does not have or a Set of a
 * read-only one (3).
 *
 * M_Key (§14.2.4): a port whose M_Key is non-zero accepts an SMP whose M_Key differs only for a
 * Get with protection bits 0 or 1 (with bits 1 a PortInfo Get returns M_Key 0); otherwise the
 * SMP is discarded unanswered and M_KeyViolations counts it. A violation starts the lease
 * timer (M_KeyLeasePeriod seconds, 0 = never expires); an SMP with the right M_Key stops it;
 * if it runs out, the protection bits drop to 0 so that a new SM can take over (§14.2.4.2).
 * Each violation also sends Trap 256 (bad M_Key) to the port's SM LID when the port has a LID.
 *
 * P_Key (§10.9): each port's P_Key table (PartitionCap = 32 x PKeyBlocks entries, or
 * SwitchPKeyBlocks at a switch) is its net device's, which the transport checks packets
 * against; a Set of a block writes it there. A
 * packet the transport of a CA port discards for its P_Key counts in PortInfo.P_KeyViolations
 * and sends Trap 257 (bad P_Key: LIDs, P_Key, SL, QPs, GIDs) to the SM LID; while that trap is
 * repeated (not yet repressed), further violations are only counted.
 *
 * Traps: a switch one of whose external ports goes from Down to Init or from Init, Armed or
 * Active to Down sets SwitchInfo.PortStateChange (§14.2.5.4: the SM's own Sets to Armed and
 * Active do not) and sends Trap 128 (Notice, urgent, producer switch, LIDADDR = its LID) to its
 * SM LID when both LIDs are set (§14.2.5.1, Table 121 trap 128). A trap is repeated every
 * TrapRepeatInterval, at most TrapRepeats times, until the SM answers it with a TrapRepress
 * carrying its TransactionID (§13.4.9).
 */
class IbSmaAgent : public Object
{
  public:
    static TypeId GetTypeId();
    IbSmaAgent();
    ~IbSmaAgent() override;

    /// Serve the node `dispatcher` is installed on (registers as its SMA).
    void Install(Ptr<IbMadDispatcher> dispatcher);
    /**
     * Sets PortInfo.CapabilityMask.IsSM of a CA port (a subnet manager runs behind it). A change
     * on a port that has a LID and an SM LID other than its own sends Trap 144 (local changes,
     * the new CapabilityMask, §14.2.5.1) to that SM, as a kernel's SMA does when opensm opens
     * issm: that is how a master learns that another SM has come or gone.
     */
    void SetIsSm(uint8_t port, bool isSm);
    /**
     * SMInfo is the SM's attribute, not the SMA's (IBA vol. 1 §14.2.5.13): a SubnGet/SubnSet
     * of it that passes the M_Key check is handed to this handler with the request; it fills
     * the response's data and returns the MAD status (0, or e.g. 7 for a SubnSet the SM
     * refuses, the data still filled); 3 (UnsupportedMethodAttr) means no SM runs behind the
     * port. Without a handler every SMInfo request gets status 3. A requester that passed the
     * M_Key check only as a Get with protection bits 1 gets the SM_Key field zeroed, as it
     * gets PortInfo.M_Key.
     */
    typedef Callback<uint16_t, const IbSmp&, IbSmp&> SmInfoHandler;
    void SetSmInfoHandler(SmInfoHandler handler);

    /// SMPs answered with `status` (the MAD status value, D bit excluded).
    uint64_t GetAnsweredCount(uint16_t status) const;
    uint64_t GetDropCount(IbSmaDropReason r) const;
    /// Trap packets sent, repetitions included.
    uint64_t GetTrapsSent() const { return m_trapsSent; }
    /// Traps the SM acknowledged with a TrapRepress.
    uint64_t GetTrapsRepressed() const { return m_trapsRepressed; }
    /// PortInfo.M_KeyViolations of a port (0 for a switch's management port).
    uint16_t GetMKeyViolations(uint8_t port) const;
    /// PortInfo.M_Key of a port (a switch's: port 0's). For the adapter's own queries, which
    /// a driver makes with the M_Key check off (the emulated host's sysfs view).
    uint64_t GetMKey(uint8_t port) const;
    /// The node GUID NodeInfo answers with (the NodeGuid attribute, else the switch's, else
    /// a CA's port-1 GUID less the port number).
    uint64_t GetNodeGuid() const
    {
        return NodeGuid();
    }

    /// SmpAnswered: (attribute ID, method of the request, status).
    typedef void (*AnsweredCallback)(uint16_t attrId, uint8_t method, uint16_t status);
    /// SmpDropped: (attribute ID, IbSmaDropReason).
    typedef void (*DroppedCallback)(uint16_t attrId, uint8_t reason);

  protected:
    void DoDispose() override;

  private:
    /// What the SMA keeps per port beyond the link layer's own state (§14.2.5.6 fields the
    /// IbNetDevice has no use for, and the tables of §14.2.5.5 and §14.2.5.7).
    struct PortState
    {
        uint64_t mKey = 0;
        uint8_t mKeyProtect = 0;
        uint16_t mKeyLease = 0;
        uint16_t mKeyViolations = 0;
        EventId leaseTimer; ///< running while an M_Key violation is not yet answered for
        uint8_t widthEnabled = 0xFF; ///< 0xFF: all supported
        uint8_t speedEnabled = 0x0F;
        uint8_t speedExtEnabled = 0x1F;
        uint8_t masterSmSl = 0;
        uint8_t subnetTimeOut = 0;
        bool clientReregister = false;
        uint8_t linkDownDefault = 2; ///< Polling
        uint8_t hoqLife = 19;
        uint8_t vlStallCount = 7;
        bool isSm = false;
        std::vector<uint16_t> pkeys; ///< a switch's port 0 only: others' are the net device's
        uint64_t badPkeyTrapTid = 0; ///< the port's last Trap 257 (0: none yet)
        std::vector<uint64_t> guids;
    };

    void HandleSmp(const IbReceivedMad& req);
    /// Fills `data` for a Get, or validates (apply=false) / applies (apply=true) a Set.
    /// Returns the MAD status.
    uint16_t Attribute(const IbReceivedMad& req, IbSmp& smp, bool set);
    uint16_t DoPortInfo(const IbReceivedMad& req, IbSmp& smp, bool set);
    uint16_t DoSwitchInfo(IbSmp& smp, bool set);
    uint16_t DoPKeyTable(const IbReceivedMad& req, IbSmp& smp, bool set);
    uint16_t DoGuidInfo(const IbReceivedMad& req, IbSmp& smp, bool set);
    uint16_t DoLft(IbSmp& smp, bool set);
    uint16_t DoMft(IbSmp& smp, bool set);
    uint16_t DoSlToVl(const IbReceivedMad& req, IbSmp& smp, bool set);
    uint16_t DoVlArb(const IbReceivedMad& req, IbSmp& smp, bool set);
    uint16_t DoSmInfo(IbSmp& smp, bool set);
    /// Trap 144 (CapabilityMask changed) from a CA port to its SM.
    void SendTrap144(uint8_t port);
    void FillNodeInfo(const IbReceivedMad& req, uint8_t* data) const;
    void FillPortInfo(uint8_t port, uint8_t localPort, bool hideMKey, IbPortInfo& pi) const;
    /// The port whose M_Key guards this SMP: the switch's port 0, or the CA arrival port.
    PortState& KeyPort(const IbReceivedMad& req);
    bool MKeyCheck(const IbReceivedMad& req, bool* hideMKey);
    PortState& State(uint8_t port);
    uint64_t NodeGuid() const;
    void PortStateChanged(uint8_t port, uint8_t oldState, uint8_t newState);
    void SendTrap128();
    /// Trap 256 (bad M_Key) about `req`, to the SM LID of the port it hit.
    void SendTrap256(const IbReceivedMad& req);
    /// Trap 257 (bad P_Key) about a packet the transport above CA port `port` discarded, to
    /// its SM LID; not while the port's previous one is still repeated (counted only).
    void SendTrap257(uint8_t port, const IbPkeyViolation& v);
    /// Sends (again) a trap from `port` (0 at a switch) and schedules its next repetition.
    void SendTrap(IbSmp smp, uint8_t port, uint16_t dlid, uint32_t repeatsLeft);

    Ptr<IbMadDispatcher> m_disp;
    std::map<uint8_t, PortState> m_state;
    std::string m_description;
    uint64_t m_nodeGuid = 0;
    uint64_t m_systemImageGuid = 0;
    uint32_t m_vendorId = 0x0002C9;
    uint16_t m_deviceId = 0;
    uint32_t m_revision = 0;
    uint16_t m_pkeyBlocks = 4;       ///< PKeyBlocks (a channel adapter's)
    uint16_t m_switchPkeyBlocks = 1; ///< SwitchPKeyBlocks
    /// P_KeyTable blocks per port of this node (a switch's or a CA's attribute).
    uint16_t PkeyBlocks() const
    {
        return m_disp && m_disp->IsSwitch() ? m_switchPkeyBlocks : m_pkeyBlocks;
    }
    bool m_trapsEnabled = true;
    uint8_t m_lifeTime = 0;
    bool m_portStateChange = false;
    uint16_t m_switchSmLid = 0;
    uint64_t m_nextTid = 1;
    uint64_t m_trapsSent = 0;
    uint64_t m_trapsRepressed = 0;
    SmInfoHandler m_smInfoHandler;
    Time m_trapRepeatInterval;
    Time m_portDownDelay;
    uint32_t m_trapRepeats = 3;
    std::map<uint64_t, EventId> m_pendingTraps; ///< TransactionID -> next repetition
    std::map<uint16_t, uint64_t> m_answered;
    std::array<uint64_t, 3> m_drops{};
    TracedCallback<uint16_t, uint8_t, uint16_t> m_answeredTrace;
    TracedCallback<uint16_t, uint8_t> m_droppedTrace;
};

} // namespace ns3

#endif
