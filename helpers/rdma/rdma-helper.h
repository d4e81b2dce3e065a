// Puts an RDMA HCA (verbs device, packet engine, InfiniBand link port, simulated memory) on
// every host of an IbFabric.
#ifndef CNUAS_RDMA_HELPER_H
#define CNUAS_RDMA_HELPER_H

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/rdma/rdma-hca-factories.h"
#include "models/ib/ib-rdma-port.h"
#include "models/rdma/rdma-device.h"
#include "models/rdma/rdma-engine.h"
#include "models/rdma/rdma-memory.h"

#include "ns3/object-factory.h"

#include <string>
#include <vector>

namespace ns3
{

/// One host's HCA as RdmaHelper built it.
struct RdmaHca
{
    Ptr<Node> node;
    Ptr<RdmaDevice> device;
    Ptr<RdmaEngine> engine;
    Ptr<IbRdmaPort> port;
    Ptr<RdmaSimulatedMemory> memory; ///< the host application's address space
};

/**
 * \brief Builds an HCA on each host of a fabric: an RdmaDevice (aggregated to the node), an
 * RdmaEngine bound to it, and an IbRdmaPort on the host's first IbNetDevice. Devices get
 * deterministic key streams (AssignStreams with the host index) and node GUIDs from the
 * port GUIDs.
 */
class RdmaHelper : public RdmaHcaFactories
{
  public:
    RdmaHelper();

    /// An HCA per host, in fabric.hosts order.
    std::vector<RdmaHca> Install(const IbFabric& fabric) const;
};

} // namespace ns3

#endif
