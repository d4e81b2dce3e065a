// The one place that takes a queue pair from RESET through INIT and RTR to RTS with the attribute
// masks ibv_modify_qp(3) requires per QP type, on any fabric: the only fabric-specific input is
// the address vector of the remote port (a LID on InfiniBand, a GID on RoCEv2, seed 000 §4.4).
// Used by RdmaTrafficHelper, the IB-CC and RoCE load runs and the test fixtures.
#ifndef CNUAS_RDMA_QP_CONNECT_H
#define CNUAS_RDMA_QP_CONNECT_H

#include "models/rdma/rdma-link-port.h"
#include "models/rdma/rdma-qp.h"
#include "models/rdma/rdma-types.h"

#include <cstdint>
#include <string>

namespace ns3
{

/// The ibv_qp_attr values a connection sets (the QP type is the QP's own).
struct RdmaQpConnectOptions
{
    RdmaMtu mtu = RdmaMtu::MTU_1024;
    /// qp_access_flags at INIT (RC/UC).
    uint32_t access = RDMA_ACCESS_LOCAL_WRITE | RDMA_ACCESS_REMOTE_WRITE |
                      RDMA_ACCESS_REMOTE_READ | RDMA_ACCESS_REMOTE_ATOMIC;
    uint32_t qkey = 0x11111111; ///< UD: the Q_Key set at INIT
    uint32_t sqPsn = 0;         ///< first PSN this QP sends (RTS)
    uint32_t rqPsn = 0;         ///< first PSN this QP expects (RTR)
    uint8_t timeout = 14;       ///< RC local ACK timeout: 4.096 us * 2^timeout
    uint8_t retryCnt = 7;
    uint8_t rnrRetry = 7;       ///< 7: retry forever
    uint8_t minRnrTimer = 1;    ///< 0.01 ms (IBA vol. 1 table 45)
    uint8_t maxRdAtomic = 1;    ///< RC: initiator depth and responder resources alike
    uint16_t pkeyIndex = 0;
    uint8_t portNum = 1;
};

/// An address vector naming a remote port by LID (InfiniBand, no GRH).
RdmaAhAttr RdmaLidAddress(uint16_t dlid, uint8_t sl = 0);

/// An address vector naming a remote port by GID (a GRH on InfiniBand; on RoCEv2 the IP
/// addresses: IPv4 when the GID is IPv4-mapped, IPv6 otherwise).
RdmaAhAttr RdmaGidAddress(const RdmaGid& dgid, uint8_t hopLimit = 64, uint8_t sl = 0);

/**
 * The address vector that reaches `peer`: by its LID on InfiniBand, by its GID at `gidIndex`
 * on Ethernet (RoCEv2 has no LIDs, every packet carries a GRH-equivalent IP header). Throws
 * std::invalid_argument when the port has no such GID.
 */
RdmaAhAttr RdmaAddressOf(const RdmaLinkPort& peer, uint8_t sl = 0, uint8_t gidIndex = 0);

/**
 * RESET -> INIT -> RTR -> RTS of `qp` towards the QP `remoteQpn` at `remote`. RC and UC set the
 * address vector, path MTU, remote QPN and PSNs; RC adds the responder resources and the retry
 * policy; UD sets the Q_Key at INIT and only PSNs later (its address goes in each WR's AH).
 * Returns "" on success, otherwise which transition failed and the device's reason.
 */
std::string TryConnectQp(Ptr<RdmaQp> qp, const RdmaAhAttr& remote, uint32_t remoteQpn,
                         const RdmaQpConnectOptions& o);

/// TryConnectQp that throws std::runtime_error with the reason.
void ConnectQp(Ptr<RdmaQp> qp, const RdmaAhAttr& remote, uint32_t remoteQpn,
               const RdmaQpConnectOptions& o);

/**
 * Connects `a` and `b` to each other: `toA` / `toB` are the address vectors reaching a's and
 * b's ports. a starts sending at o.sqPsn and b at o.rqPsn (so each side's expected PSN is the
 * other's first). Throws std::runtime_error naming the side that failed.
 */
void ConnectQpPair(Ptr<RdmaQp> a, const RdmaAhAttr& toA, Ptr<RdmaQp> b, const RdmaAhAttr& toB,
                   const RdmaQpConnectOptions& o);

} // namespace ns3

#endif
