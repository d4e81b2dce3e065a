#include "ib-routing-engine.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_set>

namespace ns3
{

const char*
IbRoutingAlgorithmName(IbRoutingAlgorithm a)
{
    switch (a)
    {
    case IbRoutingAlgorithm::MinHop:
        return "minhop";
    case IbRoutingAlgorithm::UpDown:
        return "updn";
    }
    return "?";
}

namespace
{

bool
IsSwitchNode(const IbSmSubnet& s, int32_t i)
{
    return i >= 0 && s.Node(i).IsSwitch();
}

/// Up/down ranks: BFS distance of every switch from the root set (roots rank 0).
std::vector<int32_t>
DetectRoots(const IbSmSubnet& subnet)
{
    // Distance of each switch from the nearest CA: 1 for a switch with a CA on a port.
    const int32_t n = subnet.NodeCount();
    std::vector<int> dist(n, -1);
    std::deque<int32_t> q;
    for (int32_t i = 0; i < n; ++i)
    {
        const IbSmNode& node = subnet.Node(i);
        if (!node.IsSwitch())
        {
            continue;
        }
        for (uint8_t p = 1; p <= node.numPorts; ++p)
        {
            int32_t peer = node.ports[p].peerNode;
            if (peer >= 0 && !subnet.Node(peer).IsSwitch())
            {
                dist[i] = 1;
                q.push_back(i);
                break;
            }
        }
    }
    int maxDist = -1;
    while (!q.empty())
    {
        int32_t s = q.front();
        q.pop_front();
        maxDist = std::max(maxDist, dist[s]);
        const IbSmNode& node = subnet.Node(s);
        for (uint8_t p = 1; p <= node.numPorts; ++p)
        {
            int32_t peer = node.ports[p].peerNode;
            if (IsSwitchNode(subnet, peer) && dist[peer] < 0)
            {
                dist[peer] = dist[s] + 1;
                q.push_back(peer);
            }
        }
    }
    std::vector<int32_t> roots;
    for (int32_t i = 0; i < n; ++i)
    {
        if (subnet.Node(i).IsSwitch() && (dist[i] == maxDist || (maxDist < 0)))
        {
            roots.push_back(i);
        }
    }
    return roots;
}

void
AssignRanks(IbSmSubnet& subnet, const std::vector<int32_t>& roots)
{
    for (int32_t i = 0; i < subnet.NodeCount(); ++i)
    {
        subnet.Node(i).rank = -1;
    }
    std::deque<int32_t> q;
    for (int32_t r : roots)
    {
        subnet.Node(r).rank = 0;
        q.push_back(r);
    }
    while (!q.empty())
    {
        int32_t s = q.front();
        q.pop_front();
        const IbSmNode& node = subnet.Node(s);
        for (uint8_t p = 1; p <= node.numPorts; ++p)
        {
            int32_t peer = node.ports[p].peerNode;
            if (IsSwitchNode(subnet, peer) && subnet.Node(peer).rank < 0)
            {
                subnet.Node(peer).rank = node.rank + 1;
                q.push_back(peer);
            }
        }
    }
}

/// True if `a` is above `b` in the up/down order: lower rank, ties broken by the lower GUID, so
/// that every link has a direction and the order is total (a cycle cannot be all-up).
bool
Above(const IbSmSubnet& s, int32_t a, int32_t b)
{
    const IbSmNode& na = s.Node(a);
    const IbSmNode& nb = s.Node(b);
    if (na.rank != nb.rank)
    {
        return na.rank < nb.rank;
    }
    return na.nodeGuid < nb.nodeGuid;
}

enum class Phase : uint8_t
{
    Unset,
    DownOnly, ///< the route from here to the destination only goes down
    UpFirst,  ///< the route from here starts with an up move
};

} // namespace

IbRoutingTables
IbComputeRoutes(IbSmSubnet& subnet, IbRoutingAlgorithm algorithm,
                const std::vector<uint64_t>& rootGuids)
{
    IbRoutingTables out;
    const int32_t n = subnet.NodeCount();
    out.lft.resize(n);
    const uint16_t maxLid = subnet.MaxLid();
    for (int32_t i = 0; i < n; ++i)
    {
        const IbSmNode& node = subnet.Node(i);
        if (!node.IsSwitch())
        {
            continue;
        }
        if (node.linearFdbCap != 0 && maxLid >= node.linearFdbCap)
        {
            std::ostringstream e;
            e << "LID " << maxLid << " does not fit the LFT of switch 0x" << std::hex
              << node.nodeGuid << std::dec << " (LinearFDBCap " << node.linearFdbCap << ")";
            out.error = e.str();
            return out;
        }
        out.lft[i].assign(maxLid + 1u, kIbLftNoRoute);
    }
    const bool updn = algorithm == IbRoutingAlgorithm::UpDown;
    if (updn)
    {
        if (rootGuids.empty())
        {
            out.roots = DetectRoots(subnet);
        }
        else
        {
            for (uint64_t g : rootGuids)
            {
                int32_t r = subnet.Find(g);
                if (!IsSwitchNode(subnet, r))
                {
                    std::ostringstream e;
                    e << "up/down root 0x" << std::hex << g << " is not a known switch";
                    out.error = e.str();
                    return out;
                }
                out.roots.push_back(r);
            }
        }
        AssignRanks(subnet, out.roots);
    }

    // CA ports on each switch: the routes each switch originates (all-to-all weighting).
    std::vector<uint64_t> caPorts(n, 0);
    for (int32_t i = 0; i < n; ++i)
    {
        const IbSmNode& node = subnet.Node(i);
        if (!node.IsSwitch())
        {
            continue;
        }
        for (uint8_t p = 1; p <= node.numPorts; ++p)
        {
            int32_t peer = node.ports[p].peerNode;
            caPorts[i] += (peer >= 0 && !subnet.Node(peer).IsSwitch()) ? 1 : 0;
        }
    }
    // Routes already sent through each output port: node i's port p at portLoad[loadBase[i] +
    // p], one flat array (the choice below reads it for every candidate of every destination).
    std::vector<uint32_t> loadBase(n + 1, 0);
    for (int32_t i = 0; i < n; ++i)
    {
        loadBase[i + 1] = loadBase[i] + subnet.Node(i).numPorts + 1u;
    }
    std::vector<uint64_t> portLoad(loadBase[n], 0);

    // The switch graph as flat arrays, built once: for every switch its switch neighbours in
    // port order, with which way a packet crossing the cable goes. Every destination below walks
    // it twice, so this is where a large fabric's routing time goes (k=24: 4,176 LIDs).
    struct Hop
    {
        uint8_t port;      ///< this switch's port
        int32_t peer;      ///< the switch at the other end
        bool downToPeer;   ///< a packet from this switch to the peer goes down (up/down)
        uint32_t load;     ///< the port's index in portLoad
    };
    std::vector<uint32_t> hopStart(n + 1, 0);
    std::vector<Hop> hops;
    for (int32_t i = 0; i < n; ++i)
    {
        hopStart[i] = static_cast<uint32_t>(hops.size());
        const IbSmNode& node = subnet.Node(i);
        if (!node.IsSwitch())
        {
            continue;
        }
        for (uint8_t p = 1; p <= node.numPorts; ++p)
        {
            const int32_t m = node.ports[p].peerNode;
            if (IsSwitchNode(subnet, m))
            {
                hops.push_back({p, m, updn && Above(subnet, i, m), loadBase[i] + p});
            }
        }
    }
    hopStart[n] = static_cast<uint32_t>(hops.size());

    std::vector<int> dist(n);
    std::vector<Phase> phase(n);
    std::vector<uint64_t> through(n);
    std::vector<int32_t> order;
    std::vector<int32_t> frontier;
    std::vector<int32_t> next;
    // The breadth-first search below depends only on the switch the destination attaches to,
    // and LIDs are handed out in discovery order, so the CAs behind one leaf switch usually come
    // one after another (k=16: 8 hosts a leaf): their search is done once and reused.
    int32_t searchedFrom = -1;
    std::vector<uint32_t> candStart;
    std::vector<Hop> cands;
    for (const auto& [lid, target] : subnet.Lids())
    {
        // Where the destination attaches to the switch graph.
        int32_t start = -1;
        uint8_t startEntry = 0;
        const IbSmNode& tnode = subnet.Node(target.node);
        if (tnode.IsSwitch())
        {
            start = target.node;
        }
        else
        {
            const IbSmPort& tp = tnode.ports[target.port];
            if (!IsSwitchNode(subnet, tp.peerNode))
            {
                continue; // back-to-back CAs need no switch entry
            }
            start = tp.peerNode;
            startEntry = tp.peerPort;
        }
        out.lft[start][lid] = startEntry;
        // Breadth-first from the destination, one level at a time, walking routes backwards.
        // Up/down (IBA has no rule here; Autonet's): a switch reached by a reverse step that is
        // a down move for the packet is DownOnly if its successor is; DownOnly wins a tie.
        if (start != searchedFrom)
        {
            searchedFrom = start;
            std::fill(dist.begin(), dist.end(), -1);
            std::fill(phase.begin(), phase.end(), Phase::Unset);
            dist[start] = 0;
            phase[start] = Phase::DownOnly;
            frontier.assign(1, start);
            order.clear();
            while (!frontier.empty())
            {
                next.clear();
                for (int32_t s : frontier)
                {
                    for (uint32_t h = hopStart[s]; h < hopStart[s + 1]; ++h)
                    {
                        const int32_t m = hops[h].peer;
                        if (dist[m] >= 0 && dist[m] <= dist[s])
                        {
                            continue;
                        }
                        Phase ph = Phase::DownOnly;
                        if (updn)
                        {
                            // The packet goes m -> s: down if s is below m, i.e. this cable is an
                            // up move from s.
                            const bool down = !hops[h].downToPeer;
                            if (down)
                            {
                                if (phase[s] != Phase::DownOnly)
                                {
                                    continue; // down then up: illegal
                                }
                                ph = Phase::DownOnly;
                            }
                            else
                            {
                                ph = Phase::UpFirst;
                            }
                        }
                        if (dist[m] < 0)
                        {
                            dist[m] = dist[s] + 1;
                            phase[m] = ph;
                            next.push_back(m);
                        }
                        else if (ph == Phase::DownOnly)
                        {
                            phase[m] = Phase::DownOnly;
                        }
                    }
                }
                order.insert(order.end(), next.begin(), next.end());
                frontier.swap(next);
            }
            // Each switch's candidate ports toward this destination, farthest switches first:
            // a neighbour one step nearer, by a legal up/down turn. Like the search, they
            // depend only on the start switch; the choice among them below does not.
            candStart.assign(1, 0);
            cands.clear();
            for (auto it = order.rbegin(); it != order.rend(); ++it)
            {
                const int32_t s = *it;
                for (uint32_t h = hopStart[s]; h < hopStart[s + 1]; ++h)
                {
                    const int32_t m = hops[h].peer;
                    if (dist[m] != dist[s] - 1)
                    {
                        continue;
                    }
                    if (updn)
                    {
                        const bool down = hops[h].downToPeer;
                        if (phase[s] == Phase::DownOnly && !(down && phase[m] == Phase::DownOnly))
                        {
                            continue;
                        }
                        if (phase[s] == Phase::UpFirst && down)
                        {
                            continue;
                        }
                    }
                    cands.push_back(hops[h]);
                }
                candStart.push_back(static_cast<uint32_t>(cands.size()));
            }
        }
        // Choose each switch's port, farthest switches first so that a switch knows how many
        // routes its upstream neighbours already sent through it; among the candidates the
        // port that carries the fewest routes so far (the first in port order on a tie).
        // Counting routes rather than LFT entries keeps destinations that share one upstream
        // choice from also sharing the next.
        std::copy(caPorts.begin(), caPorts.end(), through.begin());
        if (!tnode.IsSwitch())
        {
            through[start] = caPorts[start] - 1;
        }
        for (size_t k = 0; k < order.size(); ++k)
        {
            const int32_t s = order[order.size() - 1 - k];
            const Hop* best = nullptr;
            for (uint32_t c = candStart[k]; c < candStart[k + 1]; ++c)
            {
                if (!best || portLoad[cands[c].load] < portLoad[best->load])
                {
                    best = &cands[c];
                }
            }
            if (best && best->port > 0)
            {
                out.lft[s][lid] = best->port;
                portLoad[best->load] += std::max<uint64_t>(1, through[s]);
                through[best->peer] += through[s];
            }
        }
    }
    return out;
}

// ---- checks ---------------------------------------------------------------------------------

namespace
{

std::string
PortText(const IbSmSubnet& s, int32_t node, uint8_t port)
{
    std::ostringstream o;
    const IbSmNode& n = s.Node(node);
    if (!n.description.empty())
    {
        o << n.description;
    }
    else
    {
        o << "0x" << std::hex << n.nodeGuid << std::dec;
    }
    o << "[" << unsigned(port) << "]";
    return o.str();
}

/// Follows one route. Calls step(node, outPort) for every cable it crosses. Returns 0 if it
/// arrives, 1 if it dead-ends, 2 if it loops.
template <typename Step>
int
Walk(const IbSmSubnet& subnet, const IbRoutingTables& t, int32_t caNode, uint8_t caPort,
     uint16_t lid, const IbSmLidTarget& target, uint32_t* hops, Step&& step)
{
    *hops = 0;
    const IbSmPort& src = subnet.Node(caNode).ports[caPort];
    int32_t cur = src.peerNode;
    uint8_t arrivedOn = src.peerPort;
    if (!step(caNode, caPort))
    {
        return 0;
    }
    *hops = 1;
    std::vector<bool> seen(subnet.NodeCount(), false);
    while (true)
    {
        const IbSmNode& node = subnet.Node(cur);
        if (!node.IsSwitch())
        {
            return (cur == target.node && arrivedOn == target.port) ? 0 : 1;
        }
        if (node.lid == lid)
        {
            return 0;
        }
        if (seen[cur])
        {
            return 2;
        }
        seen[cur] = true;
        const auto& lft = t.lft[cur];
        const uint8_t out = lid < lft.size() ? lft[lid] : kIbLftNoRoute;
        if (out == 0 || out > node.numPorts || node.ports[out].peerNode < 0)
        {
            return 1;
        }
        if (!step(cur, out))
        {
            return 0;
        }
        *hops += 1;
        arrivedOn = node.ports[out].peerPort;
        cur = node.ports[out].peerNode;
    }
}

} // namespace

namespace
{

/// Where a switch's route to one LID ends, found once for every source that passes the switch.
struct SwitchRoute
{
    enum : uint8_t
    {
        Unknown,
        Visiting,
        Arrives,
        DeadEnds,
        Loops
    } state = Unknown;
    uint8_t hops = 0; ///< cables from this switch to the destination, when it arrives
};

/**
 * The route from switch `sw` to `lid` (at `target`) through the LFTs, with `memo` (indexed by
 * switch slot) holding what is already known for this LID: each switch is followed once for a
 * LID, however many sources pass it. The same outcome as Walk from any CA behind it: arrives at
 * the switch whose LID it is or at the target CA port, dead-ends, or loops (a switch on the
 * path reached again).
 */
SwitchRoute
FollowSwitchRoute(const IbSmSubnet& subnet, const IbRoutingTables& t,
                  const std::vector<int32_t>& slot, std::vector<SwitchRoute>& memo, int32_t sw,
                  uint16_t lid, const IbSmLidTarget& target, std::vector<int32_t>& path)
{
    path.clear();
    SwitchRoute end; // the outcome at the end of the path, before unwinding
    int32_t cur = sw;
    while (true)
    {
        SwitchRoute& m = memo[slot[cur]];
        if (m.state == SwitchRoute::Visiting)
        {
            end.state = SwitchRoute::Loops;
            break;
        }
        if (m.state != SwitchRoute::Unknown)
        {
            end = m;
            break;
        }
        const IbSmNode& node = subnet.Node(cur);
        if (node.lid == lid)
        {
            end.state = SwitchRoute::Arrives;
            end.hops = 0;
            m = end;
            break;
        }
        const auto& lft = t.lft[cur];
        const uint8_t out = lid < lft.size() ? lft[lid] : kIbLftNoRoute;
        if (out == 0 || out > node.numPorts || node.ports[out].peerNode < 0)
        {
            end.state = SwitchRoute::DeadEnds;
            m = end;
            break;
        }
        const int32_t next = node.ports[out].peerNode;
        if (!subnet.Node(next).IsSwitch())
        {
            const bool there = next == target.node && node.ports[out].peerPort == target.port;
            end.state = there ? SwitchRoute::Arrives : SwitchRoute::DeadEnds;
            end.hops = 1;
            m = end;
            break;
        }
        m.state = SwitchRoute::Visiting;
        path.push_back(cur);
        cur = next;
    }
    // Every switch on the path shares the outcome; an arriving route is one cable longer at
    // each step back.
    for (auto it = path.rbegin(); it != path.rend(); ++it)
    {
        if (end.state == SwitchRoute::Arrives)
        {
            end.hops = static_cast<uint8_t>(std::min(255, end.hops + 1));
        }
        memo[slot[*it]] = end;
    }
    return memo[slot[sw]];
}

/**
 * IbCheckRoutes for tables where every route arrives, with the CA ports grouped by the switch
 * they are cabled to: a switch's route to a LID is the same for every CA port behind it, so it
 * is looked up once per (switch, LID) and counted for all of them (a k=16 fat-tree: 128 leaf
 * switches instead of 1,024 CA ports per LID). Empty if some route does not arrive: the
 * pair-by-pair pass then counts and names the problems.
 */
std::optional<IbRouteCheck>
CheckArrivingRoutesBySwitch(const IbSmSubnet& subnet, const IbRoutingTables& tables,
                            const std::vector<int32_t>& slot, int32_t switches,
                            const std::vector<std::pair<uint16_t, IbSmLidTarget>>& lids)
{
    struct Leaf
    {
        int32_t node; ///< the switch
        std::vector<std::pair<int32_t, uint8_t>> cas; ///< (CA node, port) cabled to it
    };
    std::vector<Leaf> leaves;
    std::vector<int32_t> leafOf(subnet.NodeCount(), -1);
    std::vector<std::pair<int32_t, uint8_t>> caToCa; ///< CA ports cabled to another CA
    for (int32_t i = 0; i < subnet.NodeCount(); ++i)
    {
        const IbSmNode& node = subnet.Node(i);
        if (node.IsSwitch())
        {
            continue;
        }
        for (uint8_t p = 1; p <= node.numPorts; ++p)
        {
            const int32_t peer = node.ports[p].peerNode;
            if (peer < 0)
            {
                continue;
            }
            if (!subnet.Node(peer).IsSwitch())
            {
                caToCa.emplace_back(i, p);
                continue;
            }
            if (leafOf[peer] < 0)
            {
                leafOf[peer] = static_cast<int32_t>(leaves.size());
                leaves.push_back({peer, {}});
            }
            leaves[leafOf[peer]].cas.emplace_back(i, p);
        }
    }
    IbRouteCheck r;
    std::vector<SwitchRoute> memo;
    std::vector<int32_t> path;
    for (const auto& [lid, target] : lids)
    {
        memo.assign(switches, SwitchRoute());
        for (const Leaf& leaf : leaves)
        {
            uint64_t sources = leaf.cas.size();
            for (const auto& [i, p] : leaf.cas)
            {
                if (target.node == i && target.port == p)
                {
                    sources--; // a port's route to itself is not checked
                }
            }
            if (sources == 0)
            {
                continue;
            }
            const SwitchRoute sr =
                FollowSwitchRoute(subnet, tables, slot, memo, leaf.node, lid, target, path);
            if (sr.state != SwitchRoute::Arrives)
            {
                return std::nullopt;
            }
            r.pairs += sources;
            r.maxHops = std::max<uint32_t>(r.maxHops, 1u + sr.hops);
        }
        for (const auto& [i, p] : caToCa)
        {
            if (target.node == i && target.port == p)
            {
                continue;
            }
            const IbSmPort& src = subnet.Node(i).ports[p];
            if (src.peerNode != target.node || src.peerPort != target.port)
            {
                return std::nullopt;
            }
            r.pairs++;
            r.maxHops = std::max<uint32_t>(r.maxHops, 1);
        }
    }
    return r;
}

} // namespace

IbRouteCheck
IbCheckRoutes(const IbSmSubnet& subnet, const IbRoutingTables& tables)
{
    IbRouteCheck r;
    if (!tables.error.empty())
    {
        r.firstProblem = tables.error;
        r.unreachable = 1;
        return r;
    }
    // Each switch's route to each LID is followed once (FollowSwitchRoute), not once per source:
    // a k=16 fat-tree has 1,024 sources but 320 switches.
    std::vector<int32_t> slot(subnet.NodeCount(), -1);
    int32_t switches = 0;
    for (int32_t i = 0; i < subnet.NodeCount(); ++i)
    {
        if (subnet.Node(i).IsSwitch())
        {
            slot[i] = switches++;
        }
    }
    std::vector<std::pair<uint16_t, IbSmLidTarget>> lids(subnet.Lids().begin(),
                                                         subnet.Lids().end());
    if (std::optional<IbRouteCheck> allArrive =
            CheckArrivingRoutesBySwitch(subnet, tables, slot, switches, lids))
    {
        return *allArrive;
    }
    std::vector<std::vector<SwitchRoute>> memo(lids.size());
    std::vector<int32_t> path;
    for (int32_t i = 0; i < subnet.NodeCount(); ++i)
    {
        const IbSmNode& node = subnet.Node(i);
        if (node.IsSwitch())
        {
            continue;
        }
        for (uint8_t p = 1; p <= node.numPorts; ++p)
        {
            const IbSmPort& src = node.ports[p];
            if (src.peerNode < 0)
            {
                continue;
            }
            for (size_t l = 0; l < lids.size(); ++l)
            {
                const auto& [lid, target] = lids[l];
                if (target.node == i && target.port == p)
                {
                    continue;
                }
                r.pairs++;
                int res = 0;
                uint32_t hops = 1;
                if (!subnet.Node(src.peerNode).IsSwitch())
                {
                    // CA to CA: arrives only if the far port is the target.
                    res = (src.peerNode == target.node && src.peerPort == target.port) ? 0 : 1;
                }
                else
                {
                    if (memo[l].empty())
                    {
                        memo[l].resize(switches);
                    }
                    const SwitchRoute sr = FollowSwitchRoute(subnet, tables, slot, memo[l],
                                                             src.peerNode, lid, target, path);
                    res = sr.state == SwitchRoute::Arrives ? 0
                          : sr.state == SwitchRoute::Loops ? 2
                                                           : 1;
                    hops += sr.hops;
                }
                if (res == 0)
                {
                    r.maxHops = std::max(r.maxHops, hops);
                    continue;
                }
                (res == 1 ? r.unreachable : r.loops)++;
                if (r.firstProblem.empty())
                {
                    r.firstProblem = std::string(res == 1 ? "no route" : "loop") + " from " +
                                     PortText(subnet, i, p) + " to LID " + std::to_string(lid);
                }
            }
        }
    }
    return r;
}

namespace
{

/// Channel ids: base[node] + port.
std::vector<uint32_t>
ChannelBase(const IbSmSubnet& subnet)
{
    const int32_t n = subnet.NodeCount();
    std::vector<uint32_t> base(n + 1, 0);
    for (int32_t i = 0; i < n; ++i)
    {
        base[i + 1] = base[i] + subnet.Node(i).numPorts + 1u;
    }
    return base;
}

/// The channels one CA-to-LID route crosses, in order.
std::vector<uint32_t>
RouteChannels(const IbSmSubnet& subnet, const IbRoutingTables& tables,
              const std::vector<uint32_t>& base, int32_t ca, uint8_t port, uint16_t lid,
              const IbSmLidTarget& target)
{
    std::vector<uint32_t> ch;
    uint32_t hops = 0;
    Walk(subnet, tables, ca, port, lid, target, &hops, [&](int32_t at, uint8_t out) {
        ch.push_back(base[at] + out);
        return true;
    });
    return ch;
}

/// A cycle in `adj` as "node[port] -> ..." text, or "".
std::string
FindCycle(const IbSmSubnet& subnet, const std::vector<uint32_t>& base,
          const std::vector<std::vector<uint32_t>>& adj)
{
    const uint32_t channels = static_cast<uint32_t>(adj.size());
    std::vector<uint8_t> color(channels, 0); // 0 new, 1 on stack, 2 finished
    std::vector<uint32_t> parent(channels, std::numeric_limits<uint32_t>::max());
    std::vector<std::pair<uint32_t, size_t>> stack;
    auto name = [&](uint32_t c) {
        int32_t node = static_cast<int32_t>(
            std::upper_bound(base.begin(), base.end(), c) - base.begin() - 1);
        return PortText(subnet, node, static_cast<uint8_t>(c - base[node]));
    };
    for (uint32_t s = 0; s < channels; ++s)
    {
        if (color[s] != 0 || adj[s].empty())
        {
            continue;
        }
        stack.emplace_back(s, 0);
        color[s] = 1;
        while (!stack.empty())
        {
            auto& [c, idx] = stack.back();
            if (idx < adj[c].size())
            {
                const uint32_t d = adj[c][idx++];
                if (color[d] == 0)
                {
                    color[d] = 1;
                    parent[d] = c;
                    stack.emplace_back(d, 0);
                }
                else if (color[d] == 1)
                {
                    // Cycle d -> ... -> c -> d.
                    std::vector<uint32_t> cyc{d};
                    for (uint32_t x = c; x != d; x = parent[x])
                    {
                        cyc.push_back(x);
                    }
                    std::reverse(cyc.begin() + 1, cyc.end());
                    std::string text;
                    for (uint32_t x : cyc)
                    {
                        text += name(x) + " -> ";
                    }
                    return text + name(d);
                }
            }
            else
            {
                color[c] = 2;
                stack.pop_back();
            }
        }
    }
    return "";
}

/// Calls f(ca, port, lid, target) for every CA-to-LID route, destination by destination.
template <typename F>
void
ForEachRoute(const IbSmSubnet& subnet, F&& f)
{
    for (const auto& [lid, target] : subnet.Lids())
    {
        for (int32_t i = 0; i < subnet.NodeCount(); ++i)
        {
            const IbSmNode& node = subnet.Node(i);
            if (node.IsSwitch())
            {
                continue;
            }
            for (uint8_t p = 1; p <= node.numPorts; ++p)
            {
                if (node.ports[p].peerNode >= 0 && node.ports[p].lid != 0 &&
                    !(target.node == i && target.port == p))
                {
                    f(i, p, lid, target);
                }
            }
        }
    }
}

/// Whether `to` can reach `from` in `adj` (adding from -> to would close a cycle).
bool
Reaches(const std::vector<std::vector<uint32_t>>& adj, uint32_t to, uint32_t from,
        std::vector<uint32_t>& mark, uint32_t stamp)
{
    std::vector<uint32_t> todo{to};
    mark[to] = stamp;
    while (!todo.empty())
    {
        const uint32_t c = todo.back();
        todo.pop_back();
        if (c == from)
        {
            return true;
        }
        for (uint32_t d : adj[c])
        {
            if (mark[d] != stamp)
            {
                mark[d] = stamp;
                todo.push_back(d);
            }
        }
    }
    return false;
}

std::string
CreditLoop(const IbSmSubnet& subnet, const IbRoutingTables& tables, const IbVlLayers* layers,
           uint8_t layer)
{
    const std::vector<uint32_t> base = ChannelBase(subnet);
    std::vector<std::vector<uint32_t>> adj(base.back());
    std::unordered_set<uint64_t> edges;
    // Without layers, a switch already crossed on the way to this destination has added the
    // rest of its route: a walk may stop there.
    std::vector<bool> done(subnet.NodeCount(), false);
    uint16_t doneFor = 0;
    ForEachRoute(subnet, [&](int32_t ca, uint8_t port, uint16_t lid, const IbSmLidTarget& t) {
        if (layers && layers->Of(subnet.Node(ca).ports[port].lid, lid) != layer)
        {
            return;
        }
        if (lid != doneFor)
        {
            std::fill(done.begin(), done.end(), false);
            doneFor = lid;
        }
        int64_t prev = -1;
        uint32_t hops = 0;
        Walk(subnet, tables, ca, port, lid, t, &hops, [&](int32_t at, uint8_t out) {
            const uint32_t c = base[at] + out;
            if (prev >= 0 && edges.insert((uint64_t(prev) << 32) | c).second)
            {
                adj[prev].push_back(c);
            }
            prev = c;
            if (!layers && subnet.Node(at).IsSwitch())
            {
                if (done[at])
                {
                    return false;
                }
                done[at] = true;
            }
            return true;
        });
    });
    return FindCycle(subnet, base, adj);
}

} // namespace

std::string
IbFindCreditLoop(const IbSmSubnet& subnet, const IbRoutingTables& tables)
{
    return CreditLoop(subnet, tables, nullptr, 0);
}

std::string
IbFindCreditLoopInLayer(const IbSmSubnet& subnet, const IbRoutingTables& tables,
                        const IbVlLayers& layers, uint8_t layer)
{
    return CreditLoop(subnet, tables, &layers, layer);
}

IbVlLayers
IbAssignVlLayers(const IbSmSubnet& subnet, const IbRoutingTables& tables, uint8_t maxLayers)
{
    IbVlLayers out;
    const std::vector<uint32_t> base = ChannelBase(subnet);
    if (IbFindCreditLoop(subnet, tables).empty())
    {
        // Nothing to break: every route on layer 0.
        ForEachRoute(subnet, [&](int32_t ca, uint8_t port, uint16_t lid, const IbSmLidTarget&) {
            out.layer[{subnet.Node(ca).ports[port].lid, lid}] = 0;
        });
        out.layers = 1;
        return out;
    }
    std::vector<std::vector<std::vector<uint32_t>>> adj(
        maxLayers, std::vector<std::vector<uint32_t>>(base.back()));
    std::vector<std::unordered_set<uint64_t>> edges(maxLayers);
    std::vector<uint32_t> mark(base.back(), 0);
    uint32_t stamp = 0;
    ForEachRoute(subnet, [&](int32_t ca, uint8_t port, uint16_t lid, const IbSmLidTarget& t) {
        if (!out.error.empty())
        {
            return;
        }
        const auto ch = RouteChannels(subnet, tables, base, ca, port, lid, t);
        for (uint8_t l = 0; l < maxLayers; ++l)
        {
            // Would this route's new dependencies close a cycle in layer l?
            std::vector<std::pair<uint32_t, uint32_t>> added;
            bool cycle = false;
            for (size_t k = 1; k < ch.size() && !cycle; ++k)
            {
                const uint64_t key = (uint64_t(ch[k - 1]) << 32) | ch[k];
                if (edges[l].count(key))
                {
                    continue;
                }
                if (Reaches(adj[l], ch[k], ch[k - 1], mark, ++stamp))
                {
                    cycle = true;
                    break;
                }
                edges[l].insert(key);
                adj[l][ch[k - 1]].push_back(ch[k]);
                added.emplace_back(ch[k - 1], ch[k]);
            }
            if (!cycle)
            {
                out.layer[{subnet.Node(ca).ports[port].lid, lid}] = l;
                out.layers = std::max<uint8_t>(out.layers, l + 1);
                return;
            }
            for (auto it = added.rbegin(); it != added.rend(); ++it)
            {
                adj[l][it->first].pop_back();
                edges[l].erase((uint64_t(it->first) << 32) | it->second);
            }
        }
        out.error = "the route from LID " + std::to_string(subnet.Node(ca).ports[port].lid) +
                    " to LID " + std::to_string(lid) + " fits no layer of " +
                    std::to_string(maxLayers);
    });
    return out;
}

} // namespace ns3
