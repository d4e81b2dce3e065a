// Configures an InfiniBand subnet without a subnet manager: what a subnet manager's sweep would
// set, set directly through the same PortInfo / SwitchInfo / LinearForwardingTable paths.
#ifndef CNUAS_IB_STATIC_SUBNET_HELPER_H
#define CNUAS_IB_STATIC_SUBNET_HELPER_H

#include "ns3/node-container.h"
#include "ns3/nstime.h"

#include <map>
#include <vector>

namespace ns3
{

class IbNetDevice;
class IbSwitch;

/// One cable a route crosses: leaving node `node` (an ns-3 node id) by port `port`.
struct IbRouteHop
{
    uint32_t node;
    uint8_t port;
    bool operator==(const IbRouteHop& o) const { return node == o.node && port == o.port; }
};

/**
 * \brief Brings a fabric to Active the way a subnet manager would, for data-path work before
 * (or instead of) the management plane.
 *
 * It discovers the fabric by following cables from the given nodes, assigns LIDs in node-GUID
 * order (switches get the LID of their management port 0), computes min-hop routes with
 * per-port balancing of equal-cost choices and writes them block by block into each switch's
 * LFT, sets OperationalVLs and the SM LID, and then at `activateAt` moves every linked port
 * Init -> Armed -> Active in two passes as opensm's link manager does.
 */
class IbStaticSubnetHelper
{
  public:
    void SetOperationalVls(uint8_t vls) { m_opVls = vls; }
    /// When the ports are armed and activated (after physical training).
    void SetActivateAt(Time t) { m_activateAt = t; }
    /// Configure everything reachable from `nodes`. Returns the number of LIDs assigned.
    uint32_t Configure(const NodeContainer& nodes);

    /// LID of a channel-adapter node's first port, or of a switch (0 if unknown).
    uint16_t GetLid(Ptr<Node> node) const;
    /// Hop count between two LIDs' nodes along the programmed routes (-1 if unreachable).
    int GetRouteHops(uint16_t fromLid, uint16_t toLid) const;
    /// The cables the programmed route from one LID to another crosses, in order (empty if it
    /// does not arrive or loops).
    std::vector<IbRouteHop> GetRoute(uint16_t fromLid, uint16_t toLid) const;

  private:
    /// Arms then activates every port of `nodes` (a copy: the helper may be gone by then).
    static void Activate(std::vector<Ptr<Node>> nodes);

    uint8_t m_opVls = 1;
    Time m_activateAt = MicroSeconds(2);
    std::vector<Ptr<Node>> m_nodes;
    std::map<uint32_t, uint16_t> m_nodeLid; ///< node id -> LID
    std::map<uint16_t, Ptr<Node>> m_lidNode;
};

/// The IbNetDevice ports of a node (a CA's ports, or a switch's ports 1..N).
std::vector<Ptr<IbNetDevice>> IbPortsOf(Ptr<Node> node);

} // namespace ns3

#endif
