#include "rdma-qp.h"

#include "rdma-device.h"
#include "rdma-qp-state-table.h"

#include "ns3/log.h"
#include "ns3/trace-source-accessor.h"

#include <cerrno>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaQp");
NS_OBJECT_ENSURE_REGISTERED(RdmaQp);

namespace
{
/// 5-bit fields: timeout, min_rnr_timer (IBA vol. 1 §9.7.5.2.8, §11.2.5.2).
constexpr uint8_t kMax5Bit = 31;
/// 3-bit fields: retry_cnt, rnr_retry (IBA vol. 1 §9.7.5.2.x, §11.2.5.2).
constexpr uint8_t kMax3Bit = 7;
/// QP access flags that mean something for a QP (IBA vol. 1 §10.2.4.3 and ibv_modify_qp(3):
/// "mask of enabled remote access operations"); LOCAL_WRITE and MW_BIND are accepted as real
/// devices accept them and have no effect.
constexpr uint32_t kQpAccessAccepted = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                                       RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC |
                                       RDMA_ACCESS_MW_BIND;
/// Send flags a post may carry (IBV_SEND_IP_CSUM is for raw packet QPs only).
constexpr uint32_t kSendFlagsAccepted =
    RDMA_SEND_FENCE | RDMA_SEND_SIGNALED | RDMA_SEND_SOLICITED | RDMA_SEND_INLINE;
/// Atomic operands are 8 bytes at an 8-byte aligned address (IBA vol. 1 §9.4.5).
constexpr uint64_t kAtomicBytes = 8;

std::string
Describe(RdmaQpType type, RdmaQpState from, RdmaQpState to)
{
    std::ostringstream os;
    os << RdmaQpTypeName(type) << " " << RdmaQpStateName(from) << "->" << RdmaQpStateName(to);
    return os.str();
}

/// Lowest set bit of a mask.
uint32_t
LowestBit(uint32_t m)
{
    return m & (~m + 1);
}
} // namespace

TypeId
RdmaQp::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaQp")
                            .SetParent<RdmaResource>()
                            .SetGroupName("Cnuas")
                            .AddConstructor<RdmaQp>()
                            .AddTraceSource("StateChange",
                                            "The QP changed state (old state, new state).",
                                            MakeTraceSourceAccessor(&RdmaQp::m_stateChange),
                                            "ns3::RdmaQp::StateChangeCallback");
    return tid;
}

RdmaQp::RdmaQp() = default;
RdmaQp::~RdmaQp() = default;

void
RdmaQp::DoDispose()
{
    m_pd = nullptr;
    m_sendCq = nullptr;
    m_recvCq = nullptr;
    m_srq = nullptr;
    m_sq = nullptr;
    m_rq = nullptr;
    RdmaResource::DoDispose();
}

int
RdmaQp::Refuse(int err, const std::string& why) const
{
    NS_LOG_DEBUG("QP " << m_qpn << ": " << why);
    if (m_device)
    {
        m_device->SetLastError(why);
    }
    return err;
}

void
RdmaQp::ResetAttributes()
{
    const RdmaQpCap cap = m_attr.cap;
    m_attr = RdmaQpAttr();
    m_attr.cap = cap;
}

void
RdmaQp::Clear()
{
    m_sq->Clear();
    m_rq->Clear();
}

void
RdmaQp::RaiseEvent(RdmaEventType type)
{
    if (!m_device)
    {
        return;
    }
    RdmaAsyncEvent ev;
    ev.event_type = type;
    ev.qp = this;
    m_device->RaiseAsyncEvent(ev);
}

// ---- Modify / Query --------------------------------------------------------------------------

int
RdmaQp::Modify(const RdmaQpAttr& attr, uint32_t mask)
{
    if (!IsAlive())
    {
        return Refuse(EINVAL, "QP is not alive");
    }
    if (mask & ~kRdmaQpAttrMaskAll)
    {
        return Refuse(EINVAL, "unknown attribute mask bits");
    }
    const RdmaQpState cur = m_attr.qp_state;
    RdmaQpState next = cur;
    if (mask & RDMA_QP_STATE)
    {
        if (static_cast<unsigned>(attr.qp_state) >= kRdmaQpStateCount)
        {
            return Refuse(EINVAL, "qp_state is not a QP state");
        }
        next = attr.qp_state;
    }
    // IBA vol. 1 §11.2.5.2: the transition must exist for the service type, every required
    // attribute must be given and nothing else but the optional ones.
    const RdmaQpTransitionRule rule = RdmaQpTransition(m_type, cur, next);
    if (!rule.valid)
    {
        return Refuse(EINVAL, "transition " + Describe(m_type, cur, next) + " is not allowed");
    }
    const uint32_t given = mask & ~RDMA_QP_STATE;
    if (const uint32_t missing = rule.required & ~given)
    {
        return Refuse(EINVAL,
                      std::string("missing required attribute ") +
                          RdmaQpAttrMaskBitName(LowestBit(missing)) + " for " +
                          Describe(m_type, cur, next));
    }
    if (const uint32_t extra = given & ~(rule.required | rule.optional))
    {
        return Refuse(EINVAL,
                      std::string("attribute ") + RdmaQpAttrMaskBitName(LowestBit(extra)) +
                          " is not allowed for " + Describe(m_type, cur, next));
    }
    // IBA vol. 1 §10.3.1 (SQ Drain): attributes change in SQD only once the SQ has drained.
    if (cur == RdmaQpState::SQD && next == RdmaQpState::SQD && m_attr.sq_draining)
    {
        return Refuse(EINVAL, "SQD->SQD while the send queue is still draining");
    }
    if (const int r = CheckValues(attr, mask))
    {
        return r;
    }

    // Everything is valid: apply.
    RdmaQpAttr& a = m_attr;
    if (mask & RDMA_QP_EN_SQD_ASYNC_NOTIFY)
    {
        a.en_sqd_async_notify = attr.en_sqd_async_notify;
    }
    if (mask & RDMA_QP_ACCESS_FLAGS)
    {
        a.qp_access_flags = attr.qp_access_flags;
    }
    if (mask & RDMA_QP_PKEY_INDEX)
    {
        a.pkey_index = attr.pkey_index;
    }
    if (mask & RDMA_QP_PORT)
    {
        a.port_num = attr.port_num;
    }
    if (mask & RDMA_QP_QKEY)
    {
        a.qkey = attr.qkey;
    }
    if (mask & RDMA_QP_AV)
    {
        a.ah_attr = attr.ah_attr;
    }
    if (mask & RDMA_QP_PATH_MTU)
    {
        a.path_mtu = attr.path_mtu;
    }
    if (mask & RDMA_QP_TIMEOUT)
    {
        a.timeout = attr.timeout;
    }
    if (mask & RDMA_QP_RETRY_CNT)
    {
        a.retry_cnt = attr.retry_cnt;
    }
    if (mask & RDMA_QP_RNR_RETRY)
    {
        a.rnr_retry = attr.rnr_retry;
    }
    // PSNs are 24 bits (IBA vol. 1 §9.2); like Linux's ib_modify_qp, wider values are masked
    // (with a warning) rather than refused.
    if (mask & RDMA_QP_RQ_PSN)
    {
        if (attr.rq_psn & ~kRdmaMax24)
        {
            NS_LOG_WARN("QP " << m_qpn << ": rq_psn wider than 24 bits, masked");
        }
        a.rq_psn = attr.rq_psn & kRdmaMax24;
    }
    if (mask & RDMA_QP_SQ_PSN)
    {
        if (attr.sq_psn & ~kRdmaMax24)
        {
            NS_LOG_WARN("QP " << m_qpn << ": sq_psn wider than 24 bits, masked");
        }
        a.sq_psn = attr.sq_psn & kRdmaMax24;
    }
    if (mask & RDMA_QP_MAX_QP_RD_ATOMIC)
    {
        a.max_rd_atomic = attr.max_rd_atomic;
    }
    if (mask & RDMA_QP_ALT_PATH)
    {
        a.alt_ah_attr = attr.alt_ah_attr;
        a.alt_pkey_index = attr.alt_pkey_index;
        a.alt_port_num = attr.alt_port_num;
        a.alt_timeout = attr.alt_timeout;
    }
    if (mask & RDMA_QP_MIN_RNR_TIMER)
    {
        a.min_rnr_timer = attr.min_rnr_timer;
    }
    if (mask & RDMA_QP_MAX_DEST_RD_ATOMIC)
    {
        a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
    }
    if (mask & RDMA_QP_PATH_MIG_STATE)
    {
        a.path_mig_state = attr.path_mig_state;
    }
    if (mask & RDMA_QP_DEST_QPN)
    {
        a.dest_qp_num = attr.dest_qp_num;
    }
    if (next != cur)
    {
        EnterState(next);
    }
    return 0;
}

int
RdmaQp::CheckValues(const RdmaQpAttr& attr, uint32_t mask) const
{
    const RdmaDeviceAttr dev = m_device->QueryDevice();
    RdmaPortAttr port;
    m_device->QueryPort(1, port); // every port of the model has the same attributes
    const bool connected = m_type != RdmaQpType::UD;

    if ((mask & RDMA_QP_CUR_STATE) && attr.cur_qp_state != m_attr.qp_state)
    {
        // IBA vol. 1 §11.2.5.2: the current state, when given, must be the QP's state.
        return Refuse(EINVAL,
                      std::string("cur_qp_state is not the QP's state ") +
                          RdmaQpStateName(m_attr.qp_state));
    }
    if (mask & RDMA_QP_ACCESS_FLAGS)
    {
        if (attr.qp_access_flags & ~kQpAccessAccepted)
        {
            return Refuse(EINVAL, "qp_access_flags has unknown or unsupported bits");
        }
        if ((attr.qp_access_flags & RDMA_ACCESS_REMOTE_ATOMIC) &&
            dev.atomic_cap == RdmaAtomicCap::NONE)
        {
            return Refuse(EINVAL, "remote atomic access on a device without atomics");
        }
    }
    if ((mask & RDMA_QP_PKEY_INDEX) && attr.pkey_index >= dev.max_pkeys)
    {
        return Refuse(EINVAL, "pkey_index outside the P_Key table");
    }
    if ((mask & RDMA_QP_PORT) && (attr.port_num < 1 || attr.port_num > dev.phys_port_cnt))
    {
        return Refuse(EINVAL, "port_num is not a port of the device");
    }
    if (mask & RDMA_QP_AV)
    {
        if (const char* why = m_device->CheckAhAttr(attr.ah_attr, connected))
        {
            return Refuse(EINVAL, why);
        }
        if (!m_device->SourceGidPresent(attr.ah_attr))
        {
            return Refuse(ENODATA, "grh.sgid_index names an empty entry of the GID table");
        }
    }
    if (mask & RDMA_QP_PATH_MTU)
    {
        const uint32_t bytes = RdmaMtuBytes(attr.path_mtu);
        if (bytes == 0)
        {
            return Refuse(EINVAL, "path_mtu is not an MTU code (1..5)");
        }
        if (bytes > RdmaMtuBytes(port.max_mtu))
        {
            return Refuse(EINVAL, "path_mtu above the port's MTU");
        }
    }
    if ((mask & RDMA_QP_TIMEOUT) && attr.timeout > kMax5Bit)
    {
        return Refuse(EINVAL, "timeout above 31");
    }
    if ((mask & RDMA_QP_RETRY_CNT) && attr.retry_cnt > kMax3Bit)
    {
        return Refuse(EINVAL, "retry_cnt above 7");
    }
    if ((mask & RDMA_QP_RNR_RETRY) && attr.rnr_retry > kMax3Bit)
    {
        return Refuse(EINVAL, "rnr_retry above 7");
    }
    if ((mask & RDMA_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > dev.max_qp_init_rd_atom)
    {
        return Refuse(EINVAL, "max_rd_atomic above max_qp_init_rd_atom");
    }
    if (mask & RDMA_QP_ALT_PATH)
    {
        // Linux core allows alternate paths (APM) on InfiniBand ports only.
        if (port.link_layer == RdmaLinkLayer::ETHERNET)
        {
            return Refuse(EINVAL, "alternate paths are not supported on Ethernet (RoCE)");
        }
        if (const char* why = m_device->CheckAhAttr(attr.alt_ah_attr, connected))
        {
            return Refuse(EINVAL, std::string("alternate path: ") + why);
        }
        if (!m_device->SourceGidPresent(attr.alt_ah_attr))
        {
            return Refuse(ENODATA, "alternate path: grh.sgid_index names an empty GID entry");
        }
        if (attr.alt_port_num < 1 || attr.alt_port_num > dev.phys_port_cnt)
        {
            return Refuse(EINVAL, "alt_port_num is not a port of the device");
        }
        if (attr.alt_pkey_index >= dev.max_pkeys)
        {
            return Refuse(EINVAL, "alt_pkey_index outside the P_Key table");
        }
        if (attr.alt_timeout > kMax5Bit)
        {
            return Refuse(EINVAL, "alt_timeout above 31");
        }
    }
    if ((mask & RDMA_QP_MIN_RNR_TIMER) && attr.min_rnr_timer > kMax5Bit)
    {
        return Refuse(EINVAL, "min_rnr_timer above 31");
    }
    if ((mask & RDMA_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > dev.max_qp_rd_atom)
    {
        return Refuse(EINVAL, "max_dest_rd_atomic above max_qp_rd_atom");
    }
    if ((mask & RDMA_QP_PATH_MIG_STATE) &&
        static_cast<unsigned>(attr.path_mig_state) > static_cast<unsigned>(RdmaMigState::ARMED))
    {
        return Refuse(EINVAL, "path_mig_state is not a migration state");
    }
    if ((mask & RDMA_QP_DEST_QPN) && attr.dest_qp_num > kRdmaMax24)
    {
        return Refuse(EINVAL, "dest_qp_num wider than 24 bits");
    }
    return 0;
}

int
RdmaQp::Query(RdmaQpAttr& attr, uint32_t attrMask, RdmaQpInitAttr& init) const
{
    if (!IsAlive())
    {
        return Refuse(EINVAL, "QP is not alive");
    }
    if (attrMask & ~kRdmaQpAttrMaskAll)
    {
        return Refuse(EINVAL, "unknown attribute mask bits");
    }
    attr = m_attr;
    attr.cur_qp_state = m_attr.qp_state;
    init.send_cq = m_sendCq;
    init.recv_cq = m_recvCq;
    init.srq = m_srq;
    init.cap = m_attr.cap;
    init.qp_type = m_type;
    init.sq_sig_all = m_sqSigAll;
    init.qp_context = m_context;
    init.sendQueue = m_sq;
    init.recvQueue = m_rq;
    return 0;
}

// ---- State effects ---------------------------------------------------------------------------

void
RdmaQp::EnterState(RdmaQpState next)
{
    const RdmaQpState prev = m_attr.qp_state;
    m_attr.qp_state = next;
    NS_LOG_INFO("QP " << m_qpn << " " << RdmaQpStateName(prev) << " -> "
                      << RdmaQpStateName(next));
    // Traced before the effects: a flush may overrun a CQ and move other QPs (never this one
    // twice) while it runs.
    m_stateChange(prev, next);
    if (m_device)
    {
        m_device->NotifyQpState(this, prev, next);
    }
    switch (next)
    {
    case RdmaQpState::RESET:
        // IBA vol. 1 §10.3.1: Reset empties both work queues; nothing completes.
        Clear();
        ResetAttributes();
        break;
    case RdmaQpState::ERR:
        // IBA vol. 1 §10.3.1 (Error): outstanding WRs of both queues complete with a flush
        // error; a QP on an SRQ tells the consumer it consumes no more of the SRQ's WQEs.
        m_attr.sq_draining = 0;
        FlushSendQueue();
        FlushRecvQueue();
        if (m_srq)
        {
            RaiseEvent(RdmaEventType::QP_LAST_WQE_REACHED);
        }
        break;
    case RdmaQpState::SQE:
        // IBA vol. 1 §10.3.1 (Send Queue Error): the remaining send WQEs are flushed.
        m_attr.sq_draining = 0;
        FlushSendQueue();
        break;
    case RdmaQpState::SQD:
        m_attr.sq_draining = m_sq->IsEmpty() ? 0 : 1;
        if (!m_attr.sq_draining && m_attr.en_sqd_async_notify)
        {
            RaiseEvent(RdmaEventType::SQ_DRAINED);
        }
        break;
    default:
        m_attr.sq_draining = 0;
        break;
    }
}

void
RdmaQp::FlushSendQueue()
{
    // Retire before pushing: the push may overrun the CQ, which re-enters this QP.
    while (m_sq && !m_sq->IsEmpty())
    {
        RdmaWc wc;
        wc.wr_id = m_sq->At(0).wr.wr_id;
        wc.opcode = RdmaWcOpcodeOf(m_sq->At(0).wr.opcode);
        wc.status = RdmaWcStatus::WR_FLUSH_ERR;
        wc.qp_num = m_qpn;
        m_sq->Pop();
        m_sendCq->Push(wc);
    }
}

void
RdmaQp::FlushRecvQueue()
{
    while (m_rq && !m_rq->IsEmpty())
    {
        RdmaWc wc;
        wc.wr_id = m_rq->At(0).wr.wr_id;
        wc.opcode = RdmaWcOpcode::RECV;
        wc.status = RdmaWcStatus::WR_FLUSH_ERR;
        wc.qp_num = m_qpn;
        m_rq->Pop();
        m_recvCq->Push(wc);
    }
}

void
RdmaQp::ReportSendQueueError()
{
    const RdmaQpState s = m_attr.qp_state;
    if (!IsAlive() || (s != RdmaQpState::RTS && s != RdmaQpState::SQD))
    {
        NS_LOG_LOGIC("QP " << m_qpn << ": send queue error ignored in " << RdmaQpStateName(s));
        return;
    }
    EnterState(m_type == RdmaQpType::RC ? RdmaQpState::ERR : RdmaQpState::SQE);
}

void
RdmaQp::ReportFatal(RdmaEventType event)
{
    const RdmaQpState s = m_attr.qp_state;
    if (!IsAlive() || s == RdmaQpState::RESET || s == RdmaQpState::ERR)
    {
        return;
    }
    EnterState(RdmaQpState::ERR);
    RaiseEvent(event);
}

void
RdmaQp::NotifySqDrained()
{
    if (!IsAlive() || m_attr.qp_state != RdmaQpState::SQD || !m_attr.sq_draining)
    {
        return;
    }
    m_attr.sq_draining = 0;
    if (m_attr.en_sqd_async_notify)
    {
        RaiseEvent(RdmaEventType::SQ_DRAINED);
    }
}

bool
RdmaQp::TakeRecv(RdmaRecvWqe& out)
{
    if (!IsAlive())
    {
        return false;
    }
    if (m_srq)
    {
        return m_srq->Take(out);
    }
    if (m_rq->IsEmpty())
    {
        return false;
    }
    out = m_rq->At(0);
    m_rq->Pop();
    return true;
}

// ---- Posting ---------------------------------------------------------------------------------

int
RdmaQp::PostSend(const RdmaSendWr& wr)
{
    return PostSendImpl(wr, nullptr);
}

int
RdmaQp::PostSendInline(const RdmaSendWr& wr, const std::vector<uint8_t>& inlineData)
{
    return PostSendImpl(wr, &inlineData);
}

int
RdmaQp::PostSendImpl(const RdmaSendWr& wr, const std::vector<uint8_t>* inlineData)
{
    if (!IsAlive())
    {
        return Refuse(EINVAL, "QP is not alive");
    }
    const RdmaQpState s = m_attr.qp_state;
    // IBA vol. 1 §10.3.1: posting to the send queue in Reset, Init or RTR is an immediate
    // error; in RTS and SQD the WR is queued; in SQE and Error it is completed with a flush.
    if (s == RdmaQpState::RESET || s == RdmaQpState::INIT || s == RdmaQpState::RTR)
    {
        return Refuse(EINVAL,
                      std::string("post_send in state ") + RdmaQpStateName(s));
    }
    // IBA vol. 1 §9.7 / §9.8 / §9.8.3: operations per service type.
    const bool rc = m_type == RdmaQpType::RC;
    const bool uc = m_type == RdmaQpType::UC;
    bool supported = false;
    bool atomic = false;
    switch (wr.opcode)
    {
    case RdmaWrOpcode::SEND:
    case RdmaWrOpcode::SEND_WITH_IMM:
        supported = true;
        break;
    case RdmaWrOpcode::RDMA_WRITE:
    case RdmaWrOpcode::RDMA_WRITE_WITH_IMM:
        supported = rc || uc;
        break;
    case RdmaWrOpcode::RDMA_READ:
        supported = rc;
        break;
    case RdmaWrOpcode::ATOMIC_CMP_AND_SWP:
    case RdmaWrOpcode::ATOMIC_FETCH_AND_ADD:
        supported = rc;
        atomic = true;
        break;
    case RdmaWrOpcode::SEND_WITH_INV:
        // IBA vol. 1 §9.2: SEND Last/Only with Invalidate exist for RC (and XRC) only.
        supported = rc;
        break;
    case RdmaWrOpcode::LOCAL_INV:
        supported = true; // a local operation on the QP's send queue, any service type
        break;
    default:
        // BIND_MW (no memory windows), TSO (raw packet), DRIVER1, and values outside enum
        // ibv_wr_opcode.
        supported = false;
        break;
    }
    if (!supported)
    {
        return Refuse(EINVAL, std::string("opcode not supported on a ") +
                                  RdmaQpTypeName(m_type) + " QP");
    }
    if (wr.send_flags & ~kSendFlagsAccepted)
    {
        return Refuse(EINVAL, "unknown or unsupported send_flags");
    }
    if (wr.sg_list.size() > m_attr.cap.max_send_sge)
    {
        return Refuse(EINVAL, "more SGEs than max_send_sge");
    }
    uint64_t length = 0;
    for (const auto& sge : wr.sg_list)
    {
        length += sge.length;
    }
    if (inlineData)
    {
        if (!(wr.send_flags & RDMA_SEND_INLINE))
        {
            return Refuse(EINVAL, "captured inline data without IBV_SEND_INLINE");
        }
        length = inlineData->size();
    }
    RdmaPortAttr port;
    m_device->QueryPort(1, port);
    if (length > port.max_msg_sz)
    {
        return Refuse(EINVAL, "message longer than max_msg_sz");
    }
    const bool inl = (wr.send_flags & RDMA_SEND_INLINE) != 0;
    if (inl)
    {
        if (wr.opcode != RdmaWrOpcode::SEND && wr.opcode != RdmaWrOpcode::SEND_WITH_IMM &&
            wr.opcode != RdmaWrOpcode::RDMA_WRITE &&
            wr.opcode != RdmaWrOpcode::RDMA_WRITE_WITH_IMM)
        {
            return Refuse(EINVAL, "IBV_SEND_INLINE on an operation that does not send data");
        }
        if (length > m_attr.cap.max_inline_data)
        {
            return Refuse(EINVAL, "inline data longer than max_inline_data");
        }
    }
    if (atomic)
    {
        if (m_device->QueryDevice().atomic_cap == RdmaAtomicCap::NONE)
        {
            return Refuse(EINVAL, "device does not support atomics");
        }
        if (length != kAtomicBytes)
        {
            return Refuse(EINVAL, "atomic operations take exactly 8 bytes");
        }
        if (wr.atomic.remote_addr % kAtomicBytes != 0)
        {
            return Refuse(EINVAL, "atomic remote_addr is not 8-byte aligned");
        }
    }
    RdmaSendWqe wqe;
    if (m_type == RdmaQpType::UD)
    {
        RdmaAh* ah = wr.ud.ah;
        if (!ah || !ah->IsAlive() || PeekPointer(ah->GetDevice()) != m_device ||
            ah->GetPd() != m_pd)
        {
            return Refuse(EINVAL, "UD send needs an alive AH of the QP's PD");
        }
        wqe.ah = ah->GetAttr();
    }
    if (m_sq->IsFull())
    {
        return Refuse(ENOMEM, "send queue is full");
    }
    wqe.wr = wr;
    wqe.wr.ud.ah = nullptr;
    wqe.signaled = (wr.send_flags & RDMA_SEND_SIGNALED) || m_sqSigAll;
    wqe.length = length;
    if (inl && inlineData)
    {
        wqe.inlineData = *inlineData;
        wqe.wr.sg_list.clear();
    }
    else if (inl)
    {
        // ibv_post_send(3): with IBV_SEND_INLINE the data is read at post time and lkeys are
        // not checked; the SGE addresses are the consumer's virtual addresses.
        wqe.inlineData.resize(length);
        uint64_t off = 0;
        for (const auto& sge : wr.sg_list)
        {
            if (!m_pd->GetMemory()->Read(sge.addr, wqe.inlineData.data() + off, sge.length))
            {
                return Refuse(EFAULT, "inline data is not readable");
            }
            off += sge.length;
        }
    }
    m_sq->Push(wqe);
    if (s == RdmaQpState::ERR || s == RdmaQpState::SQE)
    {
        FlushSendQueue();
    }
    else
    {
        m_device->RingDoorbell(this);
    }
    return 0;
}

int
RdmaQp::PostSend(const std::vector<RdmaSendWr>& wrs, std::size_t* badWr)
{
    return RdmaPostEach(wrs, badWr, [this](const RdmaSendWr& wr) { return PostSend(wr); });
}

int
RdmaQp::PostRecv(const RdmaRecvWr& wr)
{
    if (!IsAlive())
    {
        return Refuse(EINVAL, "QP is not alive");
    }
    if (m_srq)
    {
        return Refuse(EINVAL, "QP receives from an SRQ: post to the SRQ");
    }
    const RdmaQpState s = m_attr.qp_state;
    // IBA vol. 1 §10.3.1: posting to the receive queue in Reset is an immediate error; from
    // Init on it is allowed; in Error the WR is completed with a flush.
    if (s == RdmaQpState::RESET)
    {
        return Refuse(EINVAL, "post_recv in state RESET");
    }
    if (wr.sg_list.size() > m_attr.cap.max_recv_sge)
    {
        return Refuse(EINVAL, "more SGEs than max_recv_sge");
    }
    if (m_rq->IsFull())
    {
        return Refuse(ENOMEM, "receive queue is full");
    }
    RdmaRecvWqe wqe;
    wqe.wr = wr;
    for (const auto& sge : wr.sg_list)
    {
        wqe.length += sge.length;
    }
    m_rq->Push(wqe);
    if (s == RdmaQpState::ERR)
    {
        FlushRecvQueue();
    }
    return 0;
}

int
RdmaQp::PostRecv(const std::vector<RdmaRecvWr>& wrs, std::size_t* badWr)
{
    return RdmaPostEach(wrs, badWr, [this](const RdmaRecvWr& wr) { return PostRecv(wr); });
}

} // namespace ns3
