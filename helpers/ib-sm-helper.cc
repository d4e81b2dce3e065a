#include "ib-sm-helper.h"

namespace ns3
{

uint64_t
IbFabricNodeGuid(uint32_t index)
{
    // Must match IbFabricHelper::Build.
    return 0x0002c90300000000ULL + (uint64_t(index + 1) << 8);
}

IbSmSubnet
IbSmSubnetFromTopology(const Topology& topology)
{
    IbSmSubnet s;
    for (uint32_t i = 0; i < topology.nodes.size(); ++i)
    {
        const TopoNode& tn = topology.nodes[i];
        const bool sw = tn.kind == TopoNodeKind::Switch;
        const uint64_t guid = IbFabricNodeGuid(i);
        int32_t idx = s.AddNode(guid, sw ? IbNodeType::Switch : IbNodeType::ChannelAdapter,
                                static_cast<uint8_t>(tn.ports));
        IbSmNode& n = s.Node(idx);
        n.description = tn.name;
        for (uint32_t p = 0; p <= tn.ports; ++p)
        {
            // A switch's ports all report the node's port 0 GUID; CA ports have their own.
            n.ports[p].guid = sw ? guid : guid + p;
        }
    }
    for (const TopoLink& l : topology.links)
    {
        s.Connect(static_cast<int32_t>(l.a), static_cast<uint8_t>(l.aPort),
                  static_cast<int32_t>(l.b), static_cast<uint8_t>(l.bPort));
    }
    return s;
}

} // namespace ns3
