#include "roce-helper.h"

#include "ns3/enum.h"
#include "ns3/node.h"
#include "ns3/nstime.h"
#include "ns3/uinteger.h"

namespace ns3
{

RoceHelper::RoceHelper()
    : RdmaHcaFactories("ns3::RoceRdmaPort")
{
    m_deviceFactory.Set("LinkLayer", EnumValue(static_cast<int>(RdmaLinkLayer::ETHERNET)));
    m_engineFactory.Set("CnpInterval", TimeValue(Time(0)));
}

std::vector<RoceHca>
RoceHelper::Install(const EthFabric& fabric) const
{
    std::vector<RoceHca> out;
    for (uint32_t i = 0; i < fabric.hosts.GetN(); ++i)
    {
        RoceHca h;
        h.node = fabric.hosts.Get(i);
        h.port = m_portFactory.Create<RoceRdmaPort>();
        h.port->SetNetDevice(fabric.HostPort(i));
        // Congestion control starts each QP at its port's rate.
        const Parts parts =
            Assemble(h.node, i, h.port, fabric.HostPort(i)->GetDataRate().GetBitRate());
        h.device = parts.device;
        h.engine = parts.engine;
        h.cc = parts.cc;
        h.memory = CreateObject<RdmaSimulatedMemory>();
        out.push_back(h);
    }
    return out;
}

} // namespace ns3
