// Subnet-manager helpers: the SM's view of a fabric description (for routing studies without a
// simulation) and, with the management agents, SMs placed on chosen nodes of an IbFabric.
#ifndef CNUAS_IB_SM_HELPER_H
#define CNUAS_IB_SM_HELPER_H

#include "helpers/topology.h"
#include "models/mgmt/ib-sm-subnet.h"

namespace ns3
{

/// The node GUID IbFabricHelper gives topology node `index` (its ports: that + port number).
uint64_t IbFabricNodeGuid(uint32_t index);

/**
 * The subnet database a perfect sweep of `topology` would fill: node i has index i, the GUIDs
 * IbFabricHelper gives, the topology names as node descriptions, every cable as a link. No LIDs.
 */
IbSmSubnet IbSmSubnetFromTopology(const Topology& topology);

} // namespace ns3

#endif
