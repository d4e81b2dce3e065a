// The ideal flow completion time on RoCEv2: what an RDMA WRITE takes alone on an idle path of
// the Ethernet model, to the picosecond. FCT tables divide by it (a flow's slowdown), so a flow
// alone reads exactly 1 and no flow in a busier fabric reads less (tests/test-roce-ideal-fct.cc).
#ifndef CNUAS_ROCE_IDEAL_FCT_H
#define CNUAS_ROCE_IDEAL_FCT_H

#include "helpers/roce/eth-fabric-helper.h"
#include "helpers/roce/roce-traffic-run.h"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace ns3
{

/// One direction of a cable: what the port sending on it does.
struct RoceIdealLink
{
    uint64_t bps = 0;      ///< the sending port's rate
    int64_t delayPs = 0;   ///< the cable's propagation delay
    bool vlanTag = false;  ///< the port adds a 4-byte 802.1Q tag (EthNetDevice VlanTag)
};

/// A flow's path: the links its data crosses, in order, and the same cables the other way,
/// which its ACKs cross (back[i] is forward[i]'s cable driven from its far end).
struct RoceIdealRoute
{
    std::vector<RoceIdealLink> forward;
    std::vector<RoceIdealLink> back;

    /// A route whose cables carry both directions alike.
    static RoceIdealRoute Symmetric(const std::vector<RoceIdealLink>& links);
};

/// What the requester's NIC sends for the flow.
struct RoceIdealFraming
{
    uint32_t mtu = 1024;          ///< path MTU: payload bytes per packet (IBA's 256..4096)
    /// RdmaEngine AckReqEveryPackets (0: the last packet only); the requester asks on the PSNs
    /// N-1, 2N-1, ..., which are packets N, 2N, ... from PSN 0, where RdmaFlowDriver starts.
    uint32_t ackEveryPackets = 1;
};

/**
 * The FCT of an RDMA WRITE of `bytes` (>= 1) posted at time 0 on an idle `route`, as the model
 * runs it: the requester sends its packets back to back at the first link's rate (a WRITE's
 * first packet carries the RETH, each packet BTH, ICRC and its payload padded to 4 bytes, in
 * UDP/IPv4 in an Ethernet frame of at least 64 bytes, plus preamble and inter-frame gap on the
 * wire); every switch stores and forwards a frame (it acts on the last bit, the inter-frame gap
 * is not waited for) onto a link that may still be sending the previous one; the responder
 * acknowledges every `ackEveryPackets`-th packet and the last one at once, and the ACKs come
 * back the same way, each behind the one before it. The FCT ends when the last ACK is in.
 * Frame times are rounded to the picosecond as EthNetDevice::WireTime rounds them. Not
 * counted, because they only lengthen a flow: congestion control (a rate below the line, a
 * window, HPCC's INT bytes), pauses, losses.
 */
int64_t RoceIdealFctPs(uint64_t bytes, const RoceIdealRoute& route,
                       const RoceIdealFraming& framing);

/// RoceIdealFctPs in seconds.
double RoceIdealFctSeconds(uint64_t bytes, const RoceIdealRoute& route,
                           const RoceIdealFraming& framing);

/**
 * The flows' routes through a fabric as EthFabricHelper built it: per cable and direction, the
 * sending port's rate and VLAN tagging and the cable's delay, read when this is made (before
 * the run; nothing of the fabric is kept). A route is the shortest path that a breadth-first
 * search from the source finds first (neighbours in link order): exact for every fabric whose
 * shortest paths between two hosts are alike, as in every generated fat-tree or leaf-spine and
 * every HPCC topology (one rate per tier, one cable delay); where a topology file mixes rates
 * or lengths across the equal-cost paths ECMP chooses from, the ideal is that of this one.
 */
class RoceIdealPaths
{
  public:
    explicit RoceIdealPaths(const EthFabric& fabric);

    /// The route from host `srcHost` to host `dstHost` (host indices, topology order).
    RoceIdealRoute Route(uint32_t srcHost, uint32_t dstHost);

  private:
    struct Hop
    {
        uint32_t node;         ///< the neighbour
        RoceIdealLink towards; ///< the cable as this node's port drives it
        RoceIdealLink from;    ///< the cable as the neighbour's port drives it
    };
    std::vector<std::vector<Hop>> m_adjacency; ///< per node
    std::vector<uint32_t> m_hostNodes;
    /// Per source host searched so far: each node's predecessor and which of the
    /// predecessor's hops reaches it.
    std::map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> m_parents;
};

/**
 * The ideal FCT of each flow of one RunRoceFlows run, for its FCT table: made from the finished
 * spec just before the run, it takes the framing (path MTU, AckReqEveryPackets) from the spec
 * and reads the routes from the fabric as built (a spec.beforeRun hook, run after any hook the
 * spec already had); after the run, Seconds answers per flow. It must outlive the run (the hook
 * refers to it), so it is neither copied nor moved.
 */
class RoceRunIdealFct
{
  public:
    explicit RoceRunIdealFct(RoceRunSpec& spec);
    RoceRunIdealFct(const RoceRunIdealFct&) = delete;
    RoceRunIdealFct& operator=(const RoceRunIdealFct&) = delete;

    /// RoceIdealFctSeconds of `flow` on its route (the run must have started).
    double Seconds(const RoceFlowSpec& flow);

  private:
    RoceIdealFraming m_framing;
    std::optional<RoceIdealPaths> m_paths; ///< from the fabric, when the run starts
};

} // namespace ns3

#endif
