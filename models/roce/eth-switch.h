// An IP-routing Ethernet switch with a shared-buffer MMU, ECMP and ECN marking.
#ifndef CNUAS_ETH_SWITCH_H
#define CNUAS_ETH_SWITCH_H

#include "eth-frame.h"
#include "eth-net-device.h"
#include "shared-buffer-mmu.h"

#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <array>
#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{

class EthNetDevice;

/**
 * \brief The forwarding function of a data-centre switch (an output-queued, shared-buffer
 * device, as Broadcom/Spectrum-class switches are).
 *
 * A frame arriving on a port is classified (802.1Q PCP if TrustPcp and tagged, else the DSCP
 * table), routed by its destination IPv4 or IPv6 address (host routes with all equal-cost next
 * hops, one picked by a hash of the 5-tuple with this switch's EcmpSeed, so a flow keeps one path),
 * admitted by the MMU against its ingress (port, priority), possibly ECN-marked, and queued on
 * the egress port's class. It leaves the MMU's accounting when it starts transmission. TTL is
 * decremented and MAC addresses rewritten, as an L3 hop does.
 *
 * A frame to an IP multicast group (which has no unicast route) is copied to every port of the
 * group's multicast route (SetMulticastRoute) but the one it came in by; each copy is admitted
 * by the MMU, marked and queued on its own, and keeps the group's MAC as its destination. A
 * group without an entry, or whose entry holds only the ingress port, is dropped as NoRoute.
 */
class EthSwitch : public Object
{
  public:
    static TypeId GetTypeId();
    EthSwitch();
    ~EthSwitch() override;

    /// Adds a port; ports are numbered from 1 in the order added.
    uint16_t AddPort(Ptr<EthNetDevice> port);
    uint16_t GetNPorts() const;
    Ptr<EthNetDevice> GetPort(uint16_t number) const;
    Ptr<SharedBufferMmu> GetMmu() const { return m_mmu; }
    /// Adds `port` as a next hop towards host address `dstIp` (equal-cost hops accumulate); not
    /// for a multicast group (SetMulticastRoute).
    void AddRoute(uint32_t dstIp, uint16_t port);
    const std::vector<uint16_t>* GetRoutes(uint32_t dstIp) const;
    /// As AddRoute, for an IPv6 host address.
    void AddRoute6(const Ipv6Bytes& dstIp6, uint16_t port);
    const std::vector<uint16_t>* GetRoutes6(const Ipv6Bytes& dstIp6) const;
    /**
     * The outgoing ports of an IPv4 multicast group (224.0.0.0/4, RFC 5771), as the (*,G)
     * outgoing-interface list that IGMP snooping and PIM build on a router (here written by
     * EthMulticastRouter, or directly). A frame to the group leaves by every port of the list
     * but the one it came in by. An empty list removes the entry. Returns false, changing
     * nothing, for an address that is not a group or a port number this switch does not have.
     */
    bool SetMulticastRoute(uint32_t group, const std::vector<uint16_t>& ports);
    /// As SetMulticastRoute, for an IPv6 group (ff00::/8, RFC 4291 §2.7).
    bool SetMulticastRoute6(const Ipv6Bytes& group, const std::vector<uint16_t>& ports);
    /// Removes a group's entry (SetMulticastRoute with no ports); false if it had none.
    bool ClearMulticastRoute(uint32_t group);
    bool ClearMulticastRoute6(const Ipv6Bytes& group);
    /// The group's ports, ascending; null when it has no entry.
    const std::vector<uint16_t>* GetMulticastRoute(uint32_t group) const;
    const std::vector<uint16_t>* GetMulticastRoute6(const Ipv6Bytes& group) const;
    /// Groups with an entry, IPv4 and IPv6.
    uint32_t GetNMulticastRoutes() const;
    void SetDscpToPriority(uint8_t dscp, uint8_t priority);
    uint8_t MapDscp(uint8_t dscp) const { return m_dscpToPrio[dscp & 63]; }
    /// The priority this switch gives a frame: its PCP if TrustPcp and tagged, else by DSCP.
    uint8_t Classify(const EthFrame& f) const
    {
        return (m_trustPcp && f.vlanTagged) ? f.pcp : m_dscpToPrio[f.dscp & 63];
    }
    /// Sizes the MMU for the ports as cabled now; call after cabling, before traffic.
    void SetupMmu();
    /// "" if the switch and its ports are consistently configured, else the problem.
    std::string Validate() const;
    /// The ECMP hash over (source IP, destination IP, protocol, source port, destination port).
    static uint32_t FlowHash(const EthFrame& frame, uint32_t seed);
    /// The port a frame leaves by: its destination's next hop, or among several the one its
    /// flow hashes to; 0 when no route leads there.
    uint16_t EgressPort(const EthFrame& frame);

    // ---- used by EthNetDevice ----------------------------------------------------------------
    void Receive(EthNetDevice* in, EthFrame* frame);
    /// The frame starts transmission on `out`: it leaves the buffer.
    void NotifyDequeue(EthNetDevice* out, EthFrame* frame);
    /// A queued frame was discarded (link down).
    void NotifyDiscardQueued(EthNetDevice* out, EthFrame* frame);

    /// Frames forwarded (a multicast frame counts once per copy that was queued).
    uint64_t GetForwarded() const { return m_forwarded; }
    /// Copies of multicast frames queued on an egress port (each counted in GetForwarded too).
    uint64_t GetMulticastCopies() const { return m_mcastCopies; }
    /// Multicast frames whose group's route here holds no port but the one they came in by
    /// (a group whose only member on this side sent it): nothing to copy, nothing lost.
    uint64_t GetMulticastPruned() const { return m_mcastPruned; }
    uint64_t GetEcnMarked() const { return m_ecnMarked; }
    uint32_t GetEcmpSeed() const { return m_seed; }
    /// INT hop records pushed, and frames that passed with their stack already full.
    uint64_t GetIntHopsPushed() const { return m_intPushed; }
    uint64_t GetIntOverflows() const { return m_intOverflow; }

    /// EcnMark: (egress port, priority, queue bytes seen).
    typedef void (*EcnMarkCallback)(uint16_t port, uint8_t priority, uint64_t queueBytes);
    /// IntHop: (egress port, the hop record pushed).
    typedef void (*IntHopCallback)(uint16_t port, const IntHop& hop);

  protected:
    void DoDispose() override;

  private:
    void Drop(EthNetDevice* in, EthFrame* frame, EthDropReason reason);
    void MaybeMark(EthNetDevice* out, EthFrame* frame, uint64_t queueBytes);
    void PushIntHop(EthNetDevice* out, EthFrame* frame);
    /// Receive's path for a frame to a multicast group: a copy to each port of its entry.
    void ForwardMulticast(EthNetDevice* in, EthFrame* frame);
    /// Admits `frame` (arrived on `in`) to the MMU and queues it on `out`; false, the frame
    /// dropped and counted, if the MMU refuses it.
    bool AdmitAndEnqueue(EthNetDevice* in, EthNetDevice* out, EthFrame* frame);
    bool ValidMulticastPorts(const std::vector<uint16_t>& ports) const;

    std::vector<Ptr<EthNetDevice>> m_ports;
    Ptr<SharedBufferMmu> m_mmu;
    std::unordered_map<uint32_t, std::vector<uint16_t>> m_routes;
    struct Ipv6Hash
    {
        size_t operator()(const Ipv6Bytes& a) const;
    };
    std::unordered_map<Ipv6Bytes, std::vector<uint16_t>, Ipv6Hash> m_routes6;
    /// Multicast groups' outgoing ports (SetMulticastRoute): looked up only for frames that
    /// found no unicast route, so unicast forwarding never reads them.
    std::unordered_map<uint32_t, std::vector<uint16_t>> m_mcastRoutes;
    std::unordered_map<Ipv6Bytes, std::vector<uint16_t>, Ipv6Hash> m_mcastRoutes6;
    std::vector<EthNetDevice*> m_mcastOut; ///< ForwardMulticast's scratch: the ports to copy to
    /// The same routes as a table indexed by (address - m_denseBase) when the addresses are
    /// dense (as the fabric helper assigns them): one array access per frame, no hashing.
    struct DenseRoute
    {
        uint32_t first = 0; ///< into m_densePorts
        uint16_t count = 0;
        /// The port when there is only one (every route down a fat-tree): the frame's egress
        /// from the entry's own line, without the dependent load from m_densePorts.
        uint16_t onlyPort = 0;
    };
    std::vector<DenseRoute> m_dense;
    std::vector<uint16_t> m_densePorts;
    uint32_t m_denseBase = 0;
    bool m_denseValid = false;
    void BuildDenseRoutes();
    std::array<uint8_t, 64> m_dscpToPrio{};
    uint32_t m_seed = 0;
    bool m_trustPcp = false;
    uint64_t m_forwarded = 0;
    uint64_t m_ecnMarked = 0;
    uint64_t m_mcastCopies = 0;
    uint64_t m_mcastPruned = 0;
    bool m_intEnabled = true;
    uint64_t m_intPushed = 0;
    uint64_t m_intOverflow = 0;
    TracedCallback<uint16_t, uint8_t, uint64_t> m_ecnTrace;
    TracedCallback<uint16_t, const IntHop&> m_intTrace;
};

} // namespace ns3

#endif
