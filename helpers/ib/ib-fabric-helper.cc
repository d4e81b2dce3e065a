#include "ib-fabric-helper.h"

#include "models/ib/ib-channel.h"
#include "models/ib/ib-link-rate.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/node.h"
#include "ns3/uinteger.h"

#include <stdexcept>

namespace ns3
{

namespace
{
constexpr uint64_t kGuidBase = 0x0002c90300000000ULL;
}

Ptr<IbNetDevice>
IbFabric::Port(uint32_t node, uint32_t port) const
{
    if (node >= ports.size() || port == 0 || port > ports[node].size())
    {
        return nullptr;
    }
    return ports[node][port - 1];
}

Ptr<IbNetDevice>
IbFabric::HostPort(uint32_t hostIndex) const
{
    return hostIndex < hostNodes.size() ? Port(hostNodes[hostIndex], 1) : nullptr;
}

std::vector<Ptr<IbNetDevice>>
IbFabric::AllPorts() const
{
    std::vector<Ptr<IbNetDevice>> all;
    for (auto& v : ports)
    {
        all.insert(all.end(), v.begin(), v.end());
    }
    return all;
}

IbFabricHelper::IbFabricHelper()
{
    m_portFactory.SetTypeId("ns3::IbNetDevice");
    m_switchFactory.SetTypeId("ns3::IbSwitch");
    m_cableFactory.SetTypeId("ns3::IbChannel");
}

void
IbFabricHelper::SetPortAttribute(const std::string& name, const AttributeValue& value)
{
    m_portFactory.Set(name, value);
}

void
IbFabricHelper::SetSwitchAttribute(const std::string& name, const AttributeValue& value)
{
    m_switchFactory.Set(name, value);
}

void
IbFabricHelper::SetCableAttribute(const std::string& name, const AttributeValue& value)
{
    m_cableFactory.Set(name, value);
}

void
IbFabricHelper::SetDefaultRate(const std::string& rate)
{
    IbLinkRate r;
    if (!rate.empty() && !IbLinkRate::Parse(rate, r))
    {
        throw std::invalid_argument("invalid InfiniBand link rate '" + rate +
                                    "' (expected e.g. 4xHDR, 1xSDR, 12xNDR)");
    }
    m_defaultRate = rate;
}

IbFabric
IbFabricHelper::Build(const Topology& topology) const
{
    std::string problem = topology.Validate();
    if (!problem.empty())
    {
        throw std::invalid_argument("topology '" + topology.name + "': " + problem);
    }
    IbFabric fabric;
    fabric.topology = topology;
    fabric.ports.resize(topology.nodes.size());
    for (uint32_t i = 0; i < topology.nodes.size(); ++i)
    {
        const TopoNode& tn = topology.nodes[i];
        Ptr<Node> node = CreateObject<Node>();
        fabric.nodes.Add(node);
        const uint64_t guid = kGuidBase + (uint64_t(i + 1) << 8);
        Ptr<IbSwitch> sw;
        if (tn.kind == TopoNodeKind::Switch)
        {
            sw = m_switchFactory.Create<IbSwitch>();
            sw->SetNodeGuid(guid);
            node->AggregateObject(sw);
            fabric.switches.Add(node);
        }
        else
        {
            fabric.hosts.Add(node);
            fabric.hostNodes.push_back(i);
        }
        for (uint32_t p = 1; p <= tn.ports; ++p)
        {
            Ptr<IbNetDevice> dev = m_portFactory.Create<IbNetDevice>();
            dev->SetPortGuid(guid + p);
            node->AddDevice(dev);
            if (sw)
            {
                sw->AddPort(dev);
            }
            else
            {
                dev->SetPortNumber(static_cast<uint8_t>(p));
            }
            fabric.ports[i].push_back(dev);
        }
    }
    for (const TopoLink& l : topology.links)
    {
        IbLinkRate rate;
        const std::string& text = l.rate.empty() ? m_defaultRate : l.rate;
        if (!text.empty() && !IbLinkRate::Parse(text, rate))
        {
            throw std::invalid_argument("invalid link rate '" + text + "' on " +
                                        topology.PortName(l.a, l.aPort));
        }
        Ptr<IbChannel> cable = m_cableFactory.Create<IbChannel>();
        if (l.lengthMeters >= 0)
        {
            cable->SetAttribute("Length", DoubleValue(l.lengthMeters));
        }
        Ptr<IbNetDevice> a = fabric.Port(l.a, l.aPort);
        Ptr<IbNetDevice> b = fabric.Port(l.b, l.bPort);
        // A rate named by the link or the helper sets both ends; otherwise the ports keep their
        // LinkWidth/LinkSpeed attributes (so `--set ns3::IbNetDevice::LinkSpeed=EDR` applies).
        if (!text.empty())
        {
            for (auto& d : {a, b})
            {
                d->SetAttribute("LinkWidth", UintegerValue(rate.width));
                d->SetAttribute("LinkSpeed", EnumValue(static_cast<int>(rate.speed)));
            }
        }
        a->Attach(cable);
        b->Attach(cable);
        fabric.cables.push_back(cable);
    }
    return fabric;
}

} // namespace ns3
