// Puts an RDMA NIC (verbs device, packet engine, RoCEv2 link port, simulated memory) on every
// host of an EthFabric: the RoCE twin of RdmaHelper.
#ifndef CNUAS_ROCE_HELPER_H
#define CNUAS_ROCE_HELPER_H

#include "helpers/rdma/rdma-hca-factories.h"
#include "helpers/roce/eth-fabric-helper.h"
#include "models/rdma/rdma-device.h"
#include "models/rdma/rdma-engine.h"
#include "models/rdma/rdma-memory.h"
#include "models/roce/roce-rdma-port.h"

#include "ns3/object-factory.h"

#include <string>
#include <vector>

namespace ns3
{

/// One host's RoCE NIC as RoceHelper built it.
struct RoceHca
{
    Ptr<Node> node;
    Ptr<RdmaDevice> device;
    Ptr<RdmaEngine> engine;
    Ptr<RoceRdmaPort> port;
    Ptr<RdmaCongestionControl> cc;
    Ptr<RdmaSimulatedMemory> memory; ///< the host application's address space
};

/**
 * \brief Builds a RoCE NIC on each host of an Ethernet fabric: an RdmaDevice with LinkLayer
 * Ethernet (aggregated to the node), an RdmaEngine bound to it with one congestion-control
 * policy instance, and a RoceRdmaPort on the host's first EthNetDevice. Devices get
 * deterministic key streams (AssignStreams with the host index).
 *
 * The engine's own CNP limiter (RdmaEngine::CnpInterval) is set to 0 here: on RoCE the policy
 * decides when a notification point sends a CNP (RdmaCcDcqcn's CnpInterval), so the interval
 * is a constant of the DCQCN preset. SetEngineAttribute("CnpInterval", ...) overrides it.
 */
class RoceHelper : public RdmaHcaFactories
{
  public:
    RoceHelper();

    /// A NIC per host, in fabric.hosts order.
    std::vector<RoceHca> Install(const EthFabric& fabric) const;
};

} // namespace ns3

#endif
