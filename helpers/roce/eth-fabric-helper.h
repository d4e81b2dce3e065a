// Turns a fabric description (helpers/formats/topology.h) into ns-3 nodes, Ethernet ports, switches
// and cables, with IPv4 host routes over all equal-cost paths.
#ifndef CNUAS_ETH_FABRIC_HELPER_H
#define CNUAS_ETH_FABRIC_HELPER_H

#include "helpers/formats/topology.h"
#include "models/roce/eth-channel.h"
#include "models/roce/eth-net-device.h"
#include "models/roce/eth-switch.h"

#include "ns3/data-rate.h"
#include "ns3/node-container.h"
#include "ns3/object-factory.h"

#include <string>
#include <vector>

namespace ns3
{

/// What EthFabricHelper built, indexed like the Topology's nodes and links.
struct EthFabric
{
    Topology topology;
    NodeContainer nodes; ///< nodes[i] is topology.nodes[i]
    NodeContainer hosts; ///< in topology order
    std::vector<Ptr<EthChannel>> cables;            ///< cables[i] is topology.links[i]
    std::vector<Ptr<EthSwitch>> switchAt;           ///< by node index (null for hosts)
    std::vector<std::vector<Ptr<EthNetDevice>>> ports; ///< [node][port-1]
    std::vector<uint32_t> hostNodes;                ///< node index of host i

    Ptr<EthNetDevice> Port(uint32_t node, uint32_t port) const;
    /// Host i's (first) port.
    Ptr<EthNetDevice> HostPort(uint32_t hostIndex) const;
    Ptr<EthSwitch> Switch(uint32_t node) const;
    std::vector<Ptr<EthSwitch>> Switches() const;
    std::vector<Ptr<EthNetDevice>> AllPorts() const;
    uint32_t HostIp(uint32_t hostIndex) const;
    Ipv6Bytes HostIp6(uint32_t hostIndex) const;
};

/**
 * \brief Builds an Ethernet fabric from a Topology.
 *
 * Port, switch, MMU and cable parameters come from the ns-3 attribute defaults (so `--set
 * ns3::EthNetDevice::DataRate=...` applies) and can be overridden per helper. Links between a
 * host and a switch run at the host rate, links between switches at the fabric rate (both
 * default to the port attribute); a topology's InfiniBand rate strings are ignored, its cable
 * lengths are used. Addresses are deterministic: host i is 10.0.0.0 + i + 1 (HostAddress) and
 * fd00::(i + 1) (HostAddress6), the
 * port numbered p of node n has MAC 02:00:00:nn:nn:pp. Each switch's ECMP seed is its node index
 * + 1. Every switch gets a route to every host through all its neighbours on a shortest path.
 * Build() validates every port, switch and MMU and throws std::invalid_argument with the first
 * problem (naming the node and port).
 */
class EthFabricHelper
{
  public:
    EthFabricHelper();
    void SetPortAttribute(const std::string& name, const AttributeValue& value);
    void SetSwitchAttribute(const std::string& name, const AttributeValue& value);
    void SetMmuAttribute(const std::string& name, const AttributeValue& value);
    void SetCableAttribute(const std::string& name, const AttributeValue& value);
    void SetHostLinkRate(DataRate rate);
    void SetFabricLinkRate(DataRate rate);
    EthFabric Build(const Topology& topology) const;
    static uint32_t HostAddress(uint32_t hostIndex);
    /// fd00::(i+1): a unique-local IPv6 address per host (RFC 4193 prefix fd00::/8).
    static Ipv6Bytes HostAddress6(uint32_t hostIndex);

  private:
    ObjectFactory m_portFactory;
    ObjectFactory m_switchFactory;
    ObjectFactory m_mmuFactory;
    ObjectFactory m_cableFactory;
    DataRate m_hostRate;
    DataRate m_fabricRate;
};

} // namespace ns3

#endif
