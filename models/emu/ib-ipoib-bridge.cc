#include "ib-ipoib-bridge.h"

#include "emu-realtime-simulator-impl.h"

#include "models/common/big-endian.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-gid.h"
#include "models/mgmt/ib-gmp.h"
#include "models/ib/ib-grh-header.h"
#include "models/mgmt/ib-sa-records.h"
#include "models/rdma/ib-bth-header.h"
#include "models/rdma/ib-deth-header.h"
#include "models/rdma/ib-opcode.h"
#include "models/rdma/ib-wire-bytes.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("IbIpoibBridge");
NS_OBJECT_ENSURE_REGISTERED(IbIpoibBridge);

namespace
{
constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherArp = 0x0806;
constexpr uint32_t kLrhBytes = 8;
constexpr uint32_t kGrhBytes = 40;
constexpr uint32_t kBthBytes = 12;
constexpr uint32_t kDethBytes = 8;
constexpr uint32_t kIpoibHeaderBytes = 4; ///< RFC 4391 §6: EtherType, reserved
/// The high half of the transaction IDs of this bridge's SA queries ("IPoI"): the answers
/// are told from those to the host's other managers (rdma_cm's, umad's) by it.
constexpr uint32_t kSaTidHigh = 0x49504F49;
constexpr uint16_t kDefaultPkey = 0xFFFF;
constexpr uint32_t kMulticastQpn = 0xFFFFFF; ///< IBA vol. 1 §10.5.2.2: the QPN of a multicast
constexpr uint64_t kBroadcastMac = 0xFFFFFFFFFFFFULL;
// ARP (RFC 826) in Ethernet form and in IPoIB form (RFC 4391 §9.1: hardware type 32, 20-byte
// link addresses: a flags byte, the QPN, the port GID).
constexpr uint32_t kEthArpBytes = 28;
constexpr uint32_t kIbArpBytes = 56;
constexpr uint16_t kArpHwEthernet = 1;
constexpr uint16_t kArpHwInfiniband = 32;
constexpr uint32_t kIbLinkAddressBytes = 20;
constexpr uint16_t kArpRequest = 1; ///< RFC 826's operation code of a request
/// Link addresses one bridge keeps (its kernel's neighbours); the kernel's ARP table has a
/// bound of its own (gc_thresh3, 1,024 by default), this one only keeps memory bounded.
constexpr size_t kMaxNeighbours = 65536;

} // namespace

TypeId
IbIpoibBridge::GetTypeId()
{
    static TypeId tid = TypeId("ns3::IbIpoibBridge")
                            .SetParent<Object>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<IbIpoibBridge>()
                            .AddAttribute("PathQueryTimeout",
                                          "How long a PathRecord query waits for the SA's "
                                          "answer (the kernel's IPoIB: 1000 ms, no retry; "
                                          "the next packet asks again)",
                                          TimeValue(Seconds(1)),
                                          MakeTimeAccessor(&IbIpoibBridge::m_pathQueryTimeout),
                                          MakeTimeChecker(NanoSeconds(1)))
                            .AddAttribute("JoinTimeout",
                                          "How long a join of the broadcast group waits for the "
                                          "SA's answer before it counts as failed and is tried "
                                          "again after the backoff (the kernel's SA multicast "
                                          "queries: 3000 ms)",
                                          TimeValue(Seconds(3)),
                                          MakeTimeAccessor(&IbIpoibBridge::m_joinTimeout),
                                          MakeTimeChecker(NanoSeconds(1)))
                            .AddAttribute("JoinBackoff",
                                          "How long after its first failed join the bridge "
                                          "joins again; each further failure doubles it, up "
                                          "to 16 s (the kernel's IPoIB: 1 s)",
                                          TimeValue(Seconds(1)),
                                          MakeTimeAccessor(&IbIpoibBridge::m_joinBackoff),
                                          MakeTimeChecker(NanoSeconds(1), Seconds(16)))
                            .AddAttribute("PathQueueLength",
                                          "How many packets to one destination wait for its "
                                          "path; more are dropped (IPOIB_MAX_PATH_REC_QUEUE)",
                                          UintegerValue(3),
                                          MakeUintegerAccessor(&IbIpoibBridge::m_pathQueueLength),
                                          MakeUintegerChecker<uint32_t>(1, 1024))
                            .AddAttribute("SubnetPrefix",
                                          "The GID prefix of the fabric's ports (PathRecord's "
                                          "SGID and DGID), the link-local one by default",
                                          UintegerValue(kIbDefaultSubnetPrefix),
                                          MakeUintegerAccessor(&IbIpoibBridge::m_subnetPrefix),
                                          MakeUintegerChecker<uint64_t>())
                            .AddTraceSource("NeighbourLearnt",
                                            "An IPv4 address's IPoIB link address learnt or "
                                            "changed from an ARP packet: the address (host "
                                            "order) and the link address's port GID",
                                            MakeTraceSourceAccessor(
                                                &IbIpoibBridge::m_neighbourLearnt),
                                            "ns3::IbIpoibBridge::NeighbourLearntCallback");
    return tid;
}

IbIpoibBridge::IbIpoibBridge() = default;

IbIpoibBridge::~IbIpoibBridge()
{
    Stop();
}

void
IbIpoibBridge::DoDispose()
{
    Stop();
    if (m_port)
    {
        m_port->SetIbFrameReceiveCallback(IbNetDevice::IbFrameReceiveCallback());
    }
    m_port = nullptr;
    m_paths.clear();
    m_pathByTid.clear();
    m_byIp.clear();
    m_sendSa = Callback<bool, const uint8_t*>();
    Object::DoDispose();
}

bool
IbIpoibBridge::Start(Ptr<IbNetDevice> port, uint64_t mac, int tapFd, std::string* why)
{
    NS_ABORT_MSG_IF(!port, "IbIpoibBridge::Start: no port");
    m_port = port;
    m_mac = mac;
    // The device's frame consumer, not its Packet one: the HCA's RDMA traffic, which is nearly
    // all a busy port carries, passes through here to the HCA model without an ns-3 Packet
    // built and copied out again for every packet (15 % of a bulk transfer's daemon time).
    port->SetIbFrameReceiveCallback(MakeCallback(&IbIpoibBridge::FromFabric, this));
    const uint32_t context = port->GetNode() ? port->GetNode()->GetId() : Simulator::NO_CONTEXT;
    if (!m_tap.Start(tapFd,
                     context,
                     TapPortConfig(),
                     [this](const uint8_t* b, uint32_t n) -> uint32_t { return FromHost(b, n); },
                     why))
    {
        return false;
    }
    // The kernel's IPoIB joins on PORT_ACTIVE and again on LID_CHANGE and SM_CHANGE.
    port->TraceConnectWithoutContext("PortState", MakeCallback(&IbIpoibBridge::OnPortState, this));
    port->TraceConnectWithoutContext("Lid", MakeCallback(&IbIpoibBridge::OnLidChange, this));
    port->TraceConnectWithoutContext("SmLid", MakeCallback(&IbIpoibBridge::OnLidChange, this));
    m_traced = true;
    m_group.backoff = m_joinBackoff;
    // The hook that sends a datagram held for a full queue (only the emulation's loop has one).
    if (auto emu = EmuRealtimeSimulatorImpl::Current(); emu && m_idleHook == 0)
    {
        m_idleHook = emu->AddIdleHook([this](int64_t) { return OnIdle(); });
    }
    MaybeJoin(); // an SM may have run already
    return true;
}

void
IbIpoibBridge::Stop()
{
    if (m_idleHook != 0)
    {
        if (auto emu = EmuRealtimeSimulatorImpl::Current())
        {
            emu->RemoveIdleHook(m_idleHook);
        }
        m_idleHook = 0;
    }
    if (m_traced && m_port)
    {
        m_port->TraceDisconnectWithoutContext("PortState",
                                              MakeCallback(&IbIpoibBridge::OnPortState, this));
        m_port->TraceDisconnectWithoutContext("Lid", MakeCallback(&IbIpoibBridge::OnLidChange, this));
        m_port->TraceDisconnectWithoutContext("SmLid",
                                              MakeCallback(&IbIpoibBridge::OnLidChange, this));
        m_traced = false;
    }
    m_group.retry.Cancel();
    m_held.clear();
    m_tap.Stop();
}

IbIpoibBridge::LinkAddress
IbIpoibBridge::OwnAddress() const
{
    return LinkAddress{kQpn, IbMakeGid(m_subnetPrefix, m_port->GetPortGuid())};
}

bool
IbIpoibBridge::LookupNeighbour(uint32_t ip, IbGid& gid) const
{
    auto it = m_byIp.find(ip);
    if (it == m_byIp.end())
    {
        return false;
    }
    gid = it->second.gid;
    return true;
}

void
IbIpoibBridge::StartOwnArp(uint16_t operation, uint32_t senderIp)
{
    // RFC 4391 §4: an IPoIB ARP packet is RFC 826's with hardware type 32 and 20-byte link
    // addresses. This interface's link address and `senderIp` are the sender's; the target's
    // fields stay zero for the caller to fill.
    m_arp.assign(kIbArpBytes, 0);
    StoreBe16(m_arp.data(), kArpHwInfiniband);
    StoreBe16(m_arp.data() + 2, kEtherIpv4);
    m_arp[4] = kIbLinkAddressBytes;
    m_arp[5] = 4;
    StoreBe16(m_arp.data() + 6, operation);
    const LinkAddress own = OwnAddress();
    StoreBe32(m_arp.data() + 8, own.qpn); // flags byte 0: datagram mode, no connected mode
    std::copy(own.gid.begin(), own.gid.end(), m_arp.begin() + 12);
    StoreBe32(m_arp.data() + 28, senderIp);
}

bool
IbIpoibBridge::SolicitNeighbour(uint32_t ip, uint32_t ownIp)
{
    if (!m_port)
    {
        return false;
    }
    if (!IsJoinedNow())
    {
        m_counters.notJoined++;
        MaybeJoin();
        return false;
    }
    // The request the kernel's arp_solicit sends over IPoIB: the target's link address
    // unknown (zeros), its address.
    StartOwnArp(kArpRequest, ownIp);
    StoreBe32(m_arp.data() + 52, ip);
    Destination group;
    group.broadcast = true;
    if (SendDatagram(group, kEtherArp, m_arp.data(), kIbArpBytes, nullptr, 0) == 0)
    {
        return false;
    }
    m_counters.solicited++;
    return true;
}

uint64_t
IbIpoibBridge::MacFor(const LinkAddress& a)
{
    const auto key = std::make_pair(a.qpn, a.gid);
    if (auto it = m_macOf.find(key); it != m_macOf.end())
    {
        return it->second;
    }
    if (m_macOf.size() >= kMaxNeighbours)
    {
        return 0; // full: a program flooding made-up link addresses does not grow it further
    }
    // Locally administered, the GUID's low 40 bits: a user reading `ip neigh` can tell the port.
    // Another address with the same low bits (another QPN of the port) takes the next free one.
    uint64_t mac = 0x020000000000ULL | (IbGidGuid(a.gid) & 0xFFFFFFFFFFULL);
    while (m_byMac.count(mac) != 0 || mac == m_mac)
    {
        mac = 0x020000000000ULL | ((mac + 1) & 0xFFFFFFFFFFULL);
    }
    m_macOf[key] = mac;
    m_byMac[mac] = a;
    return mac;
}

uint64_t
IbIpoibBridge::NextTid()
{
    const uint64_t tid = (uint64_t{kSaTidHigh} << 32) | m_nextTid++;
    if (m_nextTid == 0)
    {
        m_nextTid = 1; // 0 means "no query out"
    }
    return tid;
}

void
IbIpoibBridge::OnPortState(uint8_t, uint8_t newState)
{
    if (newState != static_cast<uint8_t>(IbPortState::Active))
    {
        m_group.joined = false; // the kernel's carrier goes with the port
        return;
    }
    MaybeJoin();
}

void
IbIpoibBridge::OnLidChange(uint16_t oldLid, uint16_t newLid)
{
    if (oldLid != newLid && (m_group.tid != 0 || m_group.retry.IsRunning()))
    {
        // LID_CHANGE and SM_CHANGE flush the kernel's multicast state: a join still out (to an
        // SM that may be gone, from a LID that is not ours now) is abandoned, any backoff
        // forgotten, and the group joined again at once. Its answer, if it comes, is late.
        m_group.tid = 0;
        m_group.retry.Cancel();
        m_group.backoff = m_joinBackoff;
    }
    MaybeJoin();
}

void
IbIpoibBridge::MaybeJoin()
{
    if (!m_port || m_sendSa.IsNull() || m_port->GetPortState() != IbPortState::Active)
    {
        return;
    }
    if (m_port->GetLid() == 0 || m_port->GetSmLid() == 0 || IsJoinedNow())
    {
        return;
    }
    m_group.joined = false; // another LID or SM: joined again, as the kernel's flush does
    if (m_group.tid != 0 || m_group.retry.IsRunning())
    {
        return; // a join is out, or waits for its backoff
    }
    // As ipoib_mcast_join for the broadcast group: the SM made it, the interface joins as a
    // full member giving MGID, PortGID, P_Key and JoinState, and takes the rest from the answer.
    IbMcMemberRecord rec;
    rec.mgid = IbIpoibBroadcastGroup(kDefaultPkey).mgid;
    rec.portGid = OwnAddress().gid;
    rec.pkey = kDefaultPkey;
    rec.joinState = IbMcMemberRecord::kFullMember;
    const uint64_t mask = IbMcMemberRecord::kCompMgid | IbMcMemberRecord::kCompPortGid |
                          IbMcMemberRecord::kCompPkey | IbMcMemberRecord::kCompJoinState;
    m_group.tid = NextTid();
    m_counters.joins++;
    m_sendSa(rec.Request(IbMadMethod::Set, mask, m_group.tid).data());
    Simulator::Schedule(m_joinTimeout, &IbIpoibBridge::JoinTimedOut, this, m_group.tid);
}

void
IbIpoibBridge::JoinTimedOut(uint64_t tid)
{
    if (m_group.tid != tid)
    {
        return; // answered
    }
    m_counters.joinErrors++;
    JoinFailed();
}

void
IbIpoibBridge::JoinFailed()
{
    m_group.tid = 0;
    // ipoib_multicast.c: the next try after 1, 2, 4 .. 16 s (IPOIB_MAX_BACKOFF_SECONDS).
    m_group.retry = Simulator::Schedule(m_group.backoff, &IbIpoibBridge::MaybeJoin, this);
    m_group.backoff = std::min(m_group.backoff * 2, Seconds(16));
}

void
IbIpoibBridge::PathQueryTimedOut(IbGid dgid, uint64_t tid)
{
    auto it = m_paths.find(dgid);
    if (it == m_paths.end() || it->second.tid != tid)
    {
        return; // answered
    }
    m_counters.pathErrors++;
    EndPathQuery(dgid, false);
}

bool
IbIpoibBridge::OnIdle()
{
    if (m_held.empty())
    {
        return false;
    }
    if (m_port->GetPortState() == IbPortState::Active && !m_port->CanSend(0))
    {
        return true; // still full: stay armed
    }
    std::vector<uint8_t> frame;
    frame.swap(m_held);
    m_tap.PauseReading(false);
    if (const uint32_t made = FromHost(frame.data(), static_cast<uint32_t>(frame.size())))
    {
        m_tap.AddFramesFromHost(made);
    }
    return !m_held.empty(); // held again: the port is still full
}

uint32_t
IbIpoibBridge::FromHost(const uint8_t* f, uint32_t len)
{
    // An untagged Ethernet frame from the kernel: IPv4 or ARP (IPv6 is off on the interface).
    if (len < 14)
    {
        m_counters.notIp++;
        return 0;
    }
    const uint64_t dstMac = LoadBe48(f);
    const uint16_t type = LoadBe16(f + 12);
    const uint8_t* l3 = f + 14;
    const uint32_t l3Len = len - 14;
    uint32_t carried = l3Len;
    if (type == kEtherIpv4 && l3Len >= 20 && (l3[0] >> 4) == 4)
    {
        carried = std::min<uint32_t>(l3Len, LoadBe16(l3 + 2)); // no Ethernet padding on the wire
    }
    else if (type == kEtherArp && l3Len >= kEthArpBytes && LoadBe16(l3) == kArpHwEthernet &&
             LoadBe16(l3 + 2) == kEtherIpv4 && l3[4] == 6 && l3[5] == 4)
    {
        carried = kIbArpBytes;
    }
    else
    {
        m_counters.notIp++;
        return 0;
    }
    const bool toGroup = dstMac == kBroadcastMac;
    if (!toGroup && (f[0] & 1) != 0)
    {
        m_counters.noGroup++; // IP multicast: the kernel would join its group first
        return 0;
    }
    if (!IsJoinedNow())
    {
        m_counters.notJoined++; // no SM has run, or the join is not answered yet
        MaybeJoin();
        return 0;
    }
    if (type == kEtherArp)
    {
        // The kernel's ARP in IPoIB form: this interface's link address as the sender's, the
        // target's if the kernel names one (a unicast probe) and it is a neighbour, else zeros.
        StartOwnArp(LoadBe16(l3 + 6), LoadBe32(l3 + 14)); // the operation, the sender IP
        if (auto t = m_byMac.find(LoadBe48(l3 + 18)); t != m_byMac.end())
        {
            StoreBe32(m_arp.data() + 32, t->second.qpn);
            std::copy(t->second.gid.begin(), t->second.gid.end(), m_arp.begin() + 36);
        }
        std::copy(l3 + 24, l3 + 28, m_arp.begin() + 52); // target IP
        l3 = m_arp.data();
    }
    if (toGroup)
    {
        Destination d;
        d.broadcast = true;
        return SendDatagram(d, type, l3, carried, f, len);
    }
    auto n = m_byMac.find(dstMac);
    if (n == m_byMac.end())
    {
        m_counters.noPeer++; // a MAC no IPoIB ARP gave: no neighbour has it
        return 0;
    }
    return SendToNeighbour(n->second, type, l3, carried, f, len);
}

uint32_t
IbIpoibBridge::SendToNeighbour(const LinkAddress& to,
                               uint16_t type,
                               const uint8_t* l3,
                               uint32_t carried,
                               const uint8_t* f,
                               uint32_t len)
{
    Path& path = m_paths[to.gid];
    const uint16_t ownLid = m_port->GetLid();
    const uint16_t smLid = m_port->GetSmLid();
    if (path.valid && (path.ownLid != ownLid || path.smLid != smLid))
    {
        // The kernel's IPoIB flushes its paths when the port's LID or SM changes (the
        // LID_CHANGE and SM_CHANGE events): whatever it knew may be another SM's.
        path.valid = false;
    }
    if (path.valid)
    {
        Destination d;
        d.dlid = path.dlid;
        d.sl = path.sl;
        d.qpn = to.qpn;
        return SendDatagram(d, type, l3, carried, f, len);
    }
    if (path.waiting.size() >= m_pathQueueLength)
    {
        m_counters.noPath++;
        return 0;
    }
    path.waiting.emplace_back(f, f + len);
    if (path.tid == 0)
    {
        StartPathQuery(to.gid);
    }
    return 0;
}

uint32_t
IbIpoibBridge::SendDatagram(const Destination& to,
                            uint16_t type,
                            const uint8_t* l3,
                            uint32_t carried,
                            const uint8_t* f,
                            uint32_t len)
{
    const IbMcMemberRecord& g = m_group.rec;
    // IBA vol. 1 §9.2: the payload is padded to a multiple of 4 bytes, PadCnt says how much.
    const uint32_t payload = kIpoibHeaderBytes + carried;
    const uint32_t pad = (4 - payload % 4) % 4;
    m_scratch.assign(payload + pad, 0);
    m_scratch[0] = static_cast<uint8_t>(type >> 8);
    m_scratch[1] = static_cast<uint8_t>(type);
    std::copy(l3, l3 + carried, m_scratch.begin() + kIpoibHeaderBytes);
    Ptr<Packet> p = Create<Packet>(m_scratch.data(), static_cast<uint32_t>(m_scratch.size()));
    IbDethHeader deth;
    deth.SetQkey(g.qkey); // the broadcast group's Q_Key is the interface's (ipoib_mcast_join_finish)
    deth.SetSrcQp(kQpn);
    p->AddHeader(deth);
    IbBthHeader bth;
    bth.SetOpCode(IbOpcode::kUdSendOnly);
    bth.SetPadCnt(static_cast<uint8_t>(pad));
    bth.SetPkey(kDefaultPkey);
    bth.SetDestQp(to.broadcast ? kMulticastQpn : to.qpn);
    bth.SetPsn(m_psn++);
    p->AddHeader(bth);
    uint16_t dlid = to.dlid;
    uint8_t sl = to.sl;
    IbLnh lnh = IbLnh::IbaLocal;
    if (to.broadcast)
    {
        // IBA vol. 1 §8.3: a multicast packet carries a GRH to its MGID; the group's SL, TClass,
        // FlowLabel and HopLimit (ipoib_mcast_join_finish's address handle).
        IbGrhHeader grh;
        grh.SetTClass(g.tClass);
        grh.SetFlowLabel(g.flowLabel);
        grh.SetPayLen(static_cast<uint16_t>(p->GetSize() + kIbIcrcSize));
        grh.SetNxtHdr(IbGrhHeader::kNxtHdrIba);
        grh.SetHopLmt(g.hopLimit);
        grh.SetSgid(OwnAddress().gid);
        grh.SetDgid(g.mgid);
        p->AddHeader(grh);
        dlid = g.mlid;
        sl = g.sl;
        lnh = IbLnh::IbaGlobal;
    }
    if (m_port->SendIb(p, dlid, sl, lnh))
    {
        m_counters.sentToFabric++;
        m_counters.broadcastSent += to.broadcast ? 1 : 0;
        return 1;
    }
    if (m_port->GetPortState() != IbPortState::Active)
    {
        m_counters.notActive++;
    }
    else if (f != nullptr && !m_port->CanSend(sl) && m_idleHook != 0 && m_tap.IsPolled() &&
             m_held.empty())
    {
        // A full send queue: as an IPoIB driver stops its netdev queue when the HCA's send
        // queue fills, the frame waits here and the TAP is not read until the port has room,
        // so the host's kernel queues (and its TCP paces itself) instead of losing datagrams:
        // dropping them cost iperf3 tens of thousands of retransmissions a second.
        m_held.assign(f, f + len);
        m_counters.heldBack++;
        m_tap.PauseReading(true);
        if (auto emu = EmuRealtimeSimulatorImpl::Current())
        {
            emu->ArmIdleHook(m_idleHook);
        }
    }
    else
    {
        m_counters.refused++;
    }
    return 0;
}

void
IbIpoibBridge::StartPathQuery(const IbGid& dgid)
{
    Path& path = m_paths[dgid];
    path.tid = NextTid();
    m_pathByTid[path.tid] = dgid;
    // As the kernel's path_rec_start: DGID, SGID, NumbPath 1, TClass (the broadcast group's,
    // 0) and P_Key, one path asked for; whatever SM answers picks DLID and SL.
    IbPathRecord rec;
    rec.sgid = OwnAddress().gid;
    rec.dgid = dgid;
    rec.numbPath = 1;
    rec.tClass = m_group.rec.tClass;
    rec.pkey = kDefaultPkey;
    const uint64_t mask = IbPathRecord::kCompDgid | IbPathRecord::kCompSgid |
                          IbPathRecord::kCompNumbPath | IbPathRecord::kCompTClass |
                          IbPathRecord::kCompPkey;
    m_counters.pathQueries++;
    // One that cannot be sent (no SM LID yet) ends as a timeout, as an unanswered one.
    if (!m_sendSa.IsNull())
    {
        m_sendSa(rec.Request(IbMadMethod::Get, mask, path.tid).data());
    }
    Simulator::Schedule(m_pathQueryTimeout, &IbIpoibBridge::PathQueryTimedOut, this, dgid,
                        path.tid);
}

bool
IbIpoibBridge::TakeSaResponse(const uint8_t* mad)
{
    IbSaMad resp;
    resp.ReadFrom(mad);
    const uint64_t tid = resp.Mad().GetTransactionId();
    if (static_cast<uint32_t>(tid >> 32) != kSaTidHigh ||
        resp.Mad().GetMgmtClass() != IbMgmtClass::SubnAdm || !resp.Mad().IsResponse())
    {
        return false;
    }
    if (tid != 0 && tid == m_group.tid)
    {
        IbMcMemberRecord rec;
        rec.ReadFrom(resp.Data());
        if (resp.Mad().GetStatus() != IbMadStatus::Ok ||
            rec.mgid != IbIpoibBroadcastGroup(kDefaultPkey).mgid || rec.mlid == 0)
        {
            m_counters.joinErrors++;
            JoinFailed();
            return true;
        }
        m_group.tid = 0;
        m_group.rec = rec;
        m_group.joined = true;
        m_group.ownLid = m_port->GetLid();
        m_group.smLid = m_port->GetSmLid();
        m_group.backoff = m_joinBackoff;
        return true;
    }
    auto it = m_pathByTid.find(tid);
    if (it == m_pathByTid.end())
    {
        return true; // ours, but late: its query timed out
    }
    const IbGid dgid = it->second;
    Path& path = m_paths[dgid];
    if (resp.Mad().GetStatus() != IbMadStatus::Ok)
    {
        m_counters.pathErrors++;
        EndPathQuery(dgid, false);
        return true;
    }
    IbPathRecord rec;
    rec.ReadFrom(resp.Data());
    path.dlid = rec.dlid;
    path.sl = rec.sl;
    path.ownLid = m_port->GetLid();
    path.smLid = m_port->GetSmLid();
    path.valid = rec.dlid != 0;
    if (!path.valid)
    {
        m_counters.pathErrors++;
    }
    EndPathQuery(dgid, path.valid);
    return true;
}

void
IbIpoibBridge::EndPathQuery(const IbGid& dgid, bool ok)
{
    Path& path = m_paths[dgid];
    m_pathByTid.erase(path.tid);
    path.tid = 0;
    std::vector<std::vector<uint8_t>> waiting;
    waiting.swap(path.waiting);
    if (!ok)
    {
        // The kernel keeps them for the next query; dropped here, counted: a path the SA did
        // not give is asked for again by the next packet.
        m_counters.noPath += waiting.size();
        return;
    }
    for (const auto& frame : waiting)
    {
        m_counters.waitedForPath++;
        FromHost(frame.data(), static_cast<uint32_t>(frame.size()));
    }
}

void
IbIpoibBridge::FromFabric(Ptr<IbNetDevice> dev, const IbFrame& frame, const IbRxInfo& info)
{
    const uint32_t n = frame.bytes;
    const bool global = info.lnh == IbLnh::IbaGlobal;
    const uint32_t bthOff = kLrhBytes + (global ? kGrhBytes : 0);
    {
        // IPoIB's are QP kQpn's packets and the broadcast group's (QPN 0xFFFFFF to its MLID and
        // MGID); anything else on this port (the HCA's own RDMA traffic, its multicast groups)
        // goes to the HCA model, judged by the headers alone.
        bool ipoib = false;
        uint8_t head[kLrhBytes + kGrhBytes + kBthBytes];
        if ((info.lnh == IbLnh::IbaLocal || global) && n >= bthOff + kBthBytes)
        {
            frame.CopyHead(head, bthOff + kBthBytes);
            const uint32_t destQp = LoadBe32(head + bthOff + 4) & 0xFFFFFF;
            const IbGid& mgid = m_group.rec.mgid;
            ipoib = destQp == kQpn ||
                    (destQp == kMulticastQpn && global && m_group.joined &&
                     info.dlid == m_group.rec.mlid &&
                     std::equal(mgid.begin(), mgid.end(), head + kLrhBytes + 24));
        }
        if (!ipoib && !m_other.IsNull())
        {
            m_counters.toHca++;
            m_other(dev, frame, info);
            return;
        }
    }
    m_scratch.resize(n);
    frame.CopyBytes(m_scratch.data());
    const uint8_t* b = m_scratch.data();
    uint32_t off = bthOff;
    const uint32_t crcs = static_cast<uint32_t>(kIbIcrcSize + kIbVcrcSize);
    // A UD SEND Only with the interface's Q_Key (IBA vol. 1 §10.2.4: a datagram whose Q_Key
    // differs from the QP's is dropped).
    if (!m_group.joined || off + kBthBytes + kDethBytes + kIpoibHeaderBytes + crcs > n ||
        b[off] != IbOpcode::kUdSendOnly || LoadBe32(b + off + kBthBytes) != m_group.rec.qkey)
    {
        m_counters.notIpoib++;
        return;
    }
    const bool toGroup = (LoadBe32(b + off + 4) & 0xFFFFFF) == kMulticastQpn;
    const uint32_t srcQp = LoadBe32(b + off + kBthBytes + 4) & 0xFFFFFF;
    const uint32_t pad = (b[off + 1] >> 4) & 3;
    off += kBthBytes + kDethBytes;
    if (off + kIpoibHeaderBytes + pad + crcs > n)
    {
        m_counters.notIpoib++;
        return;
    }
    const uint16_t type = LoadBe16(b + off);
    const uint8_t* l3 = b + off + kIpoibHeaderBytes;
    const uint32_t l3Len = n - off - kIpoibHeaderBytes - pad - crcs;
    if (type == kEtherArp)
    {
        ArpFromFabric(l3, l3Len, info.slid, toGroup);
        return;
    }
    if (type != kEtherIpv4)
    {
        m_counters.notIpoib++;
        return;
    }
    // The sender's MAC: the one its ARP was given (by its LID), else one made from the LID
    // and QPN (an IP packet from a host this one never exchanged ARP with).
    uint64_t src = 0x02FE00000000ULL | (uint64_t{srcQp & 0xFF} << 16) | info.slid;
    if (auto it = m_macByLid.find(info.slid); it != m_macByLid.end())
    {
        src = it->second;
    }
    std::copy(l3, l3 + l3Len, FrameForHost(toGroup, src, type, l3Len));
    WriteFrameForHost();
}

uint8_t*
IbIpoibBridge::FrameForHost(bool toGroup, uint64_t src, uint16_t type, uint32_t bodyBytes)
{
    m_frame.resize(14 + bodyBytes); // reused: no allocation per packet
    StoreBe48(m_frame.data(), toGroup ? kBroadcastMac : m_mac);
    StoreBe48(m_frame.data() + 6, src);
    StoreBe16(m_frame.data() + 12, type);
    return m_frame.data() + 14;
}

void
IbIpoibBridge::WriteFrameForHost()
{
    m_counters.received++;
    m_tap.Write(m_frame.data(), m_frame.size());
}

void
IbIpoibBridge::ArpFromFabric(const uint8_t* a, uint32_t length, uint16_t slid, bool toGroup)
{
    if (length < kIbArpBytes || LoadBe16(a) != kArpHwInfiniband || LoadBe16(a + 2) != kEtherIpv4 ||
        a[4] != kIbLinkAddressBytes || a[5] != 4)
    {
        m_counters.notIpoib++; // not IPoIB's ARP (an Ethernet-form one is not either)
        return;
    }
    auto address = [](const uint8_t* p) {
        LinkAddress l;
        l.qpn = IbWireLoad24(p + 1);
        std::copy(p + 4, p + 4 + 16, l.gid.begin());
        return l;
    };
    const LinkAddress sender = address(a + 8);
    const LinkAddress target = address(a + 32);
    // The kernel learns the sender's link address from its ARP; here the MAC that stands for it.
    const uint64_t senderMac = MacFor(sender);
    if (senderMac == 0)
    {
        m_counters.notIpoib++; // the neighbour table is full
        return;
    }
    m_macByLid[slid] = senderMac;
    // And the sender's address with it (the neighbour entry the kernel's rdma_cm reads).
    if (const uint32_t senderIp = LoadBe32(a + 28); senderIp != 0)
    {
        auto known = m_byIp.find(senderIp);
        if (known == m_byIp.end() ? m_byIp.size() < kMaxNeighbours : !(known->second == sender))
        {
            m_byIp[senderIp] = sender;
            m_neighbourLearnt(senderIp, sender.gid);
        }
    }
    uint64_t targetMac = 0;
    if (target == OwnAddress())
    {
        targetMac = m_mac;
    }
    else if (target.qpn != 0 || target.gid != IbGid{})
    {
        targetMac = MacFor(target); // 0 (as unknown) if the table is full
    }
    uint8_t* e = FrameForHost(toGroup, senderMac, kEtherArp, kEthArpBytes); // all 28 written
    StoreBe16(e, kArpHwEthernet);
    StoreBe16(e + 2, kEtherIpv4);
    e[4] = 6;
    e[5] = 4;
    std::copy(a + 6, a + 8, e + 6); // the operation
    StoreBe48(e + 8, senderMac);
    std::copy(a + 28, a + 32, e + 14);
    StoreBe48(e + 18, targetMac);
    std::copy(a + 52, a + 56, e + 24);
    WriteFrameForHost();
}

IbIpoibBridgeCounters
IbIpoibBridge::GetCounters() const
{
    IbIpoibBridgeCounters c = m_counters;
    static_cast<TapPortCounters&>(c) = m_tap.GetCounters();
    return c;
}

} // namespace ns3
