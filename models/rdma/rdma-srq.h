// Shared receive queue: IBA vol. 1 §10.2.9 (shared receive queues), §11.2.3 (SRQ verbs);
// ibv_create_srq(3), ibv_modify_srq(3), ibv_post_srq_recv(3).
#ifndef CNUAS_RDMA_SRQ_H
#define CNUAS_RDMA_SRQ_H

#include "rdma-pd.h"
#include "rdma-queue.h"
#include "rdma-resource.h"
#include "rdma-types.h"

#include <cstddef>
#include <vector>

namespace ns3
{

/// SRQ attributes (struct ibv_srq_attr).
struct RdmaSrqAttr
{
    uint32_t max_wr = 0;
    uint32_t max_sge = 0;
    uint32_t srq_limit = 0;
};

/// ibv_modify_srq(3) attribute mask (enum ibv_srq_attr_mask).
enum RdmaSrqAttrMask : uint32_t
{
    RDMA_SRQ_MAX_WR = 1u << 0,
    RDMA_SRQ_LIMIT = 1u << 1,
};

/**
 * \brief A shared receive queue: receive WQEs that any QP attached to it consumes.
 *
 * Limit (ibv_modify_srq(3), IBA vol. 1 §10.2.9.3): once armed with a non-zero srq_limit, the
 * SRQ raises IBV_EVENT_SRQ_LIMIT_REACHED when the number of WQEs it holds drops below the limit,
 * and disarms (the limit reads back as 0).
 */
class RdmaSrq : public RdmaResource
{
  public:
    static TypeId GetTypeId();
    RdmaSrq();
    ~RdmaSrq() override;

    /// ibv_post_srq_recv(3) with one request: 0, EINVAL (more SGEs than max_sge, or not
    /// alive) or ENOMEM (the SRQ is full).
    int PostRecv(const RdmaRecvWr& wr);
    /// ibv_post_srq_recv(3) with a list: stops at the first request that fails, stores its
    /// index in *badWr (if given) and returns its error; the earlier ones stay posted.
    int PostRecv(const std::vector<RdmaRecvWr>& wrs, std::size_t* badWr);

    /// ibv_modify_srq(3): RDMA_SRQ_LIMIT arms the limit (EINVAL when srq_limit > max_wr);
    /// RDMA_SRQ_MAX_WR (resizing) is not supported and fails with EINVAL, as do unknown bits.
    int Modify(const RdmaSrqAttr& attr, uint32_t attrMask);
    /// ibv_query_srq(3).
    int Query(RdmaSrqAttr& attr) const;

    /// SRQ number (IBA vol. 1 §10.2.9; used by XRC, reported for completeness).
    uint32_t GetSrqNum() const
    {
        return m_srqn;
    }

    Ptr<RdmaPd> GetPd() const
    {
        return m_pd;
    }

    /// Transport-engine side: take the oldest receive WQE; false when the SRQ is empty.
    bool Take(RdmaRecvWqe& out);

    Ptr<RdmaQueue<RdmaRecvWqe>> GetQueue() const
    {
        return m_queue;
    }

    /// QPs attached and not destroyed; while any exists RdmaDevice::DestroySrq fails with
    /// EBUSY.
    uint32_t GetUseCount() const
    {
        return m_users;
    }

  protected:
    void DoDispose() override;

  private:
    int Refuse(int err, const char* why) const;

    Ptr<RdmaPd> m_pd;
    Ptr<RdmaQueue<RdmaRecvWqe>> m_queue;
    uint32_t m_maxSge{0};
    uint32_t m_limit{0};
    uint32_t m_srqn{0};
    uint32_t m_users{0};

    friend class RdmaDevice;
};

} // namespace ns3

#endif
