#include "emu-hca-service.h"

#include "emu-realtime-simulator-impl.h"
#include "process-memory.h"
#include "unix-seqpacket.h"

#include "host/abi/cnuas-hca-abi.h"
#include "models/mgmt/ib-sma-agent.h"

#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EmuHcaService");
NS_OBJECT_ENSURE_REGISTERED(EmuHcaService);

namespace
{

uint32_t
LoadAcquire(const uint32_t* p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

void
StoreRelease(uint32_t* p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/// A memfd of `bytes` mapped here; the descriptor is kept open until it has been passed on.
struct SharedRegion
{
    uint8_t* base = nullptr;
    size_t bytes = 0;
    int fd = -1;

    bool Create(const char* name, size_t n)
    {
        bytes = (n + 4095) & ~size_t(4095);
        fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0)
        {
            return false;
        }
        if (ftruncate(fd, static_cast<off_t>(bytes)) != 0)
        {
            close(fd);
            fd = -1;
            return false;
        }
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
        {
            close(fd);
            fd = -1;
            return false;
        }
        base = static_cast<uint8_t*>(p);
        return true;
    }

    void Release()
    {
        if (base)
        {
            munmap(base, bytes);
            base = nullptr;
        }
        if (fd >= 0)
        {
            close(fd);
            fd = -1;
        }
    }
};

/**
 * A work queue of the model whose retirements are published to shared memory: the process
 * may reuse a slot once the HCA has retired the WQE in it (completed, flushed or discarded).
 * `pull`, when set, is called before the model looks at the queue's size, to take the WQEs
 * the process posted since (receive queues are read lazily, as an adapter fetches receive WQEs
 * when a message arrives).
 */
template <typename Entry>
class RetiringQueue : public RdmaQueue<Entry>
{
  public:
    RetiringQueue(uint32_t capacity, uint32_t* retired)
        : m_capacity(capacity),
          m_shared(retired)
    {
    }

    void SetPull(std::function<void()> pull)
    {
        m_pull = std::move(pull);
    }

    uint32_t GetCapacity() const override
    {
        return m_capacity;
    }

    uint32_t GetSize() const override
    {
        if (m_pull && !m_pulling)
        {
            m_pulling = true;
            m_pull();
            m_pulling = false;
        }
        return static_cast<uint32_t>(m_entries.size());
    }

    bool Push(const Entry& e) override
    {
        if (m_entries.size() >= m_capacity)
        {
            return false;
        }
        m_entries.push_back(e);
        return true;
    }

    const Entry& At(uint32_t i) const override
    {
        NS_ABORT_MSG_IF(i >= m_entries.size(), "RetiringQueue::At past the end");
        return m_entries[i];
    }

    void Pop() override
    {
        NS_ABORT_MSG_IF(m_entries.empty(), "RetiringQueue::Pop on an empty queue");
        m_entries.pop_front();
        Retire(1);
    }

    void Clear() override
    {
        const uint32_t n = static_cast<uint32_t>(m_entries.size());
        m_entries.clear();
        Retire(n);
    }

    /// A WQE that never entered the queue (refused) is retired too.
    void Retire(uint32_t n)
    {
        m_retired += n;
        if (m_shared)
        {
            StoreRelease(m_shared, m_retired);
        }
    }

    /// Everything up to `index` is retired (after RESET: nothing posted so far will run).
    void RetireThrough(uint32_t index)
    {
        m_entries.clear();
        m_retired = index;
        if (m_shared)
        {
            StoreRelease(m_shared, m_retired);
        }
    }

    /// The shared memory goes away: stop publishing.
    void Detach()
    {
        m_shared = nullptr;
        m_pull = nullptr;
    }

  private:
    uint32_t m_capacity;
    uint32_t* m_shared;
    uint32_t m_retired = 0;
    std::deque<Entry> m_entries;
    std::function<void()> m_pull;
    mutable bool m_pulling = false;
};

/// A completion queue whose entries the model writes straight into shared memory.
class SharedCqRing : public RdmaQueue<RdmaWc>
{
  public:
    SharedCqRing(cnuas_hca_cq_shm* head, cnuas_hca_cqe* slots, uint32_t capacity)
        : m_head(head),
          m_slots(slots),
          m_capacity(capacity)
    {
    }

    uint32_t GetCapacity() const override
    {
        return m_capacity;
    }

    uint32_t GetSize() const override
    {
        if (!m_head)
        {
            return m_capacity;
        }
        const uint32_t used = m_prod - LoadAcquire(&m_head->cons.value);
        // A consumer index ahead of the producer, or more than a ring behind it, is corrupt:
        // the CQ reads as full, so the next completion is an overrun (CQ error, QP fatal).
        if (used > m_capacity)
        {
            ++m_corrupt;
            return m_capacity;
        }
        return used;
    }

    bool Push(const RdmaWc& wc) override
    {
        if (!m_head || GetSize() >= m_capacity)
        {
            return false;
        }
        cnuas_hca_cqe e{};
        e.wr_id = wc.wr_id;
        e.status = static_cast<uint32_t>(wc.status);
        e.opcode = static_cast<uint32_t>(wc.opcode);
        e.vendor_err = wc.vendor_err;
        e.byte_len = wc.byte_len;
        e.imm_data = htonl(wc.imm_data);
        e.qp_num = wc.qp_num;
        e.src_qp = wc.src_qp;
        e.wc_flags = wc.wc_flags;
        e.pkey_index = wc.pkey_index;
        e.slid = wc.slid;
        e.sl = wc.sl;
        if (wc.network_hdr_type == RDMA_NETWORK_IPV4 || wc.network_hdr_type == RDMA_NETWORK_IPV6)
        {
            // The user-space ABI has no field for it: ConnectX (mlx5) reports a RoCE UD
            // packet's type in the CQE's SL, bit 3 set for RoCEv2's UDP and bits 2:0 the L3
            // header (1 IPv6, 2 IPv4), and UCX reads it there to find the destination address
            // in the receive buffer's first 40 bytes (it drops what is not for its GIDs).
            e.sl = static_cast<uint8_t>(0x8 | (wc.network_hdr_type == RDMA_NETWORK_IPV4 ? 2 : 1));
        }
        e.dlid_path_bits = wc.dlid_path_bits;
        e.timestamp_ns = static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
        std::memcpy(&m_slots[m_prod % m_capacity], &e, sizeof(e));
        ++m_prod;
        StoreRelease(&m_head->prod.value, m_prod);
        if (m_onPush)
        {
            m_onPush();
        }
        return true;
    }

    /// Called after every completion written (the service wakes sleeping pollers).
    void SetOnPush(std::function<void()> f)
    {
        m_onPush = std::move(f);
    }

    const RdmaWc& At(uint32_t i) const override
    {
        // The model never reads its own completions back; the process polls them.
        NS_ABORT_MSG("SharedCqRing::At: completions are polled by the process");
        return m_none;
    }

    void Pop() override
    {
        NS_ABORT_MSG("SharedCqRing::Pop: completions are polled by the process");
    }

    void Clear() override
    {
    }

    void Detach()
    {
        m_head = nullptr;
    }

    uint64_t GetCorrupt() const
    {
        return m_corrupt;
    }

  private:
    cnuas_hca_cq_shm* m_head;
    cnuas_hca_cqe* m_slots;
    uint32_t m_capacity;
    uint32_t m_prod = 0;
    mutable uint64_t m_corrupt = 0;
    RdmaWc m_none;
    std::function<void()> m_onPush;
};

/// Copies a receive WQE out of shared memory into `wr`; false if it claims more SGEs than its
/// queue's slots hold (`maxSge`).
bool
ReadRecvWqe(const uint8_t* slot, uint32_t maxSge, RdmaRecvWr& wr)
{
    cnuas_hca_recv_wqe w;
    std::memcpy(&w, slot, sizeof(w));
    wr.wr_id = w.wr_id;
    if (w.num_sge > maxSge)
    {
        return false;
    }
    wr.sg_list.resize(w.num_sge);
    for (uint32_t g = 0; g < w.num_sge; ++g)
    {
        cnuas_hca_sge sge;
        std::memcpy(&sge, slot + sizeof(w) + g * sizeof(sge), sizeof(sge));
        wr.sg_list[g] = RdmaSge{sge.addr, sge.length, sge.lkey};
    }
    return true;
}

constexpr uint32_t kCqeOffset = 512;
static_assert(sizeof(cnuas_hca_cq_shm) <= kCqeOffset, "CQ head fits before the CQEs");
constexpr uint32_t kWqHeadBytes = 512;
static_assert(sizeof(cnuas_hca_qp_shm) <= kWqHeadBytes, "QP head fits before the rings");

uint32_t
Align64(uint32_t n)
{
    return (n + 63u) & ~63u;
}

RdmaAhAttr
FromAbi(const cnuas_hca_ah_attr& a)
{
    RdmaAhAttr r;
    std::memcpy(r.grh.dgid.data(), a.dgid, 16);
    // The GRH's FlowLabel is 20 bits (IBA vol. 1 §8.3.1). Linux's uverbs passes a wider value
    // on and the adapter keeps the field's 20 bits (mlx5's address vector); UCX relies on that
    // (on RoCE it asks for ~(path index), rdma-core turning the label into a UDP source port).
    r.grh.flow_label = a.flow_label & 0xFFFFFu;
    r.grh.sgid_index = a.sgid_index;
    r.grh.hop_limit = a.hop_limit;
    r.grh.traffic_class = a.traffic_class;
    r.is_global = a.is_global;
    r.dlid = a.dlid;
    r.sl = a.sl;
    r.src_path_bits = a.src_path_bits;
    r.static_rate = a.static_rate;
    r.port_num = a.port_num;
    return r;
}

cnuas_hca_ah_attr
ToAbi(const RdmaAhAttr& a)
{
    cnuas_hca_ah_attr r{};
    std::memcpy(r.dgid, a.grh.dgid.data(), 16);
    r.flow_label = a.grh.flow_label;
    r.sgid_index = a.grh.sgid_index;
    r.hop_limit = a.grh.hop_limit;
    r.traffic_class = a.grh.traffic_class;
    r.is_global = a.is_global;
    r.dlid = a.dlid;
    r.sl = a.sl;
    r.src_path_bits = a.src_path_bits;
    r.static_rate = a.static_rate;
    r.port_num = a.port_num;
    return r;
}

/// Assigns one field across the model's struct and the ABI's (enums there, integers here).
template <typename To, typename From>
void
Assign(To& to, const From& from)
{
    to = static_cast<To>(from);
}

/// struct ibv_qp_cap's fields, either way: the model's RdmaQpCap and the ABI's share the names.
template <typename From, typename To>
void
CopyCap(const From& f, To& t)
{
    t.max_send_wr = f.max_send_wr;
    t.max_recv_wr = f.max_recv_wr;
    t.max_send_sge = f.max_send_sge;
    t.max_recv_sge = f.max_recv_sge;
    t.max_inline_data = f.max_inline_data;
}

/// struct ibv_qp_attr's fields, either way (RdmaQpAttr and cnuas_hca_qp_attr share the names).
template <typename From, typename To, typename Ah>
void
CopyQpAttr(const From& f, To& t, Ah convertAh)
{
    Assign(t.qp_state, f.qp_state);
    Assign(t.cur_qp_state, f.cur_qp_state);
    Assign(t.path_mtu, f.path_mtu);
    Assign(t.path_mig_state, f.path_mig_state);
    t.qkey = f.qkey;
    t.rq_psn = f.rq_psn;
    t.sq_psn = f.sq_psn;
    t.dest_qp_num = f.dest_qp_num;
    t.qp_access_flags = f.qp_access_flags;
    CopyCap(f.cap, t.cap);
    t.ah_attr = convertAh(f.ah_attr);
    t.alt_ah_attr = convertAh(f.alt_ah_attr);
    t.pkey_index = f.pkey_index;
    t.alt_pkey_index = f.alt_pkey_index;
    t.en_sqd_async_notify = f.en_sqd_async_notify;
    t.sq_draining = f.sq_draining;
    t.max_rd_atomic = f.max_rd_atomic;
    t.max_dest_rd_atomic = f.max_dest_rd_atomic;
    t.min_rnr_timer = f.min_rnr_timer;
    t.port_num = f.port_num;
    t.timeout = f.timeout;
    t.retry_cnt = f.retry_cnt;
    t.rnr_retry = f.rnr_retry;
    t.alt_port_num = f.alt_port_num;
    t.alt_timeout = f.alt_timeout;
    t.rate_limit = f.rate_limit;
}

RdmaQpCap
FromAbi(const cnuas_hca_qp_cap& c)
{
    RdmaQpCap r;
    CopyCap(c, r);
    return r;
}

cnuas_hca_qp_cap
ToAbi(const RdmaQpCap& c)
{
    cnuas_hca_qp_cap r{};
    CopyCap(c, r);
    return r;
}

RdmaQpAttr
FromAbi(const cnuas_hca_qp_attr& a)
{
    RdmaQpAttr r;
    CopyQpAttr(a, r, [](const cnuas_hca_ah_attr& ah) { return FromAbi(ah); });
    return r;
}

cnuas_hca_qp_attr
ToAbi(const RdmaQpAttr& a)
{
    cnuas_hca_qp_attr r{};
    CopyQpAttr(a, r, [](const RdmaAhAttr& ah) { return ToAbi(ah); });
    return r;
}

/// ibv_mtu code of a byte count.
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

/// IBV_WIDTH_* and IBV_SPEED_* (ibv_query_port(3)) of a data rate in Gb/s: the 4x link whose
/// lanes carry a quarter of it if there is one, else 1x.
void
WidthSpeed(double gbps, uint8_t& width, uint8_t& speed)
{
    struct Lane
    {
        double gbps;
        uint8_t code;
    };

    static const Lane lanes[] = {{2.5, 1}, {5, 2}, {10, 4}, {14, 16}, {25, 32}, {50, 64},
                                 {100, 128}};
    for (uint8_t w : {uint8_t(2), uint8_t(1)})
    {
        const double lanesOf = (w == 2) ? 4 : 1;
        for (const Lane& l : lanes)
        {
            if (std::abs(gbps / lanesOf - l.gbps) < 0.01 * l.gbps)
            {
                width = w;
                speed = l.code;
                return;
            }
        }
    }
    width = 2;
    speed = 32; // 4x EDR: an unnamed rate is reported as 100 Gb/s
}

} // namespace

// ---- per-process state ---------------------------------------------------------------------

struct EmuHcaService::CqRec
{
    Ptr<RdmaCq> cq;
    Ptr<SharedCqRing> ring;
    SharedRegion shm;
    uint64_t cookie = 0;
    uint32_t channel = 0;
    uint32_t armSeen = 0;
};

struct EmuHcaService::QpRec
{
    uint32_t handle = 0;
    Ptr<RdmaQp> qp;
    SharedRegion shm;
    cnuas_hca_wq_layout layout{};
    uint64_t cookie = 0;
    uint32_t sqTaken = 0; ///< send WQEs taken from the ring
    uint32_t rqTaken = 0;
    Ptr<RetiringQueue<RdmaSendWqe>> sq;
    Ptr<RetiringQueue<RdmaRecvWqe>> rq;
    RdmaQpCap cap;
    bool broken = false;

    cnuas_hca_qp_shm* Head() const
    {
        return reinterpret_cast<cnuas_hca_qp_shm*>(shm.base);
    }
};

struct EmuHcaService::SrqRec
{
    uint32_t handle = 0;
    Ptr<RdmaSrq> srq;
    SharedRegion shm;
    cnuas_hca_wq_layout layout{};
    uint64_t cookie = 0;
    uint32_t taken = 0;
    uint32_t maxSge = 0;
    Ptr<RetiringQueue<RdmaRecvWqe>> queue;
    bool broken = false;

    cnuas_hca_srq_shm* Head() const
    {
        return reinterpret_cast<cnuas_hca_srq_shm*>(shm.base);
    }
};

struct EmuHcaService::Context
{
    uint32_t id = 0;
    int fd = -1;
    int doorbell = -1;   ///< eventfd the process rings
    int asyncWrite = -1; ///< write end of the async-event pipe
    pid_t pid = 0;
    bool opened = false;
    Ptr<ProcessMemory> memory;
    uint32_t nextHandle = 1;
    std::map<uint32_t, Ptr<RdmaPd>> pds;
    std::map<uint32_t, Ptr<RdmaMr>> mrs;
    std::map<uint32_t, uint64_t> mrWindows; ///< MR handle -> base of its shared-memory window
    std::map<uint32_t, int> channels; ///< handle -> write end of the channel's pipe
    std::map<uint32_t, CqRec> cqs;
    std::map<uint32_t, QpRec> qps;
    std::map<uint32_t, SrqRec> srqs;
    std::map<uint32_t, Ptr<RdmaAh>> ahs;
    /// A request is waiting for its answer (a deferred DESTROY_QP): no other is read meanwhile.
    bool answerPending = false;
    EventId drainCheck;
};

// ---- the service ---------------------------------------------------------------------------

TypeId
EmuHcaService::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EmuHcaService")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<EmuHcaService>()
            .AddAttribute("DeviceName",
                          "The device name processes see (ibv_get_device_name, hca_id).",
                          StringValue("cnuas_0"),
                          MakeStringAccessor(&EmuHcaService::m_deviceName),
                          MakeStringChecker())
            .AddAttribute("FirmwareVersion",
                          "fw_ver of ibv_query_device.",
                          StringValue("0.1.0"),
                          MakeStringAccessor(&EmuHcaService::m_fwVersion),
                          MakeStringChecker())
            .AddAttribute("ShareRegisteredMemory",
                          "Map the shared memory into which the verbs library moves a "
                          "registered region's pages, so its bytes move by memcpy; false: "
                          "every access goes through /proc/PID/mem (docs/emulation.md §8.1).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&EmuHcaService::m_shareMemory),
                          MakeBooleanChecker())
            .AddAttribute("MaxContexts",
                          "Device contexts (ibv_open_device) open at once; more are refused.",
                          UintegerValue(256),
                          MakeUintegerAccessor(&EmuHcaService::m_maxContexts),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("WakeModerationLag",
                          "While the event loop runs more than this behind the wall clock, a "
                          "poller asleep on an empty CQ is not woken at each completion: its "
                          "own timeout (CNUAS_POLL_SLEEP_MAX_US) takes them, and what is owed "
                          "is woken when the loop catches up, as an adapter moderates its "
                          "interrupts under load; 0: always at once.",
                          TimeValue(MilliSeconds(1)),
                          MakeTimeAccessor(&EmuHcaService::m_wakeModerationLag),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("DestroyDrainLimit",
                          "How long (simulated) ibv_destroy_qp, or the teardown of a context "
                          "whose process exited, may wait for the sends posted before it to go "
                          "on the wire: an adapter takes the destroy command long after the "
                          "doorbell, but a model that lags reads both at once "
                          "(docs/emulation.md §8.1); sends still unsent then are dropped with "
                          "the QP. 0: destroy at once.",
                          TimeValue(MilliSeconds(1)),
                          MakeTimeAccessor(&EmuHcaService::m_destroyDrainLimit),
                          MakeTimeChecker(Time(0)));
    return tid;
}

EmuHcaService::EmuHcaService() = default;

EmuHcaService::~EmuHcaService() = default;

void
EmuHcaService::DoDispose()
{
    Stop();
    m_device = nullptr;
    m_engine = nullptr;
    m_port = nullptr;
    m_ibPort = nullptr;
    m_ethPort = nullptr;
    Object::DoDispose();
}

bool
EmuHcaService::Start(const std::string& socketPath,
                     Ptr<RdmaDevice> device,
                     Ptr<RdmaEngine> engine,
                     Ptr<RdmaLinkPort> port,
                     Ptr<IbNetDevice> ibPort,
                     Ptr<EthNetDevice> ethPort,
                     std::string* why)
{
    // Any process of the host may open the device, as /dev/infiniband/uverbs0 is world
    // readable and writable on a real machine; each reaches only its own memory.
    m_listenFd = ListenAndAccept(
        socketPath,
        0666,
        "the HCA",
        [this](int fd, pid_t pid) { Admit(fd, pid); },
        why);
    if (m_listenFd < 0)
    {
        return false;
    }
    m_path = socketPath;
    m_device = device;
    m_engine = engine;
    m_port = port;
    m_ibPort = ibPort;
    m_ethPort = ethPort;
    if (!m_traceConnected)
    {
        m_device->TraceConnectWithoutContext(
            "AsyncEvent",
            MakeCallback(&EmuHcaService::OnAsyncEvent, this));
        if (m_ibPort)
        {
            m_ibPort->TraceConnectWithoutContext(
                "PortState",
                MakeCallback(&EmuHcaService::OnPortState, this));
            m_ibPort->TraceConnectWithoutContext("Lid", MakeCallback(&EmuHcaService::OnLid, this));
            m_ibPort->TraceConnectWithoutContext("SmLid",
                                                 MakeCallback(&EmuHcaService::OnSmLid, this));
            m_ibPort->TraceConnectWithoutContext(
                "PkeyTable", MakeCallback(&EmuHcaService::OnPkeyTable, this));
        }
        m_traceConnected = true;
    }
    auto loop = EmuRealtimeSimulatorImpl::Current();
    if (loop && !m_loop)
    {
        m_loop = PeekPointer(loop);
        m_wakeHook = m_loop->AddIdleHook([this](int64_t) {
            if (Lagging())
            {
                return true; // still behind: the pollers' own timeouts take the completions
            }
            // Caught up: the wakes owed since the loop began to lag, one per context.
            std::vector<uint32_t> owed;
            owed.swap(m_owedWakes);
            for (uint32_t id : owed)
            {
                WakeSleepers(id);
            }
            return false;
        });
    }
    return true;
}

void
EmuHcaService::Stop()
{
    while (!m_contexts.empty())
    {
        Close(m_contexts.begin()->first, "the service stops");
    }
    for (auto& [id, c] : m_closing)
    {
        c->drainCheck.Cancel();
        DestroyAll(*c);
    }
    m_closing.clear();
    CloseListener(m_listenFd, m_path);
    if (m_loop)
    {
        if (auto loop = EmuRealtimeSimulatorImpl::Current())
        {
            loop->RemoveIdleHook(m_wakeHook);
        }
        m_loop = nullptr;
        m_owedWakes.clear();
    }
}

void
EmuHcaService::Admit(int fd, pid_t pid)
{
    if (m_contexts.size() >= m_maxContexts)
    {
        NS_LOG_WARN("HCA " << m_path << ": refusing a context beyond MaxContexts");
        close(fd);
        return;
    }
    if (pid <= 0)
    {
        close(fd); // no process whose memory the context could reach
        return;
    }
    auto c = std::make_unique<Context>();
    c->id = m_nextContext++;
    c->fd = fd;
    c->pid = pid;
    c->memory = CreateObject<ProcessMemory>(pid);
    const uint32_t id = c->id;
    m_contexts[id] = std::move(c);
    if (!WatchConnection(fd, [this, id]() { OnReadable(id); }))
    {
        Close(id, "cannot poll the connection");
    }
}

void
EmuHcaService::OnReadable(uint32_t id)
{
    // Requests are answered one at a time; a process waits for each answer, so a connection
    // rarely holds more than one.
    for (int n = 0; n < 64; ++n)
    {
        auto it = m_contexts.find(id);
        if (it == m_contexts.end())
        {
            return;
        }
        Context& c = *it->second;
        if (c.answerPending)
        {
            // The next request is read once this one is answered (its descriptor is paused);
            // what wakes us meanwhile is a hang-up, which epoll reports even so: the process
            // went while it waited, and its context goes now.
            pollfd p = {c.fd, POLLIN, 0};
            if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)) != 0)
            {
                Close(id, "the process went while its QP was being destroyed");
            }
            return;
        }
        cnuas_hca_req q;
        int passed = -1;
        const SeqpacketRecv got = RecvRequest(c.fd, &q, sizeof(q), &passed);
        if (got != SeqpacketRecv::Request)
        {
            if (got != SeqpacketRecv::None)
            {
                Close(id, RecvEndReason(got, &m_counters.malformed));
            }
            return;
        }
        Handle(c, q, passed);
    }
}

bool
EmuHcaService::Reply(Context& c, const void* resp, size_t len, int fd)
{
    // The process waits for this answer, so the socket has room; if not, it is not a verbs
    // library speaking and the connection goes.
    return SendDatagramWithFd(c.fd, resp, len, fd);
}

void
EmuHcaService::Handle(Context& c, const cnuas_hca_req& q, int passedFd)
{
    cnuas_hca_resp r;
    std::memset(&r, 0, sizeof(r));
    r.op = q.op;
    int outFd = -1;
    int err = 0;
    m_device->SetLastError("");
    // Queries need no context, as sysfs readers need no open device (ibstat's CA list).
    if (!c.opened && q.op != CNUAS_OP_OPEN && q.op != CNUAS_OP_QUERY_DEVICE &&
        q.op != CNUAS_OP_QUERY_PORT && q.op != CNUAS_OP_QUERY_GID)
    {
        err = EPROTO;
    }
    else
    {
        switch (q.op)
        {
        case CNUAS_OP_OPEN:
            err = DoOpen(c, q, passedFd, r, &outFd);
            passedFd = -1; // taken (or closed) by DoOpen
            break;
        case CNUAS_OP_QUERY_DEVICE:
            r.u.open.abi_version = CNUAS_HCA_ABI_VERSION;
            FillDeviceAttr(r.u.open.dev);
            break;
        case CNUAS_OP_QUERY_PORT:
            err = FillPortAttr(q.u.query.port_num, r.u.port);
            break;
        case CNUAS_OP_QUERY_GID: {
            if (q.u.query.port_num != 1)
            {
                err = EINVAL;
                break;
            }
            RdmaPortAttr pa;
            m_device->QueryPort(1, pa);
            if (q.u.query.index >= pa.gid_tbl_len)
            {
                err = EINVAL;
                break;
            }
            RdmaGid gid{};
            // An empty table entry reads as the zero GID, as the kernel's sysfs shows it.
            if (q.u.query.index <= 255 &&
                m_port->GetGid(static_cast<uint8_t>(q.u.query.index), gid))
            {
                std::memcpy(r.u.gid.gid, gid.data(), 16);
            }
            r.u.gid.gid_type = m_ethPort ? 2 /* IBV_GID_TYPE_ROCE_V2 */ : 0 /* IB */;
            break;
        }
        case CNUAS_OP_QUERY_PKEY: {
            uint16_t pkey = 0;
            if (q.u.query.port_num != 1 || q.u.query.index > 0xFFFF)
            {
                err = EINVAL;
                break;
            }
            RdmaPortAttr pa;
            m_device->QueryPort(1, pa);
            if (q.u.query.index >= pa.pkey_tbl_len)
            {
                err = EINVAL;
                break;
            }
            if (!m_port->GetPkey(static_cast<uint16_t>(q.u.query.index), pkey))
            {
                pkey = 0;
            }
            r.u.pkey.pkey = htons(pkey);
            break;
        }
        case CNUAS_OP_ALLOC_PD: {
            Ptr<RdmaPd> pd = m_device->AllocPd(c.memory, &err);
            if (pd)
            {
                const uint32_t h = c.nextHandle++;
                c.pds[h] = pd;
                r.u.created.handle = h;
            }
            break;
        }
        case CNUAS_OP_REG_MR:
            err = DoRegMr(c, q, r, passedFd);
            break;
        case CNUAS_OP_CREATE_COMP_CHANNEL: {
            int p[2];
            if (pipe2(p, O_CLOEXEC) != 0)
            {
                err = errno;
                break;
            }
            // The model never waits for a process: its end does not block, and a record that
            // does not fit (a process that never reads) is dropped and counted.
            fcntl(p[1], F_SETFL, O_NONBLOCK);
            const uint32_t h = c.nextHandle++;
            c.channels[h] = p[1];
            r.u.created.handle = h;
            outFd = p[0];
            break;
        }
        case CNUAS_OP_CREATE_CQ:
            err = DoCreateCq(c, q, r, &outFd);
            break;
        case CNUAS_OP_CREATE_QP:
            err = DoCreateQp(c, q, r, &outFd);
            break;
        case CNUAS_OP_MODIFY_QP:
            err = DoModifyQp(c, q, r);
            break;
        case CNUAS_OP_QUERY_QP:
            err = DoQueryQp(c, q, r);
            break;
        case CNUAS_OP_CREATE_SRQ:
            err = DoCreateSrq(c, q, r, &outFd);
            break;
        case CNUAS_OP_MODIFY_SRQ:
        case CNUAS_OP_QUERY_SRQ: {
            auto it = c.srqs.find(q.u.modify_srq.handle);
            if (it == c.srqs.end())
            {
                err = EINVAL;
                break;
            }
            if (q.op == CNUAS_OP_MODIFY_SRQ)
            {
                RdmaSrqAttr a;
                a.max_wr = q.u.modify_srq.max_wr;
                a.srq_limit = q.u.modify_srq.srq_limit;
                // Resizing would move the shared ring under the process: not offered
                // (device_cap_flags has no IBV_DEVICE_SRQ_RESIZE).
                if (q.u.modify_srq.attr_mask & RDMA_SRQ_MAX_WR)
                {
                    err = EOPNOTSUPP;
                    break;
                }
                err = it->second.srq->Modify(a, q.u.modify_srq.attr_mask);
            }
            RdmaSrqAttr a;
            if (err == 0 && it->second.srq->Query(a) == 0)
            {
                r.u.srq_attr.max_wr = a.max_wr;
                r.u.srq_attr.max_sge = a.max_sge;
                r.u.srq_attr.srq_limit = a.srq_limit;
            }
            break;
        }
        case CNUAS_OP_CREATE_AH: {
            auto pd = c.pds.find(q.u.create_ah.pd);
            if (pd == c.pds.end())
            {
                err = EINVAL;
                break;
            }
            Ptr<RdmaAh> ah = m_device->CreateAh(pd->second, FromAbi(q.u.create_ah.attr), &err);
            if (ah)
            {
                const uint32_t h = c.nextHandle++;
                c.ahs[h] = ah;
                r.u.created.handle = h;
            }
            break;
        }
        case CNUAS_OP_ATTACH_MCAST:
        case CNUAS_OP_DETACH_MCAST: {
            auto qp = c.qps.find(q.u.mcast.qp);
            if (qp == c.qps.end())
            {
                m_device->SetLastError("no such QP");
                err = EINVAL;
                break;
            }
            RdmaGid gid;
            std::memcpy(gid.data(), q.u.mcast.gid, gid.size());
            err = q.op == CNUAS_OP_ATTACH_MCAST
                      ? m_device->AttachMcast(qp->second.qp, gid, q.u.mcast.lid)
                      : m_device->DetachMcast(qp->second.qp, gid, q.u.mcast.lid);
            break;
        }
        case CNUAS_OP_DESTROY_QP:
            if (DeferDestroyQp(c, q.u.destroy.handle))
            {
                if (passedFd >= 0)
                {
                    close(passedFd);
                }
                return; // answered by CheckDestroyDrained
            }
            err = DoDestroy(c, q.op, q.u.destroy.handle);
            break;
        case CNUAS_OP_DEALLOC_PD:
        case CNUAS_OP_DEREG_MR:
        case CNUAS_OP_DESTROY_COMP_CHANNEL:
        case CNUAS_OP_DESTROY_CQ:
        case CNUAS_OP_DESTROY_SRQ:
        case CNUAS_OP_DESTROY_AH:
            err = DoDestroy(c, q.op, q.u.destroy.handle);
            break;
        default:
            err = EOPNOTSUPP;
            break;
        }
    }
    if (passedFd >= 0)
    {
        close(passedFd);
    }
    Answer(c, r, err, outFd);
}

void
EmuHcaService::Answer(Context& c, cnuas_hca_resp& r, int err, int outFd)
{
    r.err = err;
    if (err != 0)
    {
        ++m_counters.refused;
        const std::string& why = m_device->GetLastError();
        std::snprintf(r.why, sizeof(r.why), "%s", why.empty() ? std::strerror(err) : why.c_str());
    }
    ++m_counters.requests;
    const uint32_t id = c.id;
    const bool sent = Reply(c, &r, sizeof(r), err == 0 ? outFd : -1);
    if (outFd >= 0)
    {
        close(outFd); // the process has its copy now
    }
    if (!sent)
    {
        Close(id, "the process does not read its answers");
    }
}

int
EmuHcaService::DoOpen(Context& c,
                      const cnuas_hca_req& q,
                      int passedFd,
                      cnuas_hca_resp& r,
                      int* outFd)
{
    if (c.opened || q.u.open.abi_version != CNUAS_HCA_ABI_VERSION || passedFd < 0)
    {
        if (passedFd >= 0)
        {
            close(passedFd);
        }
        m_device->SetLastError(c.opened ? "context already open"
                                        : "library and daemon speak different ABI versions");
        return EPROTO;
    }
    struct stat st;
    // The doorbell must be an eventfd: anything else could block the model's thread.
    char link[64];
    char target[64] = {};
    std::snprintf(link, sizeof(link), "/proc/self/fd/%d", passedFd);
    if (fstat(passedFd, &st) != 0 || readlink(link, target, sizeof(target) - 1) <= 0 ||
        std::strstr(target, "eventfd") == nullptr)
    {
        close(passedFd);
        m_device->SetLastError("the doorbell is not an eventfd");
        return EINVAL;
    }
    fcntl(passedFd, F_SETFL, O_NONBLOCK);
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
    {
        close(passedFd);
        return errno;
    }
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    const uint32_t id = c.id;
    if (!EmuRealtimeSimulatorImpl::Current()->WatchFd(passedFd, Simulator::NO_CONTEXT,
                                                      [this, id]() { OnDoorbell(id); }))
    {
        close(passedFd);
        close(p[0]);
        close(p[1]);
        return ENOMEM;
    }
    c.doorbell = passedFd;
    c.asyncWrite = p[1];
    *outFd = p[0];
    c.opened = true;
    ++m_counters.contextsOpened;
    r.u.open.abi_version = CNUAS_HCA_ABI_VERSION;
    FillDeviceAttr(r.u.open.dev);
    NS_LOG_INFO("HCA " << m_path << ": context " << c.id << " opened by pid " << c.pid);
    return 0;
}

uint64_t
EmuHcaService::GetNodeGuid() const
{
    uint64_t guid = m_device->QueryDevice().node_guid;
    if (guid == 0 && m_ibPort)
    {
        // The node GUID the fabric sees: the node's SMA answers NodeInfo with it, and ibstat
        // and ibnetdiscover print it.
        Ptr<IbSmaAgent> sma = m_ibPort->GetNode() ? m_ibPort->GetNode()->GetObject<IbSmaAgent>()
                                                   : nullptr;
        guid = sma ? sma->GetNodeGuid() : m_ibPort->GetPortGuid() - m_ibPort->GetPortNumber();
    }
    if (guid == 0 && m_ethPort)
    {
        // RoCE adapters derive their GUID from the MAC (EUI-64: FF:FE in the middle).
        const uint64_t mac = m_ethPort->GetMac();
        guid = ((mac >> 24) << 40) | (0xFFFEull << 24) | (mac & 0xFFFFFF);
        guid ^= 0x0200000000000000ull;
    }
    return guid;
}

void
EmuHcaService::FillDeviceAttr(cnuas_hca_device_attr& a) const
{
    const RdmaDeviceAttr d = m_device->QueryDevice();
    std::memset(&a, 0, sizeof(a));
    std::snprintf(a.fw_ver, sizeof(a.fw_ver), "%s", m_fwVersion.c_str());
    std::snprintf(a.name, sizeof(a.name), "%s", m_deviceName.c_str());
    const uint64_t guid = GetNodeGuid();
    a.node_guid = htobe64(guid);
    a.sys_image_guid = htobe64(guid);
    a.max_mr_size = d.max_mr_size;
    a.page_size_cap = d.page_size_cap;
    a.vendor_id = d.vendor_id;
    a.vendor_part_id = d.vendor_part_id;
    a.hw_ver = d.hw_ver;
    a.max_qp = static_cast<int32_t>(d.max_qp);
    a.max_qp_wr = static_cast<int32_t>(d.max_qp_wr);
    a.device_cap_flags = d.device_cap_flags;
    a.max_sge = static_cast<int32_t>(d.max_sge);
    a.max_sge_rd = static_cast<int32_t>(d.max_sge_rd);
    a.max_cq = static_cast<int32_t>(d.max_cq);
    a.max_cqe = static_cast<int32_t>(d.max_cqe);
    a.max_mr = static_cast<int32_t>(d.max_mr);
    a.max_pd = static_cast<int32_t>(d.max_pd);
    a.max_qp_rd_atom = static_cast<int32_t>(d.max_qp_rd_atom);
    a.max_res_rd_atom = static_cast<int32_t>(d.max_qp_rd_atom * d.max_qp);
    a.max_qp_init_rd_atom = static_cast<int32_t>(d.max_qp_init_rd_atom);
    a.atomic_cap = static_cast<uint32_t>(d.atomic_cap);
    a.max_ah = static_cast<int32_t>(d.max_ah);
    a.max_srq = static_cast<int32_t>(d.max_srq);
    a.max_srq_wr = static_cast<int32_t>(d.max_srq_wr);
    a.max_srq_sge = static_cast<int32_t>(d.max_srq_sge);
    a.max_inline_data = d.max_inline_data;
    a.max_mcast_grp = static_cast<int32_t>(d.max_mcast_grp);
    a.max_mcast_qp_attach = static_cast<int32_t>(d.max_mcast_qp_attach);
    a.max_total_mcast_qp_attach = static_cast<int32_t>(d.max_total_mcast_qp_attach);
    a.max_pkeys = d.max_pkeys;
    a.local_ca_ack_delay = d.local_ca_ack_delay;
    a.phys_port_cnt = 1;
    a.node_type = 1;      // IBV_NODE_CA
    a.transport_type = 0; // IBV_TRANSPORT_IB (RoCE devices report it too)
    a.link_layer = m_ethPort ? 2 : 1;
    // Completion timestamps are the model's nanoseconds: a 1 GHz clock.
    a.completion_timestamp_mask = ~0ull;
    a.hca_core_clock = 1000000;
}

int
EmuHcaService::FillPortAttr(uint32_t portNum, cnuas_hca_port_attr& a) const
{
    std::memset(&a, 0, sizeof(a));
    RdmaPortAttr pa;
    if (portNum != 1 || m_device->QueryPort(1, pa) != 0)
    {
        return EINVAL;
    }
    a.max_mtu = static_cast<uint32_t>(pa.max_mtu);
    a.active_mtu = MtuCode(m_port->GetMtu());
    a.gid_tbl_len = static_cast<int32_t>(pa.gid_tbl_len);
    a.max_msg_sz = pa.max_msg_sz;
    a.pkey_tbl_len = pa.pkey_tbl_len;
    a.max_vl_num = 4; // VL0-7 (ibv_query_port(3) encoding)
    a.subnet_timeout = 18;
    double gbps = 100;
    if (m_ibPort)
    {
        a.link_layer = 1; // IBV_LINK_LAYER_INFINIBAND
        a.state = static_cast<uint32_t>(m_ibPort->GetPortState());
        a.phys_state = static_cast<uint8_t>(m_ibPort->GetPhysState());
        a.lid = m_ibPort->GetLid();
        a.sm_lid = m_ibPort->GetSmLid();
        a.lmc = m_ibPort->GetLmc();
        // The table the SM writes and the transport checks (IbNetDevice::GetPkeyTable).
        a.pkey_tbl_len = static_cast<uint16_t>(
            std::min<size_t>(pa.pkey_tbl_len, m_ibPort->GetPkeyTable().size()));
        a.bad_pkey_cntr = static_cast<uint32_t>(
            std::min<uint64_t>(m_ibPort->GetPkeyViolations(), 0xFFFF)); // PortInfo's 16 bits
        // CapabilityMask (IBA vol. 1 §14.2.5.6): IsTrapSupported, IsAutomaticMigration-
        // Supported, IsSLMappingSupported, IsSystemImageGUIDSupported, IsCommunication-
        // ManagementSupported, IsVendorClassSupported, IsCapabilityMaskNoticeSupported,
        // IsClientReregistrationSupported, as a ConnectX HCA reports them.
        a.port_cap_flags = 0x2651E848;
        gbps = m_ibPort->GetActiveRate().DataRate() / 1e9;
    }
    else
    {
        a.link_layer = 2; // IBV_LINK_LAYER_ETHERNET
        const bool up = m_port->IsActive();
        a.state = up ? 4 : 1;        // ACTIVE or DOWN
        a.phys_state = up ? 5 : 3;   // LinkUp or Disabled
        a.port_cap_flags = 0x04010000; // IsCommunicationManagementSupported, IP-based GIDs
        if (m_ethPort)
        {
            DataRateValue rate;
            m_ethPort->GetAttribute("DataRate", rate);
            gbps = static_cast<double>(rate.Get().GetBitRate()) / 1e9;
        }
    }
    WidthSpeed(gbps, a.active_width, a.active_speed);
    return 0;
}

int
EmuHcaService::DoRegMr(Context& c, const cnuas_hca_req& q, cnuas_hca_resp& r, int passedFd)
{
    auto pd = c.pds.find(q.u.reg_mr.pd);
    if (pd == c.pds.end())
    {
        m_device->SetLastError("no such PD");
        return EINVAL;
    }
    // ibv_reg_mr(3): the pages are pinned for writing when the region may be written.
    const bool writable = (q.u.reg_mr.access & (RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                                                RDMA_ACCESS_REMOTE_ATOMIC)) != 0;
    if (q.u.reg_mr.length != 0 &&
        !RdmaMemory::Wraps(q.u.reg_mr.addr, q.u.reg_mr.length) &&
        !c.memory->IsMappedWith(q.u.reg_mr.addr, q.u.reg_mr.length, writable))
    {
        m_device->SetLastError(writable ? "range is not mapped writable in the process"
                                        : "range is not mapped in the process");
        return EFAULT;
    }
    int err = 0;
    Ptr<RdmaMr> mr = m_device->RegMrIova(pd->second, q.u.reg_mr.addr, q.u.reg_mr.length,
                                         q.u.reg_mr.iova, q.u.reg_mr.access, &err);
    if (!mr)
    {
        return err;
    }
    const uint32_t h = c.nextHandle++;
    c.mrs[h] = mr;
    // The library moved the region's pages into a memfd it passed along: map it, so that the
    // region's bytes move by memcpy (host/verbs/verbs-shared-mr.c). The window must cover the
    // whole region; anything wrong with it only costs speed (the /proc/PID/mem path remains).
    const uint64_t shareBase = q.u.reg_mr.share_base;
    const uint64_t shareLen = q.u.reg_mr.share_len;
    const bool covers = q.u.reg_mr.length != 0 && shareBase <= q.u.reg_mr.addr &&
                        !RdmaMemory::Wraps(shareBase, shareLen) &&
                        q.u.reg_mr.addr - shareBase <= shareLen &&
                        q.u.reg_mr.length <= shareLen - (q.u.reg_mr.addr - shareBase);
    if (passedFd >= 0 && m_shareMemory && covers &&
        c.memory->AttachWindow(shareBase, shareLen, passedFd))
    {
        c.mrWindows[h] = shareBase;
        ++m_counters.sharedMrs;
    }
    else
    {
        m_counters.windowsRefused += passedFd >= 0 ? 1 : 0;
        ++m_counters.unsharedMrs;
    }
    r.u.mr.handle = h;
    r.u.mr.lkey = mr->GetLkey();
    r.u.mr.rkey = mr->GetRkey();
    return 0;
}

int
EmuHcaService::DoCreateCq(Context& c, const cnuas_hca_req& q, cnuas_hca_resp& r, int* outFd)
{
    const RdmaDeviceAttr d = m_device->QueryDevice();
    if (q.u.create_cq.cqe < 1 || static_cast<uint32_t>(q.u.create_cq.cqe) > d.max_cqe)
    {
        m_device->SetLastError("cqe outside 1..max_cqe");
        return EINVAL;
    }
    if (q.u.create_cq.channel != 0 && c.channels.count(q.u.create_cq.channel) == 0)
    {
        m_device->SetLastError("no such completion channel");
        return EINVAL;
    }
    const uint32_t cqe = static_cast<uint32_t>(q.u.create_cq.cqe);
    CqRec rec;
    if (!rec.shm.Create("cnuas-cq", kCqeOffset + size_t(cqe) * sizeof(cnuas_hca_cqe)))
    {
        return ENOMEM;
    }
    auto* head = reinterpret_cast<cnuas_hca_cq_shm*>(rec.shm.base);
    auto* slots = reinterpret_cast<cnuas_hca_cqe*>(rec.shm.base + kCqeOffset);
    rec.ring = Create<SharedCqRing>(head, slots, cqe);
    int err = 0;
    rec.cq = m_device->CreateCq(rec.ring, &err);
    if (!rec.cq)
    {
        rec.shm.Release();
        return err;
    }
    rec.cookie = q.u.create_cq.cookie;
    rec.channel = q.u.create_cq.channel;
    const uint32_t h = c.nextHandle++;
    const uint32_t id = c.id;
    rec.ring->SetOnPush([this, id]() { WakePollers(id); });
    // ibv_req_notify_cq in the process bumps arm_seq; the CQ takes the request before it
    // decides whether a completion wakes the channel.
    rec.cq->SetExternalArm(Callback<int>([this, id, h]() -> int {
        auto ci = m_contexts.find(id);
        if (ci == m_contexts.end())
        {
            return 0;
        }
        auto it = ci->second->cqs.find(h);
        if (it == ci->second->cqs.end())
        {
            return 0;
        }
        CqRec& cr = it->second;
        auto* hd = reinterpret_cast<cnuas_hca_cq_shm*>(cr.shm.base);
        // Pairs with the process's fence between its arm and its next poll: either it sees
        // this completion, or this sees its arm.
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        const uint32_t seq = LoadAcquire(&hd->arm_seq.value);
        if (seq == cr.armSeen)
        {
            return 0;
        }
        cr.armSeen = seq;
        return LoadAcquire(&hd->arm_solicited.value) != 0 ? 2 : 1;
    }));
    if (rec.channel != 0)
    {
        rec.cq->TraceConnectWithoutContext(
            "CompletionEvent",
            Callback<void, Ptr<RdmaCq>>([this, id, h](Ptr<RdmaCq>) { OnCqEvent(id, h); }));
    }
    *outFd = rec.shm.fd;
    rec.shm.fd = -1; // Handle closes it once passed
    r.u.cq.handle = h;
    r.u.cq.cqe = cqe;
    r.u.cq.shm_bytes = static_cast<uint32_t>(rec.shm.bytes);
    r.u.cq.cqe_offset = kCqeOffset;
    c.cqs.emplace(h, std::move(rec));
    return 0;
}

int
EmuHcaService::DoCreateQp(Context& c, const cnuas_hca_req& q, cnuas_hca_resp& r, int* outFd)
{
    const auto& a = q.u.create_qp;
    auto pd = c.pds.find(a.pd);
    auto scq = c.cqs.find(a.send_cq);
    auto rcq = c.cqs.find(a.recv_cq);
    if (pd == c.pds.end() || scq == c.cqs.end() || rcq == c.cqs.end())
    {
        m_device->SetLastError("no such PD or CQ");
        return EINVAL;
    }
    SrqRec* srq = nullptr;
    if (a.srq != 0)
    {
        auto it = c.srqs.find(a.srq);
        if (it == c.srqs.end())
        {
            m_device->SetLastError("no such SRQ");
            return EINVAL;
        }
        srq = &it->second;
    }
    const RdmaDeviceAttr d = m_device->QueryDevice();
    RdmaQpCap cap = FromAbi(a.cap);
    if (cap.max_send_wr < 1)
    {
        cap.max_send_wr = 1; // a QP always has a send queue slot to post into
    }
    if (srq)
    {
        cap.max_recv_wr = 0;
        cap.max_recv_sge = 0;
    }
    else if (cap.max_recv_wr < 1)
    {
        cap.max_recv_wr = 1;
    }
    if (cap.max_send_wr > d.max_qp_wr || cap.max_recv_wr > d.max_qp_wr ||
        cap.max_send_sge > d.max_sge || cap.max_recv_sge > d.max_sge ||
        cap.max_inline_data > d.max_inline_data)
    {
        m_device->SetLastError("a capacity above the device's limits");
        return EINVAL;
    }
    // Every WQE slot holds its SGEs or its inline data; at least one SGE each way.
    cap.max_send_sge = std::max<uint32_t>(cap.max_send_sge, 1);
    cap.max_recv_sge = srq ? 0 : std::max<uint32_t>(cap.max_recv_sge, 1);
    QpRec rec;
    rec.layout.sq_stride =
        Align64(sizeof(cnuas_hca_send_wqe) +
                std::max<uint32_t>(cap.max_send_sge * sizeof(cnuas_hca_sge), cap.max_inline_data));
    // The inline data a WQE can carry is what its slot has room for, as an adapter reports it
    // (ibv_create_qp(3): the actual capacities may exceed the request; mlx5 and rxe count the
    // room the SGEs leave in the WQE): rdma_xclient asks for none and posts 16 bytes inline.
    cap.max_inline_data = std::min<uint32_t>(
        d.max_inline_data,
        static_cast<uint32_t>(rec.layout.sq_stride - sizeof(cnuas_hca_send_wqe)));
    rec.layout.sq_slots = cap.max_send_wr;
    rec.layout.sq_offset = kWqHeadBytes;
    rec.layout.rq_stride =
        srq ? 0 : Align64(sizeof(cnuas_hca_recv_wqe) + cap.max_recv_sge * sizeof(cnuas_hca_sge));
    rec.layout.rq_slots = srq ? 0 : cap.max_recv_wr;
    rec.layout.rq_offset = rec.layout.sq_offset + rec.layout.sq_stride * rec.layout.sq_slots;
    const size_t bytes = size_t(rec.layout.rq_offset) + size_t(rec.layout.rq_stride) *
                                                           rec.layout.rq_slots;
    if (bytes > (1ull << 31) || !rec.shm.Create("cnuas-qp", bytes))
    {
        return ENOMEM;
    }
    rec.layout.shm_bytes = static_cast<uint32_t>(rec.shm.bytes);
    cnuas_hca_qp_shm* head = rec.Head();
    rec.sq = Create<RetiringQueue<RdmaSendWqe>>(cap.max_send_wr, &head->sq_retired.value);
    rec.rq = Create<RetiringQueue<RdmaRecvWqe>>(cap.max_recv_wr, &head->rq_retired.value);
    RdmaQpInitAttr init;
    init.send_cq = scq->second.cq;
    init.recv_cq = rcq->second.cq;
    init.srq = srq ? srq->srq : nullptr;
    init.cap = cap;
    init.qp_type = static_cast<RdmaQpType>(a.qp_type);
    init.sq_sig_all = a.sq_sig_all;
    init.qp_context = a.cookie;
    init.sendQueue = rec.sq;
    init.recvQueue = srq ? nullptr : Ptr<RdmaQueue<RdmaRecvWqe>>(rec.rq);
    int err = 0;
    rec.qp = m_device->CreateQp(pd->second, init, &err);
    if (!rec.qp)
    {
        rec.shm.Release();
        return err;
    }
    const uint32_t h = c.nextHandle++;
    const uint32_t id = c.id;
    rec.handle = h;
    rec.cookie = a.cookie;
    rec.cap = init.cap;
    rec.cap.max_send_sge = cap.max_send_sge;
    rec.cap.max_recv_sge = cap.max_recv_sge;
    StoreRelease(&head->state.value, static_cast<uint32_t>(RdmaQpState::RESET));
    rec.qp->TraceConnectWithoutContext(
        "StateChange",
        Callback<void, RdmaQpState, RdmaQpState>(
            [this, id, h](RdmaQpState from, RdmaQpState to) { OnQpState(id, h, from, to); }));
    if (!srq)
    {
        rec.rq->SetPull([this, id, h]() {
            auto ci = m_contexts.find(id);
            if (ci == m_contexts.end())
            {
                return;
            }
            auto it = ci->second->qps.find(h);
            if (it != ci->second->qps.end())
            {
                PullRecvs(*ci->second, it->second);
            }
        });
    }
    *outFd = rec.shm.fd;
    rec.shm.fd = -1;
    r.u.qp.handle = h;
    r.u.qp.qp_num = rec.qp->GetQpNum();
    r.u.qp.cap = ToAbi(rec.cap);
    r.u.qp.layout = rec.layout;
    c.qps.emplace(h, std::move(rec));
    return 0;
}

int
EmuHcaService::DoModifyQp(Context& c, const cnuas_hca_req& q, cnuas_hca_resp& r)
{
    auto it = c.qps.find(q.u.modify_qp.handle);
    if (it == c.qps.end())
    {
        m_device->SetLastError("no such QP");
        return EINVAL;
    }
    QpRec& rec = it->second;
    // Work the process posted before this call is taken first, as an adapter sees the doorbell
    // before a later command.
    PullSends(c, rec);
    const RdmaQpAttr attr = FromAbi(q.u.modify_qp.attr);
    const int err = rec.qp->Modify(attr, q.u.modify_qp.attr_mask);
    r.u.qp_attr.qp_state = static_cast<uint32_t>(rec.qp->GetState());
    return err;
}

int
EmuHcaService::DoQueryQp(Context& c, const cnuas_hca_req& q, cnuas_hca_resp& r)
{
    auto it = c.qps.find(q.u.modify_qp.handle);
    if (it == c.qps.end())
    {
        m_device->SetLastError("no such QP");
        return EINVAL;
    }
    RdmaQpAttr attr;
    RdmaQpInitAttr init;
    const int err = it->second.qp->Query(attr, q.u.modify_qp.attr_mask, init);
    if (err == 0)
    {
        r.u.qp_attr.attr = ToAbi(attr);
        r.u.qp_attr.cap = ToAbi(it->second.cap);
        r.u.qp_attr.qp_state = static_cast<uint32_t>(attr.qp_state);
    }
    return err;
}

int
EmuHcaService::DoCreateSrq(Context& c, const cnuas_hca_req& q, cnuas_hca_resp& r, int* outFd)
{
    const auto& a = q.u.create_srq;
    auto pd = c.pds.find(a.pd);
    if (pd == c.pds.end())
    {
        m_device->SetLastError("no such PD");
        return EINVAL;
    }
    const RdmaDeviceAttr d = m_device->QueryDevice();
    if (a.max_wr < 1 || a.max_wr > d.max_srq_wr || a.max_sge > d.max_srq_sge)
    {
        m_device->SetLastError("max_wr or max_sge outside the device's limits");
        return EINVAL;
    }
    SrqRec rec;
    rec.maxSge = std::max<uint32_t>(a.max_sge, 1);
    rec.layout.rq_offset = kWqHeadBytes;
    rec.layout.rq_stride = Align64(sizeof(cnuas_hca_recv_wqe) + rec.maxSge * sizeof(cnuas_hca_sge));
    rec.layout.rq_slots = a.max_wr;
    if (!rec.shm.Create("cnuas-srq",
                        rec.layout.rq_offset + size_t(rec.layout.rq_stride) * a.max_wr))
    {
        return ENOMEM;
    }
    rec.layout.shm_bytes = static_cast<uint32_t>(rec.shm.bytes);
    rec.queue = Create<RetiringQueue<RdmaRecvWqe>>(a.max_wr, &rec.Head()->rq_retired.value);
    RdmaSrqAttr attr;
    attr.max_wr = a.max_wr;
    attr.max_sge = rec.maxSge;
    int err = 0;
    rec.srq = m_device->CreateSrq(pd->second, attr, rec.queue, &err);
    if (!rec.srq)
    {
        rec.shm.Release();
        return err;
    }
    if (a.srq_limit != 0)
    {
        RdmaSrqAttr lim;
        lim.srq_limit = a.srq_limit;
        rec.srq->Modify(lim, RDMA_SRQ_LIMIT);
    }
    const uint32_t h = c.nextHandle++;
    const uint32_t id = c.id;
    rec.handle = h;
    rec.cookie = a.cookie;
    rec.queue->SetPull([this, id, h]() {
        auto ci = m_contexts.find(id);
        if (ci == m_contexts.end())
        {
            return;
        }
        auto it = ci->second->srqs.find(h);
        if (it != ci->second->srqs.end())
        {
            PullSrqRecvs(*ci->second, it->second);
        }
    });
    *outFd = rec.shm.fd;
    rec.shm.fd = -1;
    r.u.qp.handle = h;
    r.u.qp.cap.max_recv_wr = a.max_wr;
    r.u.qp.cap.max_recv_sge = rec.maxSge;
    r.u.qp.layout = rec.layout;
    c.srqs.emplace(h, std::move(rec));
    return 0;
}

namespace
{
/// Destroys the object `h` of `objects` with `destroy` (an RdmaDevice verb returning 0 or an
/// errno value); on success `release` lets go of its shared memory and the record goes.
template <typename Map, typename Destroy, typename Release>
int
DestroyRecord(Map& objects, uint32_t h, Destroy destroy, Release release)
{
    auto it = objects.find(h);
    if (it == objects.end())
    {
        return EINVAL;
    }
    const int err = destroy(it->second);
    if (err == 0)
    {
        release(it->second);
        objects.erase(it);
    }
    return err;
}

auto
NoRelease()
{
    return [](auto&) {};
}
} // namespace

int
EmuHcaService::DoDestroy(Context& c, uint32_t op, uint32_t h)
{
    RdmaDevice& dev = *m_device;
    switch (op)
    {
    case CNUAS_OP_DEALLOC_PD:
        return DestroyRecord(c.pds, h, [&](Ptr<RdmaPd>& pd) { return dev.DeallocPd(pd); },
                             NoRelease());
    case CNUAS_OP_DEREG_MR: {
        const int err = DestroyRecord(c.mrs, h, [&](Ptr<RdmaMr>& mr) { return dev.DeregMr(mr); },
                                      NoRelease());
        auto w = c.mrWindows.find(h);
        if (err == 0 && w != c.mrWindows.end())
        {
            c.memory->ReleaseWindow(w->second);
            c.mrWindows.erase(w);
        }
        return err;
    }
    case CNUAS_OP_DESTROY_AH:
        return DestroyRecord(c.ahs, h, [&](Ptr<RdmaAh>& ah) { return dev.DestroyAh(ah); },
                             NoRelease());
    case CNUAS_OP_DESTROY_COMP_CHANNEL:
        return DestroyRecord(
            c.channels,
            h,
            [&](int&) {
                for (const auto& [ch, cq] : c.cqs)
                {
                    if (cq.channel == h)
                    {
                        dev.SetLastError("a CQ still uses the channel");
                        return EBUSY;
                    }
                }
                return 0;
            },
            [](int& fd) { close(fd); });
    case CNUAS_OP_DESTROY_CQ:
        return DestroyRecord(
            c.cqs,
            h,
            [&](CqRec& r) { return dev.DestroyCq(r.cq); },
            [](CqRec& r) {
                r.ring->Detach();
                r.shm.Release();
            });
    case CNUAS_OP_DESTROY_QP:
        return DestroyRecord(
            c.qps,
            h,
            [&](QpRec& r) { return dev.DestroyQp(r.qp); },
            [](QpRec& r) {
                r.sq->Detach();
                r.rq->Detach();
                r.shm.Release();
            });
    case CNUAS_OP_DESTROY_SRQ:
        return DestroyRecord(
            c.srqs,
            h,
            [&](SrqRec& r) { return dev.DestroySrq(r.srq); },
            [](SrqRec& r) {
                r.queue->Detach();
                r.shm.Release();
            });
    default:
        return EINVAL;
    }
}

namespace
{
/// How often a deferred destroy looks whether its QP's sends have gone: a few packets' time.
const Time kDrainCheckInterval = MicroSeconds(1);
} // namespace

bool
EmuHcaService::DeferDestroyQp(Context& c, uint32_t h)
{
    auto it = c.qps.find(h);
    if (it == c.qps.end())
    {
        return false;
    }
    QpRec& rec = it->second;
    // Work the process posted before this call is taken first, as an adapter sees the doorbell
    // before a later command.
    PullSends(c, rec);
    // The kernel's destroy is a firmware command that reaches the adapter tens of microseconds
    // after the doorbell of the last post, and the adapter has sent a short queue by then
    // (mckey posts its messages and destroys its QP without waiting for a completion). Here
    // the doorbell and the destroy can be read in the same turn of a lagging loop, both at the
    // model's present: the destroy would drop sends that hardware had long put on the wire.
    // So it waits for them, as long as the requester sends by itself (not for a peer's
    // answer), and never past DestroyDrainLimit. A QP still attached to a group is refused at
    // once (EBUSY), as before.
    if (m_destroyDrainLimit.IsZero() || rec.broken || !m_engine ||
        m_device->GetMcastAttachments(rec.qp) > 0 ||
        !m_engine->HasUnsentRequests(rec.qp->GetQpNum()))
    {
        return false;
    }
    ++m_counters.destroysDeferred;
    c.answerPending = true;
    if (m_loop)
    {
        m_loop->PauseFd(c.fd, true);
    }
    c.drainCheck = Simulator::Schedule(kDrainCheckInterval,
                                       &EmuHcaService::CheckDestroyDrained,
                                       this,
                                       c.id,
                                       h,
                                       Simulator::Now() + m_destroyDrainLimit);
    return true;
}

void
EmuHcaService::CheckDestroyDrained(uint32_t id, uint32_t h, Time deadline)
{
    auto ci = m_contexts.find(id);
    if (ci == m_contexts.end())
    {
        return; // the process went: its QPs went with its context
    }
    Context& c = *ci->second;
    auto qi = c.qps.find(h);
    const bool unsent = qi != c.qps.end() && !qi->second.broken &&
                        m_engine->HasUnsentRequests(qi->second.qp->GetQpNum());
    if (unsent && Simulator::Now() < deadline)
    {
        c.drainCheck = Simulator::Schedule(std::min(kDrainCheckInterval,
                                                    deadline - Simulator::Now()),
                                           &EmuHcaService::CheckDestroyDrained,
                                           this,
                                           id,
                                           h,
                                           deadline);
        return;
    }
    if (unsent)
    {
        ++m_counters.destroysCut;
    }
    c.answerPending = false;
    if (m_loop)
    {
        m_loop->PauseFd(c.fd, false);
    }
    cnuas_hca_resp r;
    std::memset(&r, 0, sizeof(r));
    r.op = CNUAS_OP_DESTROY_QP;
    m_device->SetLastError("");
    const int err = DoDestroy(c, CNUAS_OP_DESTROY_QP, h);
    Answer(c, r, err, -1);
}

// ---- data path -----------------------------------------------------------------------------

void
EmuHcaService::OnDoorbell(uint32_t id)
{
    auto ci = m_contexts.find(id);
    if (ci == m_contexts.end())
    {
        return;
    }
    Context& c = *ci->second;
    uint64_t rings = 0;
    if (read(c.doorbell, &rings, sizeof(rings)) != sizeof(rings))
    {
        return;
    }
    ++m_counters.doorbells;
    // The doorbell is per context: look at every QP of it (a QP whose producer index did not
    // move costs one load). Taking WQEs never creates or destroys a QP of the context.
    for (auto& [h, rec] : c.qps)
    {
        PullSends(c, rec);
        // Receives posted in the error state complete with a flush without waiting for a
        // message (the library rings for them).
        if (rec.qp->GetState() == RdmaQpState::ERR)
        {
            PullRecvs(c, rec);
        }
    }
}

void
EmuHcaService::PullSends(Context& c, QpRec& q)
{
    if (q.broken)
    {
        return;
    }
    cnuas_hca_qp_shm* head = q.Head();
    const uint32_t prod = LoadAcquire(&head->sq_prod.value);
    const uint32_t avail = prod - q.sqTaken;
    if (avail == 0)
    {
        return;
    }
    if (avail > q.layout.sq_slots)
    {
        ++m_counters.corruptIndices;
        BreakQp(c, q, "send producer index runs past the ring");
        return;
    }
    std::vector<uint8_t> inlineData;
    for (uint32_t k = 0; k < avail && !q.broken; ++k)
    {
        const uint8_t* slot =
            q.shm.base + q.layout.sq_offset + size_t(q.sqTaken % q.layout.sq_slots) *
                                                  q.layout.sq_stride;
        cnuas_hca_send_wqe w;
        std::memcpy(&w, slot, sizeof(w));
        ++q.sqTaken;
        ++m_counters.sendWqes;
        RdmaSendWr wr;
        wr.wr_id = w.wr_id;
        wr.opcode = static_cast<RdmaWrOpcode>(w.opcode <= 0xFF ? w.opcode : 0xFF);
        wr.send_flags = w.send_flags;
        // imm_data travels in network byte order; RdmaSendWr holds it in host order. For
        // SEND_WITH_INV and LOCAL_INV the same field is the rkey to invalidate (host order).
        const bool immIsKey =
            w.opcode == static_cast<uint32_t>(RdmaWrOpcode::SEND_WITH_INV) ||
            w.opcode == static_cast<uint32_t>(RdmaWrOpcode::LOCAL_INV);
        wr.imm_data = immIsKey ? w.imm_data : ntohl(w.imm_data);
        wr.rdma.remote_addr = w.remote_addr;
        wr.rdma.rkey = w.rkey;
        wr.atomic.remote_addr = w.remote_addr;
        wr.atomic.rkey = w.rkey;
        wr.atomic.compare_add = w.compare_add;
        wr.atomic.swap = w.swap;
        wr.ud.remote_qpn = w.remote_qpn;
        wr.ud.remote_qkey = w.remote_qkey;
        const char* bad = nullptr;
        const bool inl = (w.send_flags & RDMA_SEND_INLINE) != 0;
        const uint32_t room = q.layout.sq_stride - sizeof(cnuas_hca_send_wqe);
        if (inl)
        {
            if (w.inline_len > q.cap.max_inline_data || w.inline_len > room)
            {
                bad = "inline data longer than max_inline_data";
            }
            else
            {
                inlineData.assign(slot + sizeof(w), slot + sizeof(w) + w.inline_len);
            }
        }
        else if (w.num_sge > q.cap.max_send_sge || w.num_sge * sizeof(cnuas_hca_sge) > room)
        {
            bad = "more SGEs than max_send_sge";
        }
        else
        {
            wr.sg_list.resize(w.num_sge);
            for (uint32_t s = 0; s < w.num_sge; ++s)
            {
                cnuas_hca_sge sge;
                std::memcpy(&sge, slot + sizeof(w) + s * sizeof(sge), sizeof(sge));
                wr.sg_list[s].addr = sge.addr;
                wr.sg_list[s].length = sge.length;
                wr.sg_list[s].lkey = sge.lkey;
            }
        }
        if (!bad && q.qp->GetType() == RdmaQpType::UD)
        {
            auto ah = c.ahs.find(w.ah);
            if (ah == c.ahs.end())
            {
                bad = "no such address handle";
            }
            else
            {
                wr.ud.ah = PeekPointer(ah->second);
            }
        }
        int err = 0;
        if (!bad)
        {
            err = inl ? q.qp->PostSendInline(wr, inlineData) : q.qp->PostSend(wr);
        }
        if (bad || err != 0)
        {
            // A WQE the adapter cannot execute: it completes with a local QP operation error
            // and the QP enters the error state (IBA vol. 1 §10.8.3.1, §11.6.2), after the
            // WQEs before it have been flushed.
            ++m_counters.badWqes;
            NS_LOG_WARN("HCA " << m_path << ": pid " << c.pid << " QP " << q.qp->GetQpNum()
                               << ": refused send WQE: "
                               << (bad ? bad : m_device->GetLastError().c_str()));
            q.qp->ReportFatal(RdmaEventType::QP_REQ_ERR);
            q.sq->Retire(1);
            RdmaWc wc;
            wc.wr_id = w.wr_id;
            wc.status = RdmaWcStatus::LOC_QP_OP_ERR;
            wc.opcode = RdmaWcOpcode::SEND;
            wc.qp_num = q.qp->GetQpNum();
            q.qp->GetSendCq()->Push(wc);
        }
    }
}

void
EmuHcaService::PullRecvs(Context& c, QpRec& q)
{
    if (q.broken || q.layout.rq_slots == 0)
    {
        return;
    }
    cnuas_hca_qp_shm* head = q.Head();
    const uint32_t prod = LoadAcquire(&head->rq_prod.value);
    const uint32_t avail = prod - q.rqTaken;
    if (avail == 0)
    {
        return;
    }
    if (avail > q.layout.rq_slots)
    {
        ++m_counters.corruptIndices;
        BreakQp(c, q, "receive producer index runs past the ring");
        return;
    }
    for (uint32_t k = 0; k < avail && !q.broken; ++k)
    {
        const uint8_t* slot =
            q.shm.base + q.layout.rq_offset + size_t(q.rqTaken % q.layout.rq_slots) *
                                                  q.layout.rq_stride;
        ++q.rqTaken;
        ++m_counters.recvWqes;
        RdmaRecvWr wr;
        const int err = ReadRecvWqe(slot, q.cap.max_recv_sge, wr) ? q.qp->PostRecv(wr) : EINVAL;
        if (err != 0)
        {
            ++m_counters.badWqes;
            NS_LOG_WARN("HCA " << m_path << ": pid " << c.pid << " QP " << q.qp->GetQpNum()
                               << ": refused receive WQE");
            q.qp->ReportFatal(RdmaEventType::QP_FATAL);
            q.rq->Retire(1);
            RdmaWc wc;
            wc.wr_id = wr.wr_id;
            wc.status = RdmaWcStatus::LOC_QP_OP_ERR;
            wc.opcode = RdmaWcOpcode::RECV;
            wc.qp_num = q.qp->GetQpNum();
            q.qp->GetRecvCq()->Push(wc);
        }
    }
}

void
EmuHcaService::PullSrqRecvs(Context& c, SrqRec& s)
{
    if (s.broken)
    {
        return;
    }
    const uint32_t prod = LoadAcquire(&s.Head()->rq_prod.value);
    const uint32_t avail = prod - s.taken;
    if (avail == 0)
    {
        return;
    }
    if (avail > s.layout.rq_slots)
    {
        ++m_counters.corruptIndices;
        s.broken = true;
        RdmaAsyncEvent ev;
        ev.event_type = RdmaEventType::SRQ_ERR;
        ev.srq = s.srq;
        m_device->RaiseAsyncEvent(ev);
        return;
    }
    for (uint32_t k = 0; k < avail; ++k)
    {
        const uint8_t* slot = s.shm.base + s.layout.rq_offset +
                              size_t(s.taken % s.layout.rq_slots) * s.layout.rq_stride;
        ++s.taken;
        ++m_counters.recvWqes;
        RdmaRecvWr wr;
        const int err = ReadRecvWqe(slot, s.maxSge, wr) ? s.srq->PostRecv(wr) : EINVAL;
        if (err != 0)
        {
            // An SRQ has no completion queue of its own: the WQE is dropped, the slot freed,
            // and the process told with IBV_EVENT_SRQ_ERR.
            ++m_counters.badWqes;
            s.queue->Retire(1);
            RdmaAsyncEvent ev;
            ev.event_type = RdmaEventType::SRQ_ERR;
            ev.srq = s.srq;
            m_device->RaiseAsyncEvent(ev);
        }
    }
}

void
EmuHcaService::BreakQp(Context& c, QpRec& q, const char* why)
{
    NS_LOG_WARN("HCA " << m_path << ": pid " << c.pid << " QP " << q.qp->GetQpNum() << ": "
                       << why << "; the QP enters the error state");
    q.broken = true;
    q.qp->ReportFatal(RdmaEventType::QP_FATAL);
}

void
EmuHcaService::OnQpState(uint32_t ctx, uint32_t handle, RdmaQpState from, RdmaQpState to)
{
    auto ci = m_contexts.find(ctx);
    if (ci == m_contexts.end())
    {
        return;
    }
    Context& c = *ci->second;
    auto it = c.qps.find(handle);
    if (it == c.qps.end() || !it->second.shm.base)
    {
        return;
    }
    QpRec& q = it->second;
    cnuas_hca_qp_shm* head = q.Head();
    if (to == RdmaQpState::RESET)
    {
        // IBA vol. 1 §10.3.1: Reset discards every WQE, also those not yet looked at.
        q.sqTaken = LoadAcquire(&head->sq_prod.value);
        q.rqTaken = LoadAcquire(&head->rq_prod.value);
        q.sq->RetireThrough(q.sqTaken);
        q.rq->RetireThrough(q.rqTaken);
        q.broken = false;
    }
    StoreRelease(&head->state.value, static_cast<uint32_t>(to));
    if (to == RdmaQpState::ERR)
    {
        // WQEs still in shared memory flush too: take them once the transition is done.
        Simulator::ScheduleNow([this, ctx, handle]() {
            auto ci2 = m_contexts.find(ctx);
            if (ci2 == m_contexts.end())
            {
                return;
            }
            auto it2 = ci2->second->qps.find(handle);
            if (it2 != ci2->second->qps.end())
            {
                PullSends(*ci2->second, it2->second);
                PullRecvs(*ci2->second, it2->second);
            }
        });
    }
}

// ---- events --------------------------------------------------------------------------------

void
EmuHcaService::OnCqEvent(uint32_t ctx, uint32_t handle)
{
    auto ci = m_contexts.find(ctx);
    if (ci == m_contexts.end())
    {
        return;
    }
    Context& c = *ci->second;
    auto it = c.cqs.find(handle);
    if (it == c.cqs.end())
    {
        return;
    }
    auto ch = c.channels.find(it->second.channel);
    if (ch == c.channels.end())
    {
        return;
    }
    cnuas_hca_comp_event e{it->second.cookie};
    if (write(ch->second, &e, sizeof(e)) != sizeof(e))
    {
        ++m_counters.eventsDropped;
    }
}

void
EmuHcaService::SendEvent(Context& c, uint32_t type, uint32_t port, uint64_t cookie)
{
    cnuas_hca_async_event e{type, port, cookie};
    if (c.asyncWrite < 0 || write(c.asyncWrite, &e, sizeof(e)) != sizeof(e))
    {
        ++m_counters.eventsDropped;
    }
}

void
EmuHcaService::WakePollers(uint32_t id)
{
    // A poller of any CQ of the context may be asleep waiting for this completion (programs
    // poll a send CQ and a receive CQ in turn). The fence pairs with the poller's between
    // counting itself a sleeper and looking at the CQ once more: either it sees the completion,
    // or this sees it asleep.
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    // A wake is a futex system call and, for a poller whose CPU halted, an interprocessor
    // interrupt: a bulk transfer's completions woke its poller each time and cost the daemon
    // 11-13 % of its time (docs/performance.md). While the model lags behind the wall clock
    // by more than WakeModerationLag, the daemon is the bottleneck and a wake a little later
    // changes nothing the program can see: the poller's own timeout (CNUAS_POLL_SLEEP_MAX_US,
    // 200 us) takes its completions, at no cost to the daemon, and the wakes still owed when
    // the loop catches up are made then, once per context.
    if (Lagging())
    {
        if (!HasSleepers(id))
        {
            return;
        }
        ++m_counters.wakesDeferred;
        if (std::find(m_owedWakes.begin(), m_owedWakes.end(), id) == m_owedWakes.end())
        {
            m_owedWakes.push_back(id);
            m_loop->ArmIdleHook(m_wakeHook);
        }
        return;
    }
    WakeSleepers(id);
}

bool
EmuHcaService::Lagging() const
{
    const int64_t moderateNs = m_wakeModerationLag.GetNanoSeconds();
    return m_loop && moderateNs > 0 && m_loop->CurrentLagNs() > moderateNs;
}

bool
EmuHcaService::HasSleepers(uint32_t id) const
{
    auto ci = m_contexts.find(id);
    if (ci == m_contexts.end())
    {
        return false;
    }
    for (const auto& [h, cr] : ci->second->cqs)
    {
        const auto* hd = reinterpret_cast<const cnuas_hca_cq_shm*>(cr.shm.base);
        if (hd && LoadAcquire(&hd->sleepers.value) != 0)
        {
            return true;
        }
    }
    return false;
}

bool
EmuHcaService::WakeSleepers(uint32_t id)
{
    auto ci = m_contexts.find(id);
    if (ci == m_contexts.end())
    {
        return false;
    }
    bool woke = false;
    for (auto& [h, cr] : ci->second->cqs)
    {
        auto* hd = reinterpret_cast<cnuas_hca_cq_shm*>(cr.shm.base);
        if (hd && LoadAcquire(&hd->sleepers.value) != 0)
        {
            __atomic_add_fetch(&hd->wake.value, 1, __ATOMIC_SEQ_CST);
            // Not FUTEX_PRIVATE: the word is in memory shared with another process.
            syscall(SYS_futex, &hd->wake.value, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
            ++m_counters.pollerWakes;
            woke = true;
        }
    }
    return woke;
}

void
EmuHcaService::BroadcastPortEvent(uint32_t type)
{
    for (auto& [id, cp] : m_contexts)
    {
        if (cp->opened)
        {
            SendEvent(*cp, type, 1, 0);
            ++m_counters.portEvents;
        }
    }
}

void
EmuHcaService::OnPortState(uint8_t oldState, uint8_t newState)
{
    // As an adapter reports its port (IBA vol. 1 §11.6.3, unaffiliated asynchronous events):
    // entering Active, and leaving it (a link down, an SM taking the port down).
    const auto active = static_cast<uint8_t>(IbPortState::Active);
    if (newState == active && oldState != active)
    {
        BroadcastPortEvent(static_cast<uint32_t>(RdmaEventType::PORT_ACTIVE));
    }
    else if (oldState == active && newState != active)
    {
        BroadcastPortEvent(static_cast<uint32_t>(RdmaEventType::PORT_ERR));
    }
}

void
EmuHcaService::OnLid(uint16_t /* oldLid */, uint16_t /* newLid */)
{
    BroadcastPortEvent(static_cast<uint32_t>(RdmaEventType::LID_CHANGE));
}

void
EmuHcaService::OnSmLid(uint16_t /* oldLid */, uint16_t /* newLid */)
{
    BroadcastPortEvent(static_cast<uint32_t>(RdmaEventType::SM_CHANGE));
}

void
EmuHcaService::OnPkeyTable(uint16_t /* first */, uint16_t /* end */)
{
    // The SM wrote the port's P_Key table (opensm's partitions): the kernel's IB_EVENT_PKEY_
    // CHANGE, which IPoIB and the programs' async event channels see.
    BroadcastPortEvent(static_cast<uint32_t>(RdmaEventType::PKEY_CHANGE));
}

void
EmuHcaService::OnAsyncEvent(const RdmaAsyncEvent& ev)
{
    for (auto& [id, cp] : m_contexts)
    {
        Context& c = *cp;
        if (ev.qp)
        {
            for (auto& [h, q] : c.qps)
            {
                if (q.qp == ev.qp)
                {
                    SendEvent(c, static_cast<uint32_t>(ev.event_type), 0, q.cookie);
                    return;
                }
            }
        }
        else if (ev.cq)
        {
            for (auto& [h, cq] : c.cqs)
            {
                if (cq.cq == ev.cq)
                {
                    if (ev.event_type == RdmaEventType::CQ_ERR && cq.shm.base)
                    {
                        StoreRelease(&reinterpret_cast<cnuas_hca_cq_shm*>(cq.shm.base)->error.value,
                                     1);
                    }
                    SendEvent(c, static_cast<uint32_t>(ev.event_type), 0, cq.cookie);
                    return;
                }
            }
        }
        else if (ev.srq)
        {
            for (auto& [h, s] : c.srqs)
            {
                if (s.srq == ev.srq)
                {
                    SendEvent(c, static_cast<uint32_t>(ev.event_type), 0, s.cookie);
                    return;
                }
            }
        }
        else
        {
            // Port and device events go to every context.
            SendEvent(c, static_cast<uint32_t>(ev.event_type), ev.port_num, 0);
        }
    }
}

// ---- teardown ------------------------------------------------------------------------------

void
EmuHcaService::DestroyAll(Context& c)
{
    // QPs first (they hold CQs, SRQs and PDs), then SRQs, CQs, AHs, MRs, PDs.
    for (auto& [h, q] : c.qps)
    {
        // A process that exits leaves its multicast groups (the kernel's uverbs cleanup
        // detaches before it destroys).
        m_device->DetachAllMcast(q.qp);
        m_device->DestroyQp(q.qp);
        q.sq->Detach();
        q.rq->Detach();
        q.shm.Release();
    }
    c.qps.clear();
    for (auto& [h, s] : c.srqs)
    {
        m_device->DestroySrq(s.srq);
        s.queue->Detach();
        s.shm.Release();
    }
    c.srqs.clear();
    for (auto& [h, cq] : c.cqs)
    {
        m_device->DestroyCq(cq.cq);
        cq.ring->Detach();
        cq.shm.Release();
    }
    c.cqs.clear();
    for (auto& [h, ah] : c.ahs)
    {
        m_device->DestroyAh(ah);
    }
    c.ahs.clear();
    for (auto& [h, mr] : c.mrs)
    {
        m_device->DeregMr(mr);
    }
    c.mrs.clear();
    for (auto& [h, pd] : c.pds)
    {
        m_device->DeallocPd(pd);
    }
    c.pds.clear();
    for (auto& [h, fd] : c.channels)
    {
        close(fd);
    }
    c.channels.clear();
}

void
EmuHcaService::Close(uint32_t id, const char* why)
{
    auto it = m_contexts.find(id);
    if (it == m_contexts.end())
    {
        return;
    }
    std::unique_ptr<Context> c = std::move(it->second);
    m_contexts.erase(it);
    c->drainCheck.Cancel();
    NS_LOG_INFO("HCA " << m_path << ": context " << id << " of pid " << c->pid
                       << " ends: " << why);
    auto rt = EmuRealtimeSimulatorImpl::Current();
    if (rt)
    {
        rt->UnwatchFd(c->fd);
        if (c->doorbell >= 0)
        {
            rt->UnwatchFd(c->doorbell);
        }
    }
    close(c->fd);
    if (c->doorbell >= 0)
    {
        close(c->doorbell);
    }
    if (c->asyncWrite >= 0)
    {
        close(c->asyncWrite);
    }
    c->fd = c->doorbell = c->asyncWrite = -1;
    ++m_counters.contextsClosed;
    if (m_loop && DrainBeforeTeardown(c))
    {
        return;
    }
    DestroyAll(*c);
}

bool
EmuHcaService::HasUnsentSends(const Context& c) const
{
    for (const auto& [h, q] : c.qps)
    {
        if (!q.broken && m_engine->HasUnsentRequests(q.qp->GetQpNum()))
        {
            return true;
        }
    }
    return false;
}

bool
EmuHcaService::DrainBeforeTeardown(std::unique_ptr<Context>& c)
{
    // A process that exits right after posting (or is killed) leaves sends that an adapter has
    // already fetched with the doorbell and puts on the wire while the kernel is still tearing
    // the process's resources down; a lagging model may read the doorbell and the hang-up in
    // one turn. So the sends posted go first, as for ibv_destroy_qp (DeferDestroyQp), never
    // longer than DestroyDrainLimit. The process is gone: no answer, no event, no wake reaches
    // it; its groups are left at once (the kernel detaches before it destroys), and its memory
    // is reached only through the pages it shared (pinned, on hardware), not through /proc.
    if (m_destroyDrainLimit.IsZero() || !m_engine || c->qps.empty())
    {
        return false;
    }
    c->memory->SetGone();
    for (auto& [h, fd] : c->channels)
    {
        close(fd);
    }
    c->channels.clear();
    for (auto& [h, q] : c->qps)
    {
        m_device->DetachAllMcast(q.qp);
        if (!q.broken)
        {
            PullSends(*c, q);
        }
    }
    if (!HasUnsentSends(*c))
    {
        return false;
    }
    ++m_counters.closesDeferred;
    const uint32_t id = c->id;
    c->drainCheck = Simulator::Schedule(kDrainCheckInterval,
                                        &EmuHcaService::CheckCloseDrained,
                                        this,
                                        id,
                                        Simulator::Now() + m_destroyDrainLimit);
    m_closing[id] = std::move(c);
    return true;
}

void
EmuHcaService::CheckCloseDrained(uint32_t id, Time deadline)
{
    auto it = m_closing.find(id);
    if (it == m_closing.end())
    {
        return;
    }
    Context& c = *it->second;
    const bool unsent = HasUnsentSends(c);
    if (unsent && Simulator::Now() < deadline)
    {
        c.drainCheck = Simulator::Schedule(std::min(kDrainCheckInterval, deadline - Simulator::Now()),
                                           &EmuHcaService::CheckCloseDrained,
                                           this,
                                           id,
                                           deadline);
        return;
    }
    if (unsent)
    {
        ++m_counters.closesCut;
    }
    NS_LOG_INFO("HCA " << m_path << ": context " << id << " of pid " << c.pid
                       << " torn down after its sends" << (unsent ? " (some cut)" : ""));
    DestroyAll(c);
    m_closing.erase(it);
}

} // namespace ns3
