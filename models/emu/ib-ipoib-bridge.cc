#include "ib-ipoib-bridge.h"

#include "emu-realtime-simulator-impl.h"

#include "models/common/big-endian.h"
#include "models/ib/ib-crc.h"
#include "models/ib/ib-gid.h"
#include "models/mgmt/ib-gmp.h"
#include "models/mgmt/ib-sa-records.h"
#include "models/rdma/ib-bth-header.h"
#include "models/rdma/ib-deth-header.h"
#include "models/rdma/ib-opcode.h"

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

void
PutMac(uint8_t* p, uint64_t mac)
{
    for (int i = 0; i < 6; ++i)
    {
        p[i] = static_cast<uint8_t>(mac >> (8 * (5 - i)));
    }
}
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
                                          MakeUintegerChecker<uint64_t>());
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
    if (m_self < m_peers.size() && m_peers[m_self].port)
    {
        m_peers[m_self].port->SetIbFrameReceiveCallback(IbNetDevice::IbFrameReceiveCallback());
    }
    m_peers.clear();
    m_paths.clear();
    m_byTid.clear();
    m_sendSa = Callback<bool, const uint8_t*>();
    Object::DoDispose();
}

void
IbIpoibBridge::SetPeers(const std::vector<Peer>& peers)
{
    m_peers = peers;
    m_paths.assign(peers.size(), Path());
    m_byTid.clear();
    m_byIp.clear();
    for (uint32_t i = 0; i < peers.size(); ++i)
    {
        m_byIp[peers[i].ip] = i;
    }
}

bool
IbIpoibBridge::Start(uint32_t self, int tapFd, std::string* why)
{
    NS_ABORT_MSG_IF(self >= m_peers.size(), "IbIpoibBridge::Start: no peer " << self);
    m_self = self;
    Ptr<IbNetDevice> port = m_peers[self].port;
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
    // The hook that sends a datagram held for a full queue (only the emulation's loop has one).
    if (auto emu = EmuRealtimeSimulatorImpl::Current(); emu && m_idleHook == 0)
    {
        m_idleHook = emu->AddIdleHook([this](int64_t) { return OnIdle(); });
    }
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
    m_held.clear();
    m_tap.Stop();
}

bool
IbIpoibBridge::OnIdle()
{
    if (m_held.empty())
    {
        return false;
    }
    Ptr<IbNetDevice> port = m_peers[m_self].port;
    if (port->GetPortState() == IbPortState::Active && !port->CanSend(0))
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
    const uint16_t type = LoadBe16(f + 12);
    const uint8_t* l3 = f + 14;
    const uint32_t l3Len = len - 14;
    uint32_t dst = 0;
    uint32_t carried = l3Len;
    if (type == kEtherIpv4 && l3Len >= 20 && (l3[0] >> 4) == 4)
    {
        dst = LoadBe32(l3 + 16);
        carried = std::min<uint32_t>(l3Len, LoadBe16(l3 + 2)); // no Ethernet padding on the wire
    }
    else if (type == kEtherArp && l3Len >= 28)
    {
        dst = LoadBe32(l3 + 24); // the target protocol address
        carried = 28;
    }
    else
    {
        m_counters.notIp++;
        return 0;
    }
    auto it = m_byIp.find(dst);
    if (it == m_byIp.end())
    {
        m_counters.noPeer++;
        return 0;
    }
    const uint32_t to = it->second;
    Ptr<IbNetDevice> port = m_peers[m_self].port;
    const uint16_t ownLid = port->GetLid();
    const uint16_t smLid = port->GetSmLid();
    if (ownLid == 0 || smLid == 0)
    {
        m_counters.noPath++; // no SM has run: no LID, and no SA to ask for a path
        return 0;
    }
    Path& path = m_paths[to];
    if (path.valid && (path.ownLid != ownLid || path.smLid != smLid))
    {
        // The kernel's IPoIB flushes its paths when the port's LID or SM changes (the
        // LID_CHANGE and SM_CHANGE events): whatever it knew may be another SM's.
        path.valid = false;
    }
    if (path.valid)
    {
        return SendDatagram(to, type, l3, carried, f, len);
    }
    if (path.waiting.size() >= m_pathQueueLength)
    {
        m_counters.noPath++;
        return 0;
    }
    path.waiting.emplace_back(f, f + len);
    if (path.tid == 0)
    {
        StartPathQuery(to);
    }
    return 0;
}

uint32_t
IbIpoibBridge::SendDatagram(uint32_t to,
                            uint16_t type,
                            const uint8_t* l3,
                            uint32_t carried,
                            const uint8_t* f,
                            uint32_t len)
{
    const Path& path = m_paths[to];
    // IBA vol. 1 §9.2: the payload is padded to a multiple of 4 bytes, PadCnt says how much.
    const uint32_t payload = kIpoibHeaderBytes + carried;
    const uint32_t pad = (4 - payload % 4) % 4;
    m_scratch.assign(payload + pad, 0);
    m_scratch[0] = static_cast<uint8_t>(type >> 8);
    m_scratch[1] = static_cast<uint8_t>(type);
    std::copy(l3, l3 + carried, m_scratch.begin() + kIpoibHeaderBytes);
    Ptr<Packet> p = Create<Packet>(m_scratch.data(), static_cast<uint32_t>(m_scratch.size()));
    IbDethHeader deth;
    deth.SetQkey(kQkey);
    deth.SetSrcQp(kQpn);
    p->AddHeader(deth);
    IbBthHeader bth;
    bth.SetOpCode(IbOpcode::kUdSendOnly);
    bth.SetPadCnt(static_cast<uint8_t>(pad));
    bth.SetPkey(kDefaultPkey);
    bth.SetDestQp(kQpn);
    bth.SetPsn(m_psn++);
    p->AddHeader(bth);
    Ptr<IbNetDevice> port = m_peers[m_self].port;
    if (port->SendIb(p, path.dlid, path.sl))
    {
        m_counters.sentToFabric++;
        return 1;
    }
    if (port->GetPortState() != IbPortState::Active)
    {
        m_counters.notActive++;
    }
    else if (!port->CanSend(path.sl) && m_idleHook != 0 && m_tap.IsPolled() && m_held.empty())
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
IbIpoibBridge::StartPathQuery(uint32_t to)
{
    Path& path = m_paths[to];
    Ptr<IbNetDevice> port = m_peers[m_self].port;
    path.tid = (uint64_t{kSaTidHigh} << 32) | m_nextTid++;
    if (m_nextTid == 0)
    {
        m_nextTid = 1; // 0 means "no query out"
    }
    m_byTid[path.tid] = to;
    // As the kernel's path_rec_start: DGID, SGID, NumbPath 1, TClass (the broadcast group's,
    // 0) and P_Key, one path asked for; whatever SM answers picks DLID and SL.
    IbPathRecord rec;
    rec.sgid = IbMakeGid(m_subnetPrefix, port->GetPortGuid());
    rec.dgid = IbMakeGid(m_subnetPrefix, m_peers[to].port->GetPortGuid());
    rec.numbPath = 1;
    rec.tClass = 0;
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
    Simulator::Schedule(m_pathQueryTimeout, &IbIpoibBridge::PathQueryTimedOut, this, to, path.tid);
}

void
IbIpoibBridge::PathQueryTimedOut(uint32_t to, uint64_t tid)
{
    if (to >= m_paths.size() || m_paths[to].tid != tid)
    {
        return; // answered
    }
    m_counters.pathErrors++;
    EndPathQuery(to, false);
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
    auto it = m_byTid.find(tid);
    if (it == m_byTid.end())
    {
        return true; // ours, but late: its query timed out
    }
    const uint32_t to = it->second;
    Path& path = m_paths[to];
    if (resp.Mad().GetStatus() != IbMadStatus::Ok)
    {
        m_counters.pathErrors++;
        EndPathQuery(to, false);
        return true;
    }
    IbPathRecord rec;
    rec.ReadFrom(resp.Data());
    Ptr<IbNetDevice> port = m_peers[m_self].port;
    path.dlid = rec.dlid;
    path.sl = rec.sl;
    path.ownLid = port->GetLid();
    path.smLid = port->GetSmLid();
    path.valid = rec.dlid != 0;
    if (!path.valid)
    {
        m_counters.pathErrors++;
    }
    EndPathQuery(to, path.valid);
    return true;
}

void
IbIpoibBridge::EndPathQuery(uint32_t to, bool ok)
{
    Path& path = m_paths[to];
    m_byTid.erase(path.tid);
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

int
IbIpoibBridge::PeerByLid(uint16_t lid) const
{
    for (uint32_t i = 0; i < m_peers.size(); ++i)
    {
        if (m_peers[i].port->GetLid() == lid)
        {
            return static_cast<int>(i);
        }
    }
    return -1;
}

void
IbIpoibBridge::FromFabric(Ptr<IbNetDevice> dev, const IbFrame& frame, const IbRxInfo& info)
{
    const uint32_t n = frame.bytes;
    {
        // Only QP kQpn is IPoIB's; anything else on this port (the HCA's own RDMA traffic)
        // goes to the HCA model, judged by the BTH alone.
        const uint32_t bth = kLrhBytes + (info.lnh == IbLnh::IbaGlobal ? kGrhBytes : 0);
        uint8_t head[kLrhBytes + kGrhBytes + kBthBytes];
        if (!m_other.IsNull() &&
            (info.lnh == IbLnh::IbaLocal || info.lnh == IbLnh::IbaGlobal) && n >= bth + kBthBytes)
        {
            frame.CopyHead(head, bth + kBthBytes);
            if ((LoadBe32(head + bth + 4) & 0xFFFFFF) != kQpn)
            {
                m_counters.toHca++;
                m_other(dev, frame, info);
                return;
            }
        }
    }
    m_scratch.resize(n);
    frame.CopyBytes(m_scratch.data());
    const uint8_t* b = m_scratch.data();
    uint32_t off = kLrhBytes + (info.lnh == IbLnh::IbaGlobal ? kGrhBytes : 0);
    const uint32_t crcs = static_cast<uint32_t>(kIbIcrcSize + kIbVcrcSize);
    if (off + kBthBytes + kDethBytes + kIpoibHeaderBytes + crcs > n || b[off] != IbOpcode::kUdSendOnly ||
        (LoadBe32(b + off + 4) & 0xFFFFFF) != kQpn || LoadBe32(b + off + kBthBytes) != kQkey)
    {
        m_counters.notIpoib++;
        return;
    }
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
    const int from = PeerByLid(info.slid);
    if (from < 0 || (type != kEtherIpv4 && type != kEtherArp))
    {
        m_counters.notIpoib++;
        return;
    }
    m_frame.resize(14 + l3Len); // reused: no allocation per packet
    const bool arpRequest = type == kEtherArp && l3Len >= 8 && LoadBe16(l3 + 6) == 1;
    PutMac(m_frame.data(), arpRequest ? 0xFFFFFFFFFFFFULL : m_peers[m_self].mac);
    PutMac(m_frame.data() + 6, m_peers[from].mac);
    m_frame[12] = static_cast<uint8_t>(type >> 8);
    m_frame[13] = static_cast<uint8_t>(type);
    std::copy(l3, l3 + l3Len, m_frame.begin() + 14);
    m_counters.received++;
    m_tap.Write(m_frame.data(), m_frame.size());
}

IbIpoibBridgeCounters
IbIpoibBridge::GetCounters() const
{
    IbIpoibBridgeCounters c = m_counters;
    static_cast<TapPortCounters&>(c) = m_tap.GetCounters();
    return c;
}

} // namespace ns3
