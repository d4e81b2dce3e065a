// The one seam between the fabric-independent RDMA transport and a link layer. The transport
// hands a port the bytes from the BTH on, plus the address vector of the destination; the port
// adds what its fabric needs (InfiniBand: LRH, GRH when global, ICRC, VCRC; RoCEv2: Ethernet,
// IP, UDP 4791, ICRC) and gives received transport bytes back with where they came from.
// IBA vol. 1 §9.1 (the transport layer is independent of the link layer), annex A17 (RoCEv2).
#ifndef CNUAS_RDMA_LINK_PORT_H
#define CNUAS_RDMA_LINK_PORT_H

#include "rdma-types.h"

#include "models/common/int-stack.h"

#include "ns3/callback.h"
#include "ns3/object.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

/// Where a received transport packet came from, as the link layer saw it.
struct RdmaRxInfo
{
    uint16_t slid = 0;     ///< InfiniBand source LID (0 on RoCE)
    uint16_t dlid = 0;     ///< InfiniBand destination LID (0 on RoCE)
    uint8_t sl = 0;        ///< service level (RoCE: the priority the packet arrived on)
    bool global = false;   ///< the packet carried a GRH (RoCE: always)
    RdmaGid sgid{};        ///< GRH source GID, when global
    RdmaGid dgid{};        ///< GRH destination GID, when global
    bool ecnMarked = false; ///< RoCE: IP ECN CE; InfiniBand: BTH FECN (annex A10)
    /// The network header the packet came in (a UD completion's network_hdr_type): IB on
    /// InfiniBand, IPv4 or IPv6 on RoCEv2 (annex A17.4.5.1). Set by the port that parsed it.
    RdmaNetworkHdr networkHdr = RDMA_NETWORK_IB;
    /// The 40-byte GRH as it is placed in the first 40 bytes of a UD receive buffer
    /// (IBA vol. 1 §11.4.1.2: the GRH, or undefined bytes when there was none; RoCEv2 puts the
    /// IP header there). Valid when `global`.
    std::array<uint8_t, 40> grhBytes{};
    /// In-band telemetry the packet carried (HPCC paper §3.2), valid for the duration of the
    /// receive call only; null when none. On a request: the hops of the data path, for the
    /// responder to echo in its ACK. On a response: the echo, for the congestion control.
    const IntStack* intStack = nullptr;
};

/// A packet the transport discarded for its P_Key: what the Bad P_Key trap (Notice 257, IBA
/// vol. 1 §14.2.5.1) says of it.
struct RdmaPkeyViolation
{
    uint16_t pkey = 0;  ///< the packet's BTH P_Key
    uint32_t srcQp = 0; ///< the sender's QP: a UD packet's DETH SrcQP, else the receiver's peer
    uint32_t dstQp = 0; ///< the BTH DestQP
    const RdmaRxInfo* rx = nullptr; ///< the packet's addressing (LIDs, SL, GIDs)
};

/**
 * \brief A link-layer port as the RDMA transport sees it.
 *
 * Send() takes the transport bytes "BTH | extension headers | payload | pad" (a multiple of 4
 * bytes, no ICRC) and the address vector of the destination (a QP's ah_attr, or a UD WQE's
 * AH): DLID and SL on InfiniBand, the GID in grh.dgid when is_global (always on RoCE). The
 * port adds its headers and the ICRC. A port delivers received packets that passed its own
 * checks (CRCs, addressing, port state) to the receive callback with the bytes from the first
 * BTH byte through the ICRC (GetIcrcSize() bytes at the end).
 *
 * Management traffic (QP0/QP1) is not the engine's: a port must not deliver it here.
 */
class RdmaLinkPort : public Object
{
  public:
    static TypeId GetTypeId();
    ~RdmaLinkPort() override;

    /// (port, first BTH byte, bytes through the ICRC, source info).
    typedef Callback<void, Ptr<RdmaLinkPort>, const uint8_t*, uint32_t, const RdmaRxInfo&>
        ReceiveCallback;

    /// Queue one packet. False when the port refused it (not active, queue full, malformed):
    /// the transport treats that as a loss. `zeroTail` zero bytes follow `transport` in the
    /// packet (payload and pad of memory that reads as zeros; RdmaMemory::ReadsAsZeros): they
    /// are on the wire and in every trace, and never built.
    virtual bool Send(const std::vector<uint8_t>& transport, const RdmaAhAttr& av,
                      uint32_t zeroTail) = 0;
    /// Send with no zero tail.
    bool Send(const std::vector<uint8_t>& transport, const RdmaAhAttr& av)
    {
        return Send(transport, av, 0);
    }
    /// As Send, for an acknowledgment that echoes the INT stack of the packet it acknowledges
    /// (HPCC). A port without telemetry sends the packet alone.
    virtual bool SendWithIntEcho(const std::vector<uint8_t>& transport, const RdmaAhAttr& av,
                                 const IntStack& echo)
    {
        return Send(transport, av);
    }
    /// Whether a packet on `sl` would be queued now.
    virtual bool CanSend(uint8_t sl) const = 0;
    /**
     * Bytes a request of `transportBytes` (BTH through pad) to `av` takes on the wire: what
     * the requester's rate limiter paces, since a rate (the QP's rate_limit, a congestion
     * control's) is a share of the link's bit rate. The default is the transport bytes alone,
     * which the InfiniBand port keeps (its rates have always been paced so; docs/roce.md §9).
     */
    virtual uint32_t GetPacedBytes(uint32_t transportBytes, const RdmaAhAttr& av) const
    {
        return transportBytes;
    }
    /// The port can queue again (after CanSend() said no).
    virtual void SetTxReadyCallback(Callback<void> cb) = 0;
    virtual void SetReceiveCallback(ReceiveCallback cb) = 0;

    /// Whether the port passes data traffic (IBA PortState Active; RoCE link up).
    virtual bool IsActive() const = 0;
    /// Largest transport packet the port carries: the active MTU in bytes (256..4096).
    virtual uint32_t GetMtu() const = 0;
    /// Bytes of ICRC at the end of received transport bytes (4 on both fabrics).
    virtual uint32_t GetIcrcSize() const = 0;
    virtual RdmaLinkLayer GetLinkLayer() const = 0;
    /// Own LID (0 on RoCE).
    virtual uint16_t GetLid() const = 0;
    /// GID table entry `index`; false if there is none.
    virtual bool GetGid(uint8_t index, RdmaGid& gid) const = 0;
    /// P_Key table entry `index` (IBA vol. 1 §10.9.2); false if there is none.
    virtual bool GetPkey(uint16_t index, uint16_t& pkey) const = 0;
    /// The transport discarded a packet for its P_Key (IBA vol. 1 §10.9.3): a port that keeps
    /// the PortInfo P_KeyViolations counter (§14.2.5.6) counts it, and may report it to its SM.
    virtual void NotifyPkeyViolation(const RdmaPkeyViolation& v) = 0;
};

/**
 * Whether two P_Keys match (IBA vol. 1 §10.9.3): the low 15 bits are equal, at least one of the
 * two is a full member (bit 15 set), and neither is an invalid key (0x0000 or 0x8000).
 */
bool RdmaPkeyMatch(uint16_t a, uint16_t b);

} // namespace ns3

#endif
