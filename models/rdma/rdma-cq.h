// Completion queue: IBA vol. 1 §10.2.6 (completion queues), §11.2.8 (CQ verbs), §11.4.2
// (Poll for Completion, Request Completion Notification); ibv_create_cq(3), ibv_poll_cq(3),
// ibv_req_notify_cq(3).
#ifndef CNUAS_RDMA_CQ_H
#define CNUAS_RDMA_CQ_H

#include "rdma-queue.h"
#include "rdma-resource.h"
#include "rdma-types.h"

#include "ns3/traced-callback.h"

#include <vector>

namespace ns3
{

/**
 * \brief A completion queue.
 *
 * The transport engine appends completions with Push(); the consumer takes them with Poll().
 *
 * Overrun (IBA vol. 1 §10.2.6 and §11.6.3.1; ibv_get_async_event(3)): a completion that finds
 * the CQ full puts the CQ into the error state and raises the affiliated asynchronous event
 * IBV_EVENT_CQ_ERR; every QP that completes into this CQ and is not in RESET or ERR then enters
 * ERR with IBV_EVENT_QP_FATAL. The completion that overran, and every later one, is dropped
 * and counted (GetDroppedCount, trace source "Drop"). The completions stored before the overrun
 * can still be polled; the CQ stays in error until it is destroyed.
 *
 * Notification (ibv_req_notify_cq(3)): ReqNotify() arms the CQ once; the next completion (or,
 * with solicitedOnly, the next solicited or unsuccessful one) fires the trace source
 * "CompletionEvent" and disarms it.
 */
class RdmaCq : public RdmaResource
{
  public:
    static TypeId GetTypeId();
    RdmaCq();

    /// Signature of the "CompletionEvent" trace source.
    typedef void (*CompletionEventCallback)(Ptr<RdmaCq> cq);
    /// Signature of the "Drop" trace source.
    typedef void (*DropCallback)(const RdmaWc& wc);

    ~RdmaCq() override;

    /// Completions the CQ holds at most (ibv_cq.cqe).
    uint32_t GetCqe() const;
    /// Completions waiting to be polled.
    uint32_t GetSize() const;

    /**
     * ibv_poll_cq(3): move up to `numEntries` completions, oldest first, into `wc`. Returns
     * how many were moved (0 when the CQ is empty), or -EINVAL when numEntries is negative or
     * the CQ is no longer alive.
     */
    int Poll(int numEntries, RdmaWc* wc);
    /// Poll() into a vector (empty on error).
    std::vector<RdmaWc> Poll(int numEntries);

    /// ibv_req_notify_cq(3): arm the completion event. Returns 0, or EINVAL if not alive.
    int ReqNotify(bool solicitedOnly);

    /**
     * Transport-engine side: append a completion; `solicited` marks the completion of a
     * received message with the solicited-event bit (for ReqNotify(true)). Returns false when
     * the completion is dropped (CQ in error, overrun, or not alive).
     */
    bool Push(const RdmaWc& wc, bool solicited = false);

    /**
     * A real-process bridge's notification requests: `poll` is called after every completion
     * is stored and returns 0 (no new request since the last call), 1 (ibv_req_notify_cq with
     * solicited_only 0) or 2 (solicited_only 1); a request arms the CQ as ReqNotify does, before
     * that completion is considered.
     */
    void SetExternalArm(Callback<int> poll)
    {
        m_externalArm = poll;
    }

    /// Whether the CQ has overrun.
    bool IsInError() const
    {
        return m_error;
    }

    /// Completions dropped because the CQ was full or in error.
    uint64_t GetDroppedCount() const
    {
        return m_dropped;
    }

    /// QPs that complete into this CQ (as send or receive CQ) and are not destroyed; while any
    /// exists RdmaDevice::DestroyCq fails with EBUSY.
    uint32_t GetUseCount() const
    {
        return m_users;
    }

    /// The ring the completions are stored in.
    Ptr<RdmaQueue<RdmaWc>> GetRing() const
    {
        return m_ring;
    }

  protected:
    void DoDispose() override;

  private:
    enum class Arm : uint8_t
    {
        NONE,
        NEXT,
        SOLICITED,
    };

    Ptr<RdmaQueue<RdmaWc>> m_ring;
    bool m_error{false};
    uint64_t m_dropped{0};
    uint32_t m_users{0};
    Arm m_arm{Arm::NONE};
    Callback<int> m_externalArm;

    TracedCallback<Ptr<RdmaCq>> m_completionEvent;
    TracedCallback<const RdmaWc&> m_drop;

    friend class RdmaDevice;
};

} // namespace ns3

#endif
