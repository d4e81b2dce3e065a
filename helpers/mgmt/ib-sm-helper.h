// Subnet-manager helpers: the SM's view of a fabric description (for routing studies without a
// simulation) and subnet managers placed on chosen nodes of an IbFabric.
#ifndef CNUAS_IB_SM_HELPER_H
#define CNUAS_IB_SM_HELPER_H

#include "helpers/formats/topology.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "models/mgmt/ib-sm-subnet.h"
#include "models/mgmt/ib-subnet-manager.h"

#include "ns3/node.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"

#include <string>

namespace ns3
{

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
 * back to it. On a channel adapter the SMA's PortInfo.CapabilityMask has IsSM on the SM's
 * port while the SM runs, so that other SMs find it. While the SM runs its node also answers SA
 * queries (QP1, class 0x03) from it, if nothing else serves that class there. The SM starts at `start` (give ports their TrainingTime), unless
 * `autoStart` is false: then it waits, stopped, for IbSubnetManager::Start (an SM started at
 * run time, `cnuas sm start`).
 *
 * The node's SMA hands SMInfo requests to the SM (IbSmaAgent::SetSmInfoHandler), so several
 * SMs on one fabric elect a master over the wire (priority, then GUID; docs/management.md
 * §8.4) and the standbys poll it.
 */
class IbSmHelper
{
  public:
    IbSmHelper();
    void SetSmAttribute(const std::string& name, const AttributeValue& value);
    Ptr<IbSubnetManager> Install(const IbFabric& fabric, Ptr<Node> node,
                                 Time start = MicroSeconds(2), bool autoStart = true) const;
    /// The SM aggregated to a node (null if none).
    static Ptr<IbSubnetManager> GetSm(Ptr<Node> node);

  private:
    ObjectFactory m_factory;
};

/// What bringing a fabric up with the built-in SM took.
struct IbSmBringUp
{
    Time upAt;                ///< simulated time at which the first sweep had every port Active
    uint64_t smps = 0;        ///< SMPs the SM sent until then
    double wallSeconds = 0;   ///< wall-clock time of that part of the simulation
    Ptr<IbSubnetManager> sm;
};

/**
 * Puts an SM (SetSmAttribute defaults; OperationalVls = `vls`) on host 0 of `fabric`, runs the
 * simulation until its first heavy sweep has finished with the subnet up, and returns when and
 * at what cost. Throws std::invalid_argument for a fabric without hosts (nowhere to put the SM)
 * and std::runtime_error if the subnet is not up within `limit` of simulated time (the
 * simulation is left where it stopped).
 */
IbSmBringUp IbBringUpWithSm(const IbFabric& fabric, uint8_t vls, Time limit = Seconds(1));

/**
 * "" if every cabled port of the fabric is Active; else what is not, e.g. "3 of 4 cabled ports
 * are not Active (h0 port 1: Initialize)". Traffic that starts on such a fabric sends nothing,
 * so a run checks this before it counts its packets as a result.
 */
std::string IbFabricNotActive(const IbFabric& fabric);

/**
 * The cables a packet from host `fromHost` to `dlid` crosses through the switches' LFTs as they
 * are now, in order, the host's own port first (as IbStaticSubnetHelper::GetRoute gives them);
 * empty if the route dead-ends, loops or ends at another port.
 */
std::vector<IbRouteHop> IbFabricRoute(const IbFabric& fabric, uint32_t fromHost, uint16_t dlid);

/// "4xHDR" from PortInfo's LinkWidthActive, LinkSpeedActive and LinkSpeedExtActive (IBA vol. 1
/// §14.2.5.6 encodings); "" if the port has no active link.
std::string IbPortInfoRateName(const IbPortInfo& info);

/**
 * What infiniband-diags' `ibstat` prints for every channel adapter of the fabric, read from the
 * ports themselves (as ibstat reads the local HCA): per port State, Physical state, Rate, Base
 * lid, LMC, SM lid, Port GUID, Link layer. Before a subnet manager has run a
 * port shows "State: Initializing" and "Base lid: 0" (the seed's example).
 */
std::string IbFormatIbstat(const IbFabric& fabric);

/**
 * The subnet as an SM discovered it, in `ibnetdiscover`'s format: a block per switch, then per
 * channel adapter, with GUIDs, LIDs and active rates in the comments. The quoted node names are
 * the node descriptions (as `ibnetdiscover --node-name-map` would print them), so that
 * ParseTopologyText reads the output back as the fabric's topology.
 */
std::string IbFormatIbnetdiscover(const IbSmSubnet& subnet, uint64_t smPortGuid);

} // namespace ns3

#endif
