#include "ib-sma-agent.h"

#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"

#include "ns3/boolean.h"
#include "ns3/nstime.h"
#include "ns3/log.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbSmaAgent");
NS_OBJECT_ENSURE_REGISTERED(IbSmaAgent);

namespace
{
constexpr uint64_t kDefaultGidPrefix = 0xFE80000000000000ULL; ///< §4.1.1 link-local prefix
constexpr uint8_t kVlArbCap = 64; ///< entries per VLArbitration table (§14.2.5.9: at most 64)
constexpr uint8_t kGuidCap = 8;   ///< one GUIDInfo block

// ---- PortInfo encodings, IBA vol. 1 §14.2.5.6 -----------------------------------------------

/// LinkWidth: 1x = 1, 4x = 2, 8x = 4, 12x = 8, 2x = 16.
uint8_t
WidthCode(uint8_t lanes)
{
    switch (lanes)
    {
    case 1:
        return 1;
    case 2:
        return 16;
    case 4:
        return 2;
    case 8:
        return 4;
    case 12:
        return 8;
    }
    return 0;
}

/// Every width up to the port's own (a port trains down to fewer lanes).
uint8_t
WidthsUpTo(uint8_t lanes)
{
    uint8_t m = 0;
    for (uint8_t w : {1, 2, 4, 8, 12})
    {
        if (w <= lanes)
        {
            m |= WidthCode(w);
        }
    }
    return m;
}

/// LinkSpeed (4 bits): SDR 1, DDR 2, QDR 4. Faster generations are LinkSpeedExt (FDR 1, EDR 2,
/// HDR 4, NDR 8); a port that runs one reports QDR as its base speed.
uint8_t
SpeedCode(IbLinkSpeed s)
{
    switch (s)
    {
    case IbLinkSpeed::Sdr:
        return 1;
    case IbLinkSpeed::Ddr:
        return 2;
    default:
        return 4;
    }
}

uint8_t
SpeedsUpTo(IbLinkSpeed s)
{
    return s == IbLinkSpeed::Sdr ? 1 : s == IbLinkSpeed::Ddr ? 3 : 7;
}

/// LinkSpeedExt: FDR 1, EDR 2, HDR 4, NDR 8; 0 for the 8b/10b speeds, for FDR10 (a vendor
/// extension) and for XDR (which the 4-bit field of this PortInfo cannot name).
uint8_t
SpeedExtCode(IbLinkSpeed s)
{
    switch (s)
    {
    case IbLinkSpeed::Fdr:
        return 1;
    case IbLinkSpeed::Edr:
        return 2;
    case IbLinkSpeed::Hdr:
        return 4;
    case IbLinkSpeed::Ndr:
        return 8;
    default:
        return 0;
    }
}

uint8_t
SpeedsExtUpTo(IbLinkSpeed s)
{
    uint8_t m = 0;
    for (IbLinkSpeed x : {IbLinkSpeed::Fdr, IbLinkSpeed::Edr, IbLinkSpeed::Hdr, IbLinkSpeed::Ndr})
    {
        if (static_cast<int>(x) <= static_cast<int>(s))
        {
            m |= SpeedExtCode(x);
        }
    }
    return m;
}

/// MTU: 256 = 1 .. 4096 = 5.
uint8_t
MtuCode(uint16_t mtu)
{
    uint8_t c = 1;
    for (uint16_t m = 256; m < mtu && c < 5; m *= 2)
    {
        ++c;
    }
    return c;
}

uint16_t
MtuBytes(uint8_t code)
{
    return static_cast<uint16_t>(128u << code);
}

/// VLCap / OperationalVLs: VL0 = 1, VL0-1 = 2, VL0-3 = 3, VL0-7 = 4, VL0-14 = 5.
uint8_t
VlCode(uint8_t vls)
{
    switch (vls)
    {
    case 1:
        return 1;
    case 2:
        return 2;
    case 4:
        return 3;
    case 8:
        return 4;
    case 15:
        return 5;
    }
    return 0;
}

uint8_t
VlCount(uint8_t code)
{
    static const uint8_t n[] = {0, 1, 2, 4, 8, 15};
    return code <= 5 ? n[code] : 0;
}

bool
IsUnicastLid(uint16_t lid)
{
    return lid < 0xC000; // §4.1.3: 0xC000-0xFFFE multicast, 0xFFFF permissive
}
} // namespace

TypeId
IbSmaAgent::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::IbSmaAgent")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<IbSmaAgent>()
            .AddAttribute("NodeDescription",
                          "NodeDescription text (at most 64 bytes; empty: \"cnuas node N\").",
                          StringValue(""),
                          MakeStringAccessor(&IbSmaAgent::m_description),
                          MakeStringChecker())
            .AddAttribute("NodeGuid",
                          "NodeInfo.NodeGUID (0: the switch's node GUID, or a CA's first port "
                          "GUID minus its port number).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbSmaAgent::m_nodeGuid),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("SystemImageGuid",
                          "NodeInfo.SystemImageGUID (0: none).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbSmaAgent::m_systemImageGuid),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("VendorId",
                          "NodeInfo.VendorID (24-bit IEEE OUI).",
                          UintegerValue(0x0002C9),
                          MakeUintegerAccessor(&IbSmaAgent::m_vendorId),
                          MakeUintegerChecker<uint32_t>(0, 0xFFFFFF))
            .AddAttribute("DeviceId",
                          "NodeInfo.DeviceID.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&IbSmaAgent::m_deviceId),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("PKeyBlocks",
                          "A channel adapter's P_KeyTable blocks of 32 entries per port "
                          "(NodeInfo.PartitionCap = 32 x this; 4 gives a ConnectX's 128, the "
                          "verbs device's ns3::RdmaDevice::PkeyTableLength).",
                          UintegerValue(4),
                          MakeUintegerAccessor(&IbSmaAgent::m_pkeyBlocks),
                          MakeUintegerChecker<uint16_t>(1, 2047))
            .AddAttribute("SwitchPKeyBlocks",
                          "A switch's P_KeyTable blocks per port (its NodeInfo.PartitionCap = "
                          "32 x this). One: switches do not enforce partitions here, and opensm "
                          "reads every block of every port in each heavy sweep (4 blocks at the "
                          "switches too made it send 12 % more SMPs on a k=4 fat-tree).",
                          UintegerValue(1),
                          MakeUintegerAccessor(&IbSmaAgent::m_switchPkeyBlocks),
                          MakeUintegerChecker<uint16_t>(1, 2047))
            .AddAttribute("TrapsEnabled",
                          "Send Trap 128 to the SM when a switch port changes state.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&IbSmaAgent::m_trapsEnabled),
                          MakeBooleanChecker())
            .AddAttribute("PortDownDelay",
                          "How long after answering a PortInfo Set of PortState Down the SMA "
                          "takes the link down, so that the answer reaches the SM first (the "
                          "link drops what is on it).",
                          TimeValue(MicroSeconds(10)),
                          MakeTimeAccessor(&IbSmaAgent::m_portDownDelay),
                          MakeTimeChecker(Seconds(0)))
            .AddAttribute("TrapRepeatInterval",
                          "Time between repetitions of a trap the SM has not repressed.",
                          TimeValue(MilliSeconds(100)),
                          MakeTimeAccessor(&IbSmaAgent::m_trapRepeatInterval),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("TrapRepeats",
                          "How many times an unrepressed trap is sent again (0: once only).",
                          UintegerValue(3),
                          MakeUintegerAccessor(&IbSmaAgent::m_trapRepeats),
                          MakeUintegerChecker<uint32_t>())
            .AddTraceSource("SmpAnswered",
                            "An SMP was answered: (attribute ID, request method, status).",
                            MakeTraceSourceAccessor(&IbSmaAgent::m_answeredTrace),
                            "ns3::IbSmaAgent::AnsweredCallback")
            .AddTraceSource("SmpDropped",
                            "An SMP was discarded unanswered: (attribute ID, IbSmaDropReason).",
                            MakeTraceSourceAccessor(&IbSmaAgent::m_droppedTrace),
                            "ns3::IbSmaAgent::DroppedCallback");
    return tid;
}

IbSmaAgent::IbSmaAgent() = default;
IbSmaAgent::~IbSmaAgent() = default;

void
IbSmaAgent::DoDispose()
{
    for (auto& [tid, ev] : m_pendingTraps)
    {
        ev.Cancel();
    }
    m_pendingTraps.clear();
    for (auto& [port, st] : m_state)
    {
        st.leaseTimer.Cancel();
    }
    m_disp = nullptr;
    m_smInfoHandler = SmInfoHandler();
    Object::DoDispose();
}

void
IbSmaAgent::Install(Ptr<IbMadDispatcher> dispatcher)
{
    m_disp = dispatcher;
    m_disp->SetSmaHandler(MakeCallback(&IbSmaAgent::HandleSmp, this));
    if (m_disp->IsSwitch())
    {
        State(0); // the management port holds the switch's M_Key
    }
    // The port's "PortState" trace source, looked up by name once rather than once a port
    // (TraceConnectWithoutContext searches the TypeId's trace sources by string: at k=16 that
    // search was 3 % of the whole bring-up).
    static const Ptr<const TraceSourceAccessor> portState =
        IbNetDevice::GetTypeId().LookupTraceSourceByName("PortState");
    NS_ASSERT(portState);
    static const Ptr<const TraceSourceAccessor> pkeyViolation =
        IbNetDevice::GetTypeId().LookupTraceSourceByName("PkeyViolation");
    NS_ASSERT(pkeyViolation);
    for (auto& p : m_disp->GetPorts())
    {
        const uint8_t n = p->GetPortNumber();
        State(n);
        if (!m_disp->IsSwitch())
        {
            pkeyViolation->ConnectWithoutContext(
                PeekPointer(p),
                Callback<void, const IbPkeyViolation&>(
                    [this, n](const IbPkeyViolation& v) { SendTrap257(n, v); }));
        }
        // The port's P_Key table holds PartitionCap entries (NodeInfo, §14.2.5.3); what it
        // held stays (entry 0, the default partition).
        std::vector<uint16_t> pkeys = p->GetPkeyTable();
        pkeys.resize(IbPKeyTableBlock::kEntries * PkeyBlocks(), 0);
        p->SetPkeyTable(pkeys);
        portState->ConnectWithoutContext(
            PeekPointer(p),
            Callback<void, uint8_t, uint8_t>(
                [this, n](uint8_t o, uint8_t s) { PortStateChanged(n, o, s); }));
    }
}

IbSmaAgent::PortState&
IbSmaAgent::State(uint8_t port)
{
    auto it = m_state.find(port);
    if (it == m_state.end())
    {
        PortState st;
        // P_KeyTable entry 0 is the default partition, full member (§10.9.1.2); GUIDInfo
        // entry 0 is the port GUID (§14.2.5.5).
        st.pkeys.assign(32u * PkeyBlocks(), 0);
        st.pkeys[0] = 0xFFFF;
        st.guids.assign(kGuidCap, 0);
        Ptr<IbNetDevice> dev = m_disp ? m_disp->GetPort(port) : nullptr;
        st.guids[0] = (m_disp && m_disp->IsSwitch()) ? NodeGuid() : (dev ? dev->GetPortGuid() : 0);
        it = m_state.emplace(port, st).first;
    }
    return it->second;
}

void
IbSmaAgent::SetIsSm(uint8_t port, bool isSm)
{
    PortState& st = State(port);
    if (st.isSm == isSm)
    {
        return;
    }
    st.isSm = isSm;
    if (m_trapsEnabled && m_disp && !m_disp->IsSwitch())
    {
        SendTrap144(port);
    }
}

void
IbSmaAgent::SetSmInfoHandler(SmInfoHandler handler)
{
    m_smInfoHandler = handler;
}

uint64_t
IbSmaAgent::NodeGuid() const
{
    if (m_nodeGuid != 0 || !m_disp)
    {
        return m_nodeGuid;
    }
    if (m_disp->IsSwitch())
    {
        return m_disp->GetSwitch()->GetNodeGuid();
    }
    auto ports = m_disp->GetPorts();
    return ports.empty() ? 0 : ports[0]->GetPortGuid() - ports[0]->GetPortNumber();
}

uint64_t
IbSmaAgent::GetAnsweredCount(uint16_t status) const
{
    auto it = m_answered.find(status);
    return it == m_answered.end() ? 0 : it->second;
}

uint64_t
IbSmaAgent::GetDropCount(IbSmaDropReason r) const
{
    return m_drops[static_cast<size_t>(r)];
}

uint16_t
IbSmaAgent::GetMKeyViolations(uint8_t port) const
{
    auto it = m_state.find(port);
    return it == m_state.end() ? 0 : it->second.mKeyViolations;
}

uint64_t
IbSmaAgent::GetMKey(uint8_t port) const
{
    auto it = m_state.find(port);
    return it == m_state.end() ? 0 : it->second.mKey;
}

// ---- request handling -----------------------------------------------------------------------

IbSmaAgent::PortState&
IbSmaAgent::KeyPort(const IbReceivedMad& req)
{
    return State(m_disp->IsSwitch() ? 0 : req.portNumber);
}

bool
IbSmaAgent::MKeyCheck(const IbReceivedMad& req, bool* hideMKey)
{
    // IBA vol. 1 §14.2.4.1: no check while the port's M_Key is 0 or the keys match; otherwise a
    // Get passes with protection bits 0 (M_Key visible) or 1 (PortInfo.M_Key reads as 0), and
    // everything else fails.
    PortState& st = KeyPort(req);
    *hideMKey = false;
    if (st.mKey == 0 || req.smp.GetMKey() == st.mKey)
    {
        if (st.mKey != 0)
        {
            st.leaseTimer.Cancel(); // the SM that owns the key is alive (§14.2.4.2)
        }
        return true;
    }
    const uint8_t method = req.smp.Mad().GetMethod();
    if (method == IbMadMethod::Get && st.mKeyProtect <= 1)
    {
        *hideMKey = st.mKeyProtect == 1;
        return true;
    }
    IbPortCounters::Add(st.mKeyViolations, 1);
    // §14.2.4.2: a violation starts the M_Key lease period unless it is already running; if
    // no SMP with the right key stops it, protection ends.
    if (st.mKeyLease != 0 && !st.leaseTimer.IsRunning())
    {
        PortState* p = &st;
        st.leaseTimer = Simulator::Schedule(Seconds(st.mKeyLease), [p]() { p->mKeyProtect = 0; });
    }
    return false;
}

void
IbSmaAgent::HandleSmp(const IbReceivedMad& req)
{
    IbSmp smp = req.smp;
    IbMadHeader& mad = smp.Mad();
    const uint16_t attr = mad.GetAttributeId();
    const uint8_t method = mad.GetMethod();
    bool hideMKey = false;
    if (!MKeyCheck(req, &hideMKey))
    {
        NS_LOG_LOGIC("bad M_Key on attribute " << attr);
        m_drops[static_cast<size_t>(IbSmaDropReason::BadMKey)]++;
        m_droppedTrace(attr, static_cast<uint8_t>(IbSmaDropReason::BadMKey));
        if (m_trapsEnabled)
        {
            SendTrap256(req);
        }
        return;
    }
    if (method == IbMadMethod::TrapRepress)
    {
        // §13.4.9: the manager acknowledges the trap with that TransactionID: stop repeating
        // it; nothing is sent back.
        auto it = m_pendingTraps.find(mad.GetTransactionId());
        if (it != m_pendingTraps.end())
        {
            it->second.Cancel();
            m_pendingTraps.erase(it);
            m_trapsRepressed++;
        }
        m_drops[static_cast<size_t>(IbSmaDropReason::TrapRepress)]++;
        m_droppedTrace(attr, static_cast<uint8_t>(IbSmaDropReason::TrapRepress));
        return;
    }
    uint16_t status = IbMadStatus::Ok;
    if (mad.GetBaseVersion() != kIbMadBaseVersion || mad.GetClassVersion() != kIbSmpClassVersion)
    {
        status = IbMadStatus::BadVersion;
    }
    else if (method != IbMadMethod::Get && method != IbMadMethod::Set)
    {
        status = IbMadStatus::UnsupportedMethod;
    }
    else
    {
        const bool set = method == IbMadMethod::Set;
        status = Attribute(req, smp, set);
        if (status == IbMadStatus::Ok && set)
        {
            status = Attribute(req, smp, false); // answer with the values now in force
        }
        if (status == IbMadStatus::Ok && hideMKey && attr == IbSmAttr::PortInfo)
        {
            std::memset(smp.Data(), 0, 8);
        }
        if (hideMKey && attr == IbSmAttr::SmInfo)
        {
            // §14.2.5.13: SMInfo.SM_Key (bytes 8-15) reads as 0 for a requester that is not
            // authenticated, as PortInfo.M_Key does under protection bits 1.
            std::memset(smp.Data() + 8, 0, 8);
        }
    }
    mad.SetMethod(IbMadMethod::GetResp);
    if (smp.IsDirectedRoute())
    {
        smp.SetDirection(true);
    }
    smp.SetSmpStatus(status);
    m_answered[status]++;
    m_answeredTrace(attr, method, status);
    if (!m_disp->SendSmpResponse(req, smp))
    {
        m_drops[static_cast<size_t>(IbSmaDropReason::SendFailed)]++;
        m_droppedTrace(attr, static_cast<uint8_t>(IbSmaDropReason::SendFailed));
    }
}

uint16_t
IbSmaAgent::Attribute(const IbReceivedMad& req, IbSmp& smp, bool set)
{
    const bool sw = m_disp->IsSwitch();
    switch (smp.Mad().GetAttributeId())
    {
    case IbSmAttr::NodeInfo:
        if (set)
        {
            return IbMadStatus::UnsupportedMethodAttr; // read-only (§14.2.5.3)
        }
        FillNodeInfo(req, smp.Data());
        return IbMadStatus::Ok;
    case IbSmAttr::NodeDescription: {
        if (set)
        {
            return IbMadStatus::UnsupportedMethodAttr;
        }
        IbNodeDescription d;
        d.text = m_description.empty()
                     ? "cnuas node " + std::to_string(m_disp->GetNode()->GetId())
                     : m_description;
        d.WriteTo(smp.Data());
        return IbMadStatus::Ok;
    }
    case IbSmAttr::SwitchInfo:
        return sw ? DoSwitchInfo(smp, set) : IbMadStatus::UnsupportedMethodAttr;
    case IbSmAttr::PortInfo:
        return DoPortInfo(req, smp, set);
    case IbSmAttr::PKeyTable:
        return DoPKeyTable(req, smp, set);
    case IbSmAttr::GuidInfo:
        return DoGuidInfo(req, smp, set);
    case IbSmAttr::LinearForwardingTable:
        return sw ? DoLft(smp, set) : IbMadStatus::UnsupportedMethodAttr;
    case IbSmAttr::MulticastForwardingTable:
        return sw ? DoMft(smp, set) : IbMadStatus::UnsupportedMethodAttr;
    case IbSmAttr::SlToVlMappingTable:
        return DoSlToVl(req, smp, set);
    case IbSmAttr::VlArbitrationTable:
        return DoVlArb(req, smp, set);
    case IbSmAttr::SmInfo:
        return DoSmInfo(smp, set);
    default:
        return IbMadStatus::UnsupportedMethodAttr;
    }
}

void
IbSmaAgent::FillNodeInfo(const IbReceivedMad& req, uint8_t* data) const
{
    IbNodeInfo n;
    const bool sw = m_disp->IsSwitch();
    n.nodeType = sw ? IbNodeType::Switch : IbNodeType::ChannelAdapter;
    n.numPorts = m_disp->GetNumPorts();
    n.systemImageGuid = m_systemImageGuid;
    n.nodeGuid = NodeGuid();
    // A switch's port GUID is that of port 0, its node GUID (§14.2.5.3).
    n.portGuid = sw ? NodeGuid() : (req.port ? req.port->GetPortGuid() : 0);
    n.partitionCap = static_cast<uint16_t>(32u * PkeyBlocks());
    n.deviceId = m_deviceId;
    n.revision = m_revision;
    n.localPortNum = req.portNumber;
    n.vendorId = m_vendorId;
    n.WriteTo(data);
}

uint16_t
IbSmaAgent::DoSwitchInfo(IbSmp& smp, bool set)
{
    Ptr<IbSwitch> sw = m_disp->GetSwitch();
    if (set)
    {
        IbSwitchInfo in;
        in.ReadFrom(smp.Data());
        if (in.linearFdbTop >= sw->GetLinearFdbCap())
        {
            return IbMadStatus::InvalidField;
        }
        // MulticastFDBTop 0 is what an SM that does not know the field writes: no change.
        if (in.multicastFdbTop != 0 && !sw->SetMulticastFdbTop(in.multicastFdbTop))
        {
            return IbMadStatus::InvalidField;
        }
        sw->SetLinearFdbTop(in.linearFdbTop);
        m_lifeTime = in.lifeTimeValue;
        if (in.portStateChange)
        {
            m_portStateChange = false; // §14.2.5.4: written as 1 to clear
        }
        return IbMadStatus::Ok;
    }
    IbSwitchInfo s;
    s.linearFdbCap = sw->GetLinearFdbCap();
    s.linearFdbTop = sw->GetLinearFdbTop();
    s.multicastFdbCap = sw->GetMulticastFdbCap();
    s.multicastFdbTop = sw->GetMulticastFdbTop();
    s.defaultMulticastPrimaryPort = 0xFF;
    s.defaultMulticastNotPrimaryPort = 0xFF;
    s.lifeTimeValue = m_lifeTime;
    s.portStateChange = m_portStateChange;
    s.lidsPerPort = 0;
    s.WriteTo(smp.Data());
    return IbMadStatus::Ok;
}

void
IbSmaAgent::FillPortInfo(uint8_t port, uint8_t localPort, bool hideMKey, IbPortInfo& pi) const
{
    const bool sw = m_disp->IsSwitch();
    // Install() made a state for every port (and a switch's port 0).
    static const PortState kNone{};
    auto found = m_state.find(port);
    const PortState& st = found != m_state.end() ? found->second : kNone;
    pi.gidPrefix = kDefaultGidPrefix;
    pi.mKey = hideMKey ? 0 : st.mKey;
    pi.mKeyProtectBits = st.mKeyProtect;
    pi.mKeyLeasePeriod = st.mKeyLease;
    pi.mKeyViolations = st.mKeyViolations;
    pi.masterSmSl = st.masterSmSl;
    pi.subnetTimeOut = st.subnetTimeOut;
    pi.clientReregister = st.clientReregister;
    pi.linkDownDefaultState = st.linkDownDefault;
    pi.guidCap = static_cast<uint8_t>(st.guids.size());
    pi.localPortNum = localPort;
    pi.capabilityMask = IbPortCap::IsSlMappingSupported | IbPortCap::IsSystemImageGuidSupported |
                        (st.isSm ? IbPortCap::IsSm : 0);
    if (sw && port == 0)
    {
        // Base switch port 0 (§17.2.1.1): the switch's LID, LMC and SM LID; no link.
        Ptr<IbSwitch> s = m_disp->GetSwitch();
        pi.lid = s->GetLid();
        pi.lmc = s->GetLmc();
        pi.masterSmLid = m_switchSmLid;
        pi.capabilityMask |= IbPortCap::IsTrapSupported;
        // A switch's CapabilityMask is read from port 0 for all its ports (§14.2.5.6; ibnetdisc
        // and iblinkinfo read a switch port's LinkSpeedExt fields only when port 0 has it).
        for (const auto& ext : m_disp->GetPorts())
        {
            if (SpeedsExtUpTo(ext->GetSupportedRate().speed) != 0)
            {
                pi.capabilityMask |= IbPortCap::IsExtendedSpeedsSupported;
                break;
            }
        }
        pi.portState = static_cast<uint8_t>(IbPortState::Active);
        pi.portPhysicalState = static_cast<uint8_t>(IbPhysState::LinkUp);
        pi.neighborMtu = 5;
        pi.mtuCap = 5;
        pi.vlCap = 1;
        pi.operationalVls = 1;
        return;
    }
    Ptr<IbNetDevice> d = m_disp->GetPort(port);
    if (!sw)
    {
        pi.lid = d->GetLid();
        pi.lmc = d->GetLmc();
        pi.masterSmLid = d->GetSmLid();
    }
    else
    {
        pi.mKey = 0; // M_Key, LID and SM LID live in port 0 of a switch (§14.2.5.6)
        pi.mKeyProtectBits = 0;
    }
    const IbLinkRate sup = d->GetSupportedRate();
    const bool linked = d->GetPhysState() == IbPhysState::LinkUp;
    const IbLinkRate act = d->GetActiveRate();
    pi.linkWidthSupported = WidthsUpTo(sup.width);
    pi.linkWidthEnabled = st.widthEnabled == 0xFF ? pi.linkWidthSupported : st.widthEnabled;
    pi.linkWidthActive = linked ? WidthCode(act.width) : 0;
    pi.linkSpeedSupported = SpeedsUpTo(sup.speed);
    pi.linkSpeedEnabled = st.speedEnabled == 0x0F ? pi.linkSpeedSupported : st.speedEnabled;
    pi.linkSpeedActive = linked ? SpeedCode(act.speed) : 0;
    pi.linkSpeedExtSupported = SpeedsExtUpTo(sup.speed);
    pi.linkSpeedExtEnabled =
        st.speedExtEnabled == 0x1F ? pi.linkSpeedExtSupported : st.speedExtEnabled;
    pi.linkSpeedExtActive = linked ? SpeedExtCode(act.speed) : 0;
    if (pi.linkSpeedExtSupported != 0)
    {
        pi.capabilityMask |= IbPortCap::IsExtendedSpeedsSupported;
    }
    pi.portState = static_cast<uint8_t>(d->GetPortState());
    pi.portPhysicalState = static_cast<uint8_t>(d->GetPhysState());
    pi.pKeyViolations = static_cast<uint16_t>(std::min<uint64_t>(d->GetPkeyViolations(), 0xFFFF));
    pi.neighborMtu = MtuCode(d->GetMtu());
    pi.mtuCap = 5;
    pi.vlCap = VlCode(d->GetVlCap());
    pi.operationalVls = VlCode(d->GetOperationalVls());
    pi.vlHighLimit = d->GetVlArbiter().LimitOfHighPriority();
    pi.vlArbitrationHighCap = kVlArbCap;
    pi.vlArbitrationLowCap = kVlArbCap;
    pi.vlStallCount = st.vlStallCount;
    pi.hoqLife = st.hoqLife;
}

uint16_t
IbSmaAgent::DoPortInfo(const IbReceivedMad& req, IbSmp& smp, bool set)
{
    // AttributeModifier: the port number at a switch (0 = management port); at a CA 0 means
    // the port the SMP came in on (§14.2.5.6).
    const bool sw = m_disp->IsSwitch();
    // Bit 31 is SMSupportsExtendedSpeeds (IBA vol. 1 rel. 1.3 §14.2.5.6): the SM understands
    // the LinkSpeedExt fields (opensm sets it on every PortInfo it sends to such a port). It
    // names no port.
    uint32_t mod = smp.Mad().GetAttributeModifier() & 0x7FFFFFFFu;
    uint8_t port;
    if (sw)
    {
        if (mod > m_disp->GetNumPorts())
        {
            return IbMadStatus::InvalidField;
        }
        port = static_cast<uint8_t>(mod);
    }
    else
    {
        port = mod == 0 ? req.portNumber : static_cast<uint8_t>(mod);
        if (mod > 0xFF || !m_disp->GetPort(port))
        {
            return IbMadStatus::InvalidField;
        }
    }
    if (!set)
    {
        IbPortInfo pi;
        FillPortInfo(port, req.portNumber, false, pi);
        pi.WriteTo(smp.Data());
        return IbMadStatus::Ok;
    }
    IbPortInfo in;
    in.ReadFrom(smp.Data());
    PortState& st = State(port);
    const bool mgmtPort = sw && port == 0;
    Ptr<IbNetDevice> d = mgmtPort ? nullptr : m_disp->GetPort(port);
    const bool hasLid = !sw || mgmtPort;

    // Check every field first: an invalid one rejects the whole Set (§14.2.5.6 notes).
    if (hasLid && (!IsUnicastLid(in.lid) || !IsUnicastLid(in.masterSmLid)))
    {
        return IbMadStatus::InvalidField;
    }
    IbPortState next = static_cast<IbPortState>(in.portState);
    if (d)
    {
        const uint8_t supW = WidthsUpTo(d->GetSupportedRate().width);
        if (in.linkWidthEnabled != 0 && in.linkWidthEnabled != 0xFF &&
            (in.linkWidthEnabled & ~supW) != 0)
        {
            return IbMadStatus::InvalidField;
        }
        const uint8_t supS = SpeedsUpTo(d->GetSupportedRate().speed);
        if (in.linkSpeedEnabled != 0 && in.linkSpeedEnabled != 0x0F &&
            (in.linkSpeedEnabled & ~supS) != 0)
        {
            return IbMadStatus::InvalidField;
        }
        if (in.neighborMtu != 0 && (in.neighborMtu > 5))
        {
            return IbMadStatus::InvalidField;
        }
        if (in.operationalVls != 0)
        {
            const uint8_t vls = VlCount(in.operationalVls);
            if (vls == 0 || vls > d->GetVlCap())
            {
                return IbMadStatus::InvalidField;
            }
            const bool carrying = d->GetPortState() == IbPortState::Armed ||
                                  d->GetPortState() == IbPortState::Active;
            // Only while Down or Init (§14.2.5.6), or in the Set that takes the port Down:
            // the link then comes back through Init with the new VLs (§7.2.7), which is how
            // opensm changes a configured port's OperationalVLs.
            if (carrying && vls != d->GetOperationalVls() && next != IbPortState::Down)
            {
                return IbMadStatus::InvalidField;
            }
        }
        // PortState: NoChange, Down, Armed (from Init), Active (from Armed); setting the
        // current state again is no change (§14.2.5.6, §7.2).
        const IbPortState cur = d->GetPortState();
        const bool ok = next == IbPortState::NoChange || next == cur ||
                        next == IbPortState::Down ||
                        (next == IbPortState::Armed && cur == IbPortState::Init) ||
                        (next == IbPortState::Active && cur == IbPortState::Armed);
        if (!ok)
        {
            return IbMadStatus::InvalidField;
        }
        // PortPhysicalState: NoChange, Polling (enable) or Disabled; the current state written
        // back (a PortInfo read, modified and written) is no change either.
        const uint8_t phys = in.portPhysicalState;
        if (phys != 0 && phys != 2 && phys != 3 &&
            phys != static_cast<uint8_t>(d->GetPhysState()))
        {
            return IbMadStatus::InvalidField;
        }
    }
    else if (in.portState > static_cast<uint8_t>(IbPortState::Active))
    {
        return IbMadStatus::InvalidField;
    }
    if (in.linkDownDefaultState > 2)
    {
        return IbMadStatus::InvalidField;
    }

    // Apply.
    if (!sw || mgmtPort)
    {
        st.mKey = in.mKey;
        st.mKeyProtect = in.mKeyProtectBits;
        st.mKeyLease = in.mKeyLeasePeriod;
    }
    if (mgmtPort)
    {
        Ptr<IbSwitch> s = m_disp->GetSwitch();
        s->SetLid(in.lid);
        s->SetLmc(in.lmc);
        m_switchSmLid = in.masterSmLid;
    }
    st.masterSmSl = in.masterSmSl;
    st.subnetTimeOut = in.subnetTimeOut;
    st.clientReregister = in.clientReregister;
    if (in.linkDownDefaultState != 0)
    {
        st.linkDownDefault = in.linkDownDefaultState;
    }
    st.hoqLife = in.hoqLife;
    st.vlStallCount = in.vlStallCount;
    if (d)
    {
        if (!sw)
        {
            d->SetLid(in.lid);
            d->SetLmc(in.lmc);
            d->SetSmLid(in.masterSmLid);
        }
        if (in.linkWidthEnabled != 0)
        {
            st.widthEnabled = in.linkWidthEnabled;
        }
        if (in.linkSpeedEnabled != 0)
        {
            st.speedEnabled = in.linkSpeedEnabled;
        }
        if (in.neighborMtu != 0)
        {
            d->SetMtu(MtuBytes(in.neighborMtu));
        }
        const uint8_t newVls = in.operationalVls == 0 ? 0 : VlCount(in.operationalVls);
        const bool downFirst = next == IbPortState::Down && d->GetPortState() != IbPortState::Down;
        if (newVls != 0 && newVls != d->GetOperationalVls() && !downFirst)
        {
            d->SetOperationalVls(newVls);
        }
        IbVlArbiter& arb = d->GetVlArbiter();
        if (in.vlHighLimit != arb.LimitOfHighPriority())
        {
            arb.SetTables(arb.High(), arb.Low(), in.vlHighLimit);
        }
        if (next == IbPortState::Down && d->GetPortState() != IbPortState::Down)
        {
            // The answer goes out first: taking the link down at once would discard it with
            // everything else queued on the port, and the SM (opensm downs a port whose
            // OperationalVLs or MTU it changes) would see a timeout for a Set that was done.
            Simulator::Schedule(m_portDownDelay, [d, newVls]() {
                d->SetPortState(IbPortState::Down);
                if (newVls != 0)
                {
                    d->SetOperationalVls(newVls); // allowed now that the port is Down
                }
            });
        }
        else if (next != IbPortState::NoChange && next != d->GetPortState())
        {
            d->SetPortState(next);
        }
        if (in.portPhysicalState == 3 && d->GetPhysState() != IbPhysState::Disabled)
        {
            d->SetPhysicalLinkDown();
        }
        else if (in.portPhysicalState == 2 && d->GetPhysState() == IbPhysState::Disabled)
        {
            d->SetPhysicalLinkUp();
        }
    }
    return IbMadStatus::Ok;
}

uint16_t
IbSmaAgent::DoPKeyTable(const IbReceivedMad& req, IbSmp& smp, bool set)
{
    // AttributeModifier: block number in bits 15:0; a switch names the port in bits 31:16
    // (§14.2.5.7).
    const uint32_t mod = smp.Mad().GetAttributeModifier();
    const uint16_t block = static_cast<uint16_t>(mod & 0xFFFF);
    uint8_t port = req.portNumber;
    if (m_disp->IsSwitch())
    {
        const uint32_t p = mod >> 16;
        if (p > m_disp->GetNumPorts())
        {
            return IbMadStatus::InvalidField;
        }
        port = static_cast<uint8_t>(p);
    }
    else if ((mod >> 16) != 0)
    {
        return IbMadStatus::InvalidField;
    }
    if (block >= PkeyBlocks())
    {
        return IbMadStatus::InvalidField;
    }
    // A port with a link keeps its table in the net device, where the transport checks packets
    // against it (IBA vol. 1 §10.9.3); a switch's management port 0 has only the SMA's.
    Ptr<IbNetDevice> dev = port == 0 ? nullptr : m_disp->GetPort(port);
    const uint16_t first = static_cast<uint16_t>(IbPKeyTableBlock::kEntries * block);
    IbPKeyTableBlock b;
    if (set)
    {
        b.ReadFrom(smp.Data());
        if (dev)
        {
            // Install sized the table to PartitionCap: the block fits.
            dev->SetPkeys(first, b.pkey.data(), IbPKeyTableBlock::kEntries);
        }
        else
        {
            std::copy(b.pkey.begin(), b.pkey.end(), State(port).pkeys.begin() + first);
        }
        return IbMadStatus::Ok;
    }
    const std::vector<uint16_t>& table = dev ? dev->GetPkeyTable() : State(port).pkeys;
    for (uint32_t i = 0; i < IbPKeyTableBlock::kEntries; ++i)
    {
        b.pkey[i] = first + i < table.size() ? table[first + i] : 0;
    }
    b.WriteTo(smp.Data());
    return IbMadStatus::Ok;
}

uint16_t
IbSmaAgent::DoGuidInfo(const IbReceivedMad& req, IbSmp& smp, bool set)
{
    // GUIDInfo belongs to CA ports and to a switch's port 0 (§14.2.5.5); AttributeModifier is
    // the block number.
    const uint32_t block = smp.Mad().GetAttributeModifier();
    PortState& st = State(m_disp->IsSwitch() ? 0 : req.portNumber);
    if (block != 0)
    {
        return IbMadStatus::InvalidField; // GUIDCap 8: one block
    }
    IbGuidInfoBlock b;
    if (set)
    {
        b.ReadFrom(smp.Data());
        // Entry 0 is the port's own GUID and cannot be changed (§14.2.5.5).
        std::copy(b.guid.begin() + 1, b.guid.end(), st.guids.begin() + 1);
        return IbMadStatus::Ok;
    }
    std::copy(st.guids.begin(), st.guids.end(), b.guid.begin());
    b.WriteTo(smp.Data());
    return IbMadStatus::Ok;
}

uint16_t
IbSmaAgent::DoLft(IbSmp& smp, bool set)
{
    // AttributeModifier: block of 64 LIDs (§14.2.5.10), within LinearFDBCap.
    Ptr<IbSwitch> sw = m_disp->GetSwitch();
    const uint32_t block = smp.Mad().GetAttributeModifier();
    if (block >= sw->GetLinearFdbCap() / 64u)
    {
        return IbMadStatus::InvalidField;
    }
    IbLftBlock b;
    if (set)
    {
        b.ReadFrom(smp.Data());
        return sw->SetLftBlock(static_cast<uint16_t>(block), b.port.data())
                   ? IbMadStatus::Ok
                   : IbMadStatus::InvalidField;
    }
    sw->GetLftBlock(static_cast<uint16_t>(block), b.port.data());
    b.WriteTo(smp.Data());
    return IbMadStatus::Ok;
}

uint16_t
IbSmaAgent::DoMft(IbSmp& smp, bool set)
{
    // AttributeModifier (§14.2.5.12): port-mask position in bits 31:28 (16 ports each), block
    // of 32 MLIDs in bits 8:0, within MulticastFDBCap and the switch's ports.
    Ptr<IbSwitch> sw = m_disp->GetSwitch();
    const uint32_t mod = smp.Mad().GetAttributeModifier();
    const auto block = static_cast<uint16_t>(mod & 0x1FF);
    const auto position = static_cast<uint8_t>(mod >> 28);
    if ((mod & 0x0FFFFE00) != 0 || uint32_t(block) * IbMftBlock::kEntries >= sw->GetMulticastFdbCap() ||
        uint32_t(position) * 16 > sw->GetNPorts())
    {
        return IbMadStatus::InvalidField;
    }
    IbMftBlock b;
    if (set)
    {
        b.ReadFrom(smp.Data());
        if (!sw->SetMftBlock(block, position, b.mask.data()))
        {
            return IbMadStatus::InvalidField;
        }
    }
    sw->GetMftBlock(block, position, b.mask.data());
    b.WriteTo(smp.Data());
    return IbMadStatus::Ok;
}

uint16_t
IbSmaAgent::DoSlToVl(const IbReceivedMad& req, IbSmp& smp, bool set)
{
    // A switch names the (input, output) port pair in AttributeModifier bits 15:8 and 7:0; a
    // CA port has one table (§14.2.5.8).
    const uint32_t mod = smp.Mad().GetAttributeModifier();
    IbSlToVlTable t;
    if (m_disp->IsSwitch())
    {
        Ptr<IbSwitch> sw = m_disp->GetSwitch();
        const uint32_t in = (mod >> 8) & 0xFF;
        const uint32_t out = mod & 0xFF;
        if ((mod >> 16) != 0 || in > sw->GetNPorts() || out == 0 || out > sw->GetNPorts())
        {
            return IbMadStatus::InvalidField;
        }
        if (set)
        {
            t.ReadFrom(smp.Data());
            sw->SetSlToVl(static_cast<uint8_t>(in), static_cast<uint8_t>(out), t.vl);
            return IbMadStatus::Ok;
        }
        for (uint8_t sl = 0; sl < 16; ++sl)
        {
            t.vl[sl] = sw->MapSlToVl(static_cast<uint8_t>(in), static_cast<uint8_t>(out), sl);
        }
        t.WriteTo(smp.Data());
        return IbMadStatus::Ok;
    }
    if (mod != 0)
    {
        return IbMadStatus::InvalidField;
    }
    Ptr<IbNetDevice> d = req.port;
    if (set)
    {
        t.ReadFrom(smp.Data());
        d->SetSlToVl(t.vl);
        return IbMadStatus::Ok;
    }
    for (uint8_t sl = 0; sl < 16; ++sl)
    {
        t.vl[sl] = d->MapSlToVl(sl);
    }
    t.WriteTo(smp.Data());
    return IbMadStatus::Ok;
}

uint16_t
IbSmaAgent::DoVlArb(const IbReceivedMad& req, IbSmp& smp, bool set)
{
    // AttributeModifier bits 31:16: 1/2 = low-priority entries 0-31/32-63, 3/4 = high-priority
    // 0-31/32-63; bits 15:0 the output port of a switch (§14.2.5.9).
    const uint32_t mod = smp.Mad().GetAttributeModifier();
    const uint32_t blockId = mod >> 16;
    uint32_t portNum = mod & 0xFFFF;
    if (!m_disp->IsSwitch())
    {
        portNum = req.portNumber;
    }
    Ptr<IbNetDevice> d = m_disp->GetPort(static_cast<uint8_t>(portNum));
    if (blockId < 1 || blockId > 4 || portNum > 0xFF || !d)
    {
        return IbMadStatus::InvalidField;
    }
    IbVlArbiter& arb = d->GetVlArbiter();
    const bool high = blockId >= 3;
    const size_t first = (blockId % 2 == 1) ? 0 : 32;
    std::vector<IbVlArbEntry> table = high ? arb.High() : arb.Low();
    IbVlArbTableBlock b;
    if (set)
    {
        b.ReadFrom(smp.Data());
        if (table.size() < first + 32)
        {
            table.resize(first + 32);
        }
        for (size_t i = 0; i < 32; ++i)
        {
            table[first + i].vl = b.vl[i];
            table[first + i].weight = b.weight[i];
        }
        // Trailing empty entries change nothing (weight 0 is skipped, §7.6.9).
        while (!table.empty() && table.back().weight == 0)
        {
            table.pop_back();
        }
        if (high)
        {
            arb.SetTables(table, arb.Low(), arb.LimitOfHighPriority());
        }
        else
        {
            arb.SetTables(arb.High(), table, arb.LimitOfHighPriority());
        }
        return IbMadStatus::Ok;
    }
    for (size_t i = 0; i < 32; ++i)
    {
        if (first + i < table.size())
        {
            b.vl[i] = table[first + i].vl;
            b.weight[i] = table[first + i].weight;
        }
    }
    b.WriteTo(smp.Data());
    return IbMadStatus::Ok;
}

uint16_t
IbSmaAgent::DoSmInfo(IbSmp& smp, bool set)
{
    // The SM behind the port answers (§14.2.5.13, §14.4.1): the SMA only carries the MAD.
    if (m_smInfoHandler.IsNull())
    {
        return IbMadStatus::UnsupportedMethodAttr;
    }
    if (!set && smp.Mad().GetMethod() == IbMadMethod::Set)
    {
        return IbMadStatus::Ok; // the read-back of a Set: the SM's answer to it is the data
    }
    IbSmp request = smp;
    request.Mad().SetMethod(set ? IbMadMethod::Set : IbMadMethod::Get);
    IbSmp response;
    const uint16_t status = m_smInfoHandler(request, response);
    if (status == IbMadStatus::UnsupportedMethodAttr)
    {
        return status;
    }
    // Other statuses (a SubnSet the SM refuses) go back with the SM's SMInfo as the data.
    std::memcpy(smp.Data(), response.Data(), IbSmp::kDataBytes);
    return status;
}

void
IbSmaAgent::SendTrap144(uint8_t port)
{
    Ptr<IbNetDevice> d = m_disp->GetPort(port);
    if (!d || d->GetLid() == 0 || d->GetSmLid() == 0 || d->GetSmLid() == d->GetLid())
    {
        return; // no SM to tell, or the SM is this port's own (it knows)
    }
    IbSmp smp = IbSmp::MakeLidRouted(IbMadMethod::Trap, IbSmAttr::Notice, 0, m_nextTid++);
    smp.SetMKey(State(port).mKey);
    IbNotice n;
    n.isGeneric = true;
    n.type = 4;         // informational
    n.producerType = 1; // channel adapter
    n.trapNumber = 144;
    n.issuerLid = d->GetLid();
    // Trap 144 DataDetails (§14.2.5.1, Table 121): reserved (2), LIDADDR (2), reserved and
    // OtherLocalChanges (2), CapabilityMask (4), reserved (2), the change flags (2) and
    // CapabilityMask2 (2); the flags and OtherLocalChanges stay 0: only the mask changed.
    n.dataDetails[2] = static_cast<uint8_t>(d->GetLid() >> 8);
    n.dataDetails[3] = static_cast<uint8_t>(d->GetLid());
    IbPortInfo pi;
    FillPortInfo(port, port, true, pi);
    n.dataDetails[6] = static_cast<uint8_t>(pi.capabilityMask >> 24);
    n.dataDetails[7] = static_cast<uint8_t>(pi.capabilityMask >> 16);
    n.dataDetails[8] = static_cast<uint8_t>(pi.capabilityMask >> 8);
    n.dataDetails[9] = static_cast<uint8_t>(pi.capabilityMask);
    n.WriteTo(smp.Data());
    SendTrap(smp, port, d->GetSmLid(), m_trapRepeats);
}

// ---- traps ----------------------------------------------------------------------------------

void
IbSmaAgent::PortStateChanged(uint8_t port, uint8_t oldState, uint8_t newState)
{
    NS_LOG_LOGIC("port " << unsigned(port) << " state " << unsigned(oldState) << " -> "
                         << unsigned(newState));
    if (!m_disp || !m_disp->IsSwitch())
    {
        return; // trap 128 is a switch's (§14.2.5.1 Table 121)
    }
    // IBA vol. 1 §14.2.5.4 (SwitchInfo.PortStateChange): set when a port goes from Down to
    // Init or from Init, Armed or Active to Down, i.e. when a link comes or goes. Init->Armed
    // and Armed->Active are the SM's own doing (SubnSet PortInfo) and set nothing; a trap for
    // them would only make the SM sweep again what it has just configured.
    const auto down = static_cast<uint8_t>(IbPortState::Down);
    if (oldState != down && newState != down)
    {
        return;
    }
    m_portStateChange = true;
    if (m_trapsEnabled)
    {
        SendTrap128();
    }
}

void
IbSmaAgent::SendTrap128()
{
    Ptr<IbSwitch> sw = m_disp->GetSwitch();
    if (sw->GetLid() == 0 || m_switchSmLid == 0)
    {
        return; // nobody to tell yet: the SM finds out on its next sweep
    }
    IbSmp smp = IbSmp::MakeLidRouted(IbMadMethod::Trap, IbSmAttr::Notice, 0, m_nextTid++);
    smp.SetMKey(State(0).mKey);
    IbNotice n;
    n.isGeneric = true;
    n.type = 1;         // urgent
    n.producerType = 2; // switch
    n.trapNumber = 128;
    n.issuerLid = sw->GetLid();
    n.dataDetails[0] = static_cast<uint8_t>(sw->GetLid() >> 8); // LIDADDR
    n.dataDetails[1] = static_cast<uint8_t>(sw->GetLid());
    n.WriteTo(smp.Data());
    SendTrap(smp, 0, m_switchSmLid, m_trapRepeats);
}

void
IbSmaAgent::SendTrap256(const IbReceivedMad& req)
{
    const bool sw = m_disp->IsSwitch();
    const uint8_t port = sw ? 0 : req.portNumber;
    const uint16_t lid = m_disp->GetLid(port);
    const uint16_t smLid = sw ? m_switchSmLid : (req.port ? req.port->GetSmLid() : 0);
    if (lid == 0 || smLid == 0)
    {
        return; // no SM to tell yet
    }
    IbSmp smp = IbSmp::MakeLidRouted(IbMadMethod::Trap, IbSmAttr::Notice, 0, m_nextTid++);
    IbNotice n;
    n.isGeneric = true;
    n.type = 2; // security
    n.producerType = sw ? 2 : 1;
    n.trapNumber = 256;
    n.issuerLid = lid;
    // Trap 256 DataDetails (§14.2.5.1 Table 121; byte positions as Wireshark 4.0 decodes
    // them): reserved (2), LIDADDR = the offender's SLID, DRSLID, Method, reserved,
    // AttributeID, AttributeModifier, the M_Key it used, DRNotice | DRPathTruncated |
    // DRHopCount (6 bits), and the first 30 bytes of its ReturnPath.
    const IbSmp& bad = req.smp;
    uint8_t* d = n.dataDetails.data();
    IbMadStore16(d + 2, req.view.lrh.GetSlid());
    d[6] = bad.Mad().GetMethod();
    IbMadStore16(d + 8, bad.Mad().GetAttributeId());
    const uint32_t mod = bad.Mad().GetAttributeModifier();
    IbMadStore16(d + 10, static_cast<uint16_t>(mod >> 16));
    IbMadStore16(d + 12, static_cast<uint16_t>(mod));
    const uint64_t key = bad.GetMKey();
    for (int i = 0; i < 8; ++i)
    {
        d[14 + i] = static_cast<uint8_t>(key >> (56 - 8 * i));
    }
    if (bad.IsDirectedRoute())
    {
        IbMadStore16(d + 4, bad.GetDrSlid());
        const uint8_t hc = bad.GetHopCount();
        d[23] = static_cast<uint8_t>(0x80 | (hc >= 30 ? 0x40 : 0) | (hc & 0x3F));
        std::copy(bad.ReturnPath().begin(), bad.ReturnPath().begin() + 30, d + 24);
    }
    n.WriteTo(smp.Data());
    SendTrap(smp, port, smLid, m_trapRepeats);
}

void
IbSmaAgent::SendTrap257(uint8_t port, const IbPkeyViolation& v)
{
    Ptr<IbNetDevice> d = m_disp ? m_disp->GetPort(port) : nullptr;
    if (!m_trapsEnabled || !d || d->GetLid() == 0 || d->GetSmLid() == 0)
    {
        return; // no SM to tell yet; P_KeyViolations counts it
    }
    PortState& st = State(port);
    if (st.badPkeyTrapTid != 0 && m_pendingTraps.count(st.badPkeyTrapTid) != 0)
    {
        return; // the last one is still repeated: a flood of bad packets is one trap
    }
    IbSmp smp = IbSmp::MakeLidRouted(IbMadMethod::Trap, IbSmAttr::Notice, 0, m_nextTid++);
    smp.SetMKey(st.mKey);
    IbNotice n;
    n.isGeneric = true;
    n.type = 2;         // security
    n.producerType = 1; // channel adapter
    n.trapNumber = 257;
    n.issuerLid = d->GetLid();
    // Trap 257 DataDetails (§14.2.5.1 Table 121; byte positions as Wireshark 4.0 decodes
    // them): reserved (2), LIDADDR1 and LIDADDR2 (the packet's SLID and DLID), the P_Key in a
    // 32-bit Key, SL in the high 4 bits of a byte, QP1 (the sender's) and, after a reserved
    // byte, QP2 (the destination's), then GIDADDR1 and GIDADDR2 when the packet had a GRH.
    uint8_t* dd = n.dataDetails.data();
    IbMadStore16(dd + 2, v.slid);
    IbMadStore16(dd + 4, v.dlid);
    IbMadStore16(dd + 8, v.pkey);
    dd[10] = static_cast<uint8_t>((v.sl & 0x0F) << 4);
    dd[11] = static_cast<uint8_t>(v.srcQp >> 16);
    dd[12] = static_cast<uint8_t>(v.srcQp >> 8);
    dd[13] = static_cast<uint8_t>(v.srcQp);
    dd[15] = static_cast<uint8_t>(v.dstQp >> 16);
    dd[16] = static_cast<uint8_t>(v.dstQp >> 8);
    dd[17] = static_cast<uint8_t>(v.dstQp);
    if (v.global)
    {
        std::copy(v.sgid.begin(), v.sgid.end(), dd + 18);
        std::copy(v.dgid.begin(), v.dgid.end(), dd + 34);
    }
    n.WriteTo(smp.Data());
    st.badPkeyTrapTid = smp.Mad().GetTransactionId();
    SendTrap(smp, port, d->GetSmLid(), m_trapRepeats);
}

void
IbSmaAgent::SendTrap(IbSmp smp, uint8_t port, uint16_t dlid, uint32_t repeatsLeft)
{
    const uint64_t tid = smp.Mad().GetTransactionId();
    m_pendingTraps.erase(tid);
    if (m_disp->SendLidRoutedSmp(port, smp, dlid))
    {
        m_trapsSent++;
    }
    if (repeatsLeft > 0)
    {
        auto again = [this, smp, port, dlid, repeatsLeft]() {
            SendTrap(smp, port, dlid, repeatsLeft - 1);
        };
        m_pendingTraps[tid] = Simulator::Schedule(m_trapRepeatInterval, again);
    }
}

} // namespace ns3
