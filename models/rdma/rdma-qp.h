// Queue pair: IBA vol. 1 §10.2.4 (queue pairs), §10.3 (QP state machine), §11.2.5 (QP verbs),
// §11.4.1 (Post Send / Post Receive); ibv_create_qp(3), ibv_modify_qp(3), ibv_query_qp(3),
// ibv_post_send(3), ibv_post_recv(3).
#ifndef CNUAS_RDMA_QP_H
#define CNUAS_RDMA_QP_H

#include "rdma-cq.h"
#include "rdma-pd.h"
#include "rdma-queue.h"
#include "rdma-resource.h"
#include "rdma-srq.h"
#include "rdma-types.h"

#include "ns3/traced-callback.h"

#include <cstddef>
#include <vector>

namespace ns3
{

/// QP creation attributes (struct ibv_qp_init_attr).
struct RdmaQpInitAttr
{
    Ptr<RdmaCq> send_cq;
    Ptr<RdmaCq> recv_cq;
    Ptr<RdmaSrq> srq;
    RdmaQpCap cap;
    RdmaQpType qp_type = RdmaQpType::RC;
    int sq_sig_all = 0;
    uint64_t qp_context = 0; ///< consumer's cookie, returned by Query

    /// Send and receive rings to use instead of the simulated ones (a real-process bridge
    /// passes rings in shared memory). Null: a RdmaRingQueue of cap.max_send_wr /
    /// cap.max_recv_wr entries. A given ring's capacity becomes the QP's max_*_wr.
    Ptr<RdmaQueue<RdmaSendWqe>> sendQueue;
    Ptr<RdmaQueue<RdmaRecvWqe>> recvQueue;
};

/**
 * \brief A queue pair of type RC, UC or UD.
 *
 * Verbs (consumer side): Modify, Query, PostSend, PostRecv. Every verb returns 0 or an errno
 * value as libibverbs does, and a refused call changes nothing; RdmaDevice::GetLastError()
 * says why.
 *
 * Modify follows IBA vol. 1 §11.2.5.2 / ibv_modify_qp(3): the transition must be in the table
 * (RdmaQpTransition), the mask must hold every required attribute and nothing that is neither
 * required nor optional, and each given value must be in range.
 *
 * State effects (IBA vol. 1 §10.3.1):
 * - -> RESET: both work queues are emptied without completions; attributes return to their
 *   defaults (the capacities stay).
 * - -> ERR: every outstanding send and receive WQE completes with IBV_WC_WR_FLUSH_ERR (send
 *   queue first, oldest first); a QP attached to an SRQ raises IBV_EVENT_QP_LAST_WQE_REACHED
 *   (the SRQ's WQEs are not flushed). WRs posted in ERR are flushed at once.
 * - -> SQE (reached only through ReportSendQueueError, UC and UD): outstanding send WQEs are
 *   flushed; sends posted in SQE are flushed at once; receives keep working.
 * - RTS -> SQD: the send queue drains (IsSqDraining) until the transport engine calls
 *   NotifySqDrained, or at once if the send queue is empty; then IBV_EVENT_SQ_DRAINED is raised
 *   if en_sqd_async_notify was set. SQD -> SQD is refused while draining.
 */
class RdmaQp : public RdmaResource
{
  public:
    static TypeId GetTypeId();
    RdmaQp();
    ~RdmaQp() override;

    /// Signature of the "StateChange" trace source.
    typedef void (*StateChangeCallback)(RdmaQpState from, RdmaQpState to);

    uint32_t GetQpNum() const
    {
        return m_qpn;
    }

    RdmaQpType GetType() const
    {
        return m_type;
    }

    RdmaQpState GetState() const
    {
        return m_attr.qp_state;
    }

    Ptr<RdmaPd> GetPd() const
    {
        return m_pd;
    }

    Ptr<RdmaCq> GetSendCq() const
    {
        return m_sendCq;
    }

    Ptr<RdmaCq> GetRecvCq() const
    {
        return m_recvCq;
    }

    Ptr<RdmaSrq> GetSrq() const
    {
        return m_srq;
    }

    // ---- Verbs -----------------------------------------------------------------------------

    /// ibv_modify_qp(3): 0 or EINVAL.
    int Modify(const RdmaQpAttr& attr, uint32_t attrMask);
    /// ibv_query_qp(3): every attribute is returned whatever the mask (the man page allows
    /// that); 0, or EINVAL for unknown mask bits or a QP that is not alive.
    int Query(RdmaQpAttr& attr, uint32_t attrMask, RdmaQpInitAttr& initAttr) const;

    /// ibv_post_send(3) with one request: 0, EINVAL, ENOMEM (send queue full) or EFAULT
    /// (inline data could not be read).
    int PostSend(const RdmaSendWr& wr);
    /// ibv_post_send(3) of a request with IBV_SEND_INLINE whose data was already captured (a
    /// real process's library copies inline data into the WQE at post time, so the memory its
    /// SGEs named may hold other bytes by now): `inlineData` is the message; the request's
    /// sg_list is ignored.
    int PostSendInline(const RdmaSendWr& wr, const std::vector<uint8_t>& inlineData);
    /// ibv_post_send(3) with a list: stops at the first request that fails, stores its index
    /// in *badWr (if given) and returns its error; the earlier ones stay posted.
    int PostSend(const std::vector<RdmaSendWr>& wrs, std::size_t* badWr);
    /// ibv_post_recv(3) with one request: 0, EINVAL or ENOMEM (receive queue full).
    int PostRecv(const RdmaRecvWr& wr);
    /// ibv_post_recv(3) with a list (see PostSend).
    int PostRecv(const std::vector<RdmaRecvWr>& wrs, std::size_t* badWr);

    // ---- Transport-engine side -------------------------------------------------------------

    /// The current attributes (as Query returns them).
    const RdmaQpAttr& GetAttr() const
    {
        return m_attr;
    }

    /// Outstanding send WQEs, oldest first; the engine retires them as they complete.
    Ptr<RdmaQueue<RdmaSendWqe>> GetSendQueue() const
    {
        return m_sq;
    }

    /// Outstanding receive WQEs (empty, capacity 0, when the QP uses an SRQ).
    Ptr<RdmaQueue<RdmaRecvWqe>> GetRecvQueue() const
    {
        return m_rq;
    }

    /// Take the receive WQE for the next incoming message: from the SRQ if the QP has one,
    /// else from its own receive queue. False when there is none (RNR).
    bool TakeRecv(RdmaRecvWqe& out);

    /// Whether the QP grants all of `access` (RDMA_ACCESS_REMOTE_* bits) to incoming requests
    /// (its qp_access_flags, IBA vol. 1 §10.2.4.3).
    bool AllowsRemote(uint32_t access) const
    {
        return (m_attr.qp_access_flags & access) == access;
    }

    /// A send WQE completed in error (the engine has pushed its completion): UC and UD enter
    /// SQE, RC enters ERR (IBA vol. 1 §10.3.1). Ignored unless the QP is in RTS or SQD.
    void ReportSendQueueError();
    /// A local work queue error the QP cannot recover from: the QP enters ERR (flushing) and
    /// raises `event` (QP_FATAL, QP_REQ_ERR or QP_ACCESS_ERR). Ignored in RESET and ERR.
    void ReportFatal(RdmaEventType event);
    /// The messages in progress when the QP entered SQD are finished.
    void NotifySqDrained();

    bool IsSqDraining() const
    {
        return m_attr.sq_draining != 0;
    }

  protected:
    void DoDispose() override;

  private:
    int Refuse(int err, const std::string& why) const;
    int PostSendImpl(const RdmaSendWr& wr, const std::vector<uint8_t>* inlineData);
    int CheckValues(const RdmaQpAttr& attr, uint32_t mask) const;
    void EnterState(RdmaQpState next);
    void FlushSendQueue();
    void FlushRecvQueue();
    void Clear();
    void ResetAttributes();
    void RaiseEvent(RdmaEventType type);

    uint32_t m_qpn{0};
    RdmaQpType m_type{RdmaQpType::RC};
    Ptr<RdmaPd> m_pd;
    Ptr<RdmaCq> m_sendCq;
    Ptr<RdmaCq> m_recvCq;
    Ptr<RdmaSrq> m_srq;
    Ptr<RdmaQueue<RdmaSendWqe>> m_sq;
    Ptr<RdmaQueue<RdmaRecvWqe>> m_rq;
    RdmaQpAttr m_attr;
    int m_sqSigAll{0};
    uint64_t m_context{0};

    TracedCallback<RdmaQpState, RdmaQpState> m_stateChange;

    friend class RdmaDevice;
};

} // namespace ns3

#endif
