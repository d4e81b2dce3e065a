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
    /// Adds `port` as a next hop towards host address `dstIp` (equal-cost hops accumulate).
    void AddRoute(uint32_t dstIp, uint16_t port);
    const std::vector<uint16_t>* GetRoutes(uint32_t dstIp) const;
    /// As AddRoute, for an IPv6 host address.
    void AddRoute6(const Ipv6Bytes& dstIp6, uint16_t port);
    const std::vector<uint16_t>* GetRoutes6(const Ipv6Bytes& dstIp6) const;
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

    uint64_t GetForwarded() const { return m_forwarded; }
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

    std::vector<Ptr<EthNetDevice>> m_ports;
    Ptr<SharedBufferMmu> m_mmu;
    std::unordered_map<uint32_t, std::vector<uint16_t>> m_routes;
    struct Ipv6Hash
    {
        size_t operator()(const Ipv6Bytes& a) const;
    };
    std::unordered_map<Ipv6Bytes, std::vector<uint16_t>, Ipv6Hash> m_routes6;
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
    bool m_intEnabled = true;
    uint64_t m_intPushed = 0;
    uint64_t m_intOverflow = 0;
    TracedCallback<uint16_t, uint8_t, uint64_t> m_ecnTrace;
    TracedCallback<uint16_t, const IntHop&> m_intTrace;
};

} // namespace ns3

#endif
