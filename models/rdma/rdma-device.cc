#include "rdma-device.h"

#include "models/common/ip-address-bytes.h"

#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <iterator>
#include <vector>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaDevice");
NS_OBJECT_ENSURE_REGISTERED(RdmaDevice);

namespace
{
/// Multicast LIDs, IBA vol. 1 §4.1.3 / §7.11.1: 0xC000..0xFFFE (0xFFFF is the permissive LID).
constexpr uint16_t kMulticastLidFirst = 0xC000;
constexpr uint16_t kPermissiveLid = 0xFFFF;
/// Flow labels are 20 bits (IBA vol. 1 §8.3.1).
constexpr uint32_t kMaxFlowLabel = 0xFFFFF;
/// Service levels are 4 bits (IBA vol. 1 §7.7.5).
constexpr uint8_t kMaxSl = 15;
/// The access flags ibv_reg_mr accepts here (IBA vol. 1 §10.6.3.1 rights, plus MW_BIND, which
/// is accepted and has no effect since the device has no memory windows).
constexpr uint32_t kMrAccessAccepted = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                                       RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC |
                                       RDMA_ACCESS_MW_BIND | RDMA_ACCESS_HUGETLB;
/// Flags libibverbs defines that this device does not support.
constexpr uint32_t kMrAccessUnsupported =
    RDMA_ACCESS_ON_DEMAND | RDMA_ACCESS_FLUSH_GLOBAL | RDMA_ACCESS_FLUSH_PERSISTENT;
} // namespace

TypeId
RdmaDevice::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaDevice")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<RdmaDevice>()
            .AddAttribute("MaxQp",
                          "Most QPs alive at once (ibv_device_attr.max_qp).",
                          UintegerValue(65536),
                          MakeUintegerAccessor(&RdmaDevice::m_maxQp),
                          MakeUintegerChecker<uint32_t>(1, kRdmaMax24 - 1))
            .AddAttribute("MaxQpWr",
                          "Most work requests per send or receive queue (max_qp_wr).",
                          UintegerValue(32768),
                          MakeUintegerAccessor(&RdmaDevice::m_maxQpWr),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxSge",
                          "Most scatter/gather elements per send or receive request (max_sge).",
                          UintegerValue(30),
                          MakeUintegerAccessor(&RdmaDevice::m_maxSge),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxSgeRd",
                          "Most scatter/gather elements per RDMA READ request (max_sge_rd).",
                          UintegerValue(30),
                          MakeUintegerAccessor(&RdmaDevice::m_maxSgeRd),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxCq",
                          "Most CQs alive at once (max_cq).",
                          UintegerValue(65536),
                          MakeUintegerAccessor(&RdmaDevice::m_maxCq),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxCqe",
                          "Most completions per CQ (max_cqe).",
                          UintegerValue(4194303),
                          MakeUintegerAccessor(&RdmaDevice::m_maxCqe),
                          MakeUintegerChecker<uint32_t>(1, 0x7FFFFFFF))
            .AddAttribute("MaxMr",
                          "Most memory regions alive at once (max_mr).",
                          UintegerValue(1048576),
                          MakeUintegerAccessor(&RdmaDevice::m_maxMr),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxMrSize",
                          "Largest memory region, bytes (max_mr_size).",
                          UintegerValue(UINT64_MAX),
                          MakeUintegerAccessor(&RdmaDevice::m_maxMrSize),
                          MakeUintegerChecker<uint64_t>(1))
            .AddAttribute("MaxPd",
                          "Most protection domains alive at once (max_pd).",
                          UintegerValue(65536),
                          MakeUintegerAccessor(&RdmaDevice::m_maxPd),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxQpRdAtom",
                          "Most RDMA READ/atomic requests a QP serves at once as responder "
                          "(max_qp_rd_atom; bounds max_dest_rd_atomic).",
                          UintegerValue(16),
                          MakeUintegerAccessor(&RdmaDevice::m_maxQpRdAtom),
                          MakeUintegerChecker<uint32_t>(0, 255))
            .AddAttribute("MaxQpInitRdAtom",
                          "Most RDMA READ/atomic requests a QP has outstanding as requester "
                          "(max_qp_init_rd_atom; bounds max_rd_atomic).",
                          UintegerValue(16),
                          MakeUintegerAccessor(&RdmaDevice::m_maxQpInitRdAtom),
                          MakeUintegerChecker<uint32_t>(0, 255))
            .AddAttribute("MaxSrq",
                          "Most SRQs alive at once (max_srq).",
                          UintegerValue(65536),
                          MakeUintegerAccessor(&RdmaDevice::m_maxSrq),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxSrqWr",
                          "Most work requests per SRQ (max_srq_wr).",
                          UintegerValue(32767),
                          MakeUintegerAccessor(&RdmaDevice::m_maxSrqWr),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxSrqSge",
                          "Most scatter elements per SRQ request (max_srq_sge).",
                          UintegerValue(31),
                          MakeUintegerAccessor(&RdmaDevice::m_maxSrqSge),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxAh",
                          "Most address handles alive at once (max_ah).",
                          UintegerValue(65536),
                          MakeUintegerAccessor(&RdmaDevice::m_maxAh),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxMcastGroups",
                          "Most multicast groups with a QP attached at once (max_mcast_grp).",
                          UintegerValue(131072),
                          MakeUintegerAccessor(&RdmaDevice::m_maxMcastGroups),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxMcastQpAttach",
                          "Most QPs attached to one multicast group (max_mcast_qp_attach; "
                          "ConnectX reports 240).",
                          UintegerValue(240),
                          MakeUintegerAccessor(&RdmaDevice::m_maxMcastQpAttach),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MaxInlineData",
                          "Largest cap.max_inline_data a QP may ask for, bytes.",
                          UintegerValue(256),
                          MakeUintegerAccessor(&RdmaDevice::m_maxInlineData),
                          MakeUintegerChecker<uint32_t>(0))
            .AddAttribute("MaxMsgSize",
                          "Largest message, bytes (ibv_port_attr.max_msg_sz; IBA vol. 1 "
                          "§9.4: at most 2^31).",
                          UintegerValue(1u << 31),
                          MakeUintegerAccessor(&RdmaDevice::m_maxMsgSize),
                          MakeUintegerChecker<uint32_t>(1, 1u << 31))
            .AddAttribute("PhysPortCount",
                          "Number of ports (phys_port_cnt); ports are numbered from 1.",
                          UintegerValue(1),
                          MakeUintegerAccessor(&RdmaDevice::m_physPortCnt),
                          MakeUintegerChecker<uint8_t>(1, 254))
            .AddAttribute("PkeyTableLength",
                          "Entries of each port's P_Key table (max_pkeys); bounds pkey_index.",
                          UintegerValue(128),
                          MakeUintegerAccessor(&RdmaDevice::m_pkeyTableLength),
                          MakeUintegerChecker<uint16_t>(1))
            .AddAttribute("GidTableLength",
                          "Entries of each port's GID table; bounds sgid_index.",
                          UintegerValue(128),
                          MakeUintegerAccessor(&RdmaDevice::m_gidTableLength),
                          MakeUintegerChecker<uint32_t>(1, 256))
            .AddAttribute("MaxMtu",
                          "Largest path MTU of every port (bounds IBV_QP_PATH_MTU).",
                          EnumValue(static_cast<int>(RdmaMtu::MTU_4096)),
                          MakeEnumAccessor(&RdmaDevice::m_maxMtu),
                          MakeEnumChecker(static_cast<int>(RdmaMtu::MTU_256), "256",
                                          static_cast<int>(RdmaMtu::MTU_512), "512",
                                          static_cast<int>(RdmaMtu::MTU_1024), "1024",
                                          static_cast<int>(RdmaMtu::MTU_2048), "2048",
                                          static_cast<int>(RdmaMtu::MTU_4096), "4096"))
            .AddAttribute("LinkLayer",
                          "Link layer of the ports: InfiniBand (LID-routed) or Ethernet "
                          "(RoCEv2: every address vector carries a GRH).",
                          EnumValue(static_cast<int>(RdmaLinkLayer::INFINIBAND)),
                          MakeEnumAccessor(&RdmaDevice::m_linkLayer),
                          MakeEnumChecker(static_cast<int>(RdmaLinkLayer::INFINIBAND),
                                          "InfiniBand",
                                          static_cast<int>(RdmaLinkLayer::ETHERNET),
                                          "Ethernet"))
            .AddAttribute("AtomicCap",
                          "Atomic operation support (atomic_cap): None refuses atomic work "
                          "requests and IBV_ACCESS_REMOTE_ATOMIC on QPs.",
                          EnumValue(static_cast<int>(RdmaAtomicCap::HCA)),
                          MakeEnumAccessor(&RdmaDevice::m_atomicCap),
                          MakeEnumChecker(static_cast<int>(RdmaAtomicCap::NONE), "None",
                                          static_cast<int>(RdmaAtomicCap::HCA), "Hca",
                                          static_cast<int>(RdmaAtomicCap::GLOB), "Glob"))
            .AddAttribute("VendorId",
                          "IEEE OUI reported as vendor_id.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaDevice::m_vendorId),
                          MakeUintegerChecker<uint32_t>(0, 0xFFFFFF))
            .AddAttribute("VendorPartId",
                          "vendor_part_id.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaDevice::m_vendorPartId),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("NodeGuid",
                          "node_guid (host byte order).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaDevice::m_nodeGuid),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("FirstQpNumber",
                          "QP number given to the first QP; later QPs count up, skipping "
                          "numbers in use and wrapping from 2^24-1 to 2 (QP0 and QP1 are "
                          "the management QPs, IBA vol. 1 §10.2.4.4).",
                          UintegerValue(0x100),
                          MakeUintegerAccessor(&RdmaDevice::m_firstQpn),
                          MakeUintegerChecker<uint32_t>(2, kRdmaMax24))
            .AddTraceSource("AsyncEvent",
                            "An asynchronous event (ibv_get_async_event): CQ overrun, QP "
                            "fatal, SQ drained, SRQ limit, last WQE reached, ...",
                            MakeTraceSourceAccessor(&RdmaDevice::m_asyncEvent),
                            "ns3::RdmaDevice::AsyncEventCallback")
            .AddTraceSource("McastAttach",
                            "A QP was attached to a multicast group, or detached from one "
                            "(ibv_attach_mcast, ibv_detach_mcast, or a QP's attachments undone "
                            "when its process goes): (GID, MLID, attached).",
                            MakeTraceSourceAccessor(&RdmaDevice::m_mcastAttach),
                            "ns3::RdmaDevice::McastAttachCallback");
    return tid;
}

RdmaDevice::RdmaDevice()
    : m_keyRng(CreateObject<UniformRandomVariable>())
{
}

RdmaDevice::~RdmaDevice()
{
    DetachAll(false);
}

void
RdmaDevice::DoDispose()
{
    m_doorbell = QpCallback();
    m_qpState = QpStateCallback();
    m_qpDestroy = QpCallback();
    DetachAll(true);
    m_keyRng = nullptr;
    Object::DoDispose();
}

void
RdmaDevice::DetachAll(bool dispose)
{
    // QPs first: they hold the others.
    auto detach = [dispose](auto& objects) {
        for (auto& [h, o] : objects)
        {
            o->m_device = nullptr;
            if (dispose)
            {
                o->Dispose();
            }
        }
        objects.clear();
    };
    detach(m_qps);
    m_qpByNumber.Clear();
    detach(m_ahs);
    detach(m_srqs);
    detach(m_cqs);
    detach(m_mrs);
    detach(m_pds);
    m_byLkey.clear();
    m_byRkey.clear();
}

int64_t
RdmaDevice::AssignStreams(int64_t stream)
{
    m_keyRng->SetStream(stream);
    return 1;
}

template <typename T>
Ptr<T>
RdmaDevice::Fail(int* err, int code, const char* why) const
{
    NS_LOG_DEBUG("refused (" << code << "): " << why);
    m_lastError = why;
    if (err)
    {
        *err = code;
    }
    return nullptr;
}

Ptr<RdmaPd>
RdmaDevice::AlivePd(const Ptr<RdmaPd>& pd, const RdmaDevice* self)
{
    return (pd && pd->m_device == self) ? pd : nullptr;
}

RdmaDeviceAttr
RdmaDevice::QueryDevice() const
{
    RdmaDeviceAttr a;
    a.node_guid = m_nodeGuid;
    a.max_mr_size = m_maxMrSize;
    a.page_size_cap = RdmaSimulatedMemory::kPageSize;
    a.vendor_id = m_vendorId;
    a.vendor_part_id = m_vendorPartId;
    a.max_qp = m_maxQp;
    a.max_qp_wr = m_maxQpWr;
    // IBV_DEVICE_CURR_QP_STATE_MOD: Modify QP honours IBV_QP_CUR_STATE.
    a.device_cap_flags = RDMA_DEVICE_CURR_QP_STATE_MOD;
    a.max_sge = m_maxSge;
    a.max_sge_rd = m_maxSgeRd;
    a.max_cq = m_maxCq;
    a.max_cqe = m_maxCqe;
    a.max_mr = m_maxMr;
    a.max_pd = m_maxPd;
    a.max_qp_rd_atom = m_maxQpRdAtom;
    a.max_qp_init_rd_atom = m_maxQpInitRdAtom;
    a.atomic_cap = static_cast<RdmaAtomicCap>(m_atomicCap);
    a.max_ah = m_maxAh;
    a.max_srq = m_maxSrq;
    a.max_srq_wr = m_maxSrqWr;
    a.max_srq_sge = m_maxSrqSge;
    a.max_pkeys = m_pkeyTableLength;
    a.phys_port_cnt = m_physPortCnt;
    a.max_inline_data = m_maxInlineData;
    a.max_mcast_grp = m_maxMcastGroups;
    a.max_mcast_qp_attach = m_maxMcastQpAttach;
    a.max_total_mcast_qp_attach = static_cast<uint32_t>(
        std::min<uint64_t>(uint64_t(m_maxMcastGroups) * m_maxMcastQpAttach, INT32_MAX));
    return a;
}

int
RdmaDevice::QueryPort(uint8_t portNum, RdmaPortAttr& attr) const
{
    if (portNum < 1 || portNum > m_physPortCnt)
    {
        m_lastError = "no such port";
        return EINVAL;
    }
    attr.max_mtu = static_cast<RdmaMtu>(m_maxMtu);
    attr.active_mtu = static_cast<RdmaMtu>(m_maxMtu);
    attr.gid_tbl_len = m_gidTableLength;
    attr.max_msg_sz = m_maxMsgSize;
    attr.pkey_tbl_len = m_pkeyTableLength;
    attr.link_layer = static_cast<RdmaLinkLayer>(m_linkLayer);
    return 0;
}

// ---- Protection domains ----------------------------------------------------------------------

Ptr<RdmaPd>
RdmaDevice::AllocPd(Ptr<RdmaMemory> memory, int* err)
{
    if (!memory)
    {
        return Fail<RdmaPd>(err, EINVAL, "a PD needs the consumer's memory");
    }
    if (m_pds.size() >= m_maxPd)
    {
        return Fail<RdmaPd>(err, ENOMEM, "max_pd reached");
    }
    Ptr<RdmaPd> pd = CreateObject<RdmaPd>();
    pd->m_device = this;
    pd->m_handle = m_nextHandle++;
    pd->m_memory = memory;
    m_pds[pd->m_handle] = pd;
    if (err)
    {
        *err = 0;
    }
    return pd;
}

int
RdmaDevice::DeallocPd(Ptr<RdmaPd> pd)
{
    if (!AlivePd(pd, this))
    {
        m_lastError = "PD is not alive on this device";
        return EINVAL;
    }
    if (pd->m_users != 0)
    {
        m_lastError = "PD is still used by MRs, QPs, SRQs or AHs";
        return EBUSY;
    }
    m_pds.erase(pd->m_handle);
    pd->m_device = nullptr;
    return 0;
}

// ---- Memory regions --------------------------------------------------------------------------

Ptr<RdmaMr>
RdmaDevice::RegMr(Ptr<RdmaPd> pd, uint64_t addr, uint64_t length, uint32_t access, int* err)
{
    return RegMrIova(pd, addr, length, addr, access, err);
}

Ptr<RdmaMr>
RdmaDevice::RegMrIova(Ptr<RdmaPd> pd,
                      uint64_t addr,
                      uint64_t length,
                      uint64_t iova,
                      uint32_t access,
                      int* err)
{
    if (!AlivePd(pd, this))
    {
        return Fail<RdmaMr>(err, EINVAL, "PD is not alive on this device");
    }
    // ibv_reg_mr(3): "If IBV_ACCESS_REMOTE_WRITE or IBV_ACCESS_REMOTE_ATOMIC is set, then
    // IBV_ACCESS_LOCAL_WRITE must be set too" (IBA vol. 1 §10.6.3.1).
    if ((access & (RDMA_ACCESS_REMOTE_WRITE | RDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(access & RDMA_ACCESS_LOCAL_WRITE))
    {
        return Fail<RdmaMr>(err, EINVAL, "remote write/atomic access needs local write");
    }
    // Optional flags (IBV_ACCESS_OPTIONAL_RANGE) are ignored by a device that lacks them.
    const uint32_t flags = access & ~kRdmaAccessOptionalRange;
    if (flags & kMrAccessUnsupported)
    {
        return Fail<RdmaMr>(err, EOPNOTSUPP, "on-demand paging / flush access not supported");
    }
    if (flags & ~kMrAccessAccepted)
    {
        return Fail<RdmaMr>(err, EINVAL, "unknown access flags (or ZERO_BASED, MW-only)");
    }
    if (length == 0)
    {
        return Fail<RdmaMr>(err, EINVAL, "zero-length region");
    }
    if (RdmaMemory::Wraps(addr, length) || RdmaMemory::Wraps(iova, length))
    {
        return Fail<RdmaMr>(err, EINVAL, "addr + length (or iova + length) overflows");
    }
    if (length > m_maxMrSize)
    {
        return Fail<RdmaMr>(err, EINVAL, "length above max_mr_size");
    }
    if (m_mrs.size() >= m_maxMr)
    {
        return Fail<RdmaMr>(err, ENOMEM, "max_mr reached");
    }
    if (!pd->m_memory->IsMapped(addr, length))
    {
        return Fail<RdmaMr>(err, EFAULT, "range is not mapped in the PD's memory");
    }
    Ptr<RdmaMr> mr = CreateObject<RdmaMr>();
    mr->m_device = this;
    mr->m_handle = m_nextHandle++;
    mr->m_pd = pd;
    mr->m_addr = addr;
    mr->m_length = length;
    mr->m_iova = iova;
    mr->m_access = access;
    mr->m_lkey = NewKey();
    mr->m_rkey = NewKey();
    m_mrs[mr->m_handle] = mr;
    m_byLkey[mr->m_lkey] = mr;
    m_byRkey[mr->m_rkey] = mr;
    ++pd->m_users;
    if (err)
    {
        *err = 0;
    }
    return mr;
}

int
RdmaDevice::DeregMr(Ptr<RdmaMr> mr)
{
    if (!mr || mr->m_device != this)
    {
        m_lastError = "MR is not alive on this device";
        return EINVAL;
    }
    m_byLkey.erase(mr->m_lkey);
    m_byRkey.erase(mr->m_rkey);
    m_mrs.erase(mr->m_handle);
    --mr->m_pd->m_users;
    mr->m_device = nullptr;
    return 0;
}

uint32_t
RdmaDevice::NewKey()
{
    // IBA vol. 1 §10.6.3.4 leaves key values to the CI; they must not let a consumer reach a
    // region it was not given. 32 random bits from a seeded stream, never reused.
    while (true)
    {
        const uint32_t k = m_keyRng->GetInteger(1, UINT32_MAX);
        if (m_issuedKeys.insert(k).second)
        {
            return k;
        }
    }
}

// ---- Completion queues -----------------------------------------------------------------------

Ptr<RdmaCq>
RdmaDevice::CreateCq(int cqe, int* err)
{
    if (cqe < 1 || static_cast<uint32_t>(cqe) > m_maxCqe)
    {
        return Fail<RdmaCq>(err, EINVAL, "cqe outside 1..max_cqe");
    }
    return CreateCq(Create<RdmaRingQueue<RdmaWc>>(static_cast<uint32_t>(cqe)), err);
}

Ptr<RdmaCq>
RdmaDevice::CreateCq(Ptr<RdmaQueue<RdmaWc>> ring, int* err)
{
    if (!ring || ring->GetCapacity() < 1 || ring->GetCapacity() > m_maxCqe)
    {
        return Fail<RdmaCq>(err, EINVAL, "CQ ring capacity outside 1..max_cqe");
    }
    if (m_cqs.size() >= m_maxCq)
    {
        return Fail<RdmaCq>(err, ENOMEM, "max_cq reached");
    }
    Ptr<RdmaCq> cq = CreateObject<RdmaCq>();
    cq->m_device = this;
    cq->m_handle = m_nextHandle++;
    cq->m_ring = ring;
    m_cqs[cq->m_handle] = cq;
    if (err)
    {
        *err = 0;
    }
    return cq;
}

int
RdmaDevice::DestroyCq(Ptr<RdmaCq> cq)
{
    if (!cq || cq->m_device != this)
    {
        m_lastError = "CQ is not alive on this device";
        return EINVAL;
    }
    if (cq->m_users != 0)
    {
        m_lastError = "CQ is still used by QPs";
        return EBUSY;
    }
    m_cqs.erase(cq->m_handle);
    cq->m_device = nullptr;
    return 0;
}

void
RdmaDevice::HandleCqOverrun(RdmaCq* cq)
{
    Ptr<RdmaCq> p(cq);
    RdmaAsyncEvent ev;
    ev.event_type = RdmaEventType::CQ_ERR;
    ev.cq = p;
    RaiseAsyncEvent(ev);
    // The QPs that complete into this CQ can no longer do so: they enter ERR with QP_FATAL.
    // Collect first: the events may run consumer code that changes m_qps.
    std::vector<Ptr<RdmaQp>> victims;
    for (const auto& [qpn, qp] : m_qps)
    {
        if (qp->m_sendCq == p || qp->m_recvCq == p)
        {
            victims.push_back(qp);
        }
    }
    for (auto& qp : victims)
    {
        qp->ReportFatal(RdmaEventType::QP_FATAL);
    }
}

// ---- Shared receive queues -------------------------------------------------------------------

Ptr<RdmaSrq>
RdmaDevice::CreateSrq(Ptr<RdmaPd> pd, const RdmaSrqAttr& attr, int* err)
{
    return CreateSrq(pd, attr, nullptr, err);
}

Ptr<RdmaSrq>
RdmaDevice::CreateSrq(Ptr<RdmaPd> pd,
                      const RdmaSrqAttr& givenAttr,
                      Ptr<RdmaQueue<RdmaRecvWqe>> ring,
                      int* err)
{
    RdmaSrqAttr attr = givenAttr;
    if (ring)
    {
        attr.max_wr = ring->GetCapacity();
    }
    if (!AlivePd(pd, this))
    {
        return Fail<RdmaSrq>(err, EINVAL, "PD is not alive on this device");
    }
    if (attr.max_wr < 1 || attr.max_wr > m_maxSrqWr)
    {
        return Fail<RdmaSrq>(err, EINVAL, "max_wr outside 1..max_srq_wr");
    }
    if (attr.max_sge > m_maxSrqSge)
    {
        return Fail<RdmaSrq>(err, EINVAL, "max_sge above max_srq_sge");
    }
    if (m_srqs.size() >= m_maxSrq)
    {
        return Fail<RdmaSrq>(err, ENOMEM, "max_srq reached");
    }
    Ptr<RdmaSrq> srq = CreateObject<RdmaSrq>();
    srq->m_device = this;
    srq->m_handle = m_nextHandle++;
    srq->m_srqn = srq->m_handle;
    srq->m_pd = pd;
    srq->m_queue = ring ? ring : Ptr<RdmaQueue<RdmaRecvWqe>>(
                                     Create<RdmaRingQueue<RdmaRecvWqe>>(attr.max_wr));
    srq->m_maxSge = attr.max_sge;
    m_srqs[srq->m_handle] = srq;
    ++pd->m_users;
    if (err)
    {
        *err = 0;
    }
    return srq;
}

int
RdmaDevice::DestroySrq(Ptr<RdmaSrq> srq)
{
    if (!srq || srq->m_device != this)
    {
        m_lastError = "SRQ is not alive on this device";
        return EINVAL;
    }
    if (srq->m_users != 0)
    {
        m_lastError = "SRQ is still used by QPs";
        return EBUSY;
    }
    m_srqs.erase(srq->m_handle);
    --srq->m_pd->m_users;
    srq->m_device = nullptr;
    return 0;
}

// ---- Queue pairs -----------------------------------------------------------------------------

uint32_t
RdmaDevice::NewQpn()
{
    if (m_nextQpn == 0)
    {
        m_nextQpn = m_firstQpn;
    }
    while (true)
    {
        const uint32_t qpn = m_nextQpn;
        m_nextQpn = (m_nextQpn >= kRdmaMax24) ? 2 : m_nextQpn + 1;
        if (m_qps.find(qpn) == m_qps.end())
        {
            return qpn;
        }
    }
}

Ptr<RdmaQp>
RdmaDevice::CreateQp(Ptr<RdmaPd> pd, RdmaQpInitAttr& init, int* err)
{
    switch (init.qp_type)
    {
    case RdmaQpType::RC:
    case RdmaQpType::UC:
    case RdmaQpType::UD:
        break;
    case RdmaQpType::RAW_PACKET:
    case RdmaQpType::XRC_SEND:
    case RdmaQpType::XRC_RECV:
    case RdmaQpType::DRIVER:
        return Fail<RdmaQp>(err, EOPNOTSUPP, "only RC, UC and UD QPs are supported");
    default:
        return Fail<RdmaQp>(err, EINVAL, "unknown qp_type");
    }
    if (!AlivePd(pd, this))
    {
        return Fail<RdmaQp>(err, EINVAL, "PD is not alive on this device");
    }
    if (!init.send_cq || init.send_cq->m_device != this || !init.recv_cq ||
        init.recv_cq->m_device != this)
    {
        return Fail<RdmaQp>(err, EINVAL, "send_cq and recv_cq must be alive CQs of this device");
    }
    if (init.srq && (init.srq->m_device != this || init.srq->m_pd != pd))
    {
        // IBA vol. 1 §10.2.9: a QP and its SRQ belong to the same PD.
        return Fail<RdmaQp>(err, EINVAL, "srq must be an alive SRQ of the same PD");
    }
    RdmaQpCap cap = init.cap;
    if (init.sendQueue)
    {
        cap.max_send_wr = init.sendQueue->GetCapacity();
    }
    if (init.srq)
    {
        // ibv_create_qp(3): with an SRQ, max_recv_wr and max_recv_sge are ignored.
        cap.max_recv_wr = 0;
        cap.max_recv_sge = 0;
    }
    else if (init.recvQueue)
    {
        cap.max_recv_wr = init.recvQueue->GetCapacity();
    }
    if (cap.max_send_wr > m_maxQpWr || cap.max_recv_wr > m_maxQpWr)
    {
        return Fail<RdmaQp>(err, EINVAL, "max_send_wr or max_recv_wr above max_qp_wr");
    }
    if (cap.max_send_sge > m_maxSge || cap.max_recv_sge > m_maxSge)
    {
        return Fail<RdmaQp>(err, EINVAL, "max_send_sge or max_recv_sge above max_sge");
    }
    if (cap.max_inline_data > m_maxInlineData)
    {
        return Fail<RdmaQp>(err, EINVAL, "max_inline_data above the device limit");
    }
    if (m_qps.size() >= m_maxQp)
    {
        return Fail<RdmaQp>(err, ENOMEM, "max_qp reached");
    }
    Ptr<RdmaQp> qp = CreateObject<RdmaQp>();
    qp->m_device = this;
    qp->m_handle = m_nextHandle++;
    qp->m_qpn = NewQpn();
    qp->m_type = init.qp_type;
    qp->m_pd = pd;
    qp->m_sendCq = init.send_cq;
    qp->m_recvCq = init.recv_cq;
    qp->m_srq = init.srq;
    qp->m_sq = init.sendQueue ? init.sendQueue
                              : Ptr<RdmaQueue<RdmaSendWqe>>(
                                    Create<RdmaRingQueue<RdmaSendWqe>>(cap.max_send_wr));
    qp->m_rq = (!init.srq && init.recvQueue)
                   ? init.recvQueue
                   : Ptr<RdmaQueue<RdmaRecvWqe>>(
                         Create<RdmaRingQueue<RdmaRecvWqe>>(cap.max_recv_wr));
    qp->m_sqSigAll = init.sq_sig_all;
    qp->m_context = init.qp_context;
    qp->m_attr.cap = cap;
    qp->ResetAttributes();
    m_qps[qp->m_qpn] = qp;
    m_qpByNumber.Set(qp->m_qpn, PeekPointer(qp));
    ++pd->m_users;
    ++init.send_cq->m_users;
    ++init.recv_cq->m_users;
    if (init.srq)
    {
        ++init.srq->m_users;
    }
    init.cap = cap;
    if (err)
    {
        *err = 0;
    }
    return qp;
}

int
RdmaDevice::DestroyQp(Ptr<RdmaQp> qp)
{
    if (!qp || qp->m_device != this)
    {
        m_lastError = "QP is not alive on this device";
        return EINVAL;
    }
    if (GetMcastAttachments(qp) > 0)
    {
        m_lastError = "QP is still attached to a multicast group";
        return EBUSY;
    }
    if (!m_qpDestroy.IsNull())
    {
        m_qpDestroy(qp);
    }
    qp->Clear();
    m_qps.erase(qp->m_qpn);
    m_qpByNumber.Erase(qp->m_qpn);
    --qp->m_pd->m_users;
    --qp->m_sendCq->m_users;
    --qp->m_recvCq->m_users;
    if (qp->m_srq)
    {
        --qp->m_srq->m_users;
    }
    qp->m_device = nullptr;
    return 0;
}

int
RdmaDevice::AttachMcast(Ptr<RdmaQp> qp, const RdmaGid& gid, uint16_t lid)
{
    if (!qp || qp->m_device != this)
    {
        m_lastError = "QP is not alive on this device";
        return EINVAL;
    }
    if (qp->GetType() != RdmaQpType::UD)
    {
        m_lastError = "only a UD QP can join a multicast group";
        return EINVAL;
    }
    // An IPv6 group, or an IPv4-mapped one as RoCE v2 names an IPv4 group.
    if (!IsMulticastAddress(gid))
    {
        m_lastError = "not a multicast GID (neither ff00::/8 nor an IPv4-mapped 224.0.0.0/4)";
        return EINVAL;
    }
    if (m_mcast.count({qp->m_qpn, gid, lid}))
    {
        return 0;
    }
    // max_mcast_qp_attach and max_mcast_grp: the kernel answers ENOMEM past them.
    uint32_t inGroup = 0;
    std::set<std::pair<RdmaGid, uint16_t>> groups;
    for (const McastAttachment& a : m_mcast)
    {
        groups.insert({a.gid, a.lid});
        inGroup += (a.gid == gid && a.lid == lid) ? 1 : 0;
    }
    if (inGroup >= m_maxMcastQpAttach)
    {
        m_lastError = "the group has max_mcast_qp_attach QPs attached";
        return ENOMEM;
    }
    if (inGroup == 0 && groups.size() >= m_maxMcastGroups)
    {
        m_lastError = "max_mcast_grp groups have QPs attached";
        return ENOMEM;
    }
    m_mcast.insert({qp->m_qpn, gid, lid});
    m_mcastAttach(gid, lid, true);
    return 0;
}

int
RdmaDevice::DetachMcast(Ptr<RdmaQp> qp, const RdmaGid& gid, uint16_t lid)
{
    if (!qp || qp->m_device != this)
    {
        m_lastError = "QP is not alive on this device";
        return EINVAL;
    }
    if (m_mcast.erase({qp->m_qpn, gid, lid}) == 0)
    {
        m_lastError = "QP is not attached to that multicast group";
        return EINVAL;
    }
    m_mcastAttach(gid, lid, false);
    return 0;
}

void
RdmaDevice::DetachAllMcast(Ptr<RdmaQp> qp)
{
    if (!qp)
    {
        return;
    }
    const uint32_t qpn = qp->m_qpn;
    auto first = m_mcast.lower_bound({qpn, RdmaGid{}, 0});
    auto last = m_mcast.lower_bound({qpn + 1, RdmaGid{}, 0});
    std::vector<McastAttachment> gone(first, last);
    m_mcast.erase(first, last);
    for (const McastAttachment& a : gone)
    {
        m_mcastAttach(a.gid, a.lid, false);
    }
}

uint32_t
RdmaDevice::GetMcastAttachments(Ptr<RdmaQp> qp) const
{
    if (!qp)
    {
        return 0;
    }
    const uint32_t qpn = qp->m_qpn;
    return static_cast<uint32_t>(std::distance(m_mcast.lower_bound({qpn, RdmaGid{}, 0}),
                                               m_mcast.lower_bound({qpn + 1, RdmaGid{}, 0})));
}

void
RdmaDevice::McastMembers(uint8_t port, bool global, const RdmaGid& dgid, uint16_t dlid,
                         std::vector<Ptr<RdmaQp>>& out) const
{
    out.clear();
    uint32_t last = 0xFFFFFFFF;
    for (const McastAttachment& a : m_mcast)
    {
        if (a.qpn == last || (global ? a.gid != dgid : a.lid != dlid))
        {
            continue;
        }
        Ptr<RdmaQp> qp = LookupQp(a.qpn);
        const uint8_t qpPort = qp ? (qp->GetAttr().port_num ? qp->GetAttr().port_num : 1) : 0;
        if (qp && qpPort == port)
        {
            out.push_back(qp);
            last = a.qpn;
        }
    }
}

void
RdmaDevice::SetTransportHooks(QpCallback doorbell, QpStateCallback stateChange, QpCallback destroy)
{
    m_doorbell = doorbell;
    m_qpState = stateChange;
    m_qpDestroy = destroy;
}

void
RdmaDevice::RingDoorbell(RdmaQp* qp)
{
    if (!m_doorbell.IsNull())
    {
        m_doorbell(qp);
    }
}

void
RdmaDevice::NotifyQpState(RdmaQp* qp, RdmaQpState from, RdmaQpState to)
{
    if (!m_qpState.IsNull())
    {
        m_qpState(qp, from, to);
    }
}

// ---- Address handles -------------------------------------------------------------------------

const char*
RdmaDevice::CheckAhAttr(const RdmaAhAttr& a, bool connected) const
{
    if (a.port_num < 1 || a.port_num > m_physPortCnt)
    {
        return "ah_attr.port_num is not a port of the device";
    }
    if (a.sl > kMaxSl)
    {
        return "ah_attr.sl above 15";
    }
    if (static_cast<RdmaLinkLayer>(m_linkLayer) == RdmaLinkLayer::ETHERNET)
    {
        // RoCE addresses by GID: the GRH is mandatory (the DLID is unused).
        if (!a.is_global)
        {
            return "an Ethernet (RoCE) address vector needs is_global";
        }
    }
    else
    {
        // IBA vol. 1 §4.1.3: LID 0 is reserved; multicast only for UD (§10.5).
        if (a.dlid == 0)
        {
            return "ah_attr.dlid is 0";
        }
        if (connected && a.dlid >= kMulticastLidFirst && a.dlid != kPermissiveLid)
        {
            return "multicast DLID on a connected QP";
        }
    }
    if (a.is_global)
    {
        if (a.grh.flow_label > kMaxFlowLabel)
        {
            return "grh.flow_label wider than 20 bits";
        }
        if (a.grh.sgid_index >= m_gidTableLength)
        {
            return "grh.sgid_index outside the GID table";
        }
    }
    return nullptr;
}

bool
RdmaDevice::SourceGidPresent(const RdmaAhAttr& a) const
{
    return !a.is_global || m_gidLookup.IsNull() || m_gidLookup(a.port_num, a.grh.sgid_index);
}

void
RdmaDevice::SetGidLookup(GidLookup lookup)
{
    m_gidLookup = lookup;
}

Ptr<RdmaAh>
RdmaDevice::CreateAh(Ptr<RdmaPd> pd, const RdmaAhAttr& attr, int* err)
{
    if (!AlivePd(pd, this))
    {
        return Fail<RdmaAh>(err, EINVAL, "PD is not alive on this device");
    }
    if (const char* why = CheckAhAttr(attr, false))
    {
        return Fail<RdmaAh>(err, EINVAL, why);
    }
    if (!SourceGidPresent(attr))
    {
        return Fail<RdmaAh>(err, ENODATA, "grh.sgid_index names an empty entry of the GID table");
    }
    if (m_ahs.size() >= m_maxAh)
    {
        return Fail<RdmaAh>(err, ENOMEM, "max_ah reached");
    }
    Ptr<RdmaAh> ah = CreateObject<RdmaAh>();
    ah->m_device = this;
    ah->m_handle = m_nextHandle++;
    ah->m_pd = pd;
    ah->m_attr = attr;
    m_ahs[ah->m_handle] = ah;
    ++pd->m_users;
    if (err)
    {
        *err = 0;
    }
    return ah;
}

int
RdmaDevice::DestroyAh(Ptr<RdmaAh> ah)
{
    if (!ah || ah->m_device != this)
    {
        m_lastError = "AH is not alive on this device";
        return EINVAL;
    }
    m_ahs.erase(ah->m_handle);
    --ah->m_pd->m_users;
    ah->m_device = nullptr;
    return 0;
}

// ---- Transport-engine side -------------------------------------------------------------------

Ptr<RdmaQp>
RdmaDevice::LookupQp(uint32_t qpn) const
{
    RdmaQp* qp;
    if (m_qpByNumber.Lookup(qpn, &qp))
    {
        return Ptr<RdmaQp>(qp);
    }
    auto it = m_qps.find(qpn);
    return it == m_qps.end() ? nullptr : it->second;
}

Ptr<RdmaMr>
RdmaDevice::LookupLkey(uint32_t lkey) const
{
    auto it = m_byLkey.find(lkey);
    return it == m_byLkey.end() ? nullptr : it->second;
}

Ptr<RdmaMr>
RdmaDevice::LookupRkey(uint32_t rkey) const
{
    auto it = m_byRkey.find(rkey);
    return it == m_byRkey.end() ? nullptr : it->second;
}

RdmaMrCheck
RdmaDevice::CheckLocalAccess(Ptr<RdmaPd> pd,
                             const RdmaSge& sge,
                             bool needWrite,
                             Ptr<RdmaMr>* out) const
{
    Ptr<RdmaMr> mr = LookupLkey(sge.lkey);
    if (!mr)
    {
        return RdmaMrCheck::INVALID_KEY;
    }
    if (mr->m_pd != pd)
    {
        return RdmaMrCheck::PD_MISMATCH;
    }
    const RdmaMrCheck c = mr->CheckLocal(sge.addr, sge.length, needWrite);
    if (c == RdmaMrCheck::OK && out)
    {
        *out = mr;
    }
    return c;
}

RdmaMrCheck
RdmaDevice::CheckRemoteAccess(Ptr<RdmaPd> pd,
                              uint32_t rkey,
                              uint64_t addr,
                              uint64_t len,
                              uint32_t requiredAccess,
                              Ptr<RdmaMr>* out) const
{
    Ptr<RdmaMr> mr = LookupRkey(rkey);
    if (!mr)
    {
        return RdmaMrCheck::INVALID_KEY;
    }
    if (mr->m_pd != pd)
    {
        return RdmaMrCheck::PD_MISMATCH;
    }
    const RdmaMrCheck c = mr->CheckRemote(addr, len, requiredAccess);
    if (c == RdmaMrCheck::OK && out)
    {
        *out = mr;
    }
    return c;
}

void
RdmaDevice::RaiseAsyncEvent(const RdmaAsyncEvent& event)
{
    NS_LOG_INFO("async event: " << RdmaEventTypeStr(event.event_type));
    m_asyncEvent(event);
}

} // namespace ns3
