// Subnet-manager helpers: the SM's view of a fabric description (for routing studies without a
// simulation) and subnet managers placed on chosen nodes of an IbFabric.
#ifndef CNUAS_IB_SM_HELPER_H
#define CNUAS_IB_SM_HELPER_H

#include "helpers/topology.h"
#include "models/mgmt/ib-sm-subnet.h"

#include "ns3/node.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"

#include <string>

namespace ns3
{

class IbSubnetManager;
struct IbFabric;

/// The node GUID IbFabricHelper gives topology node `index` (its ports: that + port number).
uint64_t IbFabricNodeGuid(uint32_t index);

/**
 * The subnet database a perfect sweep of `topology` would fill: node i has index i, the GUIDs
 * IbFabricHelper gives, the topology names as node descriptions, every cable as a link. No LIDs.
 */
IbSmSubnet IbSmSubnetFromTopology(const Topology& topology);

/**
 * \brief Puts subnet managers on nodes of a fabric.
 *
 * Install makes sure every node of the fabric has its management agents (IbMgmtHelper: SMI/GSI
 * dispatcher, SMA, PMA), then creates an IbSubnetManager (attributes from the ns-3 defaults and
 * SetSmAttribute) on the given node, aggregated to it, and wires it to that node's SMI: its SMPs
 * leave through IbMadDispatcher::SendDirectedSmp and the node's SMP responses and traps come
 * back to it. On a channel adapter the SMA's PortInfo.CapabilityMask gets IsSM on the SM's
 * port, so that other SMs find it. The SM starts at `start` (give ports their TrainingTime).
 * Several SMs on one fabric elect a master by SMInfo (priority, then GUID).
 */
class IbSmHelper
{
  public:
    IbSmHelper();
    void SetSmAttribute(const std::string& name, const AttributeValue& value);
    Ptr<IbSubnetManager> Install(const IbFabric& fabric, Ptr<Node> node,
                                 Time start = MicroSeconds(2)) const;
    /// The SM aggregated to a node (null if none).
    static Ptr<IbSubnetManager> GetSm(Ptr<Node> node);

  private:
    ObjectFactory m_factory;
};

} // namespace ns3

#endif
