// Turns a fabric description (helpers/formats/topology.h) into ns-3 nodes, InfiniBand ports, switches
// and cables.
#ifndef CNUAS_IB_FABRIC_HELPER_H
#define CNUAS_IB_FABRIC_HELPER_H

#include "helpers/formats/topology.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "models/ib/ib-channel.h"
#include "models/ib/ib-net-device.h"

#include "ns3/node-container.h"
#include "ns3/object-factory.h"

#include <string>
#include <vector>

namespace ns3
{

class IbNetDevice;
class IbSwitch;
class IbChannel;

/// What IbFabricHelper built, indexed like the Topology's nodes and links.
struct IbFabric
{
    Topology topology;
    NodeContainer nodes;                 ///< nodes[i] is topology.nodes[i]
    NodeContainer hosts;                 ///< channel adapters, in topology order
    /// hosts[i]'s index in topology.nodes (topology.Hosts(), kept: HostPort is asked once per
    /// flow, and an all-to-all on 1,024 hosts has a million flows)
    std::vector<uint32_t> hostNodes;
    NodeContainer switches;
    std::vector<Ptr<IbChannel>> cables;  ///< cables[i] is topology.links[i]
    /// The port of topology node `node` numbered `port` (1-based).
    Ptr<IbNetDevice> Port(uint32_t node, uint32_t port) const;
    /// A host's (first) port.
    Ptr<IbNetDevice> HostPort(uint32_t hostIndex) const;
    std::vector<Ptr<IbNetDevice>> AllPorts() const;
    std::vector<std::vector<Ptr<IbNetDevice>>> ports; ///< [node][port-1]
};

/**
 * \brief Builds an InfiniBand fabric from a Topology.
 *
 * Port, switch and cable parameters come from the ns-3 attribute defaults (so `--set
 * ns3::IbNetDevice::VlBufferBytes=...` applies) and can be overridden here per helper. A link's
 * rate in the topology ("4xHDR") sets both ends' LinkWidth/LinkSpeed; otherwise the helper's
 * default rate, if one is set, and else the ports' own attributes. GUIDs are deterministic: node i gets 0x0002c90300000000 + (i+1) << 8,
 * its ports that + port number.
 */
class IbFabricHelper
{
  public:
    IbFabricHelper();
    void SetPortAttribute(const std::string& name, const AttributeValue& value);
    void SetSwitchAttribute(const std::string& name, const AttributeValue& value);
    void SetCableAttribute(const std::string& name, const AttributeValue& value);
    /// Rate for links that do not name one, e.g. "4xHDR"; "" leaves such links to the ports'
    /// LinkWidth and LinkSpeed attributes (4x HDR unless changed).
    void SetDefaultRate(const std::string& rate);
    /// Builds the fabric; throws std::invalid_argument if the topology is invalid.
    IbFabric Build(const Topology& topology) const;

  private:
    ObjectFactory m_portFactory;
    ObjectFactory m_switchFactory;
    ObjectFactory m_cableFactory;
    std::string m_defaultRate;
};

} // namespace ns3

#endif
