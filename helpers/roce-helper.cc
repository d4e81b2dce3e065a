#include "roce-helper.h"

#include "ns3/enum.h"
#include "ns3/node.h"
#include "ns3/nstime.h"
#include "ns3/uinteger.h"

namespace ns3
{

RoceHelper::RoceHelper()
{
    m_deviceFactory.SetTypeId("ns3::RdmaDevice");
    m_deviceFactory.Set("LinkLayer", EnumValue(static_cast<int>(RdmaLinkLayer::ETHERNET)));
    m_engineFactory.SetTypeId("ns3::RdmaEngine");
    m_engineFactory.Set("CnpInterval", TimeValue(Time(0)));
    m_portFactory.SetTypeId("ns3::RoceRdmaPort");
    m_ccFactory.SetTypeId("ns3::RdmaCcNone");
}

void
RoceHelper::SetDeviceAttribute(const std::string& name, const AttributeValue& value)
{
    m_deviceFactory.Set(name, value);
}

void
RoceHelper::SetEngineAttribute(const std::string& name, const AttributeValue& value)
{
    m_engineFactory.Set(name, value);
}

void
RoceHelper::SetPortAttribute(const std::string& name, const AttributeValue& value)
{
    m_portFactory.Set(name, value);
}

void
RoceHelper::SetCongestionControl(const std::string& typeId)
{
    m_ccFactory.SetTypeId(typeId);
}

void
RoceHelper::SetCongestionControlAttribute(const std::string& name, const AttributeValue& value)
{
    m_ccFactory.Set(name, value);
}

std::vector<RoceHca>
RoceHelper::Install(const EthFabric& fabric) const
{
    std::vector<RoceHca> out;
    for (uint32_t i = 0; i < fabric.hosts.GetN(); ++i)
    {
        RoceHca h;
        h.node = fabric.hosts.Get(i);
        h.device = m_deviceFactory.Create<RdmaDevice>();
        h.device->AssignStreams(1000 + i);
        h.engine = m_engineFactory.Create<RdmaEngine>();
        // Congestion control starts each QP at its port's rate.
        h.engine->SetAttribute("LineRate",
                               UintegerValue(fabric.HostPort(i)->GetDataRate().GetBitRate()));
        h.port = m_portFactory.Create<RoceRdmaPort>();
        h.port->SetNetDevice(fabric.HostPort(i));
        h.engine->SetDevice(h.device);
        h.engine->AddPort(h.port);
        h.cc = m_ccFactory.Create<RdmaCongestionControl>();
        h.engine->SetCongestionControl(h.cc);
        h.memory = CreateObject<RdmaSimulatedMemory>();
        h.node->AggregateObject(h.device);
        h.node->AggregateObject(h.engine);
        out.push_back(h);
    }
    return out;
}

} // namespace ns3
