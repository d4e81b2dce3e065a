#include "emu-cm-service.h"

#include "emu-realtime-simulator-impl.h"
#include "unix-seqpacket.h"

#include "models/mgmt/ib-gmp.h"
#include "models/mgmt/ib-mad-dispatcher.h"
#include "models/mgmt/ib-sa-records.h"
#include "models/roce/roce-rdma-port.h"

#include "ns3/log.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EmuCmService");
NS_OBJECT_ENSURE_REGISTERED(EmuCmService);

namespace
{
// enum rdma_cm_event_type (rdma/rdma_cma.h, rdma-core 44).
constexpr uint32_t kEvAddrResolved = 0;
constexpr uint32_t kEvAddrError = 1;
constexpr uint32_t kEvRouteResolved = 2;
constexpr uint32_t kEvRouteError = 3;
constexpr uint32_t kEvConnectRequest = 4;
constexpr uint32_t kEvConnectResponse = 5;
constexpr uint32_t kEvUnreachable = 7;
constexpr uint32_t kEvRejected = 8;
constexpr uint32_t kEvEstablished = 9;
constexpr uint32_t kEvDisconnected = 10;
constexpr uint32_t kEvMulticastJoin = 12;
constexpr uint32_t kEvMulticastError = 13;
/// The high half of the transaction IDs of this service's SA requests ("RCMA"): the node's
/// other managers (the umad service's agents) answer to theirs.
constexpr uint32_t kSaTidHigh = 0x52434D41;

/// Whether `ip` (host order) is an IPv4 multicast address (224.0.0.0/4, RFC 5771).
bool
IsMulticastIp(uint32_t ip)
{
    return (ip >> 28) == 0xE;
}
// enum rdma_port_space: the second byte of the service ID (the kernel's rdma_get_service_id).
constexpr uint32_t kPsIpoib = 0x0002;
constexpr uint32_t kPsTcp = 0x0106;
constexpr uint32_t kPsUdp = 0x0111;
constexpr uint32_t kPsIb = 0x013F;
// enum ibv_qp_type, ibv_qp_state, ibv_qp_attr_mask, ibv_access_flags (infiniband/verbs.h).
constexpr uint32_t kQptRc = 2;
constexpr uint32_t kQptUc = 3;
constexpr uint32_t kQptUd = 4;
constexpr uint32_t kQpsInit = 1;
constexpr uint32_t kQpsRtr = 2;
constexpr uint32_t kQpsRts = 3;
constexpr uint32_t kMaskState = 1 << 0;
constexpr uint32_t kMaskAccess = 1 << 3;
constexpr uint32_t kMaskPkeyIndex = 1 << 4;
constexpr uint32_t kMaskPort = 1 << 5;
constexpr uint32_t kMaskQkey = 1 << 6;
constexpr uint32_t kMaskAv = 1 << 7;
constexpr uint32_t kMaskPathMtu = 1 << 8;
constexpr uint32_t kMaskTimeout = 1 << 9;
constexpr uint32_t kMaskDestQpn = 1 << 20;
constexpr uint32_t kMaskRetryCnt = 1 << 10;
constexpr uint32_t kMaskRnrRetry = 1 << 11;
constexpr uint32_t kMaskRqPsn = 1 << 12;
constexpr uint32_t kMaskMaxQpRdAtomic = 1 << 13;
constexpr uint32_t kMaskMinRnrTimer = 1 << 15;
constexpr uint32_t kMaskSqPsn = 1 << 16;
constexpr uint32_t kMaskMaxDestRdAtomic = 1 << 17;
constexpr uint32_t kAccessRemoteWrite = 1 << 1;
constexpr uint32_t kAccessRemoteRead = 1 << 2;
constexpr uint32_t kAccessRemoteAtomic = 1 << 3;
/// RDMA_UDP_QKEY: the Q_Key of RDMA_PS_UDP IDs (rdma_cma.h).
constexpr uint32_t kUdpQkey = 0x01234567;
/// The rdma_cm private-data header (struct cma_hdr in the kernel's cma.c): version, IP
/// version in the high nibble, source port, source and destination address (IPv4 in the last
/// 4 bytes of 16).
constexpr uint32_t kCmaHeaderBytes = 36;
constexpr uint16_t kEphemeralFirst = 32768;
constexpr uint16_t kEphemeralCount = 28232; // 32768..60999, Linux's ip_local_port_range

uint32_t
MtuCode(uint32_t bytes)
{
    uint32_t code = 1;
    for (uint32_t b = 256; b < bytes && code < 5; b *= 2)
    {
        ++code;
    }
    return code;
}

void
PutSockaddrIn(cnuas_cm_addr& a, uint32_t ip, uint16_t port)
{
    std::memset(&a, 0, sizeof(a));
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(port);
    s.sin_addr.s_addr = htonl(ip);
    std::memcpy(a.bytes, &s, sizeof(s));
}

/// The family of an address field, and for AF_INET its address and port (host order).
int
GetSockaddrIn(const cnuas_cm_addr& a, uint32_t& ip, uint16_t& port)
{
    uint16_t family = 0;
    std::memcpy(&family, a.bytes, sizeof(family));
    if (family == AF_INET)
    {
        sockaddr_in s{};
        std::memcpy(&s, a.bytes, sizeof(s));
        ip = ntohl(s.sin_addr.s_addr);
        port = ntohs(s.sin_port);
    }
    return family;
}
} // namespace

namespace
{
void
IbGsiToAgent(Ptr<IbCmAgent> agent, const IbReceivedMad& mad)
{
    IbCmAddress from;
    from.lid = mad.view.lrh.GetSlid();
    from.sl = mad.view.lrh.GetSl();
    agent->Receive(mad.view.mad.data(), from);
}

bool
AgentToIbGsi(Ptr<IbMadDispatcher> disp, uint8_t port, const uint8_t* mad, const IbCmAddress& to)
{
    return disp->SendGmp(port, mad, to.lid, 1, to.sl);
}

void
RoceGsiToAgent(Ptr<IbCmAgent> agent, const uint8_t* mad, const RdmaRxInfo& info)
{
    IbCmMessage probe;
    if (!IbCmMessage::Decode(mad, probe) && mad[1] != IbMgmtClass::ComMgt)
    {
        return; // another class's MAD: no agent for it on a RoCE port
    }
    IbCmAddress from;
    from.global = true;
    std::copy(info.sgid.begin(), info.sgid.end(), from.gid.begin());
    agent->Receive(mad, from);
}

bool
AgentToRoceGsi(Ptr<RoceRdmaPort> port, const uint8_t* mad, const IbCmAddress& to)
{
    RdmaGid gid{};
    std::copy(to.gid.begin(), to.gid.end(), gid.begin());
    return port->SendGsi(mad, gid);
}
} // namespace

void
EmuCmAttachToIbPort(Ptr<IbCmAgent> agent, Ptr<IbMadDispatcher> disp, uint8_t portNumber)
{
    disp->SetGsiHandler(IbMgmtClass::ComMgt, MakeBoundCallback(&IbGsiToAgent, agent));
    agent->SetSendCallback(MakeBoundCallback(&AgentToIbGsi, disp, portNumber));
}

void
EmuCmAttachToRocePort(Ptr<IbCmAgent> agent, Ptr<RoceRdmaPort> port)
{
    port->SetGsiReceiveCallback(MakeBoundCallback(&RoceGsiToAgent, agent));
    agent->SetSendCallback(MakeBoundCallback(&AgentToRoceGsi, port));
}

TypeId
EmuCmService::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EmuCmService")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<EmuCmService>()
            .AddAttribute("UnresolvedAddressDelay",
                          "On an adapter without a neighbour table (RoCE): how long resolving "
                          "an address in the host's subnet that no host of the fabric has takes "
                          "before ADDR_ERROR (-ETIMEDOUT). The kernel waits for ARP to give up; "
                          "the daemon knows at once, so the default is 0.",
                          TimeValue(Seconds(0)),
                          MakeTimeAccessor(&EmuCmService::m_unresolvedDelay),
                          MakeTimeChecker())
            .AddAttribute("NeighbourRetransmit",
                          "InfiniBand: the time between the ARP requests IPoIB sends for an "
                          "address being resolved (the kernel's neighbour retrans_time_ms, "
                          "1000 ms).",
                          TimeValue(Seconds(1)),
                          MakeTimeAccessor(&EmuCmService::m_neighbourRetransmit),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("NeighbourProbes",
                          "InfiniBand: ARP requests sent for one address resolution at most (the "
                          "kernel's mcast_solicit, 3); the caller's timeout ends it.",
                          UintegerValue(3),
                          MakeUintegerAccessor(&EmuCmService::m_neighbourProbes),
                          MakeUintegerChecker<uint32_t>(1, 100))
            .AddAttribute("LocalAckTimeout",
                          "The QP's Local ACK Timeout the CM gives RC QPs (4.096 us x 2^value, "
                          "the REQ's primary path field).",
                          UintegerValue(14),
                          MakeUintegerAccessor(&EmuCmService::m_localAckTimeout),
                          MakeUintegerChecker<uint8_t>(0, 31))
            .AddAttribute("HopLimit",
                          "GRH hop limit of RoCE paths (the IP TTL of the connection's packets).",
                          UintegerValue(64),
                          MakeUintegerAccessor(&EmuCmService::m_hopLimit),
                          MakeUintegerChecker<uint8_t>(1, 255))
            .AddAttribute("MaxProcesses",
                          "Processes that may use the host's rdma_cm at once.",
                          UintegerValue(256),
                          MakeUintegerAccessor(&EmuCmService::m_maxProcesses),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("SaTimeout",
                          "How long a multicast join waits for the SA's answer before it asks "
                          "again (the kernel's ib_sa_join_multicast retries too); also the whole "
                          "of a PathRecord query's time (rdma_resolve_route) when the caller "
                          "gives no timeout.",
                          TimeValue(MilliSeconds(200)),
                          MakeTimeAccessor(&EmuCmService::m_saTimeout),
                          MakeTimeChecker(MicroSeconds(1)))
            .AddAttribute("SaRetries",
                          "Requests sent again before a join fails with MULTICAST_ERROR, or a "
                          "route resolution with ROUTE_ERROR (-ETIMEDOUT).",
                          UintegerValue(3),
                          MakeUintegerAccessor(&EmuCmService::m_saRetries),
                          MakeUintegerChecker<uint32_t>(0, 100));
    return tid;
}

EmuCmService::EmuCmService() = default;
EmuCmService::~EmuCmService() = default;

void
EmuCmService::DoDispose()
{
    Stop();
    m_adapters.clear();
    Object::DoDispose();
}

bool
EmuCmService::Start(const std::string& socketPath,
                    const std::vector<Adapter>& adapters,
                    std::string* why)
{
    if (adapters.empty())
    {
        *why = "no adapter";
        return false;
    }
    // /dev/infiniband/rdma_cm is world readable and writable on a real machine.
    m_listenFd = ListenAndAccept(
        socketPath,
        0666,
        "the rdma_cm",
        [this](int fd, pid_t pid) { Admit(fd, pid); },
        why);
    if (m_listenFd < 0)
    {
        return false;
    }
    m_path = socketPath;
    m_adapters = adapters;
    m_psnSeed =
        static_cast<uint32_t>(adapters[0].agent->GetCaGuid() * 0x9E3779B97F4A7C15ULL >> 32);
    return true;
}

void
EmuCmService::NeighbourLearnt(size_t adapter, uint32_t ip)
{
    std::vector<uint32_t> done;
    for (auto& [handle, id] : m_ids)
    {
        if (id.state == IdState::AddrQuery && id.addrAdapter == static_cast<int>(adapter) &&
            id.dstIp == ip && !id.remote && !id.byNeighbour)
        {
            done.push_back(handle);
        }
    }
    const Adapter& a = m_adapters.at(adapter);
    for (uint32_t handle : done)
    {
        Id& id = m_ids[handle];
        if (a.lookupNeighbour && a.lookupNeighbour(ip, id.neighbourGid))
        {
            id.byNeighbour = true;
            id.adapter = static_cast<int>(adapter);
            FinishAddr(handle, 0);
        }
    }
}

void
EmuCmService::SetPeers(size_t adapter, const std::vector<Peer>& peers)
{
    m_adapters.at(adapter).peers = peers;
}

uint32_t
EmuCmService::GetListeningCount() const
{
    uint32_t n = 0;
    for (const auto& [h, id] : m_ids)
    {
        n += id.state == IdState::Listening ? 1 : 0;
    }
    return n;
}

void
EmuCmService::Stop()
{
    while (!m_procs.empty())
    {
        Close(m_procs.begin()->first, "the service stops");
    }
    CloseListener(m_listenFd, m_path);
}

void
EmuCmService::Admit(int fd, pid_t pid)
{
    if (m_procs.size() >= m_maxProcesses)
    {
        NS_LOG_WARN("rdma_cm " << m_path << ": refusing a process beyond MaxProcesses");
        close(fd);
        return;
    }
    auto p = std::make_unique<Proc>();
    p->id = m_nextProc++;
    p->fd = fd;
    p->pid = pid;
    const uint32_t id = p->id;
    m_procs[id] = std::move(p);
    ++m_counters.processes;
    if (!WatchConnection(fd, [this, id]() { OnReadable(id); }))
    {
        Close(id, "cannot poll the connection");
    }
}

void
EmuCmService::OnReadable(uint32_t procId)
{
    for (int n = 0; n < 64; ++n)
    {
        auto it = m_procs.find(procId);
        if (it == m_procs.end())
        {
            return;
        }
        Proc& p = *it->second;
        cnuas_cm_req q;
        const SeqpacketRecv got = RecvRequest(p.fd, &q, sizeof(q));
        if (got != SeqpacketRecv::Request)
        {
            if (got != SeqpacketRecv::None)
            {
                Close(procId, RecvEndReason(got, &m_counters.malformed));
            }
            return;
        }
        Handle(p, q);
    }
}

void
EmuCmService::Close(uint32_t procId, const char* why)
{
    auto it = m_procs.find(procId);
    if (it == m_procs.end())
    {
        return;
    }
    std::unique_ptr<Proc> p = std::move(it->second);
    m_procs.erase(it);
    NS_LOG_INFO("rdma_cm " << m_path << ": pid " << p->pid << " ends: " << why);
    if (auto rt = EmuRealtimeSimulatorImpl::Current())
    {
        rt->UnwatchFd(p->fd);
    }
    std::vector<uint32_t> mine;
    for (const auto& [h, id] : m_ids)
    {
        if (id.proc == procId)
        {
            mine.push_back(h);
        }
    }
    for (uint32_t h : mine)
    {
        ++m_counters.idsDestroyedWithProcess;
        DestroyId(h, true);
    }
    for (const auto& [h, fd] : p->channels)
    {
        close(fd);
    }
    for (int fd : p->retired)
    {
        close(fd);
    }
    close(p->fd);
}

void
EmuCmService::Handle(Proc& p, const cnuas_cm_req& q)
{
    cnuas_cm_resp r;
    std::memset(&r, 0, sizeof(r));
    r.op = q.op;
    int outFd = -1;
    int err = 0;
    Id* id = nullptr;
    if (q.op != CNUAS_CM_OP_OPEN && q.op != CNUAS_CM_OP_CREATE_CHANNEL &&
        q.op != CNUAS_CM_OP_DESTROY_CHANNEL && q.op != CNUAS_CM_OP_CREATE_ID)
    {
        auto it = m_ids.find(q.id);
        if (it == m_ids.end() || it->second.proc != p.id)
        {
            err = EINVAL;
            std::snprintf(r.why, sizeof(r.why), "no such rdma_cm ID");
        }
        else
        {
            id = &it->second;
        }
    }
    if (!p.opened && q.op != CNUAS_CM_OP_OPEN)
    {
        err = EPROTO;
    }
    if (err == 0)
    {
        switch (q.op)
        {
        case CNUAS_CM_OP_OPEN:
            if (q.u.open.abi_version != CNUAS_CM_ABI_VERSION)
            {
                err = EPROTO;
                std::snprintf(r.why, sizeof(r.why), "library ABI %u, daemon ABI %u",
                              q.u.open.abi_version, CNUAS_CM_ABI_VERSION);
                break;
            }
            p.opened = true;
            r.u.open.abi_version = CNUAS_CM_ABI_VERSION;
            break;
        case CNUAS_CM_OP_CREATE_CHANNEL:
            err = DoCreateChannel(p, r, &outFd);
            break;
        case CNUAS_CM_OP_DESTROY_CHANNEL: {
            auto it = p.channels.find(q.u.destroy_channel.channel);
            if (it == p.channels.end())
            {
                err = EINVAL;
                break;
            }
            for (const auto& [h, i] : m_ids)
            {
                if (i.proc == p.id && i.channel == it->first)
                {
                    err = EBUSY; // rdma_destroy_event_channel(3): its IDs go first
                    break;
                }
            }
            if (err == 0)
            {
                // The write end stays open until the process ends: a thread of the process may
                // still be blocked reading the channel (rping's CM thread is when its main
                // thread destroys the channel and exits), and on a real host that read goes
                // on blocking rather than seeing an end of file.
                p.retired.push_back(it->second);
                p.channels.erase(it);
            }
            break;
        }
        case CNUAS_CM_OP_CREATE_ID:
            err = DoCreateId(p, q, r);
            break;
        case CNUAS_CM_OP_DESTROY_ID:
            DestroyId(id->handle, false);
            break;
        case CNUAS_CM_OP_MIGRATE_ID:
            if (p.channels.count(q.u.migrate.channel) == 0)
            {
                err = EINVAL;
                break;
            }
            id->channel = q.u.migrate.channel;
            break;
        case CNUAS_CM_OP_BIND:
            err = DoBind(*id, q.u.bind.addr, r);
            break;
        case CNUAS_CM_OP_RESOLVE_ADDR:
            err = DoResolveAddr(*id, q);
            break;
        case CNUAS_CM_OP_RESOLVE_ROUTE:
            err = DoResolveRoute(*id, q.u.resolve_route.timeout_ms);
            break;
        case CNUAS_CM_OP_QUERY:
            FillQuery(*id, r);
            break;
        case CNUAS_CM_OP_LISTEN:
            err = DoListen(*id);
            break;
        case CNUAS_CM_OP_CONNECT:
            err = DoConnect(*id, q.u.conn);
            break;
        case CNUAS_CM_OP_ACCEPT:
            err = DoAccept(*id, q.u.conn);
            break;
        case CNUAS_CM_OP_REJECT:
            err = DoReject(*id, q);
            break;
        case CNUAS_CM_OP_DISCONNECT:
            err = DoDisconnect(*id);
            break;
        case CNUAS_CM_OP_INIT_QP_ATTR:
            err = DoInitQpAttr(*id, q.u.init_qp_attr.qp_state, r.u.qp_attr);
            break;
        case CNUAS_CM_OP_JOIN_MCAST:
            err = DoJoinMcast(*id, q);
            break;
        case CNUAS_CM_OP_LEAVE_MCAST:
            err = DoLeaveMcast(*id, q);
            break;
        case CNUAS_CM_OP_SET_OPTION:
            err = DoSetOption(*id, q);
            break;
        case CNUAS_CM_OP_ESTABLISH:
            // The consumer saw a packet before the RTU (IBA vol. 1 §12.9.7.1, rdma_notify with
            // COMM_EST): the connection counts as established; the RTU that follows changes
            // nothing. Already established: EISCONN, as the kernel's cm_establish says.
            if (id->state == IdState::Established)
            {
                err = EISCONN;
                break;
            }
            if (id->state != IdState::Accepted)
            {
                err = EINVAL;
                break;
            }
            id->state = IdState::Established;
            break;
        default:
            err = EINVAL;
            std::snprintf(r.why, sizeof(r.why), "unknown request %u", q.op);
            break;
        }
    }
    r.err = err;
    ++m_counters.requests;
    if (err != 0)
    {
        ++m_counters.refused;
    }
    NS_LOG_LOGIC("rdma_cm pid " << p.pid << " request " << q.op << " ID " << q.id << ": "
                                << (err == 0 ? "done" : std::strerror(err)));
    const uint32_t procId = p.id;
    const bool sent = SendDatagramWithFd(p.fd, &r, sizeof(r), outFd);
    if (outFd >= 0)
    {
        close(outFd);
    }
    if (!sent)
    {
        Close(procId, "cannot answer");
    }
}

int
EmuCmService::DoCreateChannel(Proc& p, cnuas_cm_resp& r, int* outFd)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
    {
        return errno;
    }
    // The daemon never waits for a process: a full pipe loses the event (counted).
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    const uint32_t h = m_nextHandle++;
    p.channels[h] = fds[1];
    r.u.created.handle = h;
    *outFd = fds[0];
    return 0;
}

int
EmuCmService::DoCreateId(Proc& p, const cnuas_cm_req& q, cnuas_cm_resp& r)
{
    const uint32_t ps = q.u.create_id.port_space;
    if (p.channels.count(q.u.create_id.channel) == 0)
    {
        std::snprintf(r.why, sizeof(r.why), "no such event channel");
        return EINVAL;
    }
    if (ps != kPsTcp && ps != kPsUdp && ps != kPsIpoib)
    {
        std::snprintf(r.why, sizeof(r.why), "port space 0x%x is not modelled (RDMA_PS_IB)", ps);
        return ps == kPsIb ? EOPNOTSUPP : EINVAL;
    }
    Id id;
    id.handle = m_nextHandle++;
    id.proc = p.id;
    id.channel = q.u.create_id.channel;
    id.cookie = q.u.create_id.cookie;
    id.ps = ps;
    id.qpType = q.u.create_id.qp_type;
    id.qkey = ps == kPsUdp ? kUdpQkey : 0;
    m_ids[id.handle] = id;
    r.u.created.handle = id.handle;
    return 0;
}

std::map<uint16_t, uint32_t>*
EmuCmService::Space(uint32_t ps)
{
    switch (ps)
    {
    case kPsTcp:
        return &m_tcpPorts;
    case kPsUdp:
        return &m_udpPorts;
    case kPsIpoib:
        return &m_ipoibPorts;
    default:
        return nullptr;
    }
}

int
EmuCmService::BindPort(Id& id, uint16_t port)
{
    auto* space = Space(id.ps);
    if (!space)
    {
        return EINVAL;
    }
    if (port == 0)
    {
        // An ephemeral port, the next free one (deterministic for a given history).
        for (uint32_t n = 0; n < kEphemeralCount; ++n)
        {
            const uint16_t cand = kEphemeralFirst + (m_nextEphemeral + n) % kEphemeralCount;
            if (space->count(cand) == 0)
            {
                m_nextEphemeral = static_cast<uint16_t>((m_nextEphemeral + n + 1) % kEphemeralCount);
                port = cand;
                break;
            }
        }
        if (port == 0)
        {
            return EADDRNOTAVAIL;
        }
    }
    else if (space->count(port) != 0)
    {
        return EADDRINUSE;
    }
    (*space)[port] = id.handle;
    id.srcPort = port;
    id.boundPort = true;
    return 0;
}

bool
EmuCmService::IsLoopback(uint32_t ip)
{
    return (ip >> 24) == 127; // 127.0.0.0/8 (RFC 1122 3.2.1.3)
}

int
EmuCmService::AdapterOf(uint32_t ip) const
{
    for (size_t i = 0; i < m_adapters.size(); ++i)
    {
        if (m_adapters[i].ip == ip)
        {
            return static_cast<int>(i);
        }
    }
    return -1;
}

int
EmuCmService::AdapterToward(uint32_t ip) const
{
    for (size_t i = 0; i < m_adapters.size(); ++i)
    {
        const Adapter& a = m_adapters[i];
        const uint32_t mask = a.prefixLen == 0 ? 0 : ~0u << (32 - a.prefixLen);
        if ((ip & mask) == (a.ip & mask))
        {
            return static_cast<int>(i);
        }
    }
    return -1;
}

const EmuCmService::Peer*
EmuCmService::FindPeer(const Adapter& a, uint32_t ip) const
{
    for (const Peer& p : a.peers)
    {
        if (p.ip == ip)
        {
            return &p;
        }
    }
    return nullptr;
}

const EmuCmService::Adapter&
EmuCmService::AdapterFor(const Id& id) const
{
    return m_adapters[id.adapter >= 0 ? static_cast<size_t>(id.adapter) : 0];
}

Ptr<IbCmAgent>
EmuCmService::AgentOf(const Id& id) const
{
    return AdapterFor(id).agent;
}

int
EmuCmService::DoBind(Id& id, const cnuas_cm_addr& a, cnuas_cm_resp& r)
{
    if (id.boundPort)
    {
        return EINVAL;
    }
    uint32_t ip = 0;
    uint16_t port = 0;
    const int family = GetSockaddrIn(a, ip, port);
    if (family != AF_INET)
    {
        std::snprintf(r.why, sizeof(r.why), "address family %d: only IPv4 is modelled", family);
        return EAFNOSUPPORT;
    }
    // The kernel's rdma_cm takes a loopback address as it takes the wildcard (cma_any_addr):
    // the ID binds to no device (its verbs context stays NULL) and, listening, hears requests
    // for every address of the host. libfabric's verbs provider binds 127.0.0.1 so, and falls
    // back on the interfaces' addresses when no device is bound.
    const bool wildcard = ip == 0 || IsLoopback(ip);
    const int adapter = wildcard ? -1 : AdapterOf(ip);
    if (!wildcard && adapter < 0)
    {
        std::snprintf(r.why, sizeof(r.why), "not an address of this host's HCA");
        return EADDRNOTAVAIL;
    }
    const int err = BindPort(id, port);
    if (err != 0)
    {
        return err;
    }
    id.srcIp = ip;
    id.adapter = adapter;
    id.state = IdState::Bound;
    if (!wildcard)
    {
        FillRoute(id); // bound to the device: the ID has its port (verbs) now
    }
    FillQuery(id, r);
    return 0;
}

void
EmuCmService::FillRoute(Id& id) const
{
    cnuas_cm_route& rt = id.route;
    const Adapter& a = AdapterFor(id);
    RdmaGid gid{};
    a.port->GetGid(0, gid);
    std::copy(gid.begin(), gid.end(), rt.sgid);
    rt.slid = a.port->GetLid();
    rt.pkey = 0xFFFF;
    rt.mtu = static_cast<uint8_t>(MtuCode(a.port->GetMtu()));
    rt.link_layer = a.port->GetLinkLayer() == RdmaLinkLayer::ETHERNET ? 2 : 1;
    // The device the ID is on, as ibv_get_device_guid gives it (network byte order).
    rt.node_guid = htobe64(a.nodeGuid);
    rt.hop_limit = rt.link_layer == 2 ? m_hopLimit : 0;
    if (id.remote)
    {
        RdmaGid d{};
        id.remote->GetGid(0, d);
        std::copy(d.begin(), d.end(), rt.dgid);
        rt.dlid = id.remote->GetLid();
    }
    else if (id.byNeighbour)
    {
        // ARP gave the GID; the DLID is the SA's answer to rdma_resolve_route's query.
        std::copy(id.neighbourGid.begin(), id.neighbourGid.end(), rt.dgid);
    }
}

int
EmuCmService::DoResolveAddr(Id& id, const cnuas_cm_req& q)
{
    uint32_t dst = 0;
    uint16_t dport = 0;
    if (GetSockaddrIn(q.u.resolve_addr.dst, dst, dport) != AF_INET)
    {
        return EAFNOSUPPORT;
    }
    uint32_t src = 0;
    uint16_t sport = 0;
    const int sfam = GetSockaddrIn(q.u.resolve_addr.src, src, sport);
    if (sfam != 0 && sfam != AF_INET)
    {
        return EAFNOSUPPORT;
    }
    if (sfam == AF_INET && !id.boundPort)
    {
        cnuas_cm_resp scratch;
        const int err = DoBind(id, q.u.resolve_addr.src, scratch);
        if (err != 0)
        {
            return err;
        }
    }
    if (!id.boundPort)
    {
        const int err = BindPort(id, 0);
        if (err != 0)
        {
            return err;
        }
    }
    if (id.state != IdState::Idle && id.state != IdState::Bound)
    {
        return EINVAL;
    }
    id.dstIp = dst;
    id.dstPort = dport;
    id.state = IdState::AddrQuery;
    const uint32_t handle = id.handle;
    // The adapter: the bound address's, else the one the destination is reached through (a
    // loopback address: the first's; a multicast group: the first's too, the default route).
    const bool loopback = IsLoopback(dst);
    const bool multicast = IsMulticastIp(dst);
    int adapter = id.adapter;
    if (adapter < 0)
    {
        adapter = loopback || multicast ? 0 : AdapterToward(dst);
    }
    else if (!loopback && !multicast && AdapterToward(dst) != adapter)
    {
        adapter = -1; // bound to an address whose subnet does not hold the destination
    }
    if (!loopback && IsLoopback(id.srcIp))
    {
        adapter = -1; // no route leaves the host from a loopback source address
    }
    if (adapter < 0)
    {
        // No route: the kernel's rdma_resolve_ip reports it through the event at once.
        ++m_counters.addrErrors;
        Simulator::ScheduleNow(&EmuCmService::FinishAddr, this, handle, -ENETUNREACH);
        return 0;
    }
    const Adapter& a = m_adapters[static_cast<size_t>(adapter)];
    // A multicast group is "reached" through the adapter itself: there is no peer to find
    // (the kernel maps the address to a multicast hardware address, with no ARP); the join
    // (rdma_join_multicast) then asks the SA.
    const bool self = loopback || dst == a.ip || IsMulticastIp(dst);
    id.remote = nullptr;
    id.byNeighbour = false;
    id.neighbourProbes = 0;
    ++id.addrAttempt;
    if (!self && a.lookupNeighbour)
    {
        // InfiniBand: the IPoIB neighbour entry's link address gives the destination GID
        // (addr.c); without one, ARP is asked for and the resolution waits for its answer
        // until the caller's timeout (addr.c: -ETIMEDOUT). The route's source address is
        // the ID's from now on, its device only once resolved (cma's addr_handler).
        if (id.srcIp == 0)
        {
            id.srcIp = a.ip;
        }
        id.addrAdapter = adapter;
        if (a.lookupNeighbour(dst, id.neighbourGid))
        {
            id.byNeighbour = true;
            id.adapter = adapter;
            Simulator::ScheduleNow(&EmuCmService::FinishAddr, this, handle, 0);
            return 0;
        }
        ProbeNeighbour(handle, id.addrAttempt);
        Simulator::Schedule(MilliSeconds(q.u.resolve_addr.timeout_ms),
                            &EmuCmService::NeighbourTimedOut, this, handle, id.addrAttempt);
        return 0;
    }
    const Peer* peer = self ? nullptr : FindPeer(a, dst);
    if (!self && !peer)
    {
        ++m_counters.addrErrors;
        Simulator::Schedule(m_unresolvedDelay, &EmuCmService::FinishAddr, this, handle,
                            -ETIMEDOUT);
        return 0;
    }
    id.adapter = adapter;
    id.remote = self ? a.port : peer->port;
    if (id.srcIp == 0)
    {
        id.srcIp = a.ip;
    }
    Simulator::ScheduleNow(&EmuCmService::FinishAddr, this, handle, 0);
    return 0;
}

EmuCmService::Id*
EmuCmService::WaitingForNeighbour(uint32_t handle, uint32_t attempt)
{
    auto it = m_ids.find(handle);
    if (it == m_ids.end() || it->second.state != IdState::AddrQuery ||
        it->second.addrAttempt != attempt || it->second.byNeighbour)
    {
        return nullptr; // gone, resolved, or a later resolution of the same ID
    }
    return &it->second;
}

void
EmuCmService::ProbeNeighbour(uint32_t handle, uint32_t attempt)
{
    Id* waiting = WaitingForNeighbour(handle, attempt);
    if (!waiting)
    {
        return;
    }
    Id& id = *waiting;
    const Adapter& a = m_adapters[static_cast<size_t>(id.addrAdapter)];
    ++id.neighbourProbes;
    ++m_counters.neighbourProbes;
    // One that cannot leave (no broadcast group joined: no SM has run) is a probe all the
    // same, as the kernel's neighbour timer counts one on an interface without carrier.
    if (a.solicitNeighbour)
    {
        a.solicitNeighbour(id.dstIp, id.srcIp);
    }
    if (id.neighbourProbes < m_neighbourProbes)
    {
        Simulator::Schedule(m_neighbourRetransmit, &EmuCmService::ProbeNeighbour, this, handle,
                            attempt);
    }
}

void
EmuCmService::NeighbourTimedOut(uint32_t handle, uint32_t attempt)
{
    if (!WaitingForNeighbour(handle, attempt))
    {
        return;
    }
    ++m_counters.addrErrors;
    FinishAddr(handle, -ETIMEDOUT);
}

void
EmuCmService::FinishAddr(uint32_t handle, int32_t status)
{
    auto it = m_ids.find(handle);
    if (it == m_ids.end() || it->second.state != IdState::AddrQuery)
    {
        return;
    }
    Id& id = it->second;
    if (status != 0)
    {
        id.state = IdState::Bound;
        Post(id, kEvAddrError, status);
        return;
    }
    id.route.dlid = 0; // a new destination: none until its route says (or its port, below)
    FillRoute(id);
    id.route.resolved = 1;
    id.state = IdState::AddrResolved;
    Post(id, kEvAddrResolved, 0);
}

int
EmuCmService::DoResolveRoute(Id& id, uint32_t timeoutMs)
{
    if (id.state != IdState::AddrResolved && id.state != IdState::RouteResolved)
    {
        return EINVAL;
    }
    FillRoute(id);
    const Adapter& a = AdapterFor(id);
    const bool askSa =
        id.route.link_layer == 1 && !a.sendSa.IsNull() && !IsMulticastIp(id.dstIp);
    if (id.route.link_layer == 1 && (id.route.slid == 0 || (!askSa && id.route.dlid == 0)))
    {
        FailRoute(id, -EHOSTUNREACH); // no LID yet: no subnet manager has run
        return 0;
    }
    // On InfiniBand the kernel's rdma_resolve_route asks the SA for a PathRecord (cma_query_ib_
    // route: SGID, DGID, P_Key, NumbPath 1, Reversible; IBA vol. 1 §15.2.5.16), on the wire
    // to the SM's LID, and takes the DLID, SL, MTU and rate of its answer: whichever SM runs
    // (the built-in one, opensm) decides the path. On RoCE the route is the address's
    // (Ethernet has no SA), and so is a multicast destination's (a join asks the SA instead).
    if (askSa)
    {
        id.state = IdState::RouteQuery;
        id.routeAttempts = 0;
        // The caller's timeout bounds the whole query: each of the 1 + SaRetries tries waits
        // its share (SaTimeout when the caller gave none).
        const Time whole = timeoutMs > 0 ? MilliSeconds(timeoutMs) : m_saTimeout;
        id.routeWait = std::max(NanoSeconds(1000), whole / int64_t(m_saRetries + 1));
        SendPathQuery(id.handle);
        return 0;
    }
    if (id.route.link_layer == 2)
    {
        // cma_resolve_iboe_route: the route's traffic class is the ID's type of service (the
        // connection's packets carry it as their IP TOS: DSCP and ECN).
        id.route.traffic_class = id.tos;
    }
    id.route.resolved = 2;
    id.state = IdState::RouteResolved;
    Post(id, kEvRouteResolved, 0);
    return 0;
}

int
EmuCmService::DoSetOption(Id& id, const cnuas_cm_req& q)
{
    // <rdma/rdma_cma.h>: level RDMA_OPTION_ID (0); RDMA_OPTION_ID_TOS (0), _ACK_TIMEOUT (3).
    constexpr uint32_t kOptionLevelId = 0;
    constexpr uint32_t kOptionTos = 0;
    constexpr uint32_t kOptionAckTimeout = 3;
    if (q.u.option.level != kOptionLevelId)
    {
        return EINVAL;
    }
    switch (q.u.option.optname)
    {
    case kOptionTos:
        // As the kernel's rdma_set_service_type: kept in the ID, used when its route is
        // resolved (the RoCE route's traffic class, the IB PathRecord query's QoS class).
        id.tos = q.u.option.value;
        return 0;
    case kOptionAckTimeout:
        // rdma_set_ack_timeout: RC (and XRC initiator) IDs only; the QP's timeout at RTS.
        if (id.qpType != kQptRc)
        {
            return EINVAL;
        }
        id.ackTimeout = q.u.option.value;
        id.ackTimeoutSet = true;
        return 0;
    default:
        return EINVAL;
    }
}

void
EmuCmService::FailRoute(Id& id, int32_t status)
{
    ++m_counters.routeErrors;
    id.state = IdState::AddrResolved;
    Post(id, kEvRouteError, status);
}

void
EmuCmService::SendPathQuery(uint32_t handle)
{
    auto it = m_ids.find(handle);
    if (it == m_ids.end() || it->second.state != IdState::RouteQuery)
    {
        return;
    }
    Id& id = it->second;
    if (id.routeTid != 0)
    {
        m_pathPending.erase(id.routeTid);
    }
    id.routeTid = (uint64_t{kSaTidHigh} << 32) | m_nextSaTid++;
    ++id.routeAttempts;
    m_pathPending[id.routeTid] = handle;
    IbPathRecord rec;
    std::copy(std::begin(id.route.sgid), std::end(id.route.sgid), rec.sgid.begin());
    std::copy(std::begin(id.route.dgid), std::end(id.route.dgid), rec.dgid.begin());
    rec.pkey = 0xFFFF;
    rec.numbPath = 1;
    rec.reversible = true;
    // The connection's service ID (an SM's QoS policy may pick the SL by it) and, for an IPv4
    // ID, its type of service as the QoS class (rdma_set_option's TOS; 0 unless set), as
    // the kernel's cma_query_ib_route.
    rec.serviceId = ServiceId(id.ps, id.dstPort);
    rec.qosClass = id.tos;
    const uint64_t mask = IbPathRecord::kCompServiceId | IbPathRecord::kCompSgid |
                          IbPathRecord::kCompDgid | IbPathRecord::kCompPkey |
                          IbPathRecord::kCompNumbPath | IbPathRecord::kCompReversible |
                          IbPathRecord::kCompQosClass;
    ++m_counters.pathQueries;
    // A port whose SM LID is not known yet cannot send: the timeout tries again.
    AdapterFor(id).sendSa(rec.Request(IbMadMethod::Get, mask, id.routeTid).data());
    Simulator::Schedule(id.routeWait, &EmuCmService::PathQueryTimedOut, this, id.routeTid);
}

void
EmuCmService::PathQueryTimedOut(uint64_t tid)
{
    auto p = m_pathPending.find(tid);
    if (p == m_pathPending.end())
    {
        return; // answered, or the ID went
    }
    const uint32_t handle = p->second;
    m_pathPending.erase(p);
    auto it = m_ids.find(handle);
    if (it == m_ids.end() || it->second.routeTid != tid)
    {
        return;
    }
    Id& id = it->second;
    id.routeTid = 0;
    if (id.routeAttempts <= m_saRetries)
    {
        SendPathQuery(handle);
        return;
    }
    ++m_counters.saTimeouts;
    FailRoute(id, -ETIMEDOUT);
}

void
EmuCmService::TakePathRecord(uint32_t handle, uint64_t tid, const IbSaMad& resp)
{
    auto it = m_ids.find(handle);
    if (it == m_ids.end() || it->second.routeTid != tid || it->second.state != IdState::RouteQuery)
    {
        return;
    }
    Id& id = it->second;
    id.routeTid = 0;
    if (resp.Mad().GetStatus() != IbMadStatus::Ok)
    {
        // The kernel's SA client gives -EINVAL for any MAD status (no path, bad request).
        FailRoute(id, -EINVAL);
        return;
    }
    IbPathRecord rec;
    rec.ReadFrom(resp.Data());
    id.route.dlid = rec.dlid;
    id.route.slid = rec.slid;
    id.route.sl = rec.sl;
    id.route.pkey = rec.pkey;
    id.route.traffic_class = rec.tClass;
    if (rec.mtu != 0)
    {
        id.route.mtu = rec.mtu; // the encodings of §15.2.5.16 and enum ibv_mtu agree
    }
    id.route.rate = rec.rate;   // as do those of PathRecord.Rate and enum ibv_rate
    id.route.resolved = 2;
    id.state = IdState::RouteResolved;
    Post(id, kEvRouteResolved, 0);
}

// ---- multicast groups (rdma_join_multicast) ------------------------------------------------

namespace
{
/// The MGID the kernel's rdma_cm joins for IPv4 group `ip` on InfiniBand (cma_set_mgid with
/// ip_ib_mc_map): the IPoIB multicast mapping of the default broadcast group, link-local scope
/// (ff12), signature 0x401b, P_Key 0xffff, the address in the last four bytes; RDMA_PS_UDP
/// puts 0x01 in the signature's second byte, so rdma_cm groups are not IPoIB's.
std::array<uint8_t, 16>
IbMgidOfIpv4(uint32_t ip, uint32_t ps)
{
    std::array<uint8_t, 16> g{};
    g[0] = 0xFF;
    g[1] = 0x12;
    g[2] = 0x40;
    g[3] = ps == kPsIpoib ? 0x1B : 0x01;
    g[4] = 0xFF;
    g[5] = 0xFF;
    g[12] = static_cast<uint8_t>(ip >> 24);
    g[13] = static_cast<uint8_t>(ip >> 16);
    g[14] = static_cast<uint8_t>(ip >> 8);
    g[15] = static_cast<uint8_t>(ip);
    return g;
}
} // namespace

int
EmuCmService::DoJoinMcast(Id& id, const cnuas_cm_req& q)
{
    uint32_t ip = 0;
    uint16_t port = 0;
    if (GetSockaddrIn(q.u.mcast.addr, ip, port) != AF_INET)
    {
        return EAFNOSUPPORT;
    }
    // The kernel's rdma_join_multicast: an ID on a device (bound or address resolved), UD.
    if (!IsMulticastIp(ip) || id.adapter < 0 ||
        (id.state != IdState::Bound && id.state != IdState::AddrResolved &&
         id.state != IdState::RouteResolved) ||
        (id.ps != kPsUdp && id.ps != kPsIpoib && id.qpType != kQptUd))
    {
        return EINVAL;
    }
    const uint8_t joinState = q.u.mcast.join_state;
    if (joinState != 1 && joinState != 8)
    {
        return EINVAL; // full member, or send-only full member (rdma_join_multicast_ex)
    }
    const Adapter& a = m_adapters[static_cast<size_t>(id.adapter)];
    if (a.sendSa.IsNull() && a.ethMembership.IsNull())
    {
        return EOPNOTSUPP;
    }
    for (const Id::Join& j : id.joins)
    {
        if (j.ip == ip)
        {
            return EADDRINUSE; // the kernel: this ID has joined that address already
        }
    }
    Id::Join j;
    j.ip = ip;
    j.joinState = joinState;
    if (a.sendSa.IsNull())
    {
        // RoCE v2 (the kernel's cma_iboe_join_multicast): no SA; the group's GID is the
        // IPv4-mapped address, the port joins at once (its IGMP report), and the event follows.
        j.mgid = RoceGidFromIpv4(ip);
        GroupUse& use = m_groups[{id.adapter, j.mgid}];
        if (use.ids == 0 && !a.ethMembership(j.mgid, true))
        {
            m_groups.erase({id.adapter, j.mgid});
            return EINVAL;
        }
        ++use.ids;
        use.joined = true;
        j.joined = true;
        id.joins.push_back(j);
        cnuas_cm_event ev;
        std::memset(&ev, 0, sizeof(ev));
        PutSockaddrIn(ev.src, id.srcIp, id.srcPort);
        PutSockaddrIn(ev.dst, ip, 0);
        ev.route = id.route;
        ev.ah.is_global = 1;
        std::copy(j.mgid.begin(), j.mgid.end(), ev.ah.dgid);
        ev.ah.hop_limit = m_hopLimit;
        ev.param.qp_num = 0xFFFFFF;
        ev.param.qkey = id.qkey != 0 ? id.qkey : kUdpQkey;
        ++m_counters.multicastJoins;
        const uint32_t handle = id.handle;
        Simulator::ScheduleNow([this, handle, ev]() mutable {
            auto it = m_ids.find(handle);
            if (it != m_ids.end())
            {
                Post(it->second, kEvMulticastJoin, 0, ev);
            }
        });
        return 0;
    }
    j.mgid = IbMgidOfIpv4(ip, id.ps);
    ++m_groups[{id.adapter, j.mgid}].ids;
    id.joins.push_back(j);
    Simulator::ScheduleNow(&EmuCmService::SendJoin, this, id.handle, ip);
    return 0;
}

int
EmuCmService::DoLeaveMcast(Id& id, const cnuas_cm_req& q)
{
    uint32_t ip = 0;
    uint16_t port = 0;
    if (GetSockaddrIn(q.u.mcast.addr, ip, port) != AF_INET)
    {
        return EAFNOSUPPORT;
    }
    for (auto it = id.joins.begin(); it != id.joins.end(); ++it)
    {
        if (it->ip != ip)
        {
            continue;
        }
        if (it->tid != 0)
        {
            m_saPending.erase(it->tid);
        }
        ReleaseGroup(id, *it);
        id.joins.erase(it);
        return 0;
    }
    return EADDRNOTAVAIL;
}

bool
EmuCmService::SendMcMemberRecord(const Id& id, const Id::Join& j, uint8_t method, uint64_t tid)
{
    const Adapter& a = m_adapters[static_cast<size_t>(id.adapter)];
    // The record the kernel's cma_join_ib_multicast sends: the group, this port, its Q_Key,
    // P_Key 0xffff, SL 0, flow label 0, traffic class 0 and the join state (the components
    // an SA needs to create a group, IBA vol. 1 §15.2.5.17; opensm refuses fewer).
    IbMcMemberRecord rec;
    rec.mgid = j.mgid;
    RdmaGid gid{};
    a.port->GetGid(0, gid);
    std::copy(gid.begin(), gid.end(), rec.portGid.begin());
    rec.qkey = id.qkey != 0 ? id.qkey : kUdpQkey;
    rec.pkey = 0xFFFF;
    rec.joinState = j.joinState;
    ++m_counters.saRequests;
    return a.sendSa(rec.Request(method, IbMcMemberRecord::kCreateMask, tid).data());
}

void
EmuCmService::SendJoin(uint32_t handle, uint32_t ip)
{
    auto it = m_ids.find(handle);
    if (it == m_ids.end())
    {
        return;
    }
    Id& id = it->second;
    for (Id::Join& j : id.joins)
    {
        if (j.ip != ip || j.joined)
        {
            continue;
        }
        if (j.tid != 0)
        {
            m_saPending.erase(j.tid);
        }
        j.tid = (uint64_t{kSaTidHigh} << 32) | m_nextSaTid++;
        ++j.attempts;
        m_saPending[j.tid] = {handle, ip};
        // A port with no SM yet cannot send to the SM LID: the timeout retries it.
        SendMcMemberRecord(id, j, IbMadMethod::Set, j.tid);
        Simulator::Schedule(m_saTimeout, &EmuCmService::JoinTimedOut, this, j.tid);
        return;
    }
}

void
EmuCmService::JoinTimedOut(uint64_t tid)
{
    auto p = m_saPending.find(tid);
    if (p == m_saPending.end())
    {
        return; // answered, left or destroyed meanwhile
    }
    const auto [handle, ip] = p->second;
    m_saPending.erase(p);
    auto it = m_ids.find(handle);
    if (it == m_ids.end())
    {
        return;
    }
    Id& id = it->second;
    for (auto j = id.joins.begin(); j != id.joins.end(); ++j)
    {
        if (j->ip != ip)
        {
            continue;
        }
        j->tid = 0;
        if (j->attempts <= m_saRetries)
        {
            SendJoin(handle, ip);
            return;
        }
        ++m_counters.saTimeouts;
        ++m_counters.multicastErrors;
        ReleaseGroup(id, *j);
        cnuas_cm_event ev;
        std::memset(&ev, 0, sizeof(ev));
        PutSockaddrIn(ev.src, id.srcIp, id.srcPort);
        PutSockaddrIn(ev.dst, ip, 0);
        ev.route = id.route;
        id.joins.erase(j);
        Post(id, kEvMulticastError, -ETIMEDOUT, ev);
        return;
    }
}

void
EmuCmService::ReleaseGroup(const Id& id, const Id::Join& j)
{
    auto it = m_groups.find({id.adapter, j.mgid});
    if (it == m_groups.end())
    {
        return;
    }
    if (it->second.ids > 1)
    {
        --it->second.ids; // another ID of the host still holds the group
        return;
    }
    const bool joined = it->second.joined;
    m_groups.erase(it);
    if (!joined)
    {
        return; // the port never became a member
    }
    const Adapter& a = m_adapters[static_cast<size_t>(id.adapter)];
    if (!a.ethMembership.IsNull())
    {
        a.ethMembership(j.mgid, false);
        return;
    }
    SendLeave(id, j);
}

void
EmuCmService::SendLeave(const Id& id, const Id::Join& j)
{
    SendMcMemberRecord(id, j, IbMadMethod::Delete, (uint64_t{kSaTidHigh} << 32) | m_nextSaTid++);
}

bool
EmuCmService::TakeSaResponse(size_t adapter, const uint8_t* mad)
{
    IbSaMad resp;
    resp.ReadFrom(mad);
    const uint64_t tid = resp.Mad().GetTransactionId();
    if (static_cast<uint32_t>(tid >> 32) != kSaTidHigh ||
        resp.Mad().GetMgmtClass() != IbMgmtClass::SubnAdm || !resp.Mad().IsResponse())
    {
        return false;
    }
    if (auto q = m_pathPending.find(tid); q != m_pathPending.end())
    {
        const uint32_t handle = q->second;
        m_pathPending.erase(q);
        TakePathRecord(handle, tid, resp);
        return true;
    }
    auto p = m_saPending.find(tid);
    if (p == m_saPending.end())
    {
        return true; // a leave's answer, or one that came after a retry: ours, and done
    }
    const auto [handle, ip] = p->second;
    m_saPending.erase(p);
    auto it = m_ids.find(handle);
    if (it == m_ids.end() || static_cast<int>(adapter) != it->second.adapter)
    {
        return true;
    }
    Id& id = it->second;
    auto j = std::find_if(id.joins.begin(), id.joins.end(),
                          [ip = ip](const Id::Join& x) { return x.ip == ip; });
    if (j == id.joins.end())
    {
        return true;
    }
    j->tid = 0;
    cnuas_cm_event ev;
    std::memset(&ev, 0, sizeof(ev));
    PutSockaddrIn(ev.src, id.srcIp, id.srcPort);
    PutSockaddrIn(ev.dst, ip, 0);
    ev.route = id.route;
    const uint16_t status = resp.Mad().GetStatus();
    if (status != IbMadStatus::Ok)
    {
        // The SA refused (IBA vol. 1 §15.2.1.2): the kernel reports -EINVAL for a refusal.
        ++m_counters.multicastErrors;
        ReleaseGroup(id, *j);
        id.joins.erase(j);
        Post(id, kEvMulticastError, -EINVAL, ev);
        return true;
    }
    IbMcMemberRecord rec;
    rec.ReadFrom(resp.Data());
    j->joined = true;
    m_groups[{id.adapter, j->mgid}].joined = true;
    j->mgid = rec.mgid;
    // The address vector of the group (the kernel's ib_init_ah_from_mcmember): its MLID, its
    // MGID in a GRH, its SL, flow label, hop limit and traffic class.
    ev.ah.dlid = rec.mlid;
    ev.ah.is_global = 1;
    std::copy(rec.mgid.begin(), rec.mgid.end(), ev.ah.dgid);
    ev.ah.sl = rec.sl;
    ev.ah.flow_label = rec.flowLabel;
    ev.ah.hop_limit = rec.hopLimit;
    ev.ah.traffic_class = rec.tClass;
    ev.ah.sgid_index = 0;
    ev.param.qp_num = 0xFFFFFF; // IBA vol. 1 §10.5: the multicast QPN
    ev.param.qkey = rec.qkey;
    ++m_counters.multicastJoins;
    Post(id, kEvMulticastJoin, 0, ev);
    return true;
}

void
EmuCmService::FillQuery(const Id& id, cnuas_cm_resp& r) const
{
    PutSockaddrIn(r.u.query.src, id.srcIp, id.srcPort);
    PutSockaddrIn(r.u.query.dst, id.dstIp, id.dstPort);
    r.u.query.route = id.route;
    r.u.query.port_num = 1;
}

uint64_t
EmuCmService::ServiceId(uint32_t ps, uint16_t port) const
{
    // The kernel's rdma_get_service_id: ps << 16 | port (RDMA_PS_TCP: 0x0000000001060000).
    return (uint64_t{ps} << 16) | port;
}

int
EmuCmService::DoListen(Id& id)
{
    if (id.state == IdState::Listening)
    {
        return 0;
    }
    if (!id.boundPort)
    {
        const int err = BindPort(id, 0);
        if (err != 0)
        {
            return err;
        }
    }
    if (id.state != IdState::Bound && id.state != IdState::Idle)
    {
        return EINVAL;
    }
    const uint32_t handle = id.handle;
    // On the bound address's adapter, or on every adapter (bound to no address).
    for (size_t i = 0; i < m_adapters.size(); ++i)
    {
        if (id.adapter >= 0 && static_cast<size_t>(id.adapter) != i)
        {
            continue;
        }
        if (!m_adapters[i].agent->Listen(
                ServiceId(id.ps, id.srcPort),
                MakeCallback(&EmuCmService::OnListenEvent, this)
                    .Bind(handle, static_cast<uint32_t>(i))))
        {
            for (size_t j = 0; j < i; ++j)
            {
                if (id.adapter < 0)
                {
                    m_adapters[j].agent->StopListening(ServiceId(id.ps, id.srcPort));
                }
            }
            return EADDRINUSE;
        }
    }
    id.state = IdState::Listening;
    NS_LOG_INFO("rdma_cm ID " << handle << " listens on port " << id.srcPort);
    return 0;
}

void
EmuCmService::StopListening(const Id& id)
{
    for (size_t i = 0; i < m_adapters.size(); ++i)
    {
        if (id.adapter < 0 || static_cast<size_t>(id.adapter) == i)
        {
            m_adapters[i].agent->StopListening(ServiceId(id.ps, id.srcPort));
        }
    }
}

std::vector<uint8_t>
EmuCmService::CmaHeader(const Id& id) const
{
    std::vector<uint8_t> h(kCmaHeaderBytes, 0);
    h[0] = 0x00;       // cma_version
    h[1] = 4 << 4;     // ip_version 4 in bits 7:4
    h[2] = static_cast<uint8_t>(id.srcPort >> 8);
    h[3] = static_cast<uint8_t>(id.srcPort);
    const uint32_t src = id.srcIp;
    const uint32_t dst = id.dstIp;
    for (int i = 0; i < 4; ++i)
    {
        h[4 + 12 + i] = static_cast<uint8_t>(src >> (24 - 8 * i));
        h[20 + 12 + i] = static_cast<uint8_t>(dst >> (24 - 8 * i));
    }
    return h;
}

IbCmAddress
EmuCmService::PeerAddress(const Id& id) const
{
    IbCmAddress a;
    a.lid = id.route.dlid;
    a.sl = id.route.sl;
    a.global = id.route.link_layer == 2;
    std::copy(id.route.dgid, id.route.dgid + 16, a.gid.begin());
    return a;
}

uint32_t
EmuCmService::NewPsn(uint32_t qpn)
{
    // Deterministic but varied starting PSNs (the kernel draws them at random).
    // Never 0: 0 marks "not chosen yet" in an ID.
    m_psnSeed = m_psnSeed * 1664525u + 1013904223u + qpn;
    const uint32_t psn = (m_psnSeed >> 8) & 0xFFFFFF;
    return psn != 0 ? psn : 1;
}

int
EmuCmService::DoConnect(Id& id, const cnuas_cm_conn_param& c)
{
    if (id.state != IdState::RouteResolved)
    {
        return EINVAL;
    }
    IbCmMessage req;
    std::vector<uint8_t> pd = CmaHeader(id);
    const bool ud = id.ps == kPsUdp || id.qpType == kQptUd;
    const uint32_t room =
        IbCmMessage::PrivateDataRoom(ud ? IbCmAttr::SidrReq : IbCmAttr::Req) - kCmaHeaderBytes;
    if (c.private_data_len > room)
    {
        return EINVAL;
    }
    pd.insert(pd.end(), c.private_data, c.private_data + c.private_data_len);
    req.privateData = pd;
    req.serviceId = ServiceId(id.ps, id.dstPort);
    req.pkey = id.route.pkey;
    const uint32_t handle = id.handle;
    auto cb = MakeCallback(&EmuCmService::OnConnEvent, this).Bind(handle);
    if (ud)
    {
        req.attrId = IbCmAttr::SidrReq;
        id.commId = AgentOf(id)->SendReq(req, PeerAddress(id), cb);
        id.state = IdState::Connecting;
        return 0;
    }
    id.localQpn = c.qp_num & 0xFFFFFF;
    id.localPsn = NewPsn(id.localQpn);
    id.responderResources = c.responder_resources;
    id.initiatorDepth = c.initiator_depth;
    id.retryCount = std::min<uint8_t>(c.retry_count, 7);
    id.rnrRetryCount = std::min<uint8_t>(c.rnr_retry_count, 7);
    req.attrId = IbCmAttr::Req;
    req.localQpn = id.localQpn;
    req.responderResources = c.responder_resources;
    req.initiatorDepth = c.initiator_depth;
    req.transportServiceType = id.qpType == kQptUc ? 1 : 0;
    req.endToEndFlowControl = c.flow_control != 0;
    req.startingPsn = id.localPsn;
    req.retryCount = id.retryCount;
    req.pathMtu = id.route.mtu;
    req.rnrRetryCount = id.rnrRetryCount;
    req.srq = c.srq != 0;
    IbCmPath& path = req.primary;
    path.localLid = id.route.slid;
    path.remoteLid = id.route.dlid;
    std::copy(id.route.sgid, id.route.sgid + 16, path.localGid.begin());
    std::copy(id.route.dgid, id.route.dgid + 16, path.remoteGid.begin());
    path.hopLimit = id.route.hop_limit;
    path.trafficClass = id.route.traffic_class;
    path.sl = id.route.sl;
    path.subnetLocal = id.route.link_layer == 1;
    path.localAckTimeout = m_localAckTimeout;
    id.commId = AgentOf(id)->SendReq(req, PeerAddress(id), cb);
    id.state = IdState::Connecting;
    return 0;
}

int
EmuCmService::DoAccept(Id& id, const cnuas_cm_conn_param& c)
{
    if (id.state == IdState::RepReceived)
    {
        // Active side: the process has its QP in RTS; the RTU completes the handshake.
        if (!AgentOf(id)->SendRtu(id.commId, {}))
        {
            return EINVAL;
        }
        id.state = IdState::Established;
        return 0;
    }
    if (id.state != IdState::ReqReceived)
    {
        return EINVAL;
    }
    const bool ud = id.ps == kPsUdp || id.qpType == kQptUd;
    std::vector<uint8_t> pd(c.private_data, c.private_data + c.private_data_len);
    if (ud)
    {
        if (c.private_data_len > kIbCmSidrRepPrivateBytes)
        {
            return EINVAL;
        }
        const uint32_t qkey = c.qkey != 0 ? c.qkey : id.qkey;
        AgentOf(id)->SendSidrRep(id.commId, IbCmSidrStatus::Valid, c.qp_num & 0xFFFFFF, qkey, pd);
        id.commId = 0;
        id.state = IdState::Established;
        return 0;
    }
    if (c.private_data_len > kIbCmRepPrivateBytes)
    {
        return EINVAL;
    }
    IbCmMessage rep;
    id.localQpn = c.qp_num & 0xFFFFFF;
    // INIT_QP_ATTR(RTS) before the ACCEPT already gave the process its send PSN.
    if (id.localPsn == 0)
    {
        id.localPsn = NewPsn(id.localQpn);
    }
    rep.localQpn = id.localQpn;
    rep.startingPsn = id.localPsn;
    rep.responderResources = c.responder_resources;
    rep.initiatorDepth = c.initiator_depth;
    rep.targetAckDelay = 0;
    rep.endToEndFlowControl = c.flow_control != 0;
    rep.rnrRetryCount = std::min<uint8_t>(c.rnr_retry_count, 7);
    rep.srq = c.srq != 0;
    rep.privateData = pd;
    id.responderResources = c.responder_resources;
    id.initiatorDepth = c.initiator_depth;
    if (!AgentOf(id)->SendRep(id.commId, rep))
    {
        return EINVAL;
    }
    id.state = IdState::Accepted;
    return 0;
}

int
EmuCmService::DoReject(Id& id, const cnuas_cm_req& q)
{
    if (id.state != IdState::ReqReceived || id.commId == 0)
    {
        return EINVAL;
    }
    const uint32_t n = std::min<uint32_t>(q.u.reject.private_data_len, CNUAS_CM_MAX_PRIVATE);
    std::vector<uint8_t> pd(q.u.reject.private_data, q.u.reject.private_data + n);
    const bool ud = id.ps == kPsUdp || id.qpType == kQptUd;
    if (ud)
    {
        AgentOf(id)->SendSidrRep(id.commId, IbCmSidrStatus::Rejected, 0, 0, pd);
    }
    else if (!AgentOf(id)->SendRej(id.commId, IbCmRejReason::ConsumerReject, pd))
    {
        return EINVAL;
    }
    id.commId = 0;
    id.state = IdState::Disconnected;
    return 0;
}

int
EmuCmService::DoDisconnect(Id& id)
{
    switch (id.state)
    {
    case IdState::Established:
    case IdState::Accepted:
        if (id.commId != 0 && AgentOf(id)->SendDreq(id.commId, {}))
        {
            id.state = IdState::DreqSent;
            return 0;
        }
        if (id.commId != 0)
        {
            AgentOf(id)->Destroy(id.commId);
            id.commId = 0;
        }
        id.state = IdState::Disconnected;
        return 0;
    case IdState::DreqReceived:
        AgentOf(id)->SendDrep(id.commId, {});
        id.commId = 0;
        id.state = IdState::Disconnected;
        return 0;
    case IdState::DreqSent:
    case IdState::Disconnected:
        return 0;
    case IdState::RepReceived:
    case IdState::Connecting:
        // rdma_disconnect(3) on a connection not yet made: refused like the kernel does
        // (ib_send_cm_dreq fails, then the REJ of ib_send_cm_drep's path).
        AgentOf(id)->Destroy(id.commId);
        id.commId = 0;
        id.state = IdState::Disconnected;
        return 0;
    default:
        return EINVAL;
    }
}

int
EmuCmService::DoInitQpAttr(Id& id, uint32_t state, cnuas_cm_qp_attr& a)
{
    std::memset(&a, 0, sizeof(a));
    if (id.route.resolved == 0 && id.route.link_layer == 0)
    {
        return EINVAL; // no device yet (rdma_init_qp_attr(3) on an unbound ID)
    }
    const bool ud = id.qpType == kQptUd || id.ps == kPsUdp;
    const bool connected = id.commId != 0 || id.state == IdState::Established ||
                           id.state == IdState::RepReceived || id.state == IdState::Accepted ||
                           id.state == IdState::ReqReceived;
    a.qp_state = state;
    a.port_num = 1;
    a.pkey_index = 0;
    switch (state)
    {
    case kQpsInit:
        a.attr_mask = kMaskState | kMaskPkeyIndex | kMaskPort;
        if (ud)
        {
            a.attr_mask |= kMaskQkey;
            a.qkey = id.qkey;
        }
        else
        {
            // The kernel's cma_ib_init_qp_attr gives no remote access before a connection;
            // ib_cm's cm_init_qp_init_attr then allows RDMA WRITE, and READ and atomics when
            // the connection has responder resources.
            a.attr_mask |= kMaskAccess;
            if (connected)
            {
                a.qp_access_flags = kAccessRemoteWrite;
                if (id.responderResources > 0)
                {
                    a.qp_access_flags |= kAccessRemoteRead | kAccessRemoteAtomic;
                }
            }
        }
        return 0;
    case kQpsRtr:
        a.attr_mask = kMaskState;
        if (ud)
        {
            return 0;
        }
        if (!connected)
        {
            return EINVAL;
        }
        // ib_cm's cm_init_qp_rtr_attr (IBA vol. 1 §12.7.2).
        a.attr_mask |= kMaskAv | kMaskPathMtu | kMaskDestQpn | kMaskRqPsn;
        a.path_mtu = id.route.mtu;
        a.dest_qp_num = id.remoteQpn;
        a.rq_psn = id.remotePsn;
        a.dlid = id.route.dlid;
        a.sl = id.route.sl;
        a.is_global = id.route.link_layer == 2 ? 1 : 0;
        std::copy(id.route.dgid, id.route.dgid + 16, a.dgid);
        a.hop_limit = id.route.hop_limit;
        a.traffic_class = id.route.traffic_class;
        a.sgid_index = 0;
        if (id.qpType != kQptUc)
        {
            a.attr_mask |= kMaskMaxDestRdAtomic | kMaskMinRnrTimer;
            a.max_dest_rd_atomic = id.responderResources;
            a.min_rnr_timer = 0; // the kernel's value (655 ms; receives are usually posted)
        }
        return 0;
    case kQpsRts:
        a.attr_mask = kMaskState | kMaskSqPsn;
        if (ud)
        {
            return 0;
        }
        if (!connected)
        {
            return EINVAL;
        }
        if (id.localPsn == 0)
        {
            id.localPsn = NewPsn(id.localQpn);
        }
        a.sq_psn = id.localPsn;
        if (id.qpType != kQptUc)
        {
            a.attr_mask |= kMaskTimeout | kMaskRetryCnt | kMaskRnrRetry | kMaskMaxQpRdAtomic;
            a.timeout = id.ackTimeoutSet ? id.ackTimeout : m_localAckTimeout;
            a.retry_cnt = id.retryCount;
            a.rnr_retry = id.rnrRetryCount;
            a.max_rd_atomic = id.initiatorDepth;
        }
        return 0;
    default:
        return EINVAL;
    }
}

void
EmuCmService::Post(const Id& id, uint32_t event, int32_t status, cnuas_cm_event& ev)
{
    ev.event = event;
    ev.status = status;
    if (ev.id == 0)
    {
        ev.id = id.handle;
        ev.cookie = id.cookie;
    }
    auto p = m_procs.find(id.proc);
    if (p == m_procs.end())
    {
        ++m_counters.eventsDropped;
        return;
    }
    auto ch = p->second->channels.find(id.channel);
    if (ch == p->second->channels.end() ||
        write(ch->second, &ev, sizeof(ev)) != static_cast<ssize_t>(sizeof(ev)))
    {
        ++m_counters.eventsDropped;
        return;
    }
    ++m_counters.events;
}

void
EmuCmService::Post(const Id& id, uint32_t event, int32_t status)
{
    cnuas_cm_event ev;
    std::memset(&ev, 0, sizeof(ev));
    PutSockaddrIn(ev.src, id.srcIp, id.srcPort);
    PutSockaddrIn(ev.dst, id.dstIp, id.dstPort);
    ev.route = id.route;
    Post(id, event, status, ev);
}

void
EmuCmService::OnListenEvent(uint32_t listenHandle, uint32_t adapter, const IbCmEvent& ev)
{
    const Ptr<IbCmAgent> agent = m_adapters[adapter].agent;
    auto it = m_ids.find(listenHandle);
    if (it == m_ids.end() || it->second.state != IdState::Listening)
    {
        agent->Destroy(ev.commId);
        return;
    }
    const Id& l = it->second;
    const IbCmMessage& m = ev.msg;
    // The rdma_cm header the active side put first in the private data.
    if (m.privateData.size() < kCmaHeaderBytes || m.privateData[0] != 0 ||
        (m.privateData[1] >> 4) != 4)
    {
        agent->Destroy(ev.commId); // not an rdma_cm REQ of IPv4 (REJ Consumer Reject)
        return;
    }
    const uint8_t* h = m.privateData.data();
    Id n;
    n.handle = m_nextHandle++;
    n.proc = l.proc;
    n.channel = l.channel;
    n.cookie = 0;
    n.ps = l.ps;
    n.qpType = l.qpType;
    n.qkey = l.qkey;
    n.dstPort = static_cast<uint16_t>(h[2] << 8 | h[3]);
    n.dstIp = uint32_t(h[16]) << 24 | uint32_t(h[17]) << 16 | uint32_t(h[18]) << 8 | h[19];
    n.srcIp = uint32_t(h[32]) << 24 | uint32_t(h[33]) << 16 | uint32_t(h[34]) << 8 | h[35];
    n.srcPort = l.srcPort;
    n.commId = ev.commId;
    n.state = IdState::ReqReceived;
    n.adapter = static_cast<int>(adapter); // the one the REQ came in on
    n.remoteQpn = m.localQpn;
    n.remotePsn = m.startingPsn;
    // Seen from this side, the peer's initiator depth bounds our responder resources and the
    // other way round (ib_cm's cm_format_req_event).
    n.responderResources = m.initiatorDepth;
    n.initiatorDepth = m.responderResources;
    n.retryCount = m.retryCount;
    n.rnrRetryCount = m.rnrRetryCount;
    FillRoute(n);
    const bool sidr = ev.type == IbCmEventType::SidrReqReceived;
    if (sidr)
    {
        n.route.dlid = ev.from.lid;
        std::copy(ev.from.gid.begin(), ev.from.gid.end(), n.route.dgid);
    }
    else
    {
        n.route.dlid = m.primary.localLid;
        std::copy(m.primary.localGid.begin(), m.primary.localGid.end(), n.route.dgid);
        n.route.mtu = std::min<uint8_t>(n.route.mtu, m.pathMtu ? m.pathMtu : n.route.mtu);
        n.route.sl = m.primary.sl;
        // The passive side answers in the class the REQ's path names (the kernel builds its
        // address vector from the REQ's primary path): an active side's TOS holds both ways.
        n.route.traffic_class = m.primary.trafficClass;
    }
    n.route.resolved = 2;
    m_ids[n.handle] = n;
    agent->SetConnectionCallback(ev.commId,
                                 MakeCallback(&EmuCmService::OnConnEvent, this).Bind(n.handle));
    cnuas_cm_event e;
    std::memset(&e, 0, sizeof(e));
    e.id = n.handle;
    e.listen_id = l.handle;
    e.cookie = l.cookie;
    PutSockaddrIn(e.src, n.srcIp, n.srcPort);
    PutSockaddrIn(e.dst, n.dstIp, n.dstPort);
    e.route = n.route;
    e.param.qp_num = m.localQpn;
    e.param.srq = m.srq;
    e.param.responder_resources = n.responderResources;
    e.param.initiator_depth = n.initiatorDepth;
    e.param.flow_control = m.endToEndFlowControl;
    e.param.retry_count = m.retryCount;
    e.param.rnr_retry_count = m.rnrRetryCount;
    const uint32_t user = static_cast<uint32_t>(m.privateData.size()) - kCmaHeaderBytes;
    e.param.private_data_len = static_cast<uint8_t>(std::min<uint32_t>(user, 255));
    std::memcpy(e.param.private_data, h + kCmaHeaderBytes,
                std::min<uint32_t>(user, CNUAS_CM_MAX_PRIVATE));
    Post(m_ids[n.handle], kEvConnectRequest, 0, e);
}

void
EmuCmService::OnConnEvent(uint32_t handle, const IbCmEvent& ev)
{
    auto it = m_ids.find(handle);
    if (it == m_ids.end())
    {
        return;
    }
    Id& id = it->second;
    const IbCmMessage& m = ev.msg;
    cnuas_cm_event e;
    std::memset(&e, 0, sizeof(e));
    PutSockaddrIn(e.src, id.srcIp, id.srcPort);
    PutSockaddrIn(e.dst, id.dstIp, id.dstPort);
    e.route = id.route;
    auto setPrivate = [&e, &m]() {
        const uint32_t n = std::min<uint32_t>(static_cast<uint32_t>(m.privateData.size()),
                                              CNUAS_CM_MAX_PRIVATE);
        e.param.private_data_len = static_cast<uint8_t>(n);
        std::memcpy(e.param.private_data, m.privateData.data(), n);
    };
    switch (ev.type)
    {
    case IbCmEventType::RepReceived:
        id.remoteQpn = m.localQpn;
        id.remotePsn = m.startingPsn;
        // ib_cm's cm_format_rep_event: the peer's resources seen from this side.
        id.responderResources = std::min(id.responderResources, m.initiatorDepth);
        id.initiatorDepth = std::min(id.initiatorDepth, m.responderResources);
        id.rnrRetryCount = m.rnrRetryCount;
        id.state = IdState::RepReceived;
        e.param.qp_num = m.localQpn;
        e.param.srq = m.srq;
        e.param.responder_resources = m.initiatorDepth;
        e.param.initiator_depth = m.responderResources;
        e.param.flow_control = m.endToEndFlowControl;
        e.param.rnr_retry_count = m.rnrRetryCount;
        setPrivate();
        Post(id, kEvConnectResponse, 0, e);
        return;
    case IbCmEventType::RtuReceived:
        id.state = IdState::Established;
        setPrivate();
        Post(id, kEvEstablished, 0, e);
        return;
    case IbCmEventType::RejReceived:
        id.commId = 0;
        id.state = IdState::Disconnected;
        setPrivate();
        // rdma_cm's REJECTED: status is the REJ's reason (8: nobody listens; 28: rdma_reject).
        Post(id, kEvRejected, m.reason, e);
        return;
    case IbCmEventType::Timeout:
        id.commId = 0;
        if (id.state == IdState::DreqSent)
        {
            id.state = IdState::Disconnected;
            Post(id, kEvDisconnected, -ETIMEDOUT, e);
            return;
        }
        id.state = IdState::Disconnected;
        Post(id, kEvUnreachable, -ETIMEDOUT, e);
        return;
    case IbCmEventType::DreqReceived:
        id.state = IdState::DreqReceived;
        setPrivate();
        Post(id, kEvDisconnected, 0, e);
        return;
    case IbCmEventType::DrepReceived:
        id.commId = 0;
        if (id.state == IdState::Disconnected)
        {
            return; // the process already gave up on it
        }
        id.state = IdState::Disconnected;
        Post(id, kEvDisconnected, 0, e);
        return;
    case IbCmEventType::SidrRepReceived: {
        id.commId = 0;
        if (m.sidrStatus != IbCmSidrStatus::Valid)
        {
            id.state = IdState::Disconnected;
            Post(id, kEvUnreachable, m.sidrStatus, e);
            return;
        }
        id.state = IdState::Established;
        id.remoteQpn = m.localQpn;
        e.param.qp_num = m.localQpn;
        e.param.qkey = m.localQkey;
        setPrivate();
        cnuas_cm_qp_attr& ah = e.ah;
        ah.dlid = id.route.dlid;
        ah.sl = id.route.sl;
        ah.is_global = id.route.link_layer == 2 ? 1 : 0;
        std::copy(id.route.dgid, id.route.dgid + 16, ah.dgid);
        ah.hop_limit = id.route.hop_limit;
        ah.port_num = 1;
        Post(id, kEvEstablished, 0, e);
        return;
    }
    default:
        return;
    }
}

void
EmuCmService::DestroyId(uint32_t handle, bool processGone)
{
    auto it = m_ids.find(handle);
    if (it == m_ids.end())
    {
        return;
    }
    Id& id = it->second;
    if (id.commId != 0)
    {
        AgentOf(id)->Destroy(id.commId);
    }
    if (id.routeTid != 0)
    {
        m_pathPending.erase(id.routeTid);
    }
    // rdma_destroy_id leaves the ID's groups (the kernel's cma_leave_mc_groups).
    for (const Id::Join& j : id.joins)
    {
        if (j.tid != 0)
        {
            m_saPending.erase(j.tid);
        }
        ReleaseGroup(id, j);
    }
    if (id.state == IdState::Listening)
    {
        StopListening(id);
    }
    if (id.boundPort)
    {
        if (auto* space = Space(id.ps))
        {
            auto p = space->find(id.srcPort);
            if (p != space->end() && p->second == handle)
            {
                space->erase(p);
            }
        }
    }
    NS_LOG_INFO("rdma_cm ID " << handle << " destroyed" << (processGone ? " (process gone)" : ""));
    m_ids.erase(it);
}

} // namespace ns3
