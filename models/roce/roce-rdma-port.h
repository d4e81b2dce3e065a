// The RoCEv2 implementation of the RDMA transport's link port: Ethernet / IPv4 or IPv6 / UDP
// 4791 / transport / ICRC on one host EthNetDevice. The twin of IbRdmaPort: the engine above it
// is the same; only the encapsulation differs (IBA vol. 1 annex A17).
#ifndef CNUAS_ROCE_RDMA_PORT_H
#define CNUAS_ROCE_RDMA_PORT_H

#include "eth-net-device.h"

#include "models/rdma/rdma-link-port.h"

#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <array>
#include <vector>

namespace ns3
{

/// UDP destination port of RoCEv2 (IANA "roce", annex A17.4.5.1).
constexpr uint16_t kRoceV2UdpPort = 4791;

/// Why RoceRdmaPort discarded a received frame (its "Drop" trace; counted per reason).
enum class RoceDropReason : uint8_t
{
    NotRoce,    ///< UDP destination port other than 4791
    Malformed,  ///< shorter than BTH + ICRC, or no payload bytes
    BadIcrc,    ///< ICRC mismatch (annex A17.4.5.3)
    Management, ///< DestQP 0 or 1: not the RDMA engine's
    Count
};
const char* RoceDropReasonName(RoceDropReason r);

/// The GID a RoCEv2 port derives from an IPv4 address: ::ffff:a.b.c.d (annex A17.4.5.4,
/// RFC 4291 §2.5.5.2 IPv4-mapped IPv6 address).
RdmaGid RoceGidFromIpv4(uint32_t ip);
/// Whether a GID is IPv4-mapped; if so `ip` gets the address.
bool RoceGidToIpv4(const RdmaGid& gid, uint32_t& ip);
/**
 * The UDP source port RoCEv2 uses for a flow: folded from the GRH flow label when one is set
 * (the rule Linux uses, rdma_flow_label_to_udp_sport), else from a hash of the source and
 * destination addresses and the destination QP, so that different QPs take different ECMP paths
 * and one QP keeps its path (annex A17.4.5.1: the source port is the flow's entropy). Always in
 * 0xC000..0xFFFF, the range annex A17 reserves for it.
 */
uint16_t RoceUdpSourcePort(uint32_t flowLabel, const RdmaGid& sgid, const RdmaGid& dgid,
                           uint32_t destQp);

/**
 * \brief An RdmaLinkPort on a host Ethernet port (RoCEv2).
 *
 * Send: the address vector's GID picks the family (IPv4-mapped: IPv4, else IPv6). The
 * transport bytes get the ICRC (annex A17.4.5.3, IbComputeRoceIcrc over the IP and UDP headers
 * this port's EthNetDevice will write; with LazyIcrc a placeholder that EthFrame::Materialize
 * fills when bytes are needed, since the packet is correct by construction) and go out as one UDP datagram to port 4791 with the
 * source port of RoceUdpSourcePort, on traffic class Priority (or the SL of the address vector
 * when non-zero), DSCP from the address vector's traffic class (else Dscp) and ECN codepoint
 * EcnCodepoint (ECT, so switches can mark). CNPs (BTH opcode 0x81) go on CnpPriority with
 * CnpDscp and Not-ECT, the way NICs separate them from data.
 *
 * Receive: frames to UDP 4791 with a BTH and a good ICRC (if CheckIcrc; checked for frames
 * parsed from bytes, not for the model's own icrcPending frames) are handed to the
 * engine with RdmaRxInfo.global set, the GIDs from the IP addresses, ecnMarked from IP ECN CE,
 * and the IP header placed in the 40-byte GRH area the way annex A17.4.5.1 lays it out for UD
 * receive buffers. Everything else is counted (GetDropCount) and traced, never delivered.
 *
 * INT (HPCC): with IntMaxHops > 0 every ECN-capable request carries an INT stack of that many
 * slots for the switches to fill (EthSwitch IntEnabled); a received stack reaches the engine in
 * RdmaRxInfo::intStack, and SendWithIntEcho sends an ACK carrying the echo back.
 *
 * Multicast: an address vector whose GID is a group (IPv4-mapped 224.0.0.0/4, or ff00::/8)
 * sends to the group's IP and MAC, and the port also hands the packet to its own receive path
 * after LoopbackDelay (the fabric never returns it), where the engine gives it to this host's
 * QPs attached to the group. A received group datagram reaches the engine with the group as
 * RdmaRxInfo::dgid, as any other.
 *
 * GID table: index 0 is the IPv4-mapped GID of the port's IPv4 address; index 1 its IPv6
 * address when one is set.
 *
 * Transmit pipeline: the engine's scheduler picks the next packet (ACKs, NAKs and CNPs first,
 * then the QPs round robin within their rate and window); this port takes one only while its
 * traffic class holds fewer than TxPipelineFrames frames waiting for the wire, and tells the
 * engine when one starts on the wire. So a packet is bound to its QP about TxPipelineFrames
 * frame times before it is sent, as in a NIC whose scheduler runs a little ahead of its MAC,
 * and a class PFC has paused holds at most that many (docs/roce.md §9).
 */
class RoceRdmaPort : public RdmaLinkPort
{
  public:
    static TypeId GetTypeId();
    RoceRdmaPort();
    ~RoceRdmaPort() override;

    /// Bind to a host port (takes its EthReceiveCallback and TxReadyCallback).
    void SetNetDevice(Ptr<EthNetDevice> dev);
    Ptr<EthNetDevice> GetNetDevice() const;
    void SetPkeyTable(const std::vector<uint16_t>& table);

    using RdmaLinkPort::Send;
    bool Send(const std::vector<uint8_t>& transport, const RdmaAhAttr& av,
              uint32_t zeroTail) override;
    bool SendWithIntEcho(const std::vector<uint8_t>& transport, const RdmaAhAttr& av,
                         const IntStack& echo) override;
    bool CanSend(uint8_t sl) const override;
    uint32_t GetPacedBytes(uint32_t transportBytes, const RdmaAhAttr& av) const override;
    void SetTxReadyCallback(Callback<void> cb) override;
    void SetReceiveCallback(ReceiveCallback cb) override;
    bool IsActive() const override;
    uint32_t GetMtu() const override;
    uint32_t GetIcrcSize() const override;
    RdmaLinkLayer GetLinkLayer() const override;
    uint16_t GetLid() const override;
    bool GetGid(uint8_t index, RdmaGid& gid) const override;
    bool GetPkey(uint16_t index, uint16_t& pkey) const override;
    void NotifyPkeyViolation(const RdmaPkeyViolation& v) override;

    /// The traffic class a packet of address-vector SL `sl` uses.
    uint8_t PriorityFor(uint8_t sl) const;
    uint64_t GetDropCount(RoceDropReason r) const
    {
        return m_drops[static_cast<int>(r)];
    }
    uint64_t GetPkeyViolations() const
    {
        return m_pkeyViolations;
    }
    uint64_t GetPacketsSent() const
    {
        return m_sent;
    }
    uint64_t GetPacketsReceived() const
    {
        return m_received;
    }
    uint64_t GetCnpsSent() const
    {
        return m_cnpsSent;
    }
    /// Multicast packets this port sent that it also handed to its own members (loopback).
    uint64_t GetMulticastLoopedBack() const
    {
        return m_loopedBack;
    }
    /// Packets delivered to the engine that arrived with IP ECN CE.
    uint64_t GetEcnMarkedReceived() const
    {
        return m_ceReceived;
    }

    /**
     * The general services interface (QP1, IBA vol. 1 §13.5.1) of a RoCE port: a UD SEND Only
     * to DestQP 1 with a good ICRC and the GSI's Q_Key is passed whole (its 256-byte MAD) to
     * `cb` with the packet's receive info (GIDs from the IP addresses) instead of being dropped
     * as Management; the CM of RoCE adapters is reached this way (annex A17.4.5.1: RoCEv2
     * carries QP1's MADs like any UD packet).
     */
    typedef Callback<void, const uint8_t*, const RdmaRxInfo&> GsiReceiveCallback;
    void SetGsiReceiveCallback(GsiReceiveCallback cb);
    /// Sends a 256-byte MAD from QP1 to QP1 of the port with GID `dgid` (BTH + DETH + MAD).
    bool SendGsi(const uint8_t* mad, const RdmaGid& dgid);

    /// A packet for the HCA that another owner of the net device's receive callback (a bridge
    /// to a real host's kernel) passed on: handled as if the device had delivered it here.
    void Deliver(Ptr<EthNetDevice> dev, const EthFrame& frame)
    {
        OnReceive(dev, frame);
    }

  protected:
    void DoDispose() override;

  private:
    /// `zeroTail` zero bytes follow `transport` (RdmaLinkPort::Send).
    bool SendFrame(const std::vector<uint8_t>& transport, const RdmaAhAttr& av,
                   const IntStack* echo, uint32_t zeroTail);
    void OnReceive(Ptr<EthNetDevice> dev, const EthFrame& frame);
    /// The sent multicast datagram (its payload as `stored` leading bytes or as `payload`)
    /// handed to this port's own receive path after LoopbackDelay.
    void LoopBackMulticast(const EthUdpFlow& flow,
                           uint32_t payloadBytes,
                           const uint8_t* leading,
                           uint32_t stored,
                           Ptr<const Packet> payload);
    void OnTxReady(Ptr<EthNetDevice> dev, uint8_t priority);
    void Drop(RoceDropReason r);
    /// Writes the IP and UDP headers `frame` has (or will have) on the wire into `out`; returns
    /// their length. The ICRC masks the variant fields, so only the invariant ones matter.
    static uint32_t WriteIpUdp(const EthFrame& f, uint8_t* out);

    Ptr<EthNetDevice> m_dev;
    std::vector<uint16_t> m_pkeys{0xFFFF};
    uint8_t m_priority = 3;
    uint8_t m_dscp = 26;
    uint8_t m_ecn = kEcnEct0;
    uint8_t m_cnpPriority = 3;
    uint8_t m_cnpDscp = 48;
    uint8_t m_hopLimit = 64;
    bool m_checkIcrc = true;
    uint8_t m_intMaxHops = 0;
    bool m_lazyIcrc = true;
    uint32_t m_pipelineFrames = 2;
    Time m_loopbackDelay; ///< LoopbackDelay
    uint64_t m_loopedBack = 0;
    ReceiveCallback m_rx;
    GsiReceiveCallback m_gsiRx;
    uint32_t m_gsiPsn = 0;
    Callback<void> m_txReady;
    std::vector<uint8_t> m_buf;   ///< transmit scratch
    std::vector<uint8_t> m_rxBuf; ///< receive scratch (the engine may Send while reading it)
    size_t m_rxWrittenEnd = 0;    ///< m_rxBuf is zero from here on (OnReceive)
    uint64_t m_sent = 0;
    uint64_t m_received = 0;
    uint64_t m_cnpsSent = 0;
    uint64_t m_ceReceived = 0;
    uint64_t m_pkeyViolations = 0;
    std::array<uint64_t, static_cast<int>(RoceDropReason::Count)> m_drops{};
    TracedCallback<uint8_t> m_dropTrace;
    TracedCallback<uint32_t, uint8_t> m_txTrace; ///< (bytes through the ICRC, BTH opcode)
    TracedCallback<uint32_t, uint8_t, bool> m_rxTrace; ///< (bytes, opcode, ECN CE)
};

} // namespace ns3

#endif
