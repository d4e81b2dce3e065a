#include "ib-subnet-manager.h"

#include "ib-sa-server.h"
#include "models/common/sim-clock.h"
#include "models/common/uinteger-set-checker.h"
#include "models/ib/ib-vl-counts.h"

#include "ns3/boolean.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbSubnetManager");
NS_OBJECT_ENSURE_REGISTERED(IbSubnetManager);

namespace
{
// PortInfo encodings, IBA vol. 1 §14.2.5.6 (Table 150).
constexpr uint8_t kPortStateInit = 2;
constexpr uint8_t kPortStateArmed = 3;
constexpr uint8_t kPortStateActive = 4;
constexpr uint8_t kPhysLinkUp = 5;

/// OperationalVLs / VLCap encoding: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14.
uint8_t
EncodeVls(uint8_t count)
{
    return count >= 15 ? 5 : count >= 8 ? 4 : count >= 4 ? 3 : count >= 2 ? 2 : 1;
}
} // namespace

const char*
IbSweepPhaseName(IbSweepPhase p)
{
    switch (p)
    {
    case IbSweepPhase::Idle:
        return "idle";
    case IbSweepPhase::Discover:
        return "discover";
    case IbSweepPhase::Configure:
        return "configure";
    case IbSweepPhase::Arm:
        return "arm";
    case IbSweepPhase::Activate:
        return "activate";
    case IbSweepPhase::Up:
        return "up";
    case IbSweepPhase::LightSweep:
        return "light-sweep";
    case IbSweepPhase::PollMaster:
        return "poll-master";
    case IbSweepPhase::Handover:
        return "handover";
    }
    return "?";
}

TypeId
IbSubnetManager::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbSubnetManager")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbSubnetManager>()
            .AddAttribute("Priority",
                          "SMInfo.Priority, 0-15: the higher wins the mastership (IBA vol. 1 "
                          "§14.4.1.1), equal priorities go to the lower GUID.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbSubnetManager::m_priority),
                          MakeUintegerChecker<uint8_t>(0, 15))
            .AddAttribute("SweepInterval",
                          "Time between light sweeps of a master, and between a standby's "
                          "polls of the master (simulated time).",
                          TimeValue(MilliSeconds(10)),
                          MakeTimeAccessor(&IbSubnetManager::m_sweepInterval),
                          MakeTimeChecker(PicoSeconds(1)))
            .AddAttribute("SmpTimeout",
                          "How long the SM waits for the answer to one SMP before sending it "
                          "again (simulated time).",
                          TimeValue(MicroSeconds(100)),
                          MakeTimeAccessor(&IbSubnetManager::m_smpTimeout),
                          MakeTimeChecker(PicoSeconds(1)))
            .AddAttribute("SmInfoTimeout",
                          "How long the SM waits for another SM's answer to an SMInfo Get or "
                          "Set before sending it again (simulated time); another SM may be a "
                          "process on a host (opensm's own transaction timeout is 200 ms).",
                          TimeValue(MicroSeconds(100)),
                          MakeTimeAccessor(&IbSubnetManager::m_smInfoTimeout),
                          MakeTimeChecker(PicoSeconds(1)))
            .AddAttribute("SmpRetries",
                          "Retransmissions of an unanswered SMP before it counts as failed.",
                          UintegerValue(3),
                          MakeUintegerAccessor(&IbSubnetManager::m_smpRetries),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("MaxOutstandingSmps",
                          "SMPs in flight at once (opensm's max_wire_smps; VL15 buffers are "
                          "small and SMPs beyond them are dropped, IBA vol. 1 §7.6.4).",
                          UintegerValue(4),
                          MakeUintegerAccessor(&IbSubnetManager::m_maxOutstanding),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("RoutingEngine",
                          "Unicast routing: MinHop or UpDown (deadlock-free on any topology).",
                          EnumValue(static_cast<int>(IbRoutingAlgorithm::UpDown)),
                          MakeEnumAccessor(&IbSubnetManager::m_algorithm),
                          MakeEnumChecker(static_cast<int>(IbRoutingAlgorithm::MinHop),
                                          "MinHop",
                                          static_cast<int>(IbRoutingAlgorithm::UpDown),
                                          "UpDown"))
            .AddAttribute("OperationalVls",
                          "Data VLs the SM enables on every port (1, 2, 4, 8 or 15, the counts "
                          "PortInfo.OperationalVLs can encode, IBA vol. 1 §14.2.5.6; capped by "
                          "the port's VLCap).",
                          UintegerValue(1),
                          MakeUintegerAccessor(&IbSubnetManager::m_opVls),
                          MakeUintegerSetChecker<uint8_t>(IbDataVlCounts()))
            .AddAttribute("Port",
                          "The port number the SM sends from when it runs on a channel adapter.",
                          UintegerValue(1),
                          MakeUintegerAccessor(&IbSubnetManager::m_port),
                          MakeUintegerChecker<uint8_t>(1))
            .AddAttribute("MasterPollRetries",
                          "Unanswered polls of the master after which a standby takes over.",
                          UintegerValue(3),
                          MakeUintegerAccessor(&IbSubnetManager::m_masterPollRetries),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("SmKey",
                          "SMInfo.SM_Key (IBA vol. 1 §14.2.5.13): SMs with different keys do not "
                          "elect each other (an SM ignores another whose key differs from its "
                          "own, unless its own is 0) and a SubnSet(SMInfo) must carry it. The "
                          "default is opensm's default sm_key, 1, so that the two recognise "
                          "each other.",
                          UintegerValue(1),
                          MakeUintegerAccessor(&IbSubnetManager::m_smKey),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("IpoibBroadcastGroup",
                          "Make the IPv4 broadcast group of IP over InfiniBand (partition "
                          "0xFFFF: MGID ff12:401b:ffff::ffff:ffff, Q_Key 0x0B1B, MTU 2048, "
                          "10 Gb/s) when the SM starts, as opensm does with its default "
                          "partition policy (`Default=0x7fff, ipoib`): IPoIB interfaces join "
                          "it and do not create it.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&IbSubnetManager::m_ipoibBroadcast),
                          MakeBooleanChecker())
            .AddAttribute("PartitionConfig",
                          "A partition policy in opensm's partitions.conf format (a file "
                          "path; \"\" for none: every port stays in the default partition "
                          "0xFFFF alone). Read when the SM starts; the SM writes each channel "
                          "adapter port's P_Key table from it in every heavy sweep.",
                          StringValue(""),
                          MakeStringAccessor(&IbSubnetManager::m_partitionConfig),
                          MakeStringChecker())
            .AddTraceSource("SweepStarted",
                            "A sweep started: (heavy).",
                            MakeTraceSourceAccessor(&IbSubnetManager::m_sweepStartedTrace),
                            "ns3::IbSubnetManager::SweepStartedCallback")
            .AddTraceSource("SweepFinished",
                            "A sweep finished: (heavy, nodes, duration).",
                            MakeTraceSourceAccessor(&IbSubnetManager::m_sweepFinishedTrace),
                            "ns3::IbSubnetManager::SweepFinishedCallback")
            .AddTraceSource("SmpSent",
                            "An SMP request left: (attribute ID, method, attempt).",
                            MakeTraceSourceAccessor(&IbSubnetManager::m_smpSentTrace),
                            "ns3::IbSubnetManager::SmpCallback")
            .AddTraceSource("SmpTimedOut",
                            "An SMP went unanswered: (attribute ID, method, attempt).",
                            MakeTraceSourceAccessor(&IbSubnetManager::m_smpTimedOutTrace),
                            "ns3::IbSubnetManager::SmpCallback")
            .AddTraceSource("LidAssigned",
                            "A GUID got a LID for the first time: (GUID, LID).",
                            MakeTraceSourceAccessor(&IbSubnetManager::m_lidTrace),
                            "ns3::IbSubnetManager::LidCallback")
            .AddTraceSource("SmState",
                            "SMInfo.SMState changed: (old, new) IbSmState values.",
                            MakeTraceSourceAccessor(&IbSubnetManager::m_smStateTrace),
                            "ns3::IbSubnetManager::StateCallback")
            .AddTraceSource("Phase",
                            "The sweep state machine moved: (old, new) IbSweepPhase values.",
                            MakeTraceSourceAccessor(&IbSubnetManager::m_phaseTrace),
                            "ns3::IbSubnetManager::StateCallback")
            .AddTraceSource("SmInfoSet",
                            "A SubnSet(SMInfo) reached this SM: (control, the sender's GUID, "
                            "the MAD status answered).",
                            MakeTraceSourceAccessor(&IbSubnetManager::m_smInfoSetTrace),
                            "ns3::IbSubnetManager::SmInfoSetCallback");
    return tid;
}

IbSubnetManager::IbSubnetManager()
    : m_lastUp(PicoSeconds(-1))
{
}

IbSubnetManager::~IbSubnetManager() = default;

void
IbSubnetManager::DoDispose()
{
    // As Stop(), but silently: whoever listened to the trace sources may be gone by now.
    m_running = false;
    m_sweepTimer.Cancel();
    ClearTimeouts();
    m_requests.clear();
    m_queue.clear();
    m_outstanding = 0;
    m_mftInFlight = 0;
    m_heldSa.clear();
    m_saBeforeUp.clear();
    m_sender = SmpSender();
    m_lidSender = LidRoutedSender();
    Object::DoDispose();
}

void
IbSubnetManager::SetSmpSender(SmpSender sender)
{
    m_sender = sender;
}

void
IbSubnetManager::SetLidRoutedSender(LidRoutedSender sender)
{
    m_lidSender = sender;
}

void
IbSubnetManager::SetGuid(uint64_t guid)
{
    m_guid = guid;
}

void
IbSubnetManager::SetPhase(IbSweepPhase p)
{
    if (p != m_phase)
    {
        NS_LOG_INFO("SM 0x" << std::hex << m_guid << std::dec << ": " << IbSweepPhaseName(m_phase)
                            << " -> " << IbSweepPhaseName(p));
        m_phaseTrace(static_cast<uint8_t>(m_phase), static_cast<uint8_t>(p));
        m_phase = p;
    }
}

void
IbSubnetManager::SetSmState(IbSmState s)
{
    if (s != m_smState)
    {
        m_smStateTrace(static_cast<uint8_t>(m_smState), static_cast<uint8_t>(s));
        m_smState = s;
    }
}

void
IbSubnetManager::Start()
{
    if (m_running)
    {
        return;
    }
    m_running = true;
    m_partitions = IbPartitionPolicy();
    m_partitionError.clear();
    if (!m_partitionConfig.empty() && !m_partitions.ReadFile(m_partitionConfig, &m_partitionError))
    {
        // Ports stay as they are (the default partition): nothing is half applied.
        NS_LOG_ERROR("partition policy not used: " << m_partitionError);
    }
    if (m_ipoibBroadcast)
    {
        // opensm makes its partitions' IPoIB groups before its first sweep; a restarted SM
        // finds its group still there.
        m_multicast.AddWellKnown(IbIpoibBroadcastGroup());
    }
    SetSmState(IbSmState::Discovering);
    StartHeavySweep();
}

void
IbSubnetManager::Stop()
{
    m_running = false;
    m_sweepTimer.Cancel();
    ClearTimeouts();
    m_requests.clear();
    m_queue.clear();
    m_outstanding = 0;
    m_mftInFlight = 0;
    m_heldSa.clear(); // a stopped SM answers nothing, held answers included
    m_saBeforeUp.clear();
    m_remoteSms.clear();
    m_masterPath.clear();
    m_masterGuid = 0;
    m_handoverTo = 0;
    m_handedOverBy = 0;
    SetSmState(IbSmState::NotActive);
    SetPhase(IbSweepPhase::Idle);
}

// ---- transactions ---------------------------------------------------------------------------

uint64_t
IbSubnetManager::Enqueue(Purpose purpose, uint8_t method, uint16_t attr, uint32_t attrMod,
                         const std::vector<uint8_t>& path, int32_t node, uint8_t port,
                         const uint8_t* data)
{
    if (path.size() > IbSmp::kMaxHops)
    {
        return 0; // IBA vol. 1 §14.2.1.2: a directed route has at most 63 hops
    }
    // Transaction IDs carry the SM's GUID in the high half so that two SMs' never collide.
    const uint64_t tid = (m_guid << 32) | (m_nextTid++ & 0xFFFFFFFFu);
    // Built where it will stay: a Request holds a 256-byte SMP (two ns-3 Headers), which a
    // move would copy and destroy once more per SMP.
    Request& r = m_requests.try_emplace(tid).first->second;
    r.smp = IbSmp::MakeDirected(method, attr, attrMod, 0, path.data(),
                                static_cast<uint8_t>(path.size()));
    if (data)
    {
        std::memcpy(r.smp.Data(), data, IbSmp::kDataBytes);
    }
    r.purpose = purpose;
    r.node = node;
    r.port = port;
    r.path = path;
    m_queue.push_back(tid);
    return tid;
}

void
IbSubnetManager::Pump()
{
    while (m_running && m_outstanding < m_maxOutstanding && !m_queue.empty())
    {
        const uint64_t tid = m_queue.front();
        m_queue.pop_front();
        ++m_outstanding;
        m_maxOutstandingSeen = std::max(m_maxOutstandingSeen, m_outstanding);
        Transmit(tid);
    }
}

void
IbSubnetManager::Transmit(uint64_t tid)
{
    Request& r = m_requests.at(tid);
    r.attempt++;
    r.smp.Mad().SetTransactionId(tid);
    m_smpsSent++;
    m_smpSentTrace(r.smp.Mad().GetAttributeId(), r.smp.Mad().GetMethod(), r.attempt);
    if (m_sender.IsNull() || !m_sender(r.smp))
    {
        NS_LOG_LOGIC("SMP " << tid << " refused by the node; will time out and retry");
    }
    // SMInfo is answered by another SM, which may be a process behind a host's umad interface
    // rather than an agent in an adapter: it gets its own, usually longer, timeout.
    const bool toAnSm = r.smp.Mad().GetAttributeId() == IbSmAttr::SmInfo;
    const Time wait = toAnSm ? m_smInfoTimeout : m_smpTimeout;
    AddTimeout(SimClock::NowPs() + wait.GetPicoSeconds(), tid, r.attempt);
}

void
IbSubnetManager::AddTimeout(int64_t deadlinePs, uint64_t tid, uint32_t attempt)
{
    // Deadlines come in order while the timeouts stay as configured; an SMInfo's (its own
    // timeout) or one after a shorter timeout was set goes before the later ones, after those
    // due at the same time (which were sent first, and so time out first, as their own events
    // would have).
    auto at = m_timeouts.end();
    while (at != m_timeouts.begin() && std::prev(at)->deadlinePs > deadlinePs)
    {
        --at;
    }
    m_timeouts.insert(at, {deadlinePs, tid, attempt});
    if (m_timeoutTimerPs < 0 || deadlinePs < m_timeoutTimerPs)
    {
        SetTimeoutTimer(deadlinePs);
    }
}

void
IbSubnetManager::SetTimeoutTimer(int64_t atPs)
{
    m_timeoutTimer.Cancel();
    m_timeoutTimerPs = atPs;
    m_timeoutTimer = Simulator::Schedule(PicoSeconds(atPs - SimClock::NowPs()),
                                         &IbSubnetManager::ExpireTimeouts, this);
}

bool
IbSubnetManager::IsLive(const PendingTimeout& t) const
{
    auto it = m_requests.find(t.tid);
    return it != m_requests.end() && it->second.attempt == t.attempt;
}

void
IbSubnetManager::ExpireTimeouts()
{
    m_timeoutTimerPs = -1;
    const int64_t nowPs = SimClock::NowPs();
    while (!m_timeouts.empty() && m_timeouts.front().deadlinePs <= nowPs)
    {
        const PendingTimeout t = m_timeouts.front();
        m_timeouts.pop_front();
        if (IsLive(t))
        {
            Timeout(t.tid); // may send it again, filing a later deadline
        }
    }
    ArmTimeoutTimer();
}

void
IbSubnetManager::ArmTimeoutTimer()
{
    while (!m_timeouts.empty() && !IsLive(m_timeouts.front()))
    {
        m_timeouts.pop_front();
    }
    if (m_timeouts.empty())
    {
        m_timeoutTimer.Cancel();
        m_timeoutTimerPs = -1;
        return;
    }
    if (m_timeouts.front().deadlinePs != m_timeoutTimerPs)
    {
        SetTimeoutTimer(m_timeouts.front().deadlinePs);
    }
}

void
IbSubnetManager::ClearTimeouts()
{
    m_timeoutTimer.Cancel();
    m_timeoutTimerPs = -1;
    m_timeouts.clear();
}

void
IbSubnetManager::Timeout(uint64_t tid)
{
    auto it = m_requests.find(tid);
    if (it == m_requests.end())
    {
        return;
    }
    Request& r = it->second;
    m_smpsTimedOut++;
    m_smpTimedOutTrace(r.smp.Mad().GetAttributeId(), r.smp.Mad().GetMethod(), r.attempt);
    if (r.attempt <= m_smpRetries)
    {
        Transmit(tid);
        return;
    }
    Request failed = std::move(r);
    m_requests.erase(it);
    --m_outstanding;
    m_smpsFailed++;
    Failed(failed);
    Pump();
    MaybeAdvance();
}

void
IbSubnetManager::ReceiveSmp(const IbSmp& smp)
{
    if (!m_running)
    {
        return;
    }
    const uint8_t method = smp.Mad().GetMethod();
    if (method == IbMadMethod::Trap)
    {
        // A trap (e.g. 128, link state change, IBA vol. 1 §14.2.5.1) means the fabric changed.
        // It is acknowledged with a TrapRepress carrying its TransactionID (§13.4.9), sent
        // LID-routed to the issuer; a repetition of a trap already acted on only gets that.
        IbNotice notice;
        notice.ReadFrom(smp.Data());
        m_trapsReceived++;
        if (!m_lidSender.IsNull() && notice.issuerLid != 0)
        {
            IbSmp repress = smp;
            repress.Mad().SetMethod(IbMadMethod::TrapRepress);
            m_lidSender(repress, notice.issuerLid);
        }
        if (!m_trapsSeen.insert({notice.issuerLid, smp.Mad().GetTransactionId()}).second)
        {
            return;
        }
        NS_LOG_INFO("trap " << notice.trapNumber << " from LID " << notice.issuerLid);
        // Security traps (256 bad M_Key, 257 bad P_Key, 258 bad Q_Key, 259 bad P_Key at a
        // switch port, §14.2.5.1 Table 121) say a packet was refused, not that the fabric
        // changed: counted, no sweep (a program sending outside its partition would otherwise
        // have the SM sweep the subnet after each repressed trap).
        if (notice.isGeneric && notice.trapNumber >= 256 && notice.trapNumber <= 259)
        {
            m_securityTraps++;
            return;
        }
        if (m_smState == IbSmState::Master && m_phase == IbSweepPhase::Up)
        {
            m_sweepTimer.Cancel();
            StartHeavySweep();
        }
        else
        {
            m_rediscover = true;
        }
        return;
    }
    const uint64_t tid = smp.Mad().GetTransactionId();
    auto it = m_requests.find(tid);
    if (method != IbMadMethod::GetResp || it == m_requests.end() || it->second.attempt == 0 ||
        smp.Mad().GetAttributeId() != it->second.smp.Mad().GetAttributeId())
    {
        m_badResponses++; // unknown TID, a duplicate, or not an answer to what was asked
        return;
    }
    // Out of the map (its deadline goes stale) without a move: the node is handed over whole.
    auto held = m_requests.extract(it);
    Request& r = held.mapped();
    --m_outstanding;
    if (smp.GetSmpStatus() != IbMadStatus::Ok)
    {
        m_badResponses++;
        m_smpsFailed++;
        Failed(r);
    }
    else
    {
        Answered(r, smp);
    }
    Pump();
    MaybeAdvance();
}

void
IbSubnetManager::Answered(Request& req, const IbSmp& smp)
{
    switch (req.purpose)
    {
    case Purpose::NodeInfo:
        OnNodeInfo(req, smp);
        break;
    case Purpose::NodeDescription: {
        IbNodeDescription d;
        d.ReadFrom(smp.Data());
        m_subnet.Node(req.node).description = d.text;
        break;
    }
    case Purpose::SwitchInfo: {
        IbSwitchInfo si;
        si.ReadFrom(smp.Data());
        m_subnet.Node(req.node).linearFdbCap = si.linearFdbCap;
        m_subnet.Node(req.node).switchInfo = si;
        break;
    }
    case Purpose::SetSwitchInfo:
        // The switch's answer is its SwitchInfo after the Set (LinearFDBTop as written).
        m_subnet.Node(req.node).switchInfo.ReadFrom(smp.Data());
        break;
    case Purpose::PortInfo:
        OnPortInfo(req, smp);
        break;
    case Purpose::SetPortInfo: {
        IbSmPort& p = m_subnet.Node(req.node).ports[req.port];
        p.info.ReadFrom(smp.Data());
        break;
    }
    case Purpose::SmInfo:
    case Purpose::LightSmInfo:
    case Purpose::PollMaster:
        OnSmInfo(req, smp);
        break;
    case Purpose::Handover:
        // The SM outranking this one took the mastership (§14.4.1): stand by and poll it. (Its
        // ACKNOWLEDGE may have come first.)
        if (m_smState == IbSmState::Master && m_handoverTo != 0)
        {
            m_handoversSent++;
            BecomeStandby(m_handoverTo, req.path);
        }
        break;
    case Purpose::Acknowledge:
    case Purpose::SetLft:
    case Purpose::SetSlToVl:
    case Purpose::SetPKeyTable:
        break;
    case Purpose::SetMft:
        MftSetDone();
        break;
    case Purpose::LightSwitchInfo: {
        IbSwitchInfo si;
        si.ReadFrom(smp.Data());
        if (si.portStateChange)
        {
            m_rediscover = true; // IBA vol. 1 §14.2.5.4: a port went to or from Down/Init
        }
        break;
    }
    }
}

void
IbSubnetManager::Failed(Request& req)
{
    NS_LOG_INFO("SMP attr 0x" << std::hex << req.smp.Mad().GetAttributeId() << std::dec
                              << " to a node " << req.path.size() << " hops away failed");
    switch (req.purpose)
    {
    case Purpose::SetLft:
        // Unknown table contents now: write the whole table next time.
        if (req.node >= 0 && req.node < m_subnet.NodeCount())
        {
            m_programmed.erase(m_subnet.Node(req.node).nodeGuid);
        }
        m_rediscover = true;
        break;
    case Purpose::SetSlToVl:
        // Unknown table now: write it again on the next sweep.
        if (req.node >= 0 && req.node < m_subnet.NodeCount())
        {
            const IbSmNode& n = m_subnet.Node(req.node);
            m_slVlProgrammed.erase(
                {n.IsSwitch() ? n.nodeGuid : n.ports[req.port].guid,
                 req.smp.Mad().GetAttributeModifier()});
        }
        m_rediscover = true;
        break;
    case Purpose::SetPKeyTable:
        m_rediscover = true; // the next heavy sweep writes the block again
        break;
    case Purpose::SetMft: {
        // Unknown block now: it reads 0xFFFF, which no tree gives a switch, so the next
        // ProgramMfts (after the next light sweep, or sooner) writes it again.
        auto it = m_mftProgrammed.find(req.guid);
        if (it != m_mftProgrammed.end())
        {
            std::vector<IbMftEntry>& prog = it->second;
            const size_t end = (size_t(req.block) + 1) * IbMftBlock::kEntries;
            if (prog.size() < end)
            {
                prog.resize(end, IbMftEntry{});
            }
            for (size_t e = end - IbMftBlock::kEntries; e < end; ++e)
            {
                prog[e][req.port] = 0xFFFF;
            }
        }
        m_mftRetry = true;
        MftSetDone();
        break;
    }
    case Purpose::LightSwitchInfo:
    case Purpose::SetPortInfo:
    case Purpose::SetSwitchInfo:
        m_rediscover = true;
        break;
    case Purpose::PollMaster:
        m_failedPolls++;
        break;
    case Purpose::LightSmInfo:
        // That SM is gone (or no longer answers SMInfo): forget it until a sweep finds it again.
        for (auto it = m_remoteSms.begin(); it != m_remoteSms.end(); ++it)
        {
            if (it->second.path == req.path)
            {
                m_remoteSms.erase(it);
                break;
            }
        }
        break;
    case Purpose::Handover:
        m_handoverTo = 0; // refused or unanswered: this SM stays master (MaybeAdvance)
        break;
    default:
        break; // a node that does not answer during discovery is left out of the subnet
    }
}

void
IbSubnetManager::MaybeAdvance()
{
    if (!m_running || m_outstanding != 0 || !m_queue.empty())
    {
        return;
    }
    switch (m_phase)
    {
    case IbSweepPhase::Discover:
        DecideMastership();
        if (m_phase != IbSweepPhase::Configure)
        {
            return; // standing by, handing over or waiting: nothing to configure
        }
        break;
    case IbSweepPhase::Handover:
        // Still master here: the HANDOVER was refused or went unanswered, so this SM goes on
        // configuring the subnet it swept.
        m_handoverTo = 0;
        RouteAndConfigure();
        break;
    case IbSweepPhase::Configure:
        SetPhase(IbSweepPhase::Arm);
        SetPortStates(kPortStateInit, kPortStateArmed);
        break;
    case IbSweepPhase::Arm:
        SetPhase(IbSweepPhase::Activate);
        SetPortStates(kPortStateArmed, kPortStateActive);
        break;
    case IbSweepPhase::Activate:
        FinishHeavySweep();
        return;
    case IbSweepPhase::LightSweep:
        m_sweepFinishedTrace(false, static_cast<uint32_t>(m_subnet.NodeCount()),
                             Simulator::Now() - m_sweepStart);
        if (m_rediscover)
        {
            StartHeavySweep();
        }
        else
        {
            SetPhase(IbSweepPhase::Up);
            if (m_mftRetry)
            {
                ProgramMfts();
            }
            ScheduleNext();
        }
        return;
    case IbSweepPhase::PollMaster:
        SetPhase(IbSweepPhase::Idle);
        if (m_failedPolls >= m_masterPollRetries)
        {
            NS_LOG_INFO("SM 0x" << std::hex << m_guid << ": master gone, taking over");
            m_masterGuid = 0;
            StartHeavySweep();
        }
        else
        {
            ScheduleNext();
        }
        return;
    default:
        return;
    }
    // A phase that had nothing to send is already complete.
    if (m_outstanding == 0 && m_queue.empty())
    {
        MaybeAdvance();
    }
}

// ---- sweeps -----------------------------------------------------------------------------------

void
IbSubnetManager::ScheduleNext()
{
    m_sweepTimer.Cancel();
    if (m_smState == IbSmState::Master)
    {
        m_sweepTimer =
            Simulator::Schedule(m_sweepInterval, &IbSubnetManager::StartLightSweep, this);
        return;
    }
    m_sweepTimer = Simulator::Schedule(m_sweepInterval, [this]() {
        if (!m_running || m_masterPath.empty())
        {
            return;
        }
        SetPhase(IbSweepPhase::PollMaster);
        Enqueue(Purpose::PollMaster, IbMadMethod::Get, IbSmAttr::SmInfo, 0, m_masterPath, -1, 0);
        Pump();
    });
}

void
IbSubnetManager::StartHeavySweep()
{
    m_sweepTimer.Cancel();
    m_heavySweeps++;
    m_rediscover = false;
    m_sweepStart = Simulator::Now();
    m_sweepStartedTrace(true);
    m_subnet.Clear();
    m_root = -1;
    m_remoteSms.clear();
    m_masterPath.clear();
    m_masterGuid = 0;
    if (m_smState != IbSmState::Master)
    {
        SetSmState(IbSmState::Discovering);
    }
    SetPhase(IbSweepPhase::Discover);
    // Hop count 0: the SM's own node (IBA vol. 1 §14.2.2.1).
    Enqueue(Purpose::NodeInfo, IbMadMethod::Get, IbSmAttr::NodeInfo, 0, {}, -1, 0);
    Pump();
}

void
IbSubnetManager::StartLightSweep()
{
    if (!m_running || m_smState != IbSmState::Master)
    {
        return;
    }
    if (m_subnet.NodeCount() <= 1)
    {
        StartHeavySweep(); // nothing beyond the SM's own node yet: its link may be up by now
        return;
    }
    m_lightSweeps++;
    m_rediscover = false;
    m_sweepStart = Simulator::Now();
    m_sweepStartedTrace(false);
    SetPhase(IbSweepPhase::LightSweep);
    for (int32_t i = 0; i < m_subnet.NodeCount(); ++i)
    {
        if (m_subnet.Node(i).IsSwitch())
        {
            Enqueue(Purpose::LightSwitchInfo, IbMadMethod::Get, IbSmAttr::SwitchInfo, 0,
                    m_subnet.Node(i).path, i, 0);
        }
    }
    // The other SMs' SMInfo, as opensm's light sweep asks it: a master among them, or a
    // standby that now outranks this master (a changed priority), needs a heavy sweep that
    // ends in a handover one way or the other (§14.4.1).
    for (const auto& [guid, remote] : m_remoteSms)
    {
        Enqueue(Purpose::LightSmInfo, IbMadMethod::Get, IbSmAttr::SmInfo, 0, remote.path, -1, 0);
    }
    Pump();
    MaybeAdvance();
}

std::vector<uint8_t>
IbSubnetManager::PathTo(int32_t node, uint8_t port) const
{
    const IbSmNode& n = m_subnet.Node(node);
    return n.IsSwitch() ? n.path : n.ports[port].path;
}

void
IbSubnetManager::OnNodeInfo(Request& req, const IbSmp& smp)
{
    IbNodeInfo ni;
    ni.ReadFrom(smp.Data());
    const bool root = req.path.empty();
    if (ni.numPorts == 0 ||
        (ni.nodeType != IbNodeType::Switch && ni.nodeType != IbNodeType::ChannelAdapter))
    {
        m_badResponses++; // routers and port-less nodes are not modelled
        return;
    }
    const bool known = m_subnet.Find(ni.nodeGuid) >= 0;
    const int32_t idx = m_subnet.AddNode(ni.nodeGuid, ni.nodeType, ni.numPorts);
    IbSmNode& n = m_subnet.Node(idx);
    if (known && (n.type != ni.nodeType || n.numPorts != ni.numPorts))
    {
        m_badResponses++; // two nodes claim one GUID
        return;
    }
    // Which port the SMP entered by (a CA SM's own node: the port it sends from).
    const uint8_t local = (root && !n.IsSwitch()) ? m_port : ni.localPortNum;
    if (local > n.numPorts || (!n.IsSwitch() && local == 0))
    {
        m_badResponses++;
        return;
    }
    if (root)
    {
        m_root = idx;
        if (m_guid == 0)
        {
            m_guid = ni.portGuid;
        }
    }
    if (req.parent >= 0)
    {
        m_subnet.Connect(req.parent, req.parentPort, idx, local);
    }
    if (n.IsSwitch())
    {
        if (known)
        {
            return;
        }
        n.path = req.path;
        for (auto& p : n.ports)
        {
            p.guid = ni.portGuid; // a switch's ports answer with port 0's GUID (§14.2.5.3)
        }
        Enqueue(Purpose::NodeDescription, IbMadMethod::Get, IbSmAttr::NodeDescription, 0,
                n.path, idx, 0);
        Enqueue(Purpose::SwitchInfo, IbMadMethod::Get, IbSmAttr::SwitchInfo, 0, n.path, idx, 0);
        for (uint8_t p = 0; p <= n.numPorts; ++p)
        {
            Enqueue(Purpose::PortInfo, IbMadMethod::Get, IbSmAttr::PortInfo, p, n.path, idx, p);
        }
        return;
    }
    IbSmPort& port = n.ports[local];
    if (port.hasInfo || !port.path.empty())
    {
        return; // this CA port was already reached
    }
    port.guid = ni.portGuid;
    port.path = req.path;
    if (!known)
    {
        n.path = req.path;
        Enqueue(Purpose::NodeDescription, IbMadMethod::Get, IbSmAttr::NodeDescription, 0,
                req.path, idx, 0);
    }
    Enqueue(Purpose::PortInfo, IbMadMethod::Get, IbSmAttr::PortInfo, local, req.path, idx,
            local);
}

void
IbSubnetManager::OnPortInfo(Request& req, const IbSmp& smp)
{
    IbSmNode& n = m_subnet.Node(req.node);
    IbSmPort& p = n.ports[req.port];
    p.info.ReadFrom(smp.Data());
    p.hasInfo = true;
    const bool linkUp = p.info.portPhysicalState == kPhysLinkUp;
    if (n.IsSwitch())
    {
        if (req.port >= 1 && linkUp && p.peerNode < 0)
        {
            Explore(req.node, req.port);
        }
        return;
    }
    if (req.node == m_root && req.port == m_port)
    {
        if (linkUp)
        {
            Explore(req.node, req.port);
        }
        return;
    }
    // Another CA port that says it hosts an SM (PortInfo.CapabilityMask.IsSM, §14.2.5.6).
    if (p.info.capabilityMask & IbPortCap::IsSm)
    {
        Enqueue(Purpose::SmInfo, IbMadMethod::Get, IbSmAttr::SmInfo, 0, p.path, req.node,
                req.port);
    }
}

void
IbSubnetManager::Explore(int32_t node, uint8_t port)
{
    std::vector<uint8_t> path = PathTo(node, port);
    if (path.size() >= IbSmp::kMaxHops)
    {
        return;
    }
    path.push_back(port);
    const uint64_t tid =
        Enqueue(Purpose::NodeInfo, IbMadMethod::Get, IbSmAttr::NodeInfo, 0, path, -1, 0);
    Request& r = m_requests.at(tid);
    r.parent = node;
    r.parentPort = port;
}

void
IbSubnetManager::OnSmInfo(Request& req, const IbSmp& smp)
{
    IbSmInfo other;
    other.ReadFrom(smp.Data());
    if (other.guid == m_guid)
    {
        return;
    }
    // An SM that does not hold this SM's SM_Key is not part of this subnet's management
    // (§14.2.5.13, §14.4): neither elected nor followed. opensm ignores it the same way.
    if (m_smKey != 0 && other.smKey != m_smKey)
    {
        m_smKeyMismatches++;
        NS_LOG_INFO("SM 0x" << std::hex << m_guid << ": SM 0x" << other.guid
                            << " has another SM_Key; ignored");
        if (req.purpose == Purpose::PollMaster)
        {
            m_failedPolls++;
        }
        return;
    }
    const auto st = static_cast<IbSmState>(other.smState & 0x0F);
    const bool outranks = IbSmOutranks(other.priority, other.guid, m_priority, m_guid);
    if (req.purpose == Purpose::PollMaster)
    {
        // The master is alive while it answers as master; one that is still discovering after
        // this SM handed it the mastership, or a standby that outranks this one, is alive too
        // (opensm's rule). Anything else counts as a failed poll.
        const bool alive = st == IbSmState::Master ||
                           ((st == IbSmState::Discovering || st == IbSmState::Standby) && outranks);
        m_failedPolls = alive ? 0 : m_failedPolls + 1;
        auto it = m_remoteSms.find(other.guid);
        if (it != m_remoteSms.end())
        {
            it->second.state = st;
            it->second.priority = other.priority;
        }
        return;
    }
    RemoteSm& r = m_remoteSms[other.guid];
    r.guid = other.guid;
    r.priority = other.priority;
    r.state = st;
    r.path = req.path;
    if (req.purpose == Purpose::LightSmInfo && m_smState == IbSmState::Master &&
        (st == IbSmState::Master || (st == IbSmState::Standby && outranks)))
    {
        m_rediscover = true; // another master, or a higher standby: settle it in a heavy sweep
    }
}

std::vector<IbKnownSm>
IbSubnetManager::GetKnownSms() const
{
    std::vector<IbKnownSm> out;
    for (const auto& [guid, r] : m_remoteSms)
    {
        out.push_back({r.guid, r.priority, r.state});
    }
    return out;
}

void
IbSubnetManager::DecideMastership()
{
    // The SM that outranks every other (this one included), the standby or master that does
    // (a master can be handed over to; one still discovering cannot), and another master.
    const RemoteSm* best = nullptr;
    const RemoteSm* bestStandby = nullptr;
    const RemoteSm* master = nullptr;
    // A master that handed this SM the mastership while it was discovering stands by now,
    // whatever it answered this sweep before that.
    if (auto it = m_remoteSms.find(m_handedOverBy);
        it != m_remoteSms.end() && it->second.state == IbSmState::Master)
    {
        it->second.state = IbSmState::Standby;
    }
    m_handedOverBy = 0;
    for (const auto& [guid, r] : m_remoteSms)
    {
        if (r.state == IbSmState::NotActive)
        {
            continue; // a disabled SM takes no part in the election (§14.4.1)
        }
        if (r.state == IbSmState::Master && (!master || IbSmOutranks(r.priority, r.guid,
                                                                     master->priority,
                                                                     master->guid)))
        {
            master = &r;
        }
        if (IbSmOutranks(r.priority, r.guid, best ? best->priority : m_priority,
                         best ? best->guid : m_guid))
        {
            best = &r;
        }
        if ((r.state == IbSmState::Standby || r.state == IbSmState::Master) &&
            IbSmOutranks(r.priority, r.guid, bestStandby ? bestStandby->priority : m_priority,
                         bestStandby ? bestStandby->guid : m_guid))
        {
            bestStandby = &r;
        }
    }
    auto endOfSweep = [this]() {
        m_sweepFinishedTrace(true, static_cast<uint32_t>(m_subnet.NodeCount()),
                             Simulator::Now() - m_sweepStart);
    };
    if (m_smState != IbSmState::Master)
    {
        // §14.4.1: a discovering SM that finds a master, or an SM that outranks it, stands by.
        if (const RemoteSm* follow = master ? master : best)
        {
            endOfSweep();
            BecomeStandby(follow->guid, follow->path);
            return;
        }
        RouteAndConfigure();
        return;
    }
    if (bestStandby)
    {
        // A master that finds a standby (or another master, when two subnets merge) outranking
        // it hands the mastership over (§14.4.1, Table 169: SubnSet(SMInfo) HANDOVER); it
        // stands by once the other has answered. A
        // higher SM still discovering is left to finish: it finds this master, stands by, and
        // the next light sweep sees it so. (Handed over while discovering, it would go on to
        // stand by behind this SM's stale MASTER answer, and opensm then waits its polling
        // timeout, 10 s by 4 retries, before taking over.)
        NS_LOG_INFO("SM 0x" << std::hex << m_guid << ": handing over to 0x"
                            << bestStandby->guid);
        endOfSweep();
        m_handoverTo = bestStandby->guid;
        SetPhase(IbSweepPhase::Handover);
        SendSmInfoSet(Purpose::Handover, IbSmInfoControl::Handover, bestStandby->path,
                      OwnSmInfo(true));
        Pump();
        return;
    }
    if (master)
    {
        // Another master, which this one outranks (else it was handed over to above): it must
        // hand over (its own sweep finds this SM). Until it has, this SM configures nothing, or
        // the two would fight; it looks again after SweepInterval.
        NS_LOG_INFO("SM 0x" << std::hex << m_guid << ": waiting for 0x" << master->guid
                            << " to hand over");
        endOfSweep();
        SetPhase(IbSweepPhase::Idle);
        m_sweepTimer =
            Simulator::Schedule(m_sweepInterval, &IbSubnetManager::StartHeavySweep, this);
        return;
    }
    RouteAndConfigure();
}

void
IbSubnetManager::BecomeStandby(uint64_t guid, const std::vector<uint8_t>& path)
{
    SetSmState(IbSmState::Standby);
    m_masterGuid = guid;
    m_masterPath = path;
    m_handoverTo = 0;
    m_failedPolls = 0;
    SetPhase(IbSweepPhase::Idle);
    ScheduleNext();
}

IbSmInfo
IbSubnetManager::OwnSmInfo(bool withKey) const
{
    IbSmInfo si;
    si.guid = m_guid;
    si.smKey = withKey ? m_smKey : 0;
    si.actCount = m_actCount;
    si.priority = m_priority;
    si.smState = static_cast<uint8_t>(m_smState);
    return si;
}

void
IbSubnetManager::SendSmInfoSet(Purpose purpose,
                               IbSmInfoControl control,
                               const std::vector<uint8_t>& path,
                               const IbSmInfo& own)
{
    // The sender's own SMInfo, SM_Key included: the receiver checks the key and the sender's
    // state (HANDOVER from a master, ACKNOWLEDGE from a standby).
    uint8_t data[IbSmp::kDataBytes];
    own.WriteTo(data);
    Enqueue(purpose, IbMadMethod::Set, IbSmAttr::SmInfo, static_cast<uint32_t>(control), path, -1,
            0, data);
}

void
IbSubnetManager::RouteAndConfigure()
{
    if (m_root < 0)
    {
        // Not even the SM's own node answered: nothing to do until the next sweep.
        SetPhase(IbSweepPhase::Idle);
        m_sweepFinishedTrace(true, 0, Simulator::Now() - m_sweepStart);
        m_sweepTimer = Simulator::Schedule(m_sweepInterval, &IbSubnetManager::StartHeavySweep,
                                           this);
        return;
    }
    // Which GUIDs are new to the LID table, to report them once assigned.
    std::vector<std::pair<uint64_t, std::pair<int32_t, uint8_t>>> fresh;
    for (int32_t i = 0; i < m_subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = m_subnet.Node(i);
        for (uint8_t p = n.IsSwitch() ? 0 : 1; p <= (n.IsSwitch() ? 0 : n.numPorts); ++p)
        {
            if (m_lidTable.Lookup(n.ports[p].guid) == 0)
            {
                fresh.push_back({n.ports[p].guid, {i, p}});
            }
        }
    }
    m_lidTable.Assign(m_subnet);
    for (const auto& [guid, where] : fresh)
    {
        const uint16_t lid = m_subnet.LidOf(where.first, where.second);
        if (lid != 0)
        {
            m_lidTrace(guid, lid);
        }
    }
    m_smLid = m_subnet.LidOf(m_root, m_subnet.Node(m_root).IsSwitch() ? 0 : m_port);
    m_tables = IbComputeRoutes(m_subnet, static_cast<IbRoutingAlgorithm>(m_algorithm));
    m_routeCheck = IbCheckRoutes(m_subnet, m_tables);
    if (!m_routeCheck.Ok())
    {
        NS_LOG_WARN("routing: " << m_routeCheck.firstProblem);
    }
    // Up/down is deadlock-free on one VL by construction; min-hop routes with a credit loop
    // are spread over virtual layers, each route's layer its SL (and VL) in PathRecords.
    m_layers = IbVlLayers{};
    m_layers.layers = 1;
    if (static_cast<IbRoutingAlgorithm>(m_algorithm) == IbRoutingAlgorithm::MinHop &&
        m_tables.error.empty() && !IbFindCreditLoop(m_subnet, m_tables).empty())
    {
        m_layers = IbAssignVlLayers(m_subnet, m_tables, m_opVls);
        if (!m_layers.error.empty())
        {
            NS_LOG_WARN("deadlock-free layers: " << m_layers.error);
        }
    }
    SetSmState(IbSmState::Master);
    SetPhase(IbSweepPhase::Configure);
    ConfigurePorts();
    ConfigureSlToVl();
    ConfigurePartitions();
}

void
IbSubnetManager::ConfigurePartitions()
{
    if (m_partitions.Empty())
    {
        return; // every port keeps the default partition its SMA starts with
    }
    for (int32_t i = 0; i < m_subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = m_subnet.Node(i);
        if (n.IsSwitch())
        {
            continue; // switches do not enforce partitions here (docs/management.md §3)
        }
        for (uint8_t port = 1; port <= n.numPorts; ++port)
        {
            const IbSmPort& p = n.ports[port];
            if (p.peerNode < 0)
            {
                continue;
            }
            // Written in every heavy sweep, not only where this SM remembers writing something
            // else: another SM (opensm while this one was stopped or standby) may have written
            // the tables since.
            const auto blocks = m_partitions.CaPortPkeyBlocks(p.guid, p.guid == GetGuid());
            for (uint32_t b = 0; b < blocks.size(); ++b)
            {
                IbPKeyTableBlock t;
                t.pkey = blocks[b];
                uint8_t data[IbSmp::kDataBytes] = {};
                t.WriteTo(data);
                m_pkeyBlocksWritten++;
                Enqueue(Purpose::SetPKeyTable, IbMadMethod::Set, IbSmAttr::PKeyTable, b,
                        PathTo(i, port), i, port, data);
            }
        }
    }
    Pump();
}

void
IbSubnetManager::ConfigureSlToVl()
{
    // Routes spread over virtual layers are deadlock-free only if a route's SL (its layer, as
    // the SA hands it out) selects the same VL at every hop. Which VL an SL takes is each
    // port's SLtoVLMappingTable (IBA vol. 1 §7.6.6, §14.2.5.8), so the SM writes it rather than
    // trusting whatever a switch powered up with. One layer (up/down, or min-hop without a
    // credit loop) needs no mapping: every SL's VL carries routes without a cycle.
    if (m_layers.layers <= 1)
    {
        return;
    }
    IbSlToVlTable t;
    for (uint8_t sl = 0; sl < 16; ++sl)
    {
        t.vl[sl] = sl < m_layers.layers ? sl : 0; // SLs no route uses: VL0
    }
    uint8_t data[IbSmp::kDataBytes] = {};
    t.WriteTo(data);
    const uint8_t layers = static_cast<uint8_t>(m_layers.layers);
    auto set = [&](int32_t node, uint64_t guid, uint32_t mod, uint8_t port) {
        uint8_t& done = m_slVlProgrammed[{guid, mod}];
        if (done != layers)
        {
            done = layers;
            Enqueue(Purpose::SetSlToVl, IbMadMethod::Set, IbSmAttr::SlToVlMappingTable, mod,
                    PathTo(node, port), node, port, data);
        }
    };
    for (int32_t i = 0; i < m_subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = m_subnet.Node(i);
        for (uint8_t out = 1; out <= n.numPorts; ++out)
        {
            if (n.ports[out].peerNode < 0)
            {
                continue;
            }
            if (!n.IsSwitch())
            {
                set(i, n.ports[out].guid, 0, out); // a CA port's one table, modifier 0
                continue;
            }
            // A switch has a table per (input, output) pair: modifier bits 15:8 and 7:0.
            for (uint8_t in = 1; in <= n.numPorts; ++in)
            {
                if (in != out && n.ports[in].peerNode >= 0)
                {
                    set(i, n.nodeGuid, (uint32_t(in) << 8) | out, 0);
                }
            }
        }
    }
    Pump();
}

void
IbSubnetManager::SetPortInfo(int32_t node, uint8_t port, uint8_t state)
{
    const IbSmNode& n = m_subnet.Node(node);
    IbPortInfo pi = n.ports[port].info;
    if (!n.IsSwitch() || port == 0)
    {
        pi.lid = m_subnet.LidOf(node, port);
        pi.masterSmLid = m_smLid;
    }
    // OperationalVLs may change only while the port is Init (IBA vol. 1 §14.2.5.6); 0 is "no
    // change", as are 0 in PortState, PortPhysicalState, LinkDownDefaultState, LinkWidthEnabled
    // and LinkSpeedEnabled.
    pi.operationalVls = 0;
    if (port != 0 && pi.portState == kPortStateInit)
    {
        pi.operationalVls = std::min(EncodeVls(m_opVls), pi.vlCap == 0 ? uint8_t(1) : pi.vlCap);
    }
    pi.portState = state;
    pi.portPhysicalState = 0;
    pi.linkDownDefaultState = 0;
    pi.linkWidthEnabled = 0;
    pi.linkSpeedEnabled = 0;
    uint8_t data[IbSmp::kDataBytes];
    pi.WriteTo(data);
    Enqueue(Purpose::SetPortInfo, IbMadMethod::Set, IbSmAttr::PortInfo, port,
            PathTo(node, port), node, port, data);
}

void
IbSubnetManager::ConfigurePorts()
{
    const uint16_t maxLid = m_subnet.MaxLid();
    const uint8_t opVls = EncodeVls(m_opVls);
    for (int32_t i = 0; i < m_subnet.NodeCount(); ++i)
    {
        IbSmNode& n = m_subnet.Node(i);
        for (uint8_t p = n.IsSwitch() ? 0 : 1; p <= n.numPorts; ++p)
        {
            const IbSmPort& port = n.ports[p];
            if (!port.hasInfo || (p != 0 && port.peerNode < 0))
            {
                continue;
            }
            const bool addressed = !n.IsSwitch() || p == 0;
            const bool wrongLid = addressed && (port.info.lid != m_subnet.LidOf(i, p) ||
                                                port.info.masterSmLid != m_smLid);
            const bool wrongVls = p != 0 && port.info.portState == kPortStateInit &&
                                  port.info.operationalVls != std::min(opVls, port.info.vlCap);
            if (wrongLid || wrongVls)
            {
                SetPortInfo(i, p, 0);
            }
        }
        if (!n.IsSwitch() || !m_tables.error.empty())
        {
            continue;
        }
        // SwitchInfo: LinearFDBTop, and PortStateChange written 1 to clear it (§14.2.5.4).
        IbSwitchInfo si;
        si.linearFdbTop = maxLid;
        si.portStateChange = true;
        uint8_t data[IbSmp::kDataBytes];
        si.WriteTo(data);
        Enqueue(Purpose::SetSwitchInfo, IbMadMethod::Set, IbSmAttr::SwitchInfo, 0, n.path, i, 0,
                data);
        // The LFT blocks that differ from what this switch was last given (§14.2.5.10).
        const std::vector<uint8_t>& lft = m_tables.lft[i];
        std::vector<uint8_t>& prog = m_programmed[n.nodeGuid];
        const size_t blocks = (lft.size() + 63) / 64;
        for (size_t b = 0; b < blocks; ++b)
        {
            IbLftBlock block;
            bool differs = prog.size() < (b + 1) * 64;
            for (size_t e = 0; e < 64; ++e)
            {
                const size_t lid = b * 64 + e;
                block.port[e] = lid < lft.size() ? lft[lid] : kIbLftNoRoute;
                differs = differs || prog[lid] != block.port[e];
            }
            if (differs)
            {
                block.WriteTo(data);
                Enqueue(Purpose::SetLft, IbMadMethod::Set, IbSmAttr::LinearForwardingTable,
                        static_cast<uint32_t>(b), n.path, i, 0, data);
            }
        }
        prog.assign(blocks * 64, kIbLftNoRoute);
        std::copy(lft.begin(), lft.end(), prog.begin());
    }
    Pump();
}

void
IbSubnetManager::SetPortStates(uint8_t from, uint8_t to)
{
    for (int32_t i = 0; i < m_subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = m_subnet.Node(i);
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            const IbSmPort& port = n.ports[p];
            // Only links the sweep saw at both ends: a port whose neighbour did not answer
            // stays where it is.
            if (port.hasInfo && port.peerNode >= 0 && port.info.portState == from)
            {
                SetPortInfo(i, p, to);
            }
        }
    }
    Pump();
}

void
IbSubnetManager::FinishHeavySweep()
{
    SetPhase(IbSweepPhase::Up);
    m_lastSubnet = m_subnet;
    m_lastTables = m_tables;
    m_lastLayers = m_layers;
    m_lastUp = Simulator::Now();
    m_actCount++;
    // Multicast: the MLIDs every switch can hold; members whose ports are gone leave; the trees
    // of the subnet as it is now.
    uint32_t mlids = IbSmMulticast::kDefaultMlidCount;
    for (const IbSmNode& n : m_lastSubnet.Nodes())
    {
        if (n.IsSwitch())
        {
            mlids = std::min<uint32_t>(mlids, n.switchInfo.multicastFdbCap);
        }
    }
    m_multicast.SetMlidCount(static_cast<uint16_t>(mlids));
    m_multicast.DropAbsentPorts(m_lastSubnet);
    ProgramMfts();
    if (!m_saBeforeUp.empty())
    {
        Simulator::ScheduleNow(&IbSubnetManager::AnswerSaHeldBeforeUp, this);
    }
    m_sweepFinishedTrace(true, static_cast<uint32_t>(m_subnet.NodeCount()),
                         Simulator::Now() - m_sweepStart);
    if (m_rediscover)
    {
        StartHeavySweep();
        return;
    }
    ScheduleNext();
}

uint16_t
IbSubnetManager::AnswerSmInfo(const IbSmp& request, IbSmp& response)
{
    const uint8_t method = request.Mad().GetMethod();
    if (!m_running || (method != IbMadMethod::Get && method != IbMadMethod::Set))
    {
        return IbMadStatus::UnsupportedMethodAttr; // no SM here (any more)
    }
    IbSmInfo asked;
    asked.ReadFrom(request.Data());
    response = request;
    if (method == IbMadMethod::Get)
    {
        // §14.2.5.13: the SM_Key reads as 0 unless the requester is authenticated. One that
        // shows a key must show this one; one that shows none is answered with it, as opensm
        // answers (the SMA hides it from a requester that fails the M_Key check with protection
        // bits 1, and drops the request with bits 2 or 3).
        const bool reveal = asked.smKey == 0 || asked.smKey == m_smKey;
        OwnSmInfo(reveal).WriteTo(response.Data());
        return IbMadStatus::Ok;
    }
    // SubnSet(SMInfo): the transitions of Table 169 (§14.4.1), each legal only from this SM's
    // present state and from a sender in the right state (HANDOVER, DISABLE, STANDBY and
    // DISCOVER come from a master, ACKNOWLEDGE from the standby that took a handover), and
    // only with this SM's SM_Key.
    const uint32_t control = request.Mad().GetAttributeModifier();
    const auto sender = static_cast<IbSmState>(asked.smState);
    bool legal = false;
    switch (static_cast<IbSmInfoControl>(control))
    {
    case IbSmInfoControl::Handover:
        legal = sender == IbSmState::Master && m_smState != IbSmState::NotActive;
        break;
    case IbSmInfoControl::Acknowledge:
        legal = sender == IbSmState::Standby &&
                (m_smState == IbSmState::Standby ||
                 (m_smState == IbSmState::Master && m_handoverTo == asked.guid));
        break;
    case IbSmInfoControl::Disable:
    case IbSmInfoControl::Discover:
        legal = sender == IbSmState::Master && m_smState == IbSmState::Standby;
        break;
    case IbSmInfoControl::Standby:
        legal = sender == IbSmState::Master && m_smState == IbSmState::NotActive;
        break;
    }
    if (m_smKey != 0 && asked.smKey != m_smKey)
    {
        legal = false;
    }
    OwnSmInfo(legal).WriteTo(response.Data());
    const uint16_t status = legal ? IbMadStatus::Ok : IbMadStatus::InvalidField;
    NS_LOG_INFO("SM 0x" << std::hex << m_guid << ": SMInfo " << IbSmInfoControlName(control)
                        << " from 0x" << asked.guid << std::dec << " in state "
                        << IbSmStateName(m_smState) << ": status " << status);
    m_smInfoSetTrace(control, asked.guid, status);
    if (!legal)
    {
        m_smInfoSetsRefused++;
        return status;
    }
    // The answer leaves first (the caller sends it); the SM acts in an event of its own, so a
    // HANDOVER's answer goes out before this SM's ACKNOWLEDGE and first sweep as master.
    Simulator::ScheduleNow(&IbSubnetManager::ActOnSmInfoSet, this,
                           static_cast<IbSmInfoControl>(control), asked.guid);
    return IbMadStatus::Ok;
}

void
IbSubnetManager::ActOnSmInfoSet(IbSmInfoControl control, uint64_t senderGuid)
{
    if (!m_running)
    {
        return;
    }
    switch (control)
    {
    case IbSmInfoControl::Handover:
        m_handoversReceived++;
        if (m_smState == IbSmState::Standby)
        {
            // Table 169: a standby given the mastership acknowledges it, with its SMInfo as the
            // standby that took it (opensm accepts ACKNOWLEDGE only from a standby), and becomes
            // the master, which starts with a heavy sweep and takes over the configuration.
            // The ACKNOWLEDGE leaves SmInfoTimeout / 2 after the HANDOVER's answer: opensm
            // stands by only once its HANDOVER is on its way, and refuses an ACKNOWLEDGE that
            // overtakes that (ERR 3207, status 7).
            if (senderGuid == m_masterGuid && !m_masterPath.empty())
            {
                const IbSmInfo asStandby = OwnSmInfo(true);
                const std::vector<uint8_t> path = m_masterPath;
                Simulator::Schedule(m_smInfoTimeout / 2, [this, asStandby, path]() {
                    if (!m_running)
                    {
                        return;
                    }
                    SendSmInfoSet(Purpose::Acknowledge, IbSmInfoControl::Acknowledge, path,
                                  asStandby);
                    m_acknowledgesSent++;
                    Pump();
                });
            }
            m_sweepTimer.Cancel();
            SetSmState(IbSmState::Master);
            StartHeavySweep();
            return;
        }
        // A discovering SM is sweeping already; the old master stands by now, whatever it has
        // answered this sweep (DecideMastership). opensm hands over to an SM it found
        // discovering. No ACKNOWLEDGE: it would say DISCOVERING, and opensm takes one only from
        // a standby. A master handed a second mastership sweeps to settle it.
        if (m_smState == IbSmState::Discovering)
        {
            m_handedOverBy = senderGuid;
            return;
        }
        m_rediscover = true;
        if (m_smState == IbSmState::Master &&
            (m_phase == IbSweepPhase::Up || m_phase == IbSweepPhase::Idle))
        {
            StartHeavySweep();
        }
        return;
    case IbSmInfoControl::Acknowledge:
        m_acknowledgesReceived++;
        if (m_smState == IbSmState::Master && m_handoverTo == senderGuid)
        {
            auto it = m_remoteSms.find(senderGuid);
            if (it != m_remoteSms.end())
            {
                m_handoversSent++;
                BecomeStandby(senderGuid, it->second.path);
            }
        }
        return;
    case IbSmInfoControl::Disable:
        // Table 169: a standby told to stop polling becomes not-active; it still answers
        // SMInfo, as NOT_ACTIVE, until a master tells it to stand by again.
        m_sweepTimer.Cancel();
        m_masterGuid = 0;
        m_masterPath.clear();
        SetSmState(IbSmState::NotActive);
        SetPhase(IbSweepPhase::Idle);
        return;
    case IbSmInfoControl::Standby: {
        auto it = m_remoteSms.find(senderGuid);
        if (it != m_remoteSms.end())
        {
            BecomeStandby(senderGuid, it->second.path);
            return;
        }
        // The master is not known yet: discover, which finds it and stands by.
        SetSmState(IbSmState::Discovering);
        StartHeavySweep();
        return;
    }
    case IbSmInfoControl::Discover:
        m_sweepTimer.Cancel();
        m_masterGuid = 0;
        SetSmState(IbSmState::Discovering);
        StartHeavySweep();
        return;
    }
}

std::vector<IbSaSmEntry>
IbSubnetManager::KnownSms() const
{
    std::vector<IbSaSmEntry> out;
    out.push_back({m_smLid, OwnSmInfo(false)});
    for (const auto& [guid, sm] : m_remoteSms)
    {
        // Its port's LID, from the subnet as last swept (an SM runs on a CA port or a switch's
        // management port).
        uint16_t lid = 0;
        for (int32_t i = 0; lid == 0 && i < m_lastSubnet.NodeCount(); ++i)
        {
            const IbSmNode& n = m_lastSubnet.Node(i);
            for (uint8_t p = 0; lid == 0 && p < n.ports.size(); ++p)
            {
                if (n.ports[p].guid == guid)
                {
                    lid = m_lastSubnet.LidOf(i, p);
                }
            }
        }
        IbSmInfo info;
        info.guid = guid;
        info.priority = sm.priority;
        info.smState = static_cast<uint8_t>(sm.state);
        out.push_back({lid, info});
    }
    return out;
}

std::vector<std::array<uint8_t, kIbMadBytes>>
IbSubnetManager::AnswerSaSegments(const uint8_t* request, SaResponder later)
{
    if (m_running && m_smState == IbSmState::Master && m_lastUp < Seconds(0) && later)
    {
        // The first sweep is not done: ports it made Active already ask (the kernel's IPoIB
        // joins its broadcast group on PORT_ACTIVE), and opensm, whose port table the
        // discovery has filled, answers them. Held here until the subnet is up, as many as a
        // large fabric's hosts ask at once; beyond that they go unanswered (the asker retries).
        if (m_saBeforeUp.size() < kMaxSaBeforeUp)
        {
            std::array<uint8_t, kIbMadBytes> copy;
            std::copy(request, request + kIbMadBytes, copy.begin());
            m_saBeforeUp.push_back({copy, std::move(later)});
        }
        return {};
    }
    if (!m_running || m_smState != IbSmState::Master || m_lastUp < Seconds(0))
    {
        return {};
    }
    const std::vector<IbSaSmEntry> sms = KnownSms();
    const uint64_t changes = m_multicast.GetChanges();
    const IbSaPartitions partitions{&m_partitions, GetGuid()};
    auto out = IbSaServeSegments(m_lastSubnet, m_lastTables, request, &m_lastLayers, &sms,
                                 &m_multicast, m_smKey, &partitions);
    if (!out.empty())
    {
        m_saAnswered++;
    }
    if (m_multicast.GetChanges() != changes)
    {
        // A join or leave changed a group: its tree, and the MFTs, may have changed with it.
        ProgramMfts();
        if (later && m_mftInFlight > 0 && !out.empty())
        {
            m_heldSa.push_back([later, out]() { later(out); });
            return {};
        }
    }
    return out;
}

bool
IbSubnetManager::AnswerSa(const uint8_t* request, uint8_t* response)
{
    if (!m_running || m_smState != IbSmState::Master || m_lastUp < Seconds(0))
    {
        return false;
    }
    const std::vector<IbSaSmEntry> sms = KnownSms();
    const uint64_t changes = m_multicast.GetChanges();
    const IbSaPartitions partitions{&m_partitions, GetGuid()};
    if (!IbSaServe(m_lastSubnet, m_lastTables, request, response, &m_lastLayers, &sms,
                   &m_multicast, m_smKey, &partitions))
    {
        return false;
    }
    m_saAnswered++;
    if (m_multicast.GetChanges() != changes)
    {
        ProgramMfts(); // the answer goes at once here: there is no way to send it later
    }
    return true;
}

void
IbSubnetManager::ProgramMfts()
{
    m_mftRetry = false;
    const IbMftTables want = m_multicast.ComputeMfts(m_lastSubnet);
    for (const auto& [node, entries] : want)
    {
        const IbSmNode& n = m_lastSubnet.Node(node);
        std::vector<IbMftEntry>& prog = m_mftProgrammed[n.nodeGuid];
        const size_t entriesInUse = std::max(entries.size(), prog.size());
        const size_t blocks = (entriesInUse + IbMftBlock::kEntries - 1) / IbMftBlock::kEntries;
        for (size_t b = 0; b < blocks; ++b)
        {
            // Only the port-mask positions the switch has (ports 0..NumPorts, §14.2.5.12).
            for (uint8_t position = 0; position * 16u <= n.numPorts; ++position)
            {
                IbMftBlock block;
                bool differs = false;
                for (size_t e = 0; e < IbMftBlock::kEntries; ++e)
                {
                    const size_t at = b * IbMftBlock::kEntries + e;
                    block.mask[e] = at < entries.size() ? entries[at][position] : 0;
                    const uint16_t had = at < prog.size() ? prog[at][position] : 0;
                    differs = differs || had != block.mask[e];
                }
                if (!differs)
                {
                    continue;
                }
                uint8_t data[IbSmp::kDataBytes] = {};
                block.WriteTo(data);
                const uint64_t tid =
                    Enqueue(Purpose::SetMft, IbMadMethod::Set, IbSmAttr::MulticastForwardingTable,
                            IbMftBlock::Modifier(static_cast<uint16_t>(b), position), n.path, -1,
                            position, data);
                if (tid != 0)
                {
                    Request& r = m_requests.at(tid);
                    r.guid = n.nodeGuid;
                    r.block = static_cast<uint16_t>(b);
                    ++m_mftInFlight;
                    ++m_mftBlocksWritten;
                }
            }
        }
        prog = entries;
    }
    Pump();
}

void
IbSubnetManager::AnswerSaHeldBeforeUp()
{
    std::vector<std::pair<std::array<uint8_t, kIbMadBytes>, SaResponder>> held;
    held.swap(m_saBeforeUp);
    for (auto& [request, later] : held)
    {
        auto out = AnswerSaSegments(request.data(), later);
        if (!out.empty())
        {
            later(std::move(out));
        }
    }
}

void
IbSubnetManager::MftSetDone()
{
    if (m_mftInFlight > 0 && --m_mftInFlight == 0 && !m_heldSa.empty())
    {
        // In an event of its own: this runs inside the SMP receive path.
        Simulator::ScheduleNow(&IbSubnetManager::SendHeldSaAnswers, this);
    }
}

void
IbSubnetManager::SendHeldSaAnswers()
{
    if (!m_running || m_mftInFlight != 0)
    {
        return; // stopped, or more MFT SMPs went out since: wait for those too
    }
    std::vector<std::function<void()>> held;
    held.swap(m_heldSa);
    for (const auto& send : held)
    {
        send();
    }
}

} // namespace ns3
