#include "rdma-qp-connect.h"

#include "models/rdma/rdma-device.h"

#include <stdexcept>

namespace ns3
{

RdmaAhAttr
RdmaLidAddress(uint16_t dlid, uint8_t sl)
{
    RdmaAhAttr av;
    av.dlid = dlid;
    av.sl = sl;
    av.port_num = 1;
    return av;
}

RdmaAhAttr
RdmaGidAddress(const RdmaGid& dgid, uint8_t hopLimit, uint8_t sl)
{
    RdmaAhAttr av;
    av.is_global = 1;
    av.sl = sl;
    av.port_num = 1;
    av.grh.hop_limit = hopLimit;
    av.grh.dgid = dgid;
    return av;
}

RdmaAhAttr
RdmaAddressOf(const RdmaLinkPort& peer, uint8_t sl, uint8_t gidIndex)
{
    if (peer.GetLinkLayer() == RdmaLinkLayer::INFINIBAND)
    {
        return RdmaLidAddress(peer.GetLid(), sl);
    }
    RdmaGid gid{};
    if (!peer.GetGid(gidIndex, gid))
    {
        throw std::invalid_argument("RdmaAddressOf: the port has no GID at index " +
                                    std::to_string(gidIndex));
    }
    return RdmaGidAddress(gid, 64, sl);
}

std::string
TryConnectQp(Ptr<RdmaQp> qp, const RdmaAhAttr& remote, uint32_t remoteQpn,
             const RdmaQpConnectOptions& o)
{
    if (!qp)
    {
        return "no QP";
    }
    const RdmaQpType type = qp->GetType();
    auto failed = [&](const char* what) {
        return std::string("modify_qp to ") + what + ": " + qp->GetDevice()->GetLastError();
    };
    // ibv_modify_qp(3), IBA vol. 1 §11.2.5.2 table 91: RESET -> INIT needs state, P_Key index,
    // port and the access flags (RC/UC) or the Q_Key (UD).
    RdmaQpAttr a;
    a.qp_state = RdmaQpState::INIT;
    a.pkey_index = o.pkeyIndex;
    a.port_num = o.portNum;
    a.qp_access_flags = o.access;
    a.qkey = o.qkey;
    uint32_t mask = RDMA_QP_STATE | RDMA_QP_PKEY_INDEX | RDMA_QP_PORT;
    mask |= type == RdmaQpType::UD ? RDMA_QP_QKEY : RDMA_QP_ACCESS_FLAGS;
    if (qp->Modify(a, mask) != 0)
    {
        return failed("INIT");
    }

    // INIT -> RTR: the remote address (the one fabric-specific value), QPN and the PSN it will
    // start at; RC adds the responder resources and the RNR NAK timer.
    a.qp_state = RdmaQpState::RTR;
    mask = RDMA_QP_STATE;
    if (type != RdmaQpType::UD)
    {
        a.ah_attr = remote;
        a.path_mtu = o.mtu;
        a.dest_qp_num = remoteQpn;
        a.rq_psn = o.rqPsn;
        mask |= RDMA_QP_AV | RDMA_QP_PATH_MTU | RDMA_QP_DEST_QPN | RDMA_QP_RQ_PSN;
        if (type == RdmaQpType::RC)
        {
            a.max_dest_rd_atomic = o.maxRdAtomic;
            a.min_rnr_timer = o.minRnrTimer;
            mask |= RDMA_QP_MAX_DEST_RD_ATOMIC | RDMA_QP_MIN_RNR_TIMER;
        }
    }
    if (qp->Modify(a, mask) != 0)
    {
        return failed("RTR");
    }

    // RTR -> RTS: the QP's own first PSN; RC adds the retry policy and the initiator depth.
    a.qp_state = RdmaQpState::RTS;
    a.sq_psn = o.sqPsn;
    mask = RDMA_QP_STATE | RDMA_QP_SQ_PSN;
    if (type == RdmaQpType::RC)
    {
        a.timeout = o.timeout;
        a.retry_cnt = o.retryCnt;
        a.rnr_retry = o.rnrRetry;
        a.max_rd_atomic = o.maxRdAtomic;
        mask |= RDMA_QP_TIMEOUT | RDMA_QP_RETRY_CNT | RDMA_QP_RNR_RETRY | RDMA_QP_MAX_QP_RD_ATOMIC;
    }
    if (qp->Modify(a, mask) != 0)
    {
        return failed("RTS");
    }
    return "";
}

void
ConnectQp(Ptr<RdmaQp> qp, const RdmaAhAttr& remote, uint32_t remoteQpn,
          const RdmaQpConnectOptions& o)
{
    const std::string err = TryConnectQp(qp, remote, remoteQpn, o);
    if (!err.empty())
    {
        throw std::runtime_error(err);
    }
}

void
ConnectQpPair(Ptr<RdmaQp> a, const RdmaAhAttr& toA, Ptr<RdmaQp> b, const RdmaAhAttr& toB,
              const RdmaQpConnectOptions& o)
{
    if (!a || !b)
    {
        throw std::invalid_argument("ConnectQpPair: a QP is missing");
    }
    RdmaQpConnectOptions oa = o;
    RdmaQpConnectOptions ob = o;
    ob.sqPsn = o.rqPsn;
    ob.rqPsn = o.sqPsn;
    std::string err = TryConnectQp(a, toB, b->GetQpNum(), oa);
    if (!err.empty())
    {
        throw std::runtime_error("QP " + std::to_string(a->GetQpNum()) + ": " + err);
    }
    err = TryConnectQp(b, toA, a->GetQpNum(), ob);
    if (!err.empty())
    {
        throw std::runtime_error("QP " + std::to_string(b->GetQpNum()) + ": " + err);
    }
}

} // namespace ns3
