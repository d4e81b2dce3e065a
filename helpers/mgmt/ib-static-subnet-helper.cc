#include "ib-static-subnet-helper.h"

#include "models/ib/ib-channel.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-routing-engine.h"

#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <deque>
#include <set>

namespace ns3
{

std::vector<Ptr<IbNetDevice>>
IbPortsOf(Ptr<Node> node)
{
    std::vector<Ptr<IbNetDevice>> ports;
    for (uint32_t i = 0; i < node->GetNDevices(); ++i)
    {
        Ptr<IbNetDevice> d = DynamicCast<IbNetDevice>(node->GetDevice(i));
        if (d)
        {
            ports.push_back(d);
        }
    }
    return ports;
}

namespace
{
uint64_t
NodeGuid(Ptr<Node> n)
{
    Ptr<IbSwitch> sw = n->GetObject<IbSwitch>();
    if (sw)
    {
        return sw->GetNodeGuid();
    }
    auto ports = IbPortsOf(n);
    return ports.empty() ? 0 : ports[0]->GetPortGuid();
}
} // namespace

uint32_t
IbStaticSubnetHelper::Configure(const NodeContainer& nodes)
{
    // Discovery: follow cables from every given node.
    std::set<uint32_t> seen;
    std::deque<Ptr<Node>> todo(nodes.Begin(), nodes.End());
    m_nodes.clear();
    while (!todo.empty())
    {
        Ptr<Node> n = todo.front();
        todo.pop_front();
        if (!seen.insert(n->GetId()).second)
        {
            continue;
        }
        m_nodes.push_back(n);
        for (auto& p : IbPortsOf(n))
        {
            Ptr<IbNetDevice> peer = p->GetPeer();
            if (peer && !seen.count(peer->GetNode()->GetId()))
            {
                todo.push_back(peer->GetNode());
            }
        }
    }
    // LIDs in GUID order (then node id), so the assignment is stable across runs.
    std::sort(m_nodes.begin(), m_nodes.end(), [](Ptr<Node> a, Ptr<Node> b) {
        uint64_t ga = NodeGuid(a);
        uint64_t gb = NodeGuid(b);
        return ga != gb ? ga < gb : a->GetId() < b->GetId();
    });
    m_nodeLid.clear();
    m_lidNode.clear();
    uint16_t nextLid = 1;
    for (auto& n : m_nodes)
    {
        uint16_t lid = nextLid++;
        m_nodeLid[n->GetId()] = lid;
        m_lidNode[lid] = n;
        Ptr<IbSwitch> sw = n->GetObject<IbSwitch>();
        if (sw)
        {
            sw->SetLid(lid);
        }
        else
        {
            // One LID per CA node: its first port. Further ports of a multi-port CA get the next
            // LIDs.
            auto ports = IbPortsOf(n);
            for (size_t i = 0; i < ports.size(); ++i)
            {
                uint16_t plid = i == 0 ? lid : nextLid++;
                ports[i]->SetLid(plid);
                if (i > 0)
                {
                    m_lidNode[plid] = n;
                }
            }
        }
    }
    const uint16_t smLid = m_nodes.empty() ? 0 : m_nodeLid[m_nodes.front()->GetId()];
    for (auto& n : m_nodes)
    {
        for (auto& p : IbPortsOf(n))
        {
            p->SetSmLid(smLid);
            p->SetOperationalVls(std::min<uint8_t>(m_opVls, p->GetVlCap()));
        }
    }

    // Min-hop routes from the routing engine the subnet manager uses (models/mgmt), on the
    // graph as the cables describe it, written block by block as SubnSet(LinearForwardingTable)
    // would.
    IbSmSubnet graph;
    std::map<uint32_t, int32_t> index; // node id -> graph node
    for (auto& n : m_nodes)
    {
        Ptr<IbSwitch> sw = n->GetObject<IbSwitch>();
        auto ports = IbPortsOf(n);
        const uint8_t count = sw ? sw->GetNPorts() : static_cast<uint8_t>(ports.size());
        // The graph only needs a unique key per node: the ns-3 node id (GUIDs may be unset).
        const int32_t i = graph.AddNode(n->GetId() + 1ULL,
                                        sw ? IbNodeType::Switch : IbNodeType::ChannelAdapter,
                                        count);
        index[n->GetId()] = i;
        if (sw)
        {
            graph.Node(i).lid = sw->GetLid();
            continue;
        }
        for (size_t k = 0; k < ports.size(); ++k)
        {
            graph.Node(i).ports[k + 1].lid = ports[k]->GetLid();
        }
    }
    auto portIndex = [](Ptr<IbNetDevice> p) {
        if (p->IsSwitchPort())
        {
            return p->GetPortNumber();
        }
        auto ports = IbPortsOf(p->GetNode());
        return static_cast<uint8_t>(std::find(ports.begin(), ports.end(), p) - ports.begin() + 1);
    };
    for (auto& n : m_nodes)
    {
        for (auto& p : IbPortsOf(n))
        {
            Ptr<IbNetDevice> peer = p->GetPeer();
            if (peer && index.count(peer->GetNode()->GetId()))
            {
                graph.Connect(index[n->GetId()], portIndex(p), index[peer->GetNode()->GetId()],
                              portIndex(peer));
            }
        }
    }
    graph.IndexLids();
    const IbRoutingTables tables = IbComputeRoutes(graph, IbRoutingAlgorithm::MinHop);
    for (auto& n : m_nodes)
    {
        Ptr<IbSwitch> sw = n->GetObject<IbSwitch>();
        if (!sw)
        {
            continue;
        }
        const auto& table = tables.lft[index[n->GetId()]];
        for (uint16_t block = 0; block * 64 < table.size(); ++block)
        {
            uint8_t entries[64];
            for (int i = 0; i < 64; ++i)
            {
                size_t lid = block * 64 + i;
                entries[i] = lid < table.size() ? table[lid] : 255;
            }
            sw->SetLftBlock(block, entries);
        }
        sw->SetLinearFdbTop(static_cast<uint16_t>(table.size() - 1));
    }
    // The event gets its own copy of the nodes, not `this`: helpers are used as temporaries
    // (`IbStaticSubnetHelper().Configure(nodes)`), and the activation runs after they are gone.
    Simulator::Schedule(m_activateAt - Simulator::Now(), &IbStaticSubnetHelper::Activate,
                        m_nodes);
    return static_cast<uint32_t>(m_lidNode.size());
}

void
IbStaticSubnetHelper::Activate(std::vector<Ptr<Node>> nodes)
{
    // Two passes, as opensm's link manager: every port to Armed, then every port to Active.
    for (auto& n : nodes)
    {
        for (auto& p : IbPortsOf(n))
        {
            p->SetPortState(IbPortState::Armed);
        }
    }
    for (auto& n : nodes)
    {
        for (auto& p : IbPortsOf(n))
        {
            p->SetPortState(IbPortState::Active);
        }
    }
}

uint16_t
IbStaticSubnetHelper::GetLid(Ptr<Node> node) const
{
    auto it = m_nodeLid.find(node->GetId());
    return it == m_nodeLid.end() ? 0 : it->second;
}

std::vector<IbRouteHop>
IbStaticSubnetHelper::GetRoute(uint16_t fromLid, uint16_t toLid) const
{
    std::vector<IbRouteHop> route;
    auto it = m_lidNode.find(fromLid);
    if (it == m_lidNode.end())
    {
        return {};
    }
    Ptr<Node> n = it->second;
    if (!n->GetObject<IbSwitch>())
    {
        auto ports = IbPortsOf(n);
        if (ports.empty() || !ports[0]->GetPeer())
        {
            return {};
        }
        route.push_back({n->GetId(), ports[0]->GetPortNumber()});
        n = ports[0]->GetPeer()->GetNode();
    }
    for (int guard = 0; guard < 64; ++guard)
    {
        Ptr<IbSwitch> sw = n->GetObject<IbSwitch>();
        if (!sw)
        {
            return {};
        }
        if (sw->GetLid() == toLid)
        {
            return route;
        }
        uint8_t out = sw->GetLftEntry(toLid);
        if (out == 255 || out == 0 || !sw->GetPort(out) || !sw->GetPort(out)->GetPeer())
        {
            return {};
        }
        route.push_back({n->GetId(), out});
        Ptr<IbNetDevice> peer = sw->GetPort(out)->GetPeer();
        if (!peer->IsSwitchPort())
        {
            return peer->GetLid() == toLid ? route : std::vector<IbRouteHop>{};
        }
        n = peer->GetNode();
    }
    return {}; // a loop
}

int
IbStaticSubnetHelper::GetRouteHops(uint16_t fromLid, uint16_t toLid) const
{
    auto route = GetRoute(fromLid, toLid);
    return route.empty() ? -1 : static_cast<int>(route.size());
}

} // namespace ns3
