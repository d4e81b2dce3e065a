// What one traffic application needs to drive one queue pair: the QP, its CQs, a local buffer
// and what the peer published (its buffer's address and R_Key; for UD its address handle, QPN
// and Q_Key). helpers/rdma/rdma-traffic-helper builds endpoints; the applications only use them.
#ifndef CNUAS_RDMA_APP_ENDPOINT_H
#define CNUAS_RDMA_APP_ENDPOINT_H

#include "models/rdma/rdma-cq.h"
#include "models/rdma/rdma-pd.h"
#include "models/rdma/rdma-qp.h"

#include <cstdint>

namespace ns3
{

/// One side of a connection as an application sees it (the msgstream bootstrap's contents:
/// QPN, LID, buffer address and rkey, already exchanged).
struct RdmaAppEndpoint
{
    Ptr<RdmaQp> qp;
    Ptr<RdmaCq> sendCq;
    Ptr<RdmaCq> recvCq;
    uint32_t lkey = 0;        ///< of the MR holding the local buffer
    uint64_t localAddr = 0;   ///< local buffer (messages are gathered from / scattered to it)
    uint64_t localBytes = 0;
    uint64_t remoteAddr = 0;  ///< the peer's buffer for RDMA WRITE/READ and atomics
    uint32_t rkey = 0;
    uint64_t remoteBytes = 0;
    Ptr<RdmaAh> ah;           ///< UD: address handle of the peer
    uint32_t remoteQpn = 0;   ///< UD: the peer's QPN
    uint32_t remoteQkey = 0;  ///< UD: the peer's Q_Key
    uint32_t host = 0;        ///< index of this host (for records)
    uint32_t peerHost = 0;    ///< index of the peer host
};

} // namespace ns3

#endif
