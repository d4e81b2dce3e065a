#include "emu-umad-service.h"

#include "emu-realtime-simulator-impl.h"
#include "unix-seqpacket.h"

#include "models/ib/ib-lrh-header.h"
#include "models/ib/ib-net-device.h"
#include "models/mgmt/ib-smp-attributes.h"
#include "models/rdma/ib-wire-bytes.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EmuUmadService");
NS_OBJECT_ENSURE_REGISTERED(EmuUmadService);

int EmuUmadService::s_inotifyFd = -1;
std::map<int, EmuUmadService*> EmuUmadService::s_issmWatches;

namespace
{

constexpr uint16_t kPermissive = IbLrhHeader::kPermissiveLid;

bool
IsSmpClass(uint8_t c)
{
    return c == IbMgmtClass::SubnLid || c == IbMgmtClass::SubnDirected;
}

/// ib_response_mad (drivers/infiniband/core/mad.c): what is not a new request, so keeps its
/// TransactionID and waits for nothing: responses, TrapRepress, and BM responses.
bool
ResponseLike(const uint8_t* mad)
{
    const uint8_t method = mad[3];
    return (method & IbMadMethod::ResponseBit) != 0 || method == IbMadMethod::TrapRepress ||
           (mad[1] == IbMgmtClass::BoardMgt && (mad[23] & 1) != 0);
}

/// Requests delivered to processes kept for their responses.
constexpr size_t kMaxIncoming = 4096;

void
Store32(uint8_t* p, uint32_t v)
{
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}

/// Lanes of a PortInfo.LinkWidthActive code (IBA vol. 1 §14.2.5.6, Table 151).
int
Lanes(uint8_t width)
{
    switch (width)
    {
    case 1:
        return 1;
    case 2:
        return 4;
    case 4:
        return 8;
    case 8:
        return 12;
    case 16:
        return 2;
    default:
        return 0;
    }
}

/**
 * The sysfs "rate" of a port, as the kernel writes it (drivers/infiniband/core/sysfs.c
 * rate_show): lanes x lane rate in Gb/s, ".5" for 1x and 2x SDR... and the speed's name,
 * none for SDR. Returns the integer part, which is what libibumad's umad_port_t.rate holds.
 */
uint32_t
RateText(const IbPortInfo& pi, char* text, size_t n)
{
    const int lanes = Lanes(pi.linkWidthActive);
    int tenths = 25; // per lane, in 0.1 Gb/s
    const char* name = "";
    switch (pi.linkSpeedExtActive)
    {
    case 1:
        tenths = 140, name = " FDR";
        break;
    case 2:
        tenths = 250, name = " EDR";
        break;
    case 4:
        tenths = 500, name = " HDR";
        break;
    case 8:
        tenths = 1000, name = " NDR";
        break;
    default:
        switch (pi.linkSpeedActive)
        {
        case 2:
            tenths = 50, name = " DDR";
            break;
        case 4:
            tenths = 100, name = " QDR";
            break;
        default:
            break;
        }
        break;
    }
    const int rate = lanes * tenths;
    std::snprintf(text, n, "%d%s Gb/sec (%dX%s)", rate / 10, rate % 10 ? ".5" : "", lanes, name);
    return static_cast<uint32_t>(rate / 10);
}

} // namespace

TypeId
EmuUmadService::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EmuUmadService")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<EmuUmadService>()
            .AddAttribute("CaName",
                          "The CA name processes see (umad_get_cas_names; the same as the "
                          "verbs device's name).",
                          StringValue("cnuas_0"),
                          MakeStringAccessor(&EmuUmadService::m_caName),
                          MakeStringChecker())
            .AddAttribute("FirmwareVersion",
                          "fw_ver of the CA (ibstat's Firmware version).",
                          StringValue("0.1.0"),
                          MakeStringAccessor(&EmuUmadService::m_fwVersion),
                          MakeStringChecker())
            .AddAttribute("HardwareVersion",
                          "hw_rev of the CA (ibstat's Hardware version).",
                          StringValue("0"),
                          MakeStringAccessor(&EmuUmadService::m_hwVersion),
                          MakeStringChecker())
            .AddAttribute("CaType",
                          "hca_type of the CA (ibstat's CA type), at most 39 characters.",
                          StringValue("Cnuas emulated HCA"),
                          MakeStringAccessor(&EmuUmadService::m_caType),
                          MakeStringChecker())
            .AddAttribute("QueryTimeout",
                          "How long a CA query waits for the port's SMA to answer each SMP "
                          "(simulated time) before the process is told EIO.",
                          TimeValue(MilliSeconds(100)),
                          MakeTimeAccessor(&EmuUmadService::m_queryTimeout),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("MaxConnections",
                          "Connections (queries and open ports) at once; more are refused.",
                          UintegerValue(256),
                          MakeUintegerAccessor(&EmuUmadService::m_maxConnections),
                          MakeUintegerChecker<uint32_t>(1));
    return tid;
}

EmuUmadService::EmuUmadService() = default;

EmuUmadService::~EmuUmadService() = default;

void
EmuUmadService::DoDispose()
{
    Stop();
    m_disp = nullptr;
    Object::DoDispose();
}

uint32_t
EmuUmadService::GetOpenPorts() const
{
    uint32_t n = 0;
    for (const auto& [id, c] : m_conns)
    {
        n += c->madFd >= 0;
    }
    return n;
}

bool
EmuUmadService::Start(const std::string& socketPath,
                      Ptr<IbMadDispatcher> dispatcher,
                      uint8_t portNumber,
                      std::string* why)
{
    if (!dispatcher || dispatcher->IsSwitch() || !dispatcher->GetPort(portNumber))
    {
        *why = "the umad service needs a channel adapter's port";
        return false;
    }
    // /dev/infiniband/umadN is root's on a real machine (mode 0600 unless udev says otherwise);
    // the socket follows the same rule.
    m_listenFd = ListenAndAccept(
        socketPath,
        0600,
        "the umad",
        [this](int fd, pid_t pid) { Admit(fd, pid); },
        why);
    if (m_listenFd < 0)
    {
        return false;
    }
    m_path = socketPath;
    m_disp = dispatcher;
    m_portNumber = portNumber;
    // hi_tids: the kernel numbers its agents from 1 per device; here they only need to be
    // unique on the node and unlike the built-in SM's (its node GUID's low 32 bits), so they
    // start in the upper half.
    m_nextHiTid = 0x80000001u;
    m_queryHiTid = m_nextHiTid++;
    m_previousManager = m_disp->GetManagerHandler();
    m_disp->SetManagerHandler(MakeCallback(&EmuUmadService::OnManagerMad, this));
    m_previousSma = m_disp->GetSmaHandler();
    m_disp->SetSmaHandler(MakeCallback(&EmuUmadService::OnSmpRequest, this));
    m_installed = true;
    m_sma = m_disp->GetNode()->GetObject<IbSmaAgent>();
    if (!StartIssm(why))
    {
        Stop();
        return false;
    }
    return true;
}

bool
EmuUmadService::StartIssm(std::string* why)
{
    // /dev/infiniband/issmN's stand-in: a file beside the socket, watched with inotify.
    m_issmPath = m_path;
    const std::string suffix = ".umad";
    if (m_issmPath.size() > suffix.size() &&
        m_issmPath.compare(m_issmPath.size() - suffix.size(), suffix.size(), suffix) == 0)
    {
        m_issmPath.resize(m_issmPath.size() - suffix.size());
    }
    m_issmPath += ".issm";
    const int f = open(m_issmPath.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    if (f < 0)
    {
        *why = "cannot create " + m_issmPath + ": " + std::strerror(errno);
        return false;
    }
    close(f);
    if (s_inotifyFd < 0)
    {
        s_inotifyFd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (s_inotifyFd < 0 ||
            !EmuRealtimeSimulatorImpl::Current()->WatchFd(s_inotifyFd, Simulator::NO_CONTEXT,
                                                          &EmuUmadService::OnInotify))
        {
            *why = std::string("cannot watch issm files: ") + std::strerror(errno);
            if (s_inotifyFd >= 0)
            {
                close(s_inotifyFd);
                s_inotifyFd = -1;
            }
            return false;
        }
    }
    m_issmWatch = inotify_add_watch(s_inotifyFd, m_issmPath.c_str(), IN_OPEN | IN_CLOSE);
    if (m_issmWatch < 0)
    {
        *why = "cannot watch " + m_issmPath + ": " + std::strerror(errno);
        return false;
    }
    s_issmWatches[m_issmWatch] = this;
    return true;
}

void
EmuUmadService::StopIssm()
{
    if (m_issmWatch >= 0)
    {
        s_issmWatches.erase(m_issmWatch);
        if (s_inotifyFd >= 0)
        {
            inotify_rm_watch(s_inotifyFd, m_issmWatch);
        }
        m_issmWatch = -1;
    }
    if (s_issmWatches.empty() && s_inotifyFd >= 0)
    {
        if (auto rt = EmuRealtimeSimulatorImpl::Current())
        {
            rt->UnwatchFd(s_inotifyFd);
        }
        close(s_inotifyFd);
        s_inotifyFd = -1;
    }
}

void
EmuUmadService::OnInotify()
{
    alignas(inotify_event) char buf[4096];
    std::set<int> touched;
    ssize_t n;
    while ((n = read(s_inotifyFd, buf, sizeof(buf))) > 0)
    {
        for (ssize_t at = 0; at < n;)
        {
            const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
            touched.insert(ev->wd);
            at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
        }
    }
    for (int wd : touched)
    {
        auto it = s_issmWatches.find(wd);
        if (it != s_issmWatches.end())
        {
            it->second->OnIssmEvent();
        }
    }
}

void
EmuUmadService::OnIssmEvent()
{
    // Identical events may be merged by inotify, so the holders are counted afresh: the
    // processes with a descriptor on the file (one that died has none).
    int holders = 0;
    if (DIR* procs = opendir("/proc"))
    {
        while (dirent* p = readdir(procs))
        {
            if (p->d_name[0] < '1' || p->d_name[0] > '9')
            {
                continue;
            }
            const std::string fdDir = std::string("/proc/") + p->d_name + "/fd";
            if (DIR* fds = opendir(fdDir.c_str()))
            {
                while (dirent* f = readdir(fds))
                {
                    char target[512];
                    const std::string link = fdDir + "/" + f->d_name;
                    const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
                    if (n > 0 && static_cast<size_t>(n) == m_issmPath.size() &&
                        std::memcmp(target, m_issmPath.data(), m_issmPath.size()) == 0)
                    {
                        ++holders;
                    }
                }
                closedir(fds);
            }
        }
        closedir(procs);
    }
    const bool was = m_issmOpens > 0;
    m_issmOpens = holders;
    if (m_sma && was != (holders > 0))
    {
        NS_LOG_INFO("umad " << m_path << ": IsSM " << (holders > 0 ? "set" : "cleared"));
        m_sma->SetIsSm(m_portNumber, holders > 0);
    }
}

void
EmuUmadService::Stop()
{
    while (!m_conns.empty())
    {
        Close(m_conns.begin()->first, "the service stops");
    }
    for (auto& [tid, q] : m_queries)
    {
        q.timeout.Cancel();
    }
    m_queries.clear();
    if (m_installed && m_disp)
    {
        m_disp->SetManagerHandler(m_previousManager);
        m_disp->SetSmaHandler(m_previousSma);
        for (uint8_t cls : m_gsiClasses)
        {
            m_disp->SetGsiHandler(cls, IbMadDispatcher::MadHandler());
        }
        m_installed = false;
    }
    m_gsiClasses.clear();
    m_incoming.clear();
    m_incomingOrder.clear();
    m_previousManager = IbMadDispatcher::MadHandler();
    m_previousSma = IbMadDispatcher::MadHandler();
    StopIssm();
    if (m_issmOpens > 0 && m_sma)
    {
        m_sma->SetIsSm(m_portNumber, false);
    }
    m_issmOpens = 0;
    if (!m_issmPath.empty())
    {
        unlink(m_issmPath.c_str());
        m_issmPath.clear();
    }
    CloseListener(m_listenFd, m_path);
}

void
EmuUmadService::Admit(int fd, pid_t pid)
{
    if (m_conns.size() >= m_maxConnections)
    {
        NS_LOG_WARN("umad " << m_path << ": refusing a connection beyond MaxConnections");
        close(fd);
        return;
    }
    auto c = std::make_unique<Conn>();
    c->id = m_nextConn++;
    c->fd = fd;
    c->pid = pid;
    const uint32_t id = c->id;
    m_conns[id] = std::move(c);
    ++m_counters.connections;
    if (!WatchConnection(fd, [this, id]() { OnControl(id); }))
    {
        Close(id, "cannot poll the connection");
    }
}

void
EmuUmadService::Close(uint32_t id, const char* why)
{
    auto it = m_conns.find(id);
    if (it == m_conns.end())
    {
        return;
    }
    NS_LOG_INFO("umad " << m_path << ": connection " << id << " ends: " << why);
    Conn& c = *it->second;
    auto rt = EmuRealtimeSimulatorImpl::Current();
    for (auto& a : c.agents)
    {
        if (a.used)
        {
            m_byHiTid.erase(a.hiTid);
        }
    }
    for (int* fd : {&c.fd, &c.madFd})
    {
        if (*fd >= 0)
        {
            if (rt)
            {
                rt->UnwatchFd(*fd);
            }
            close(*fd);
            *fd = -1;
        }
    }
    // Queries of this connection finish unanswered (their answers find no connection).
    m_conns.erase(it);
    UpdateGsiHandlers();
}

void
EmuUmadService::OnControl(uint32_t id)
{
    for (int n = 0; n < 16; ++n)
    {
        auto it = m_conns.find(id);
        if (it == m_conns.end())
        {
            return;
        }
        Conn& c = *it->second;
        cnuas_umad_req q;
        const SeqpacketRecv got = RecvRequest(c.fd, &q, sizeof(q));
        if (got != SeqpacketRecv::Request)
        {
            if (got != SeqpacketRecv::None)
            {
                Close(id, RecvEndReason(got, &m_counters.malformed));
            }
            return;
        }
        Handle(c, q);
    }
}

bool
EmuUmadService::Reply(Conn& c, const cnuas_umad_resp& r, int fd)
{
    ++m_counters.requests;
    if (r.err != 0)
    {
        ++m_counters.refused;
    }
    return SendDatagramWithFd(c.fd, &r, sizeof(r), fd);
}

void
EmuUmadService::Handle(Conn& c, const cnuas_umad_req& q)
{
    cnuas_umad_resp r;
    std::memset(&r, 0, sizeof(r));
    r.op = q.op;
    int outFd = -1;
    int err = 0;
    if (q.abi_version != CNUAS_UMAD_ABI_VERSION)
    {
        err = EPROTO;
        std::snprintf(r.why, sizeof(r.why), "umad ABI version %u, the daemon speaks %u",
                      q.abi_version, CNUAS_UMAD_ABI_VERSION);
    }
    else
    {
        switch (q.op)
        {
        case CNUAS_UMAD_OP_QUERY_CA:
            StartQuery(c); // answered when the SMA has
            return;
        case CNUAS_UMAD_OP_OPEN_PORT:
            err = DoOpenPort(c, q, r, &outFd);
            break;
        case CNUAS_UMAD_OP_REGISTER:
            err = DoRegister(c, q, r);
            break;
        case CNUAS_UMAD_OP_UNREGISTER:
            err = DoUnregister(c, q);
            break;
        default:
            err = EOPNOTSUPP;
            break;
        }
    }
    r.err = err;
    if (err != 0 && r.why[0] == '\0')
    {
        std::snprintf(r.why, sizeof(r.why), "%s", std::strerror(err));
    }
    const uint32_t id = c.id;
    const bool sent = Reply(c, r, err == 0 ? outFd : -1);
    if (outFd >= 0)
    {
        close(outFd); // the process has its copy now
    }
    if (!sent)
    {
        Close(id, "cannot answer");
    }
}

int
EmuUmadService::DoOpenPort(Conn& c, const cnuas_umad_req& q, cnuas_umad_resp& r, int* outFd)
{
    if (c.madFd >= 0)
    {
        std::snprintf(r.why, sizeof(r.why), "this connection is a port already");
        return EBUSY;
    }
    if (q.u.open_port.portnum != 0 && q.u.open_port.portnum != m_portNumber)
    {
        std::snprintf(r.why, sizeof(r.why), "no port %u (the CA has port %u)",
                      q.u.open_port.portnum, m_portNumber);
        return ENODEV;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    {
        return errno;
    }
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    // Room for a few hundred MADs each way (a sweep keeps many in flight), no more: a
    // process that never reads loses MADs, counted, as the kernel's receive list is bounded by
    // the process's own pace.
    const int bytes = 512 * 1024;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
    const uint32_t id = c.id;
    if (!EmuRealtimeSimulatorImpl::Current()->WatchFd(sv[0], Simulator::NO_CONTEXT,
                                                      [this, id]() { OnMadStream(id); }))
    {
        const int e = errno;
        close(sv[0]);
        close(sv[1]);
        return e;
    }
    c.madFd = sv[0];
    *outFd = sv[1];
    r.u.open_port.portnum = m_portNumber;
    ++m_counters.portsOpened;
    return 0;
}

int
EmuUmadService::DoRegister(Conn& c, const cnuas_umad_req& q, cnuas_umad_resp& r)
{
    const auto& g = q.u.reg;
    if (c.madFd < 0)
    {
        std::snprintf(r.why, sizeof(r.why), "not an open port");
        return EBADF;
    }
    // ib_umad_reg_agent and ib_register_mad_agent: QP 0 or 1; the subnet management classes
    // on QP0 only and every other class on QP1 only; vendor range 2 (0x30-0x4F) needs an OUI.
    if (g.qpn > 1)
    {
        std::snprintf(r.why, sizeof(r.why), "QP %u is neither the SMI (0) nor the GSI (1)", g.qpn);
        return EINVAL;
    }
    if (g.mgmt_class != 0 && IsSmpClass(g.mgmt_class) != (g.qpn == 0))
    {
        std::snprintf(r.why, sizeof(r.why), "class 0x%02x does not belong on QP%u", g.mgmt_class,
                      g.qpn);
        return EINVAL;
    }
    if (g.mgmt_class >= 0x30 && g.mgmt_class <= 0x4F && (g.oui & 0xFFFFFF) == 0)
    {
        std::snprintf(r.why, sizeof(r.why), "vendor class 0x%02x without an OUI", g.mgmt_class);
        return EINVAL;
    }
    // A method of a class may have one agent on the port (ib_mad.c: "Method %d already in use").
    if (g.mgmt_class != 0 && (g.method_mask[0] | g.method_mask[1]) != 0)
    {
        for (const auto& [id, other] : m_conns)
        {
            for (const Agent& a : other->agents)
            {
                if (a.used && a.mgmtClass == g.mgmt_class &&
                    a.classVersion == g.mgmt_class_version &&
                    ((a.methodMask[0] & g.method_mask[0]) | (a.methodMask[1] & g.method_mask[1])))
                {
                    std::snprintf(r.why, sizeof(r.why),
                                  "a method of class 0x%02x is another agent's already",
                                  g.mgmt_class);
                    return EINVAL;
                }
            }
        }
    }
    for (uint32_t i = 0; i < c.agents.size(); ++i)
    {
        Agent& a = c.agents[i];
        if (a.used)
        {
            continue;
        }
        a.used = true;
        a.qpn = static_cast<uint8_t>(g.qpn);
        a.mgmtClass = g.mgmt_class;
        a.classVersion = g.mgmt_class_version;
        a.rmppVersion = g.rmpp_version;
        a.methodMask = {g.method_mask[0], g.method_mask[1]};
        a.oui = g.oui & 0xFFFFFF;
        a.hiTid = m_nextHiTid++;
        if (m_nextHiTid == 0)
        {
            m_nextHiTid = 0x80000001u;
        }
        m_byHiTid[a.hiTid] = {c.id, i};
        r.u.reg.agent_id = i;
        r.u.reg.hi_tid = a.hiTid;
        UpdateGsiHandlers();
        return 0;
    }
    std::snprintf(r.why, sizeof(r.why), "%u agents on this port already",
                  CNUAS_UMAD_MAX_AGENTS);
    return ENOMEM;
}

int
EmuUmadService::DoUnregister(Conn& c, const cnuas_umad_req& q)
{
    const uint32_t id = q.u.unreg.agent_id;
    if (id >= c.agents.size() || !c.agents[id].used)
    {
        return EINVAL;
    }
    m_byHiTid.erase(c.agents[id].hiTid);
    c.agents[id] = Agent();
    UpdateGsiHandlers();
    return 0;
}

// ---- the MAD stream ------------------------------------------------------------------------

void
EmuUmadService::OnMadStream(uint32_t id)
{
    // A sweep writes MADs in bursts; take a bounded number per turn so that the model runs.
    for (int n = 0; n < 64; ++n)
    {
        auto it = m_conns.find(id);
        if (it == m_conns.end() || it->second->madFd < 0)
        {
            return;
        }
        Conn& c = *it->second;
        cnuas_umad_mad m;
        switch (RecvRequest(c.madFd, &m, sizeof(m)))
        {
        case SeqpacketRecv::None:
            return;
        case SeqpacketRecv::Closed:
            Close(id, "the process closed the port");
            return;
        case SeqpacketRecv::Error:
            Close(id, "stream error");
            return;
        case SeqpacketRecv::WrongSize:
            ++m_counters.malformed; // dropped; unlike the control socket, the stream goes on
            continue;
        case SeqpacketRecv::Request:
            SendFromProcess(c, m);
            break;
        }
    }
}

void
EmuUmadService::SendFromProcess(Conn& c, const cnuas_umad_mad& msg)
{
    auto refuse = [this](const char* why) {
        NS_LOG_LOGIC("umad " << m_path << ": MAD refused: " << why);
        ++m_counters.madsRefused;
    };
    if (msg.agent_id >= c.agents.size() || !c.agents[msg.agent_id].used)
    {
        return refuse("no such agent");
    }
    const Agent& a = c.agents[msg.agent_id];
    if (msg.length != CNUAS_UMAD_MAD_BYTES)
    {
        return refuse("not one 256-byte MAD (RMPP is not offered)");
    }
    uint8_t mad[kIbMadBytes];
    std::memcpy(mad, msg.mad, sizeof(mad));
    const uint8_t cls = mad[1];
    const uint8_t method = mad[3];
    if (IsSmpClass(cls) != (a.qpn == 0))
    {
        return refuse("class on the wrong QP");
    }
    if (!ResponseLike(mad))
    {
        // ib_umad_write: the agent's hi_tid in the upper half routes the response back.
        Store32(mad + 8, a.hiTid);
    }
    bool ok = false;
    if (IsSmpClass(cls) && (method & IbMadMethod::ResponseBit) != 0)
    {
        // The answer to a request this service handed to the process (SMInfo): back the way
        // the request came, as the SMA's own answers go.
        auto req = m_incoming.find(IbWireLoad64(mad + 8));
        if (req == m_incoming.end() || req->second.view.mad[1] != cls)
        {
            return refuse("a response to no request");
        }
        IbSmp smp;
        smp.ReadFrom(mad);
        ok = m_disp->SendSmpResponse(req->second, smp);
        m_incoming.erase(req);
    }
    else if (cls == IbMgmtClass::SubnDirected)
    {
        IbSmp smp;
        smp.ReadFrom(mad);
        if (smp.GetHopPointer() != 0 ||
            smp.GetDrSlid() != kPermissive || smp.GetDrDlid() != kPermissive ||
            (smp.GetHopCount() != 0 && smp.InitialPath()[1] != m_portNumber))
        {
            return refuse("a directed route this port cannot originate");
        }
        ok = m_disp->SendDirectedSmp(smp);
    }
    else if (cls == IbMgmtClass::SubnLid)
    {
        IbSmp smp;
        smp.ReadFrom(mad);
        ok = m_disp->SendLidRoutedSmp(m_portNumber, smp, msg.lid);
    }
    else
    {
        ok = m_disp->SendGmp(m_portNumber, mad, msg.lid, msg.qpn, msg.sl & 0x0F);
    }
    if (ok)
    {
        ++m_counters.madsSent;
    }
    else
    {
        refuse("the SMI/GSI could not send it");
    }
}

void
EmuUmadService::OnManagerMad(const IbReceivedMad& m)
{
    const uint8_t method = m.view.mad[3];
    const uint8_t cls = m.view.mad[1];
    const uint64_t tid = IbWireLoad64(&m.view.mad[8]);
    if ((method & IbMadMethod::ResponseBit) != 0)
    {
        const uint32_t hi = static_cast<uint32_t>(tid >> 32);
        if (hi == m_queryHiTid && IsSmpClass(cls))
        {
            OnQueryAnswer(tid, m.smp);
            return;
        }
        auto it = m_byHiTid.find(hi);
        if (it != m_byHiTid.end())
        {
            auto c = m_conns.find(it->second.first);
            if (c != m_conns.end())
            {
                DeliverTo(*c->second, it->second.second, m);
                return;
            }
        }
    }
    else
    {
        // Traps and reports: to the agent registered for the class, version and method.
        uint32_t conn = 0;
        uint32_t agent = 0;
        if (FindRequestAgent(cls, m.view.mad[2], method, &conn, &agent))
        {
            DeliverTo(*m_conns.at(conn), agent, m);
            return;
        }
    }
    if (!m_previousManager.IsNull())
    {
        m_previousManager(m);
        return;
    }
    ++m_counters.madsUnclaimed;
}

bool
EmuUmadService::FindRequestAgent(uint8_t cls, uint8_t version, uint8_t method, uint32_t* conn,
                                 uint32_t* agent) const
{
    if (method >= 128)
    {
        return false; // a method mask names methods 0-127
    }
    for (const auto& [id, c] : m_conns)
    {
        for (uint32_t i = 0; i < c->agents.size(); ++i)
        {
            const Agent& a = c->agents[i];
            if (a.used && a.mgmtClass == cls && a.classVersion == version &&
                ((a.methodMask[method / 64] >> (method % 64)) & 1) != 0)
            {
                *conn = id;
                *agent = i;
                return true;
            }
        }
    }
    return false;
}

void
EmuUmadService::OnSmpRequest(const IbReceivedMad& m)
{
    const IbMadHeader& h = m.smp.Mad();
    uint32_t conn = 0;
    uint32_t agent = 0;
    // A TrapRepress for a Trap a process sent (opensm's Trap 144 to the master it stands by
    // for, §13.4.9): to that process's agent by hi_tid, which ends its send as the kernel's
    // ib_response_mad does. The node's SMA takes only those for its own traps.
    if (h.GetMethod() == IbMadMethod::TrapRepress)
    {
        auto it = m_byHiTid.find(static_cast<uint32_t>(h.GetTransactionId() >> 32));
        if (it != m_byHiTid.end())
        {
            auto c = m_conns.find(it->second.first);
            if (c != m_conns.end())
            {
                DeliverTo(*c->second, it->second.second, m);
                return;
            }
        }
    }
    // SMInfo is the SM's (IBA vol. 1 §14.2.5.13): a subnet manager process answers it.
    if (h.GetAttributeId() == IbSmAttr::SmInfo &&
        FindRequestAgent(h.GetMgmtClass(), h.GetClassVersion(), h.GetMethod(), &conn, &agent))
    {
        const uint64_t tid = h.GetTransactionId();
        if (m_incoming.emplace(tid, m).second)
        {
            m_incomingOrder.push_back(tid);
            while (m_incomingOrder.size() > kMaxIncoming)
            {
                m_incoming.erase(m_incomingOrder.front());
                m_incomingOrder.pop_front();
            }
        }
        if (DeliverTo(*m_conns.at(conn), agent, m))
        {
            ++m_counters.requestsDelivered;
        }
        return;
    }
    if (!m_previousSma.IsNull())
    {
        m_previousSma(m);
    }
}

void
EmuUmadService::OnGsiRequest(const IbReceivedMad& m)
{
    uint32_t conn = 0;
    uint32_t agent = 0;
    if (FindRequestAgent(m.view.mad[1], m.view.mad[2], m.view.mad[3], &conn, &agent))
    {
        if (DeliverTo(*m_conns.at(conn), agent, m))
        {
            ++m_counters.requestsDelivered;
        }
        return;
    }
    ++m_counters.madsUnclaimed;
}

void
EmuUmadService::UpdateGsiHandlers()
{
    if (!m_installed)
    {
        return;
    }
    // A method mask names methods 0-127: requests (responses have the R bit, 0x80).
    std::set<uint8_t> wanted;
    for (const auto& [id, c] : m_conns)
    {
        for (const Agent& a : c->agents)
        {
            if (a.used && a.qpn == 1 && a.mgmtClass != 0 &&
                (a.methodMask[0] | a.methodMask[1]) != 0)
            {
                wanted.insert(a.mgmtClass);
            }
        }
    }
    for (auto it = m_gsiClasses.begin(); it != m_gsiClasses.end();)
    {
        if (wanted.count(*it) == 0)
        {
            m_disp->SetGsiHandler(*it, IbMadDispatcher::MadHandler());
            it = m_gsiClasses.erase(it);
        }
        else
        {
            ++it;
        }
    }
    for (uint8_t cls : wanted)
    {
        // A class an agent of the model serves (the PMA, the built-in SM's SA) stays its: the
        // adapter's own agents take a MAD before any process (the kernel's process_mad).
        if (m_gsiClasses.count(cls) == 0 && m_disp->GetGsiHandler(cls).IsNull())
        {
            m_disp->SetGsiHandler(cls, MakeCallback(&EmuUmadService::OnGsiRequest, this));
            m_gsiClasses.insert(cls);
        }
    }
}

bool
EmuUmadService::DeliverTo(Conn& c, uint32_t agentId, const IbReceivedMad& mad)
{
    cnuas_umad_mad m;
    std::memset(&m, 0, sizeof(m));
    m.agent_id = agentId;
    m.length = CNUAS_UMAD_MAD_BYTES;
    const bool smp = mad.view.bth.GetDestQp() == kIbSmiQp;
    m.qpn = smp ? 0 : mad.view.deth.GetSrcQp();
    m.qkey = mad.view.deth.GetQkey();
    m.lid = mad.view.lrh.GetSlid();
    m.sl = mad.view.lrh.GetSl();
    if (mad.view.mad[1] == IbMgmtClass::SubnDirected)
    {
        // The SMI has moved the hop pointer on arrival (C14-13): the process sees the SMP as
        // the SMI left it.
        mad.smp.WriteTo(m.mad);
    }
    else
    {
        std::memcpy(m.mad, mad.view.mad.data(), sizeof(m.mad));
    }
    if (c.madFd < 0 || send(c.madFd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) !=
                           static_cast<ssize_t>(sizeof(m)))
    {
        ++m_counters.madsUndelivered;
        return false;
    }
    ++m_counters.madsDelivered;
    return true;
}

// ---- CA queries ----------------------------------------------------------------------------

void
EmuUmadService::StartQuery(Conn& c)
{
    const uint64_t tid = (uint64_t(m_queryHiTid) << 32) | m_nextQuerySeq++;
    Query& q = m_queries[tid];
    q.conn = c.id;
    q.resp.op = CNUAS_UMAD_OP_QUERY_CA;
    cnuas_umad_ca_info& ca = q.resp.u.ca;
    std::snprintf(ca.ca_name, sizeof(ca.ca_name), "%s", m_caName.c_str());
    std::snprintf(ca.fw_ver, sizeof(ca.fw_ver), "%s", m_fwVersion.c_str());
    std::snprintf(ca.hw_ver, sizeof(ca.hw_ver), "%s", m_hwVersion.c_str());
    std::snprintf(ca.ca_type, sizeof(ca.ca_type), "%s", m_caType.c_str());
    SendQuerySmp(tid, q);
}

void
EmuUmadService::SendQuerySmp(uint64_t tid, Query& q)
{
    // Step 0 NodeInfo; 1..numports PortInfo of each port; then the P_KeyTable blocks.
    const cnuas_umad_ca_info& ca = q.resp.u.ca;
    uint16_t attr = IbSmAttr::NodeInfo;
    uint32_t mod = 0;
    if (q.step >= 1 && q.step <= static_cast<int>(ca.numports))
    {
        attr = IbSmAttr::PortInfo;
        mod = static_cast<uint32_t>(q.step);
    }
    else if (q.step > static_cast<int>(ca.numports))
    {
        attr = IbSmAttr::PKeyTable;
        mod = static_cast<uint32_t>(q.step - ca.numports - 1);
    }
    // Hop count 0: the port's own SMA, through the SMI's loopback (IBA vol. 1 §14.2.2), with
    // the port's M_Key: a driver's own queries pass the M_Key check (mlx4/mlx5 make them with
    // it off), so a protected port still shows in ibstat.
    IbSmp smp = IbSmp::MakeDirected(IbMadMethod::Get, attr, mod, tid, nullptr, 0);
    if (m_sma)
    {
        smp.SetMKey(m_sma->GetMKey(m_portNumber));
    }
    q.timeout.Cancel();
    q.timeout = Simulator::Schedule(m_queryTimeout, &EmuUmadService::QueryTimeout, this, tid);
    if (!m_disp->SendDirectedSmp(smp))
    {
        FinishQuery(tid, EIO, "the port's SMI refused the query");
    }
}

void
EmuUmadService::OnQueryAnswer(uint64_t tid, const IbSmp& smp)
{
    auto it = m_queries.find(tid);
    if (it == m_queries.end())
    {
        return; // late, after a timeout
    }
    Query& q = it->second;
    cnuas_umad_ca_info& ca = q.resp.u.ca;
    if (smp.GetSmpStatus() != 0)
    {
        FinishQuery(tid, EIO, "the port's SMA answered with an error status");
        return;
    }
    const uint8_t* data = smp.Data();
    if (q.step == 0)
    {
        IbNodeInfo ni;
        ni.ReadFrom(data);
        ca.node_type = ni.nodeType;
        ca.numports = std::min<uint32_t>(ni.numPorts, CNUAS_UMAD_MAX_PORTS);
        ca.node_guid = htobe64(ni.nodeGuid);
        ca.system_guid = htobe64(ni.systemImageGuid);
        for (uint32_t p = 0; p < ca.numports; ++p)
        {
            // NodeInfo.PortGUID is that of the port the SMP came in on (§14.2.5.3): ours.
            ca.ports[p].port_guid = htobe64(ni.portGuid);
        }
        q.pkeyBlocks = static_cast<uint16_t>(
            std::min<uint32_t>((ni.partitionCap + 31) / 32, CNUAS_UMAD_MAX_PKEYS / 32));
    }
    else if (q.step <= static_cast<int>(ca.numports))
    {
        IbPortInfo pi;
        pi.ReadFrom(data);
        cnuas_umad_port_info& p = ca.ports[q.step - 1];
        p.portnum = static_cast<uint32_t>(q.step);
        p.base_lid = pi.lid;
        p.lmc = pi.lmc;
        p.sm_lid = pi.masterSmLid;
        p.sm_sl = pi.masterSmSl;
        p.state = pi.portState;
        p.phys_state = pi.portPhysicalState;
        p.capmask = pi.capabilityMask;
        p.gid_prefix = htobe64(pi.gidPrefix);
        p.rate = RateText(pi, p.rate_text, sizeof(p.rate_text));
        std::snprintf(p.link_layer, sizeof(p.link_layer), "InfiniBand");
        if (p.portnum == m_portNumber)
        {
            std::snprintf(p.issm_path, sizeof(p.issm_path), "%s", m_issmPath.c_str());
        }
    }
    else
    {
        IbPKeyTableBlock b;
        b.ReadFrom(data);
        const uint32_t block = static_cast<uint32_t>(q.step - ca.numports - 1);
        for (uint32_t p = 0; p < ca.numports; ++p)
        {
            for (uint32_t i = 0; i < IbPKeyTableBlock::kEntries; ++i)
            {
                ca.ports[p].pkeys[block * IbPKeyTableBlock::kEntries + i] = b.pkey[i];
            }
            ca.ports[p].pkeys_size = (block + 1) * IbPKeyTableBlock::kEntries;
        }
    }
    ++q.step;
    if (q.step > static_cast<int>(ca.numports + q.pkeyBlocks))
    {
        FinishQuery(tid, 0, nullptr);
        return;
    }
    SendQuerySmp(tid, q);
}

void
EmuUmadService::QueryTimeout(uint64_t tid)
{
    FinishQuery(tid, EIO, "the port's SMA did not answer");
}

void
EmuUmadService::FinishQuery(uint64_t tid, int err, const char* why)
{
    auto it = m_queries.find(tid);
    if (it == m_queries.end())
    {
        return;
    }
    Query q = it->second;
    q.timeout.Cancel();
    m_queries.erase(it);
    auto c = m_conns.find(q.conn);
    if (c == m_conns.end())
    {
        return;
    }
    q.resp.err = err;
    if (why)
    {
        std::snprintf(q.resp.why, sizeof(q.resp.why), "%s", why);
    }
    ++m_counters.queries;
    if (!Reply(*c->second, q.resp))
    {
        Close(q.conn, "cannot answer");
    }
}

} // namespace ns3
