#include "eth-multicast-router.h"

#include "models/common/ip-address-bytes.h"

#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EthMulticastRouter");
NS_OBJECT_ENSURE_REGISTERED(EthMulticastRouter);

namespace
{
/// A cable between two switches, seen from one end: the far switch (by discovery index), the
/// port at this end and the port at the far end.
struct SwitchLink
{
    uint32_t to;
    uint16_t port;
    uint16_t peerPort;
};

constexpr uint32_t kUnreached = UINT32_MAX;

/// Hops from switch `from` to every switch (kUnreached where no path goes).
std::vector<uint32_t>
HopsFrom(const std::vector<std::vector<SwitchLink>>& adj, uint32_t from)
{
    std::vector<uint32_t> hops(adj.size(), kUnreached);
    std::vector<uint32_t> queue{from};
    hops[from] = 0;
    for (size_t q = 0; q < queue.size(); ++q)
    {
        const uint32_t u = queue[q];
        for (const SwitchLink& l : adj[u])
        {
            if (hops[l.to] == kUnreached)
            {
                hops[l.to] = hops[u] + 1;
                queue.push_back(l.to);
            }
        }
    }
    return hops;
}
} // namespace

TypeId
EthMulticastRouter::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EthMulticastRouter")
            .SetParent<Object>()
            .SetGroupName("Cnuas")
            .AddConstructor<EthMulticastRouter>()
            .AddAttribute("AvoidDownLinks",
                          "Build trees over switch-to-switch cables whose link is up only (what "
                          "a converged routing protocol sees); false uses every cable. Changes "
                          "take effect at the next Join, Leave or Recompute.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&EthMulticastRouter::m_avoidDownLinks),
                          MakeBooleanChecker())
            .AddAttribute("SenderRoutes",
                          "Give every switch off a group's tree one route toward the tree, so "
                          "that a host that is not a member can send to the group (IP "
                          "multicast lets any host send, RFC 1112 §4); false: only switches of "
                          "the tree hold the group, and a non-member's frame dies at any other.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&EthMulticastRouter::m_senderRoutes),
                          MakeBooleanChecker())
            .AddTraceSource("Join",
                            "A host port joined a group: (group, host port).",
                            MakeTraceSourceAccessor(&EthMulticastRouter::m_joinTrace),
                            "ns3::EthMulticastRouter::MembershipCallback")
            .AddTraceSource("Leave",
                            "A host port left a group: (group, host port).",
                            MakeTraceSourceAccessor(&EthMulticastRouter::m_leaveTrace),
                            "ns3::EthMulticastRouter::MembershipCallback")
            .AddTraceSource("RouteWritten",
                            "A switch's route for a group was written: (switch, group, ports; "
                            "none when the entry was cleared).",
                            MakeTraceSourceAccessor(&EthMulticastRouter::m_routeTrace),
                            "ns3::EthMulticastRouter::RouteCallback");
    return tid;
}

EthMulticastRouter::EthMulticastRouter() = default;
EthMulticastRouter::~EthMulticastRouter() = default;

void
EthMulticastRouter::DoDispose()
{
    m_groups.clear();
    Object::DoDispose();
}

bool
EthMulticastRouter::IsGroup(const Ipv6Bytes& group)
{
    return IsMulticastAddress(group);
}

Ipv6Bytes
EthMulticastRouter::GroupFromIpv4(uint32_t group)
{
    Ipv6Bytes a{};
    a[10] = 0xFF;
    a[11] = 0xFF;
    a[12] = static_cast<uint8_t>(group >> 24);
    a[13] = static_cast<uint8_t>(group >> 16);
    a[14] = static_cast<uint8_t>(group >> 8);
    a[15] = static_cast<uint8_t>(group);
    return a;
}

bool
EthMulticastRouter::Join(Ptr<EthNetDevice> hostPort, const Ipv6Bytes& group)
{
    if (!hostPort || hostPort->GetSwitch() || !hostPort->GetPeer() || !IsGroup(group))
    {
        NS_LOG_DEBUG("join refused: not a cabled host port, or not a group");
        return false;
    }
    Group& g = m_groups[group];
    if (std::find(g.members.begin(), g.members.end(), hostPort) != g.members.end())
    {
        return false;
    }
    // Members in MAC order (then join order), so that a group's tree does not depend on the
    // order its members joined in.
    auto before = [](const Ptr<EthNetDevice>& a, const Ptr<EthNetDevice>& b) {
        return a->GetMac() != b->GetMac() ? a->GetMac() < b->GetMac()
                                          : a->GetIpv4() < b->GetIpv4();
    };
    g.members.insert(std::upper_bound(g.members.begin(), g.members.end(), hostPort, before),
                     hostPort);
    m_joins++;
    m_joinTrace(group, hostPort);
    Program(group, g);
    return true;
}

bool
EthMulticastRouter::Leave(Ptr<EthNetDevice> hostPort, const Ipv6Bytes& group)
{
    auto it = m_groups.find(group);
    if (!hostPort || it == m_groups.end())
    {
        return false;
    }
    Group& g = it->second;
    auto m = std::find(g.members.begin(), g.members.end(), hostPort);
    if (m == g.members.end())
    {
        return false;
    }
    g.members.erase(m);
    m_leaves++;
    m_leaveTrace(group, hostPort);
    Program(group, g); // with no member left: every entry cleared
    if (g.members.empty())
    {
        m_groups.erase(it);
    }
    return true;
}

uint32_t
EthMulticastRouter::LeaveAll(Ptr<EthNetDevice> hostPort)
{
    std::vector<Ipv6Bytes> in;
    for (const auto& [group, g] : m_groups)
    {
        if (std::find(g.members.begin(), g.members.end(), hostPort) != g.members.end())
        {
            in.push_back(group);
        }
    }
    for (const Ipv6Bytes& group : in)
    {
        Leave(hostPort, group);
    }
    return static_cast<uint32_t>(in.size());
}

void
EthMulticastRouter::Recompute()
{
    for (auto& [group, g] : m_groups)
    {
        Program(group, g);
    }
}

bool
EthMulticastRouter::IsMember(Ptr<EthNetDevice> hostPort, const Ipv6Bytes& group) const
{
    auto it = m_groups.find(group);
    return it != m_groups.end() && std::find(it->second.members.begin(),
                                             it->second.members.end(),
                                             hostPort) != it->second.members.end();
}

std::vector<Ptr<EthNetDevice>>
EthMulticastRouter::GetMembers(const Ipv6Bytes& group) const
{
    auto it = m_groups.find(group);
    return it == m_groups.end() ? std::vector<Ptr<EthNetDevice>>() : it->second.members;
}

std::vector<Ipv6Bytes>
EthMulticastRouter::GetGroups() const
{
    std::vector<Ipv6Bytes> out;
    for (const auto& [group, g] : m_groups)
    {
        out.push_back(group);
    }
    return out;
}

Ptr<EthSwitch>
EthMulticastRouter::GetRoot(const Ipv6Bytes& group) const
{
    auto it = m_groups.find(group);
    return it == m_groups.end() ? nullptr : it->second.root;
}

std::vector<Ptr<EthSwitch>>
EthMulticastRouter::GetTreeSwitches(const Ipv6Bytes& group) const
{
    auto it = m_groups.find(group);
    return it == m_groups.end() ? std::vector<Ptr<EthSwitch>>() : it->second.tree;
}

std::vector<Ptr<EthSwitch>>
EthMulticastRouter::GetRouteSwitches(const Ipv6Bytes& group) const
{
    auto it = m_groups.find(group);
    return it == m_groups.end() ? std::vector<Ptr<EthSwitch>>() : it->second.programmed;
}

void
EthMulticastRouter::Program(const Ipv6Bytes& group, Group& g)
{
    // The switches, numbered as found: first the members' switches in member order, then
    // breadth first along the cables, each switch's ports in port-number order.
    std::vector<EthSwitch*> switches;
    std::unordered_map<EthSwitch*, uint32_t> indexOf; // looked up only, never iterated
    std::vector<std::vector<uint16_t>> routes;        // by switch: the ports being gathered
    std::vector<uint32_t> memberSwitches;             // distinct, in member order
    auto find = [&](EthSwitch* sw) {
        auto [it, added] = indexOf.emplace(sw, static_cast<uint32_t>(switches.size()));
        if (added)
        {
            switches.push_back(sw);
            routes.emplace_back();
        }
        return it->second;
    };
    for (const Ptr<EthNetDevice>& m : g.members)
    {
        Ptr<EthNetDevice> peer = m->GetPeer();
        EthSwitch* sw = peer ? peer->GetSwitch() : nullptr;
        if (!sw)
        {
            continue; // cabled to another host: nothing to route
        }
        const uint32_t i = find(sw);
        if (routes[i].empty())
        {
            memberSwitches.push_back(i);
        }
        routes[i].push_back(peer->GetPortNumber()); // the member's own port
    }
    std::vector<std::vector<SwitchLink>> adj;
    for (size_t q = 0; q < switches.size(); ++q) // `switches` grows: it is the BFS queue
    {
        EthSwitch* sw = switches[q];
        adj.resize(switches.size());
        for (uint16_t p = 1; p <= sw->GetNPorts(); ++p)
        {
            Ptr<EthNetDevice> port = sw->GetPort(p);
            Ptr<EthNetDevice> peer = port->GetPeer();
            EthSwitch* next = peer ? peer->GetSwitch() : nullptr;
            if (!next || next == sw || (m_avoidDownLinks && !port->LinkUp()))
            {
                continue; // a host, a cable looped back to this switch, or a link down
            }
            const uint32_t j = find(next);
            adj.resize(switches.size());
            adj[q].push_back({j, p, peer->GetPortNumber()});
        }
    }

    // One tree per set of member switches that can reach each other (one, unless the fabric
    // is cut in pieces).
    const uint32_t n = static_cast<uint32_t>(switches.size());
    std::vector<std::vector<uint32_t>> hopsFromMember;
    for (uint32_t m : memberSwitches)
    {
        hopsFromMember.push_back(HopsFrom(adj, m));
    }
    std::vector<bool> inTree(n, false);
    g.root = nullptr;
    for (size_t first = 0; first < memberSwitches.size(); ++first)
    {
        if (inTree[memberSwitches[first]])
        {
            continue;
        }
        // The members of this piece, and its root: the switch whose farthest member switch is
        // nearest (a centre of the members; ties to the first found).
        std::vector<size_t> piece;
        for (size_t k = 0; k < memberSwitches.size(); ++k)
        {
            if (hopsFromMember[first][memberSwitches[k]] != kUnreached)
            {
                piece.push_back(k);
            }
        }
        uint32_t root = memberSwitches[first];
        uint32_t rootReach = kUnreached;
        for (uint32_t v = 0; v < n; ++v)
        {
            if (hopsFromMember[first][v] == kUnreached)
            {
                continue;
            }
            uint32_t farthest = 0;
            for (size_t k : piece)
            {
                farthest = std::max(farthest, hopsFromMember[k][v]);
            }
            if (farthest < rootReach)
            {
                rootReach = farthest;
                root = v;
            }
        }
        if (!g.root)
        {
            g.root = switches[root];
        }
        // Breadth first from the root: each switch's parent link (the first shortest one, by
        // port number), so that the tree holds one path, and one cable, between any two.
        std::vector<uint32_t> parent(n, kUnreached);
        std::vector<uint16_t> upPort(n, 0);   // this switch's port to its parent
        std::vector<uint16_t> downPort(n, 0); // the parent's port to this switch
        std::vector<uint32_t> queue{root};
        parent[root] = root;
        for (size_t q = 0; q < queue.size(); ++q)
        {
            const uint32_t u = queue[q];
            for (const SwitchLink& l : adj[u])
            {
                if (parent[l.to] == kUnreached)
                {
                    parent[l.to] = u;
                    upPort[l.to] = l.peerPort;
                    downPort[l.to] = l.port;
                    queue.push_back(l.to);
                }
            }
        }
        // Pruned to the branches that lead to member switches.
        inTree[root] = true;
        for (size_t k : piece)
        {
            for (uint32_t v = memberSwitches[k]; !inTree[v]; v = parent[v])
            {
                inTree[v] = true;
                routes[v].push_back(upPort[v]);
                routes[parent[v]].push_back(downPort[v]);
            }
        }
    }

    // Senders that are not members: each switch off the tree gets one port, its first shortest
    // way toward the tree (breadth first from every tree switch at once), so that a frame a
    // non-member sends climbs to the tree and spreads along it from the first tree switch, as
    // PIM's (*,G) state toward the rendezvous point carries a source's packets (RFC 7761
    // §4.2). No tree switch sends the group's frames to a switch off the tree (its route holds
    // tree links and member ports only), and each step off the tree comes nearer to it, so
    // nothing loops and no member gets a frame twice.
    std::vector<bool> towardTree(n, false);
    if (m_senderRoutes)
    {
        std::vector<uint32_t> queue;
        std::vector<bool> seen(inTree);
        for (uint32_t v = 0; v < n; ++v)
        {
            if (inTree[v])
            {
                queue.push_back(v);
            }
        }
        for (size_t q = 0; q < queue.size(); ++q)
        {
            const uint32_t u = queue[q];
            for (const SwitchLink& l : adj[u])
            {
                if (!seen[l.to])
                {
                    seen[l.to] = true;
                    towardTree[l.to] = true;
                    routes[l.to] = {l.peerPort};
                    queue.push_back(l.to);
                }
            }
        }
    }

    std::vector<Ptr<EthSwitch>> programmed;
    std::vector<Ptr<EthSwitch>> tree;
    for (uint32_t v = 0; v < n; ++v)
    {
        if (inTree[v] || towardTree[v])
        {
            std::sort(routes[v].begin(), routes[v].end());
            routes[v].erase(std::unique(routes[v].begin(), routes[v].end()), routes[v].end());
            programmed.push_back(Ptr<EthSwitch>(switches[v]));
            WriteRoute(programmed.back(), group, routes[v]);
            if (inTree[v])
            {
                tree.push_back(programmed.back());
            }
        }
    }
    for (const Ptr<EthSwitch>& old : g.programmed)
    {
        if (std::find(programmed.begin(), programmed.end(), old) == programmed.end())
        {
            WriteRoute(old, group, {}); // left the tree
        }
    }
    g.programmed = std::move(programmed);
    g.tree = std::move(tree);
}

void
EthMulticastRouter::WriteRoute(Ptr<EthSwitch> sw,
                               const Ipv6Bytes& group,
                               const std::vector<uint16_t>& ports)
{
    uint32_t ip4 = 0;
    const bool v4 = Ipv4FromMapped(group, ip4);
    const std::vector<uint16_t>* now =
        v4 ? sw->GetMulticastRoute(ip4) : sw->GetMulticastRoute6(group);
    if (now ? *now == ports : ports.empty())
    {
        return;
    }
    const bool ok = v4 ? sw->SetMulticastRoute(ip4, ports) : sw->SetMulticastRoute6(group, ports);
    NS_ASSERT_MSG(ok, "EthMulticastRouter: a switch refused a route it should take");
    (void)ok;
    m_routesWritten++;
    NS_LOG_DEBUG("route written: " << ports.size() << " ports");
    m_routeTrace(sw, group, ports);
}

} // namespace ns3
