#include "ib-static-subnet-helper.h"

#include "models/ib/ib-channel.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"

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

    // Min-hop routing: BFS over switches from each destination LID's attachment point.
    std::map<uint32_t, Ptr<IbSwitch>> switches;
    for (auto& n : m_nodes)
    {
        if (Ptr<IbSwitch> sw = n->GetObject<IbSwitch>())
        {
            switches[n->GetId()] = sw;
        }
    }
    std::map<uint32_t, std::vector<uint8_t>> lft; // switch node id -> LFT
    std::map<uint32_t, std::vector<uint64_t>> portLoad;
    for (auto& [id, sw] : switches)
    {
        lft[id].assign(nextLid, 255);
        portLoad[id].assign(sw->GetNPorts() + 1, 0);
    }
    for (auto& [lid, dstNode] : m_lidNode)
    {
        // Distance (in switch hops) from every switch to the destination.
        std::map<uint32_t, int> dist;
        std::deque<uint32_t> q;
        if (Ptr<IbSwitch> sw = dstNode->GetObject<IbSwitch>())
        {
            if (m_lidNode[lid] == dstNode && sw->GetLid() == lid)
            {
                dist[dstNode->GetId()] = 0;
                q.push_back(dstNode->GetId());
            }
        }
        else
        {
            for (auto& p : IbPortsOf(dstNode))
            {
                if (p->GetLid() != lid)
                {
                    continue;
                }
                Ptr<IbNetDevice> peer = p->GetPeer();
                if (peer && peer->IsSwitchPort())
                {
                    uint32_t sid = peer->GetNode()->GetId();
                    dist[sid] = 1;
                    lft[sid][lid] = peer->GetPortNumber();
                    q.push_back(sid);
                }
            }
        }
        while (!q.empty())
        {
            uint32_t sid = q.front();
            q.pop_front();
            Ptr<IbSwitch> sw = switches[sid];
            for (uint8_t pn = 1; pn <= sw->GetNPorts(); ++pn)
            {
                Ptr<IbNetDevice> peer = sw->GetPort(pn)->GetPeer();
                if (!peer || !peer->IsSwitchPort())
                {
                    continue;
                }
                uint32_t nid = peer->GetNode()->GetId();
                if (!dist.count(nid))
                {
                    dist[nid] = dist[sid] + 1;
                    q.push_back(nid);
                }
            }
        }
        // Each switch picks, among ports leading one hop closer, the one that carries the
        // least traffic so far. Traffic is counted as the number of channel adapters whose
        // route to this destination passes the port (all-to-all weighting), and switches are
        // handled farthest first so that a switch knows how many routes its upstream
        // neighbours sent through it. Counting routes rather than LFT entries keeps
        // destinations that share an upstream choice from also sharing the next one (the
        // collisions a plain per-entry balance produces on fat-trees).
        std::vector<std::pair<int, uint32_t>> order;
        for (auto& [sid, d] : dist)
        {
            order.emplace_back(-d, sid);
        }
        std::sort(order.begin(), order.end());
        std::map<uint32_t, uint64_t> through; // routes entering each switch for this LID
        for (auto& [sid, sw] : switches)
        {
            uint64_t hostsHere = 0;
            for (uint8_t pn = 1; pn <= sw->GetNPorts(); ++pn)
            {
                Ptr<IbNetDevice> peer = sw->GetPort(pn)->GetPeer();
                if (peer && !peer->IsSwitchPort() && peer->GetNode() != dstNode)
                {
                    hostsHere++;
                }
            }
            through[sid] = hostsHere;
        }
        for (auto& [negDist, sid] : order)
        {
            Ptr<IbSwitch> sw = switches[sid];
            if (dist[sid] == 0)
            {
                lft[sid][lid] = 0; // the switch itself
                continue;
            }
            if (lft[sid][lid] != 255)
            {
                continue; // the switch the destination CA hangs off
            }
            int best = -1;
            uint32_t bestNext = 0;
            for (uint8_t pn = 1; pn <= sw->GetNPorts(); ++pn)
            {
                Ptr<IbNetDevice> peer = sw->GetPort(pn)->GetPeer();
                if (!peer || !peer->IsSwitchPort())
                {
                    continue;
                }
                uint32_t nid = peer->GetNode()->GetId();
                if (dist.count(nid) && dist[nid] == dist[sid] - 1 &&
                    (best < 0 || portLoad[sid][pn] < portLoad[sid][best]))
                {
                    best = pn;
                    bestNext = nid;
                }
            }
            if (best > 0)
            {
                lft[sid][lid] = static_cast<uint8_t>(best);
                // Every switch carries at least its own entry's worth, so that destinations
                // nobody routes through here yet still spread.
                uint64_t w = std::max<uint64_t>(1, through[sid]);
                portLoad[sid][best] += w;
                through[bestNext] += through[sid];
            }
        }
    }
    // Program the tables block by block, as SubnSet(LinearForwardingTable) would.
    for (auto& [sid, sw] : switches)
    {
        const auto& table = lft[sid];
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
    Simulator::Schedule(m_activateAt - Simulator::Now(), &IbStaticSubnetHelper::Activate, this);
    return static_cast<uint32_t>(m_lidNode.size());
}

void
IbStaticSubnetHelper::Activate()
{
    // Two passes, as opensm's link manager: every port to Armed, then every port to Active.
    for (auto& n : m_nodes)
    {
        for (auto& p : IbPortsOf(n))
        {
            p->SetPortState(IbPortState::Armed);
        }
    }
    for (auto& n : m_nodes)
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
