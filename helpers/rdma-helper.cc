#include "rdma-helper.h"

#include "ns3/node.h"

namespace ns3
{

RdmaHelper::RdmaHelper()
{
    m_deviceFactory.SetTypeId("ns3::RdmaDevice");
    m_engineFactory.SetTypeId("ns3::RdmaEngine");
    m_portFactory.SetTypeId("ns3::IbRdmaPort");
    m_ccFactory.SetTypeId("ns3::RdmaCcNone");
}

void
RdmaHelper::SetDeviceAttribute(const std::string& name, const AttributeValue& value)
{
    m_deviceFactory.Set(name, value);
}

void
RdmaHelper::SetEngineAttribute(const std::string& name, const AttributeValue& value)
{
    m_engineFactory.Set(name, value);
}

void
RdmaHelper::SetPortAttribute(const std::string& name, const AttributeValue& value)
{
    m_portFactory.Set(name, value);
}

void
RdmaHelper::SetCongestionControl(const std::string& typeId)
{
    m_ccFactory.SetTypeId(typeId);
}

void
RdmaHelper::SetCongestionControlAttribute(const std::string& name, const AttributeValue& value)
{
    m_ccFactory.Set(name, value);
}

std::vector<RdmaHca>
RdmaHelper::Install(const IbFabric& fabric) const
{
    std::vector<RdmaHca> out;
    for (uint32_t i = 0; i < fabric.hosts.GetN(); ++i)
    {
        RdmaHca h;
        h.node = fabric.hosts.Get(i);
        h.device = m_deviceFactory.Create<RdmaDevice>();
        h.device->AssignStreams(1000 + i);
        h.engine = m_engineFactory.Create<RdmaEngine>();
        h.port = m_portFactory.Create<IbRdmaPort>();
        h.port->SetNetDevice(fabric.HostPort(i));
        h.engine->SetDevice(h.device);
        h.engine->AddPort(h.port);
        h.engine->SetCongestionControl(m_ccFactory.Create<RdmaCongestionControl>());
        h.memory = CreateObject<RdmaSimulatedMemory>();
        h.node->AggregateObject(h.device);
        h.node->AggregateObject(h.engine);
        out.push_back(h);
    }
    return out;
}

} // namespace ns3
