#include "eth-fabric-helper.h"

#include "ns3/double.h"
#include "ns3/node.h"
#include "ns3/pointer.h"
#include "ns3/uinteger.h"

#include <deque>
#include <stdexcept>

namespace ns3
{

Ptr<EthNetDevice>
EthFabric::Port(uint32_t node, uint32_t port) const
{
    return ports.at(node).at(port - 1);
}

Ptr<EthNetDevice>
EthFabric::HostPort(uint32_t hostIndex) const
{
    return ports.at(hostNodes.at(hostIndex)).at(0);
}

Ptr<EthSwitch>
EthFabric::Switch(uint32_t node) const
{
    return switchAt.at(node);
}

std::vector<Ptr<EthSwitch>>
EthFabric::Switches() const
{
    std::vector<Ptr<EthSwitch>> v;
    for (auto& s : switchAt)
    {
        if (s)
        {
            v.push_back(s);
        }
    }
    return v;
}

std::vector<Ptr<EthNetDevice>>
EthFabric::AllPorts() const
{
    std::vector<Ptr<EthNetDevice>> v;
    for (auto& node : ports)
    {
        for (auto& p : node)
        {
            if (p)
            {
                v.push_back(p);
            }
        }
    }
    return v;
}

uint32_t
EthFabric::HostIp(uint32_t hostIndex) const
{
    return EthFabricHelper::HostAddress(hostIndex);
}

EthFabricHelper::EthFabricHelper()
    : m_hostRate(0),
      m_fabricRate(0)
{
    m_portFactory.SetTypeId("ns3::EthNetDevice");
    m_switchFactory.SetTypeId("ns3::EthSwitch");
    m_mmuFactory.SetTypeId("ns3::SharedBufferMmu");
    m_cableFactory.SetTypeId("ns3::EthChannel");
}

void
EthFabricHelper::SetPortAttribute(const std::string& name, const AttributeValue& value)
{
    m_portFactory.Set(name, value);
}

void
EthFabricHelper::SetSwitchAttribute(const std::string& name, const AttributeValue& value)
{
    m_switchFactory.Set(name, value);
}

void
EthFabricHelper::SetMmuAttribute(const std::string& name, const AttributeValue& value)
{
    m_mmuFactory.Set(name, value);
}

void
EthFabricHelper::SetCableAttribute(const std::string& name, const AttributeValue& value)
{
    m_cableFactory.Set(name, value);
}

void
EthFabricHelper::SetHostLinkRate(DataRate rate)
{
    m_hostRate = rate;
}

void
EthFabricHelper::SetFabricLinkRate(DataRate rate)
{
    m_fabricRate = rate;
}

Ipv6Bytes
EthFabric::HostIp6(uint32_t hostIndex) const
{
    return EthFabricHelper::HostAddress6(hostIndex);
}

Ipv6Bytes
EthFabricHelper::HostAddress6(uint32_t hostIndex)
{
    Ipv6Bytes a{};
    a[0] = 0xFD;
    const uint32_t id = hostIndex + 1;
    for (int i = 0; i < 4; ++i)
    {
        a[12 + i] = static_cast<uint8_t>(id >> (8 * (3 - i)));
    }
    return a;
}

uint32_t
EthFabricHelper::HostAddress(uint32_t hostIndex)
{
    return 0x0A000000u + hostIndex + 1; // 10.0.0.1, 10.0.0.2, ...
}

EthFabric
EthFabricHelper::Build(const Topology& topo) const
{
    const std::string problem = topo.Validate();
    if (!problem.empty())
    {
        throw std::invalid_argument("topology " + topo.name + ": " + problem);
    }
    EthFabric fab;
    fab.topology = topo;
    const uint32_t n = static_cast<uint32_t>(topo.nodes.size());
    fab.nodes.Create(n);
    fab.switchAt.assign(n, nullptr);
    fab.ports.resize(n);
    uint32_t hostCount = 0;
    std::vector<int64_t> hostIndexOf(n, -1);
    for (uint32_t i = 0; i < n; ++i)
    {
        const TopoNode& tn = topo.nodes[i];
        Ptr<Node> node = fab.nodes.Get(i);
        if (tn.kind == TopoNodeKind::Switch)
        {
            Ptr<EthSwitch> sw = m_switchFactory.Create<EthSwitch>();
            sw->SetAttribute("Mmu", PointerValue(m_mmuFactory.Create<SharedBufferMmu>()));
            sw->SetAttribute("EcmpSeed", UintegerValue(i + 1));
            node->AggregateObject(sw);
            fab.switchAt[i] = sw;
        }
        else
        {
            fab.hosts.Add(node);
            fab.hostNodes.push_back(i);
            hostIndexOf[i] = hostCount++;
        }
        fab.ports[i].assign(tn.ports, nullptr);
    }
    for (const TopoLink& l : topo.links)
    {
        Ptr<EthChannel> cable = m_cableFactory.Create<EthChannel>();
        if (l.lengthMeters >= 0)
        {
            cable->SetAttribute("Length", DoubleValue(l.lengthMeters));
        }
        const bool hostLink = topo.nodes[l.a].kind == TopoNodeKind::Host ||
                              topo.nodes[l.b].kind == TopoNodeKind::Host;
        const DataRate rate = hostLink ? m_hostRate : m_fabricRate;
        for (int end = 0; end < 2; ++end)
        {
            const uint32_t node = end == 0 ? l.a : l.b;
            const uint32_t port = end == 0 ? l.aPort : l.bPort;
            Ptr<EthNetDevice> dev = m_portFactory.Create<EthNetDevice>();
            if (rate.GetBitRate() > 0)
            {
                dev->SetAttribute("DataRate", DataRateValue(rate));
            }
            dev->SetMac(0x020000000000ULL | static_cast<uint64_t>(node & 0xFFFF) << 8 |
                        (port & 0xFF));
            fab.nodes.Get(node)->AddDevice(dev);
            fab.ports[node][port - 1] = dev;
            dev->Attach(cable);
        }
        fab.cables.push_back(cable);
    }
    // Switch ports are added in port-number order so that EthSwitch numbers match the topology.
    for (uint32_t i = 0; i < n; ++i)
    {
        for (uint32_t p = 0; p < fab.ports[i].size(); ++p)
        {
            if (!fab.ports[i][p])
            {
                // An unconnected port: still a port (numbers stay aligned), never up.
                fab.ports[i][p] = m_portFactory.Create<EthNetDevice>();
                fab.nodes.Get(i)->AddDevice(fab.ports[i][p]);
            }
            if (fab.switchAt[i])
            {
                fab.switchAt[i]->AddPort(fab.ports[i][p]);
            }
            else if (p == 0)
            {
                fab.ports[i][p]->SetIpv4(HostAddress(hostIndexOf[i]));
                fab.ports[i][p]->SetIpv6(HostAddress6(hostIndexOf[i]));
            }
        }
    }
    // Routes: from every host, a breadth-first search over switches (hosts never transit);
    // each switch gets every port whose neighbour is one hop closer (all equal-cost paths).
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> adj(n); // (port, neighbour)
    for (const TopoLink& l : topo.links)
    {
        adj[l.a].push_back({l.aPort, l.b});
        adj[l.b].push_back({l.bPort, l.a});
    }
    for (uint32_t h = 0; h < hostCount; ++h)
    {
        const uint32_t src = fab.hostNodes[h];
        std::vector<int64_t> dist(n, -1);
        std::deque<uint32_t> bfs{src};
        dist[src] = 0;
        while (!bfs.empty())
        {
            const uint32_t u = bfs.front();
            bfs.pop_front();
            if (u != src && topo.nodes[u].kind == TopoNodeKind::Host)
            {
                continue;
            }
            for (auto& [port, v] : adj[u])
            {
                if (dist[v] < 0)
                {
                    dist[v] = dist[u] + 1;
                    bfs.push_back(v);
                }
            }
        }
        for (uint32_t s = 0; s < n; ++s)
        {
            if (!fab.switchAt[s] || dist[s] < 0)
            {
                continue;
            }
            for (auto& [port, v] : adj[s])
            {
                if (dist[v] == dist[s] - 1 &&
                    (v == src || topo.nodes[v].kind == TopoNodeKind::Switch))
                {
                    fab.switchAt[s]->AddRoute(HostAddress(h), static_cast<uint16_t>(port));
                    fab.switchAt[s]->AddRoute6(HostAddress6(h), static_cast<uint16_t>(port));
                }
            }
        }
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        std::string err;
        if (fab.switchAt[i])
        {
            fab.switchAt[i]->SetupMmu();
            err = fab.switchAt[i]->Validate();
        }
        else
        {
            err = fab.ports[i][0]->Validate();
        }
        if (!err.empty())
        {
            throw std::invalid_argument(topo.nodes[i].name + ": " + err);
        }
    }
    return fab;
}

} // namespace ns3
