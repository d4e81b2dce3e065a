#include "rdma-helper.h"

#include "ns3/node.h"

namespace ns3
{

RdmaHelper::RdmaHelper()
    : RdmaHcaFactories("ns3::IbRdmaPort")
{
}

std::vector<RdmaHca>
RdmaHelper::Install(const IbFabric& fabric) const
{
    std::vector<RdmaHca> out;
    for (uint32_t i = 0; i < fabric.hosts.GetN(); ++i)
    {
        RdmaHca h;
        h.node = fabric.hosts.Get(i);
        h.port = m_portFactory.Create<IbRdmaPort>();
        h.port->SetNetDevice(fabric.HostPort(i));
        const Parts parts = Assemble(h.node, i, h.port);
        h.device = parts.device;
        h.engine = parts.engine;
        h.memory = CreateObject<RdmaSimulatedMemory>();
        out.push_back(h);
    }
    return out;
}

} // namespace ns3
