// The built-in subnet manager: discovery by directed-route SMPs, GUID-stable LIDs, routing into
// linear forwarding tables, ports to Armed then Active, light sweeps, master/standby election.
// IBA vol. 1 §14.4 (subnet manager), §14.2.2 (directed routes), §14.2.5 (attributes).
#ifndef CNUAS_IB_SUBNET_MANAGER_H
#define CNUAS_IB_SUBNET_MANAGER_H

#include "ib-sa-server.h"
#include "ib-routing-engine.h"
#include "ib-sm-info.h"
#include "ib-sm-multicast.h"
#include "ib-sm-partitions.h"
#include "ib-sm-subnet.h"
#include "ib-smp.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <vector>

namespace ns3
{

/// Where the SM's sweep state machine is.
enum class IbSweepPhase : uint8_t
{
    Idle = 0,       ///< not started, stopped, or standby between polls
    Discover = 1,   ///< NodeInfo / NodeDescription / SwitchInfo / PortInfo / SMInfo Gets
    Configure = 2,  ///< PortInfo Sets (LID, SM LID, OperationalVLs), SwitchInfo, LFT blocks
    Arm = 3,        ///< PortInfo Set PortState=Armed on every Init port
    Activate = 4,   ///< PortInfo Set PortState=Active on every Armed port
    Up = 5,         ///< subnet up; waiting for the next light sweep
    LightSweep = 6, ///< SwitchInfo Gets looking for PortStateChange
    PollMaster = 7, ///< a standby SM asking the master's SMInfo
    Handover = 8,   ///< a master that found a higher SM waits for the answer to its HANDOVER
};

const char* IbSweepPhaseName(IbSweepPhase p);

/// Another SM as this SM last heard of it (its SMInfo answer).
struct IbKnownSm
{
    uint64_t guid = 0;
    uint8_t priority = 0;
    IbSmState state = IbSmState::NotActive;
};

/**
 * \brief A subnet manager application on one port of a node (IBA vol. 1 §14.4).
 *
 * It talks to the fabric only through directed-route SMPs: a sender callback takes each
 * request (wired by IbSmHelper to the node's SMI) and ReceiveSmp takes every SMP response or
 * trap that reaches the node's manager. So it sees only what the agents answer.
 *
 * Heavy sweep: Get NodeInfo at the end of every directed route, starting at the SM's own node
 * (hop count 0); for a new node NodeDescription, SwitchInfo and PortInfo of each port; every
 * switch port whose PortPhysicalState is LinkUp leads to the next route. Then LIDs (stable by
 * GUID), routes (RoutingEngine), PortInfo Sets for LID / MasterSMLID / OperationalVLs, SwitchInfo
 * (LinearFDBTop), the LFT blocks that changed, and two passes of PortInfo Set: Armed, then
 * Active, as opensm's link manager does (IBA vol. 1 §7.2: data flows only once Active).
 * Light sweep, every SweepInterval: SwitchInfo of every switch; a PortStateChange bit, an
 * unanswered SMP or a trap starts a heavy sweep.
 *
 * Every request is one outstanding transaction with its own timeout and retries; at most
 * MaxOutstandingSmps are in flight. Answers with an unknown transaction ID, the wrong
 * attribute or a bad status are counted and dropped, never trusted.
 *
 * Multicast (§15.2.5.17, §14.2.5.12): the SA's joins and leaves change the groups this SM keeps
 * (IbSmMulticast); after one that changed a group's membership, and after every heavy sweep
 * (members whose ports are gone leave first), the SM computes every group's spanning tree over
 * the switches and writes the MulticastForwardingTable blocks that differ from what it last
 * wrote, with SubnSet(MulticastForwardingTable) SMPs (only port-mask positions the switch has).
 * The answer to the join or leave that caused them waits until they are all answered (or
 * failed): a member that hears back can send to the group at once. A failed block is written
 * again after the next light sweep.
 *
 * Election (§14.4.1): a CA port whose PortInfo.CapabilityMask has IsSM is asked for its SMInfo;
 * an SM whose SM_Key differs from this one's (when this one's is not 0) is not of this subnet's
 * management and is ignored. A discovering SM that finds a master, or an SM that outranks it
 * (higher priority, then lower GUID), becomes a standby, which polls the master's SMInfo every
 * SweepInterval and takes over after MasterPollRetries unanswered polls. A master that finds an
 * SM outranking it (in a heavy sweep, or when its light sweep's SMInfo Gets to the SMs it knows
 * see a change) sends it SubnSet(SMInfo) HANDOVER and becomes a standby once that is answered;
 * a standby that receives HANDOVER answers, sends ACKNOWLEDGE back and becomes the master
 * (Table 169). DISABLE, STANDBY and DISCOVER from a master are obeyed as the table says. The
 * SM_Key in an SMInfo answer is zero for a requester that shows a wrong one (§14.2.5.13).
 */
class IbSubnetManager : public Object
{
  public:
    static TypeId GetTypeId();
    IbSubnetManager();
    ~IbSubnetManager() override;

    /// Sends one directed-route SMP request; false if the node could not send it.
    typedef Callback<bool, const IbSmp&> SmpSender;
    void SetSmpSender(SmpSender sender);
    /// Sends one LID-routed SMP to a LID (the TrapRepress that acknowledges a trap).
    typedef Callback<bool, IbSmp, uint16_t> LidRoutedSender;
    void SetLidRoutedSender(LidRoutedSender sender);
    /// The GUID this SM uses in SMInfo (its port's GUID).
    void SetGuid(uint64_t guid);
    uint64_t GetGuid() const { return m_guid; }

    /// Starts sweeping now (as a discovering SM).
    void Start();
    /// Stops: cancels timers, forgets transactions, answers no SMInfo (an SM that died).
    void Stop();
    bool IsRunning() const { return m_running; }

    /// An SMP that reached this node's manager: a response to one of this SM's requests, or a
    /// trap. Anything else is counted as unexpected.
    void ReceiveSmp(const IbSmp& smp);
    /**
     * Answers a SubnGet or SubnSet(SMInfo) addressed to this SM (IBA vol. 1 §14.2.5.13, §14.4.1):
     * fills `response` (a copy of the request the caller turns around) with this SM's SMInfo and
     * returns the MAD status: 0; 3 (UnsupportedMethodAttr) if the SM is stopped or the method is
     * neither Get nor Set; 7 (InvalidField) for a Set whose control is not one of Table 169's
     * transitions from this SM's state, whose sender is in the wrong state for it, or whose
     * SM_Key is wrong. A Set is acted upon after the answer has left.
     */
    uint16_t AnswerSmInfo(const IbSmp& request, IbSmp& response);
    /**
     * Answers an SA request (256 bytes, class 0x03) from the last completed sweep's database
     * and routes (IbSaServe); false, with no answer, unless this SM is a running master with
     * the subnet up (a standby's SA stays silent).
     */
    bool AnswerSa(const uint8_t* request, uint8_t* response);
    /// Sends the MADs of an SA answer that was held back.
    using SaResponder = std::function<void(std::vector<std::array<uint8_t, kIbMadBytes>>)>;
    /**
     * The same, a table larger than one MAD as several RMPP segments (IbSaServeSegments);
     * empty for no answer. With `later`, the answer to a multicast join or leave that made the
     * SM write MFT blocks is held until those SMPs are answered, then sent through `later`
     * (this returns empty); without, or when no SMP was needed, it is returned at once.
     */
    std::vector<std::array<uint8_t, kIbMadBytes>> AnswerSaSegments(const uint8_t* request,
                                                                   SaResponder later = {});
    uint64_t GetSaAnswered() const { return m_saAnswered; }
    /// The multicast groups the SA's joins made.
    const IbSmMulticast& GetMulticast() const { return m_multicast; }
    /// The partition policy in force (empty: every port in the default partition only).
    const IbPartitionPolicy& GetPartitions() const { return m_partitions; }
    /// Why PartitionConfig could not be used ("" when it was, or when there is none).
    const std::string& GetPartitionError() const { return m_partitionError; }
    /// P_KeyTable blocks this SM wrote (Sets answered or not).
    uint64_t GetPkeyBlocksWritten() const { return m_pkeyBlocksWritten; }
    /// SubnSet(MulticastForwardingTable) SMPs queued (one per block and port-mask position).
    uint64_t GetMftBlocksWritten() const { return m_mftBlocksWritten; }
    /// SA answers held back until the MFT SMPs they wait for are answered.
    size_t GetHeldSaAnswers() const { return m_heldSa.size(); }
    // ---- observation ----------------------------------------------------------------------
    IbSmState GetSmState() const { return m_smState; }
    uint8_t GetPriority() const { return m_priority; }
    uint64_t GetSmKey() const { return m_smKey; }
    /// The other SMs (same SM_Key) this SM heard of in its last heavy sweep, as their last
    /// SMInfo answers (the light sweeps' and a standby's polls) described them.
    std::vector<IbKnownSm> GetKnownSms() const;
    /// The GUID of the SM a standby polls (0 if none).
    uint64_t GetMasterGuid() const { return m_masterGuid; }
    /// SubnSet(SMInfo) HANDOVERs this SM sent that were answered Ok, and that it accepted.
    uint64_t GetHandoversSent() const { return m_handoversSent; }
    uint64_t GetHandoversReceived() const { return m_handoversReceived; }
    /// ACKNOWLEDGEs this SM sent after taking a handover, and received after giving one.
    uint64_t GetAcknowledgesSent() const { return m_acknowledgesSent; }
    uint64_t GetAcknowledgesReceived() const { return m_acknowledgesReceived; }
    /// SMInfo answers ignored because the other SM's SM_Key is not this one's.
    uint64_t GetSmKeyMismatches() const { return m_smKeyMismatches; }
    /// SubnSet(SMInfo) requests refused (status 7).
    uint64_t GetSmInfoSetsRefused() const { return m_smInfoSetsRefused; }
    IbSweepPhase GetPhase() const { return m_phase; }
    /// The subnet as the last completed heavy sweep found and configured it.
    const IbSmSubnet& GetSubnet() const { return m_lastSubnet; }
    const IbRoutingTables& GetRoutingTables() const { return m_tables; }
    /// The LID of the SM's own port (0 before the first sweep assigned it).
    uint16_t GetSmLid() const { return m_smLid; }
    /// Simulated time at which the last heavy sweep finished with the subnet up (-1 ps: never).
    Time GetLastSubnetUp() const { return m_lastUp; }
    uint64_t GetSmpsSent() const { return m_smpsSent; }
    uint64_t GetSmpsTimedOut() const { return m_smpsTimedOut; }
    uint64_t GetSmpsFailed() const { return m_smpsFailed; }
    uint64_t GetBadResponses() const { return m_badResponses; }
    uint64_t GetHeavySweeps() const { return m_heavySweeps; }
    uint64_t GetLightSweeps() const { return m_lightSweeps; }
    uint64_t GetTrapsReceived() const { return m_trapsReceived; }
    /// Security traps (256-259: bad M_Key, P_Key, Q_Key) among them: counted, no sweep.
    uint64_t GetSecurityTrapsReceived() const { return m_securityTraps; }
    uint32_t GetMaxOutstandingSeen() const { return m_maxOutstandingSeen; }
    /// Virtual layers of the last completed sweep's routes (one layer unless the routes have a
    /// credit loop on one VL, which only MinHop can produce; then at most OperationalVls).
    const IbVlLayers& GetVlLayers() const { return m_lastLayers; }
    /// The routes' check after the last routing run.
    const IbRouteCheck& GetRouteCheck() const { return m_routeCheck; }

    // ---- trace signatures ----
    typedef void (*SweepStartedCallback)(bool heavy);
    typedef void (*SweepFinishedCallback)(bool heavy, uint32_t nodes, Time duration);
    typedef void (*SmpCallback)(uint16_t attributeId, uint8_t method, uint32_t attempt);
    typedef void (*LidCallback)(uint64_t guid, uint16_t lid);
    typedef void (*StateCallback)(uint8_t oldState, uint8_t newState);
    typedef void (*SmInfoSetCallback)(uint32_t control, uint64_t senderGuid, uint16_t status);

  protected:
    void DoDispose() override;

  private:
    /// What a request is for, so its answer can be put to use.
    enum class Purpose : uint8_t
    {
        NodeInfo,
        NodeDescription,
        SwitchInfo,
        PortInfo,
        SmInfo,
        SetPortInfo,
        SetSwitchInfo,
        SetLft,
        SetSlToVl,
        SetPKeyTable,
        SetMft,
        LightSwitchInfo,
        LightSmInfo,
        PollMaster,
        Handover,
        Acknowledge,
    };
    /// Another SM, as its last SMInfo answer described it.
    struct RemoteSm
    {
        uint64_t guid = 0;
        uint8_t priority = 0;
        IbSmState state = IbSmState::NotActive;
        std::vector<uint8_t> path;
    };
    struct Request
    {
        IbSmp smp;
        Purpose purpose;
        int32_t node = -1;       ///< subnet node the request is about
        uint8_t port = 0;        ///< port (PortInfo), block (LFT) or port-mask position (MFT)
        int32_t parent = -1;     ///< NodeInfo: the node whose port led here
        uint8_t parentPort = 0;
        std::vector<uint8_t> path;
        uint32_t attempt = 0;
        uint64_t guid = 0;       ///< MFT: the switch's node GUID
        uint16_t block = 0;      ///< MFT: the block
    };
    /// When a sent SMP times out if unanswered: the SMP as it was sent that time (its TID and
    /// attempt); stale once the request is answered, failed or sent again.
    struct PendingTimeout
    {
        int64_t deadlinePs;
        uint64_t tid;
        uint32_t attempt;
    };

    /// Queues a request; returns its transaction ID (0 if the path is too long).
    uint64_t Enqueue(Purpose purpose, uint8_t method, uint16_t attr, uint32_t attrMod,
                 const std::vector<uint8_t>& path, int32_t node, uint8_t port,
                 const uint8_t* data = nullptr);
    void Pump();
    void Transmit(uint64_t tid);
    void Timeout(uint64_t tid);
    /// Files the deadline of an SMP just sent (attempt `attempt` of request `tid`).
    void AddTimeout(int64_t deadlinePs, uint64_t tid, uint32_t attempt);
    /// The deadline timer: times out every live SMP whose deadline has come.
    void ExpireTimeouts();
    /// (Re)schedules the deadline timer for `atPs`.
    void SetTimeoutTimer(int64_t atPs);
    /// Drops stale deadlines from the front and sets the timer for the first live one.
    void ArmTimeoutTimer();
    bool IsLive(const PendingTimeout& t) const;
    void ClearTimeouts();
    void Answered(Request& req, const IbSmp& smp);
    void Failed(Request& req);
    void MaybeAdvance();
    void SetPhase(IbSweepPhase p);
    void SetSmState(IbSmState s);

    void StartHeavySweep();
    void StartLightSweep();
    void ScheduleNext();
    void OnNodeInfo(Request& req, const IbSmp& smp);
    void OnPortInfo(Request& req, const IbSmp& smp);
    void OnSmInfo(Request& req, const IbSmp& smp);
    /// After discovery: stand by, hand over, wait for another master, or configure.
    void DecideMastership();
    /// Standby, polling the SM at `path` (GUID `guid`) every SweepInterval.
    void BecomeStandby(uint64_t guid, const std::vector<uint8_t>& path);
    /// This SM's SMInfo as it answers and sends it (`withKey`: the SM_Key filled in).
    IbSmInfo OwnSmInfo(bool withKey) const;
    /// This SM and the others its last sweep found, for the SA's SMInfoRecords.
    std::vector<IbSaSmEntry> KnownSms() const;
    /// Queues a SubnSet(SMInfo) with `control` and `own` (this SM's SMInfo, key included).
    void SendSmInfoSet(Purpose purpose,
                       IbSmInfoControl control,
                       const std::vector<uint8_t>& path,
                       const IbSmInfo& own);
    /// Acts on a SubnSet(SMInfo) already answered Ok (an event, after the answer left).
    void ActOnSmInfoSet(IbSmInfoControl control, uint64_t senderGuid);
    void Explore(int32_t node, uint8_t port);
    void RouteAndConfigure();
    void ConfigurePorts();
    /// When the routes use more than one virtual layer: SLtoVLMappingTable Sets (SL l -> VL l)
    /// on every linked switch port pair and CA port not yet given this mapping.
    void ConfigureSlToVl();
    /// Writes each CA port's P_Key table from the partition policy (PartitionConfig), every
    /// block in use; nothing without a policy.
    void ConfigurePartitions();
    void SetPortStates(uint8_t from, uint8_t to);
    void FinishHeavySweep();
    /// Writes the MFT blocks the groups' trees need that differ from what each switch of the
    /// last swept subnet was last given.
    void ProgramMfts();
    /// A SubnSet(MulticastForwardingTable) is done (answered or failed): the held SA answers go
    /// once none is left.
    void MftSetDone();
    /// Sends the held SA answers if no MFT SMP is in flight any more.
    void SendHeldSaAnswers();
    /// Answers the SA requests held while the first sweep ran.
    void AnswerSaHeldBeforeUp();
    /// PortInfo Set for one port: the last read PortInfo with `lid`, the SM LID, OperationalVLs
    /// and `state` (0 = no change), every "no change" field zero.
    void SetPortInfo(int32_t node, uint8_t port, uint8_t state);
    std::vector<uint8_t> PathTo(int32_t node, uint8_t port) const;

    // attributes
    uint8_t m_priority = 0;
    Time m_sweepInterval;
    Time m_smpTimeout;
    Time m_smInfoTimeout;
    uint32_t m_smpRetries = 3;
    uint32_t m_maxOutstanding = 16;
    int m_algorithm = static_cast<int>(IbRoutingAlgorithm::UpDown); ///< an IbRoutingAlgorithm
    uint8_t m_opVls = 1;
    uint8_t m_port = 1;
    uint32_t m_masterPollRetries = 3;
    uint64_t m_smKey = 1;
    bool m_ipoibBroadcast = true; ///< make IPoIB's broadcast group when starting

    SmpSender m_sender;
    LidRoutedSender m_lidSender;
    std::set<std::pair<uint16_t, uint64_t>> m_trapsSeen; ///< (issuer LID, TID) already acted on
    uint64_t m_guid = 0;
    bool m_running = false;
    IbSmState m_smState = IbSmState::NotActive;
    IbSweepPhase m_phase = IbSweepPhase::Idle;
    Time m_sweepStart;
    Time m_lastUp;

    IbSmSubnet m_subnet;     ///< what the current (or last) sweep discovered
    IbSmSubnet m_lastSubnet; ///< the last completed sweep's
    IbSmLidTable m_lidTable;
    IbRoutingTables m_tables;
    IbRoutingTables m_lastTables; ///< the routes of m_lastSubnet
    IbVlLayers m_layers;
    IbVlLayers m_lastLayers;
    uint64_t m_saAnswered = 0;
    IbRouteCheck m_routeCheck;
    /// What each switch's LFT was last programmed to, by node GUID (only changed blocks are
    /// written again).
    std::map<uint64_t, std::vector<uint8_t>> m_programmed;
    /// Layers each SL-to-VL table was last written for, by (node or CA port GUID, modifier).
    std::map<std::pair<uint64_t, uint32_t>, uint8_t> m_slVlProgrammed;
    IbSmMulticast m_multicast;
    std::string m_partitionConfig;     ///< PartitionConfig: a partitions.conf path, or ""
    IbPartitionPolicy m_partitions;    ///< read from it when the SM starts
    std::string m_partitionError;      ///< why it could not be read ("" if it was)
    uint64_t m_pkeyBlocksWritten = 0;
    /// What each switch's MFT was last written to, by node GUID (entry i: MLID 0xC000 + i);
    /// a block whose write failed reads 0xFFFF, so that it is written again.
    std::map<uint64_t, std::vector<IbMftEntry>> m_mftProgrammed;
    uint32_t m_mftInFlight = 0; ///< SubnSet(MulticastForwardingTable) queued or unanswered
    bool m_mftRetry = false;    ///< an MFT write failed: write again after the next light sweep
    uint64_t m_mftBlocksWritten = 0;
    std::vector<std::function<void()>> m_heldSa; ///< SA answers waiting for the MFT SMPs
    /// SA requests that came before the first sweep was done, answered when it is.
    std::vector<std::pair<std::array<uint8_t, kIbMadBytes>, SaResponder>> m_saBeforeUp;
    static constexpr size_t kMaxSaBeforeUp = 65536;
    uint16_t m_smLid = 0;
    int32_t m_root = -1;
    bool m_rediscover = false; ///< something changed: the next sweep is a heavy one

    // election
    std::map<uint64_t, RemoteSm> m_remoteSms; ///< by GUID, from the current heavy sweep
    std::vector<uint8_t> m_masterPath;
    uint64_t m_masterGuid = 0;
    uint64_t m_handoverTo = 0; ///< the SM a HANDOVER is outstanding to
    uint64_t m_handedOverBy = 0; ///< the master that handed over during this discovery
    uint32_t m_failedPolls = 0;
    uint32_t m_actCount = 0;
    uint64_t m_handoversSent = 0;
    uint64_t m_handoversReceived = 0;
    uint64_t m_acknowledgesSent = 0;
    uint64_t m_acknowledgesReceived = 0;
    uint64_t m_smKeyMismatches = 0;
    uint64_t m_smInfoSetsRefused = 0;

    // transactions
    uint64_t m_nextTid = 1;
    std::deque<uint64_t> m_queue;
    std::map<uint64_t, Request> m_requests; ///< queued and outstanding, by TID
    uint32_t m_outstanding = 0;
    /// Deadlines of the SMPs in flight, earliest first, under one timer: an SMP's own timer
    /// event would cost a scheduler entry and an allocation per SMP and almost never run (a
    /// sweep's SMPs are answered within microseconds). Stale entries (answered, resent) are
    /// dropped when they reach the front, so the timer wakes about once per timeout period.
    std::deque<PendingTimeout> m_timeouts;
    EventId m_timeoutTimer;
    int64_t m_timeoutTimerPs = -1; ///< when m_timeoutTimer fires (-1: not pending)
    EventId m_sweepTimer;

    // counters
    uint64_t m_smpsSent = 0;
    uint64_t m_smpsTimedOut = 0;
    uint64_t m_smpsFailed = 0;
    uint64_t m_badResponses = 0;
    uint64_t m_heavySweeps = 0;
    uint64_t m_lightSweeps = 0;
    uint64_t m_trapsReceived = 0;
    uint64_t m_securityTraps = 0;
    uint32_t m_maxOutstandingSeen = 0;

    TracedCallback<bool> m_sweepStartedTrace;
    TracedCallback<bool, uint32_t, Time> m_sweepFinishedTrace;
    TracedCallback<uint16_t, uint8_t, uint32_t> m_smpSentTrace;
    TracedCallback<uint16_t, uint8_t, uint32_t> m_smpTimedOutTrace;
    TracedCallback<uint64_t, uint16_t> m_lidTrace;
    TracedCallback<uint8_t, uint8_t> m_smStateTrace;
    TracedCallback<uint8_t, uint8_t> m_phaseTrace;
    TracedCallback<uint32_t, uint64_t, uint16_t> m_smInfoSetTrace;
};

} // namespace ns3

#endif
