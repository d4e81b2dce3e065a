#include "rdma-hca-factories.h"

#include "ns3/uinteger.h"

namespace ns3
{

RdmaHcaFactories::RdmaHcaFactories(const std::string& portTypeId)
{
    m_deviceFactory.SetTypeId("ns3::RdmaDevice");
    m_engineFactory.SetTypeId("ns3::RdmaEngine");
    m_portFactory.SetTypeId(portTypeId);
    m_ccFactory.SetTypeId("ns3::RdmaCcNone");
}

void
RdmaHcaFactories::SetDeviceAttribute(const std::string& name, const AttributeValue& value)
{
    m_deviceFactory.Set(name, value);
}

void
RdmaHcaFactories::SetEngineAttribute(const std::string& name, const AttributeValue& value)
{
    m_engineFactory.Set(name, value);
}

void
RdmaHcaFactories::SetPortAttribute(const std::string& name, const AttributeValue& value)
{
    m_portFactory.Set(name, value);
}

void
RdmaHcaFactories::SetCongestionControl(const std::string& typeId)
{
    m_ccFactory.SetTypeId(typeId);
}

void
RdmaHcaFactories::SetCongestionControlAttribute(const std::string& name,
                                                const AttributeValue& value)
{
    m_ccFactory.Set(name, value);
}

RdmaHcaFactories::Parts
RdmaHcaFactories::Assemble(Ptr<Node> node,
                           uint32_t index,
                           Ptr<RdmaLinkPort> port,
                           uint64_t lineRateBps) const
{
    Parts p;
    p.device = m_deviceFactory.Create<RdmaDevice>();
    p.device->AssignStreams(1000 + index);
    p.engine = m_engineFactory.Create<RdmaEngine>();
    if (lineRateBps != 0)
    {
        p.engine->SetAttribute("LineRate", UintegerValue(lineRateBps));
    }
    p.engine->SetDevice(p.device);
    p.engine->AddPort(port);
    p.cc = m_ccFactory.Create<RdmaCongestionControl>();
    p.engine->SetCongestionControl(p.cc);
    node->AggregateObject(p.device);
    node->AggregateObject(p.engine);
    return p;
}

} // namespace ns3
