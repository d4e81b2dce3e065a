#include "ib-sm-multicast.h"

#include "models/rdma/ib-wire-bytes.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <set>

namespace ns3
{

namespace
{

using Mcmr = IbMcMemberRecord;

/// The components every join and leave must give (opensm's JOIN_MC_COMP_MASK).
constexpr uint64_t kJoinComponents = Mcmr::kCompMgid | Mcmr::kCompPortGid | Mcmr::kCompJoinState;
/// And what creating a group needs besides (opensm's REQUIRED_MC_CREATE_COMP_MASK): the
/// parameters every member's QP and address handle are set up with.
constexpr uint64_t kCreateComponents = Mcmr::kCreateMask;
/// The default subnet prefix (the SA's port GIDs, IbPortGid).
constexpr uint64_t kSubnetPrefix = 0xFE80000000000000ULL;
/// Multicast scope values, IBA vol. 1 §4.1.1: 2 is link-local.
constexpr uint8_t kScopeLinkLocal = 0x2;
/// MGID signatures (bytes 2-3): the SA-assigned one (opensm's), and IPoIB's (RFC 4391).
constexpr uint16_t kSaMgidSignature = 0xA01B;
constexpr uint16_t kIpv4Signature = 0x401B;
constexpr uint16_t kIpv6Signature = 0x601B;
/// PacketLifeTime of a group created without one: the PathRecords' (4.096 us x 2^18).
constexpr uint8_t kDefaultPacketLifeTime = 18;
/// Rate of a group no port rate bounds (a switch's management port creating it): 2.5 Gb/s.
constexpr uint8_t kSlowestRate = 2;
/// Path selectors, §15.2.5.16: greater than, less than, exactly, largest available.
constexpr uint8_t kSelectGreater = 0;
constexpr uint8_t kSelectLess = 1;
constexpr uint8_t kSelectExactly = 2;

/// The endport with this port GUID: a CA port with a LID, or a switch's port 0 (node -1: none).
IbSmLidTarget
FindEndport(const IbSmSubnet& subnet, uint64_t guid)
{
    for (int32_t i = 0; guid != 0 && i < subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = subnet.Node(i);
        if (n.IsSwitch())
        {
            if (n.ports[0].guid == guid && n.lid != 0)
            {
                return {i, 0};
            }
            continue;
        }
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            if (n.ports[p].guid == guid && n.ports[p].lid != 0)
            {
                return {i, p};
            }
        }
    }
    return {};
}

/// Whether an MGID a requester names may be created (opensm's validate_requested_mgid, after
/// IBA vol. 1 §4.1.1): 0xFF first; IPoIB's signatures pass as they are; otherwise the three
/// reserved flag bits zero, and the SA's own signature never with link-local scope (only the
/// SA makes those).
bool
RequestableMgid(const IbGid& mgid)
{
    if (mgid[0] != 0xFF)
    {
        return false;
    }
    const uint16_t signature = static_cast<uint16_t>((mgid[2] << 8) | mgid[3]);
    if (signature == kIpv4Signature || signature == kIpv6Signature)
    {
        return true;
    }
    if (mgid[1] & 0xE0)
    {
        return false;
    }
    return !(signature == kSaMgidSignature && (mgid[1] & 0x0F) == kScopeLinkLocal);
}

/// Whether `have` passes `selector` against `want` (3, "largest available", passes anything).
bool
Passes(uint8_t selector, double have, double want)
{
    switch (selector)
    {
    case kSelectGreater:
        return have > want;
    case kSelectLess:
        return have < want;
    case kSelectExactly:
        return have == want;
    default:
        return true;
    }
}

/// The MTU code a port carries: its neighbour MTU, else its MTUCap, else 4096 (code 5).
uint8_t
PortMtu(const IbPortInfo& info)
{
    return info.neighborMtu != 0 ? info.neighborMtu : info.mtuCap != 0 ? info.mtuCap : 5;
}

void
SetBit(IbMftEntry& e, uint8_t port)
{
    e[port >> 4] = static_cast<uint16_t>(e[port >> 4] | (1u << (port & 0x0F)));
}

} // namespace

bool
IbSmMulticast::BadMtuOrRate(const IbMcMemberRecord& r, uint64_t mask)
{
    // opensm's mtu_is_valid and rate_is_valid: checked when the value and its selector are given.
    const bool mtuGiven = (mask & Mcmr::kCompMtu) && (mask & Mcmr::kCompMtuSelector);
    const bool rateGiven = (mask & Mcmr::kCompRate) && (mask & Mcmr::kCompRateSelector);
    return (mtuGiven && (r.mtu < 1 || r.mtu > 5)) || (rateGiven && IbSaRateGbps(r.rate) == 0);
}

bool
IbSmMulticast::Agrees(const IbMcMemberRecord& q, uint64_t mask, const IbMcMemberRecord& g)
{
    if ((mask & Mcmr::kCompQkey) && q.qkey != g.qkey)
    {
        return false;
    }
    if (mask & Mcmr::kCompPkey)
    {
        // The same partition, and not two limited members (IBA vol. 1 §10.9: limited members
        // of a partition cannot talk to each other).
        if ((q.pkey & 0x7FFF) != (g.pkey & 0x7FFF) || !((q.pkey | g.pkey) & 0x8000))
        {
            return false;
        }
    }
    if (((mask & Mcmr::kCompTClass) && q.tClass != g.tClass) ||
        ((mask & Mcmr::kCompSl) && q.sl != g.sl) ||
        ((mask & Mcmr::kCompFlowLabel) && q.flowLabel != g.flowLabel) ||
        ((mask & Mcmr::kCompHopLimit) && q.hopLimit != g.hopLimit))
    {
        return false;
    }
    // MTU and Rate: with their selector (an MTU or Rate given without one means "exactly").
    if (mask & (Mcmr::kCompMtu | Mcmr::kCompMtuSelector))
    {
        const uint8_t sel = (mask & Mcmr::kCompMtuSelector) ? q.mtuSelector : kSelectExactly;
        if (!Passes(sel, g.mtu, q.mtu))
        {
            return false;
        }
    }
    if (mask & (Mcmr::kCompRate | Mcmr::kCompRateSelector))
    {
        const uint8_t sel = (mask & Mcmr::kCompRateSelector) ? q.rateSelector : kSelectExactly;
        if (!Passes(sel, IbSaRateGbps(g.rate), IbSaRateGbps(q.rate)))
        {
            return false;
        }
    }
    return true;
}

uint16_t
IbSmMulticast::FreeMlid(uint16_t wanted) const
{
    const uint32_t end = uint32_t(kFirstMlid) + m_mlidCount;
    if (wanted >= kFirstMlid && wanted < end && m_mgidByMlid.count(wanted) == 0)
    {
        return wanted;
    }
    for (uint32_t mlid = kFirstMlid; mlid < end; ++mlid)
    {
        if (m_mgidByMlid.count(static_cast<uint16_t>(mlid)) == 0)
        {
            return static_cast<uint16_t>(mlid);
        }
    }
    return 0;
}

IbGid
IbSmMulticast::NewMgid(uint8_t scope)
{
    // ff1<scope>:a01b:<subnet prefix>:<counter>, as opensm's build_new_mgid makes them (T flag
    // set: a transient group).
    IbGid mgid{};
    mgid[0] = 0xFF;
    mgid[1] = static_cast<uint8_t>(0x10 | (scope & 0x0F));
    mgid[2] = kSaMgidSignature >> 8;
    mgid[3] = kSaMgidSignature & 0xFF;
    IbWireStore64(mgid.data() + 4, kSubnetPrefix);
    for (uint32_t tries = 0; tries < 1000; ++tries)
    {
        IbWireStore32(mgid.data() + 12, ++m_mgidCounter);
        if (m_groups.count(mgid) == 0)
        {
            return mgid;
        }
    }
    return IbGid{};
}

uint16_t
IbSmMulticast::AddWellKnown(const IbMcMemberRecord& group)
{
    if (m_groups.count(group.mgid) != 0)
    {
        return 0;
    }
    const uint16_t mlid = FreeMlid(group.mlid);
    if (mlid == 0)
    {
        return 0;
    }
    IbMcGroup g;
    g.record = group;
    g.record.mlid = mlid;
    g.record.portGid = IbGid{};
    g.record.joinState = 0;
    g.record.proxyJoin = false;
    g.wellKnown = true;
    m_groups.emplace(group.mgid, std::move(g));
    m_mgidByMlid[mlid] = group.mgid;
    ++m_changes;
    return mlid;
}

void
IbSmMulticast::Delete(std::map<IbGid, IbMcGroup>::iterator it)
{
    if (it->second.wellKnown)
    {
        return; // the SM's own: it outlives its members
    }
    m_mgidByMlid.erase(it->second.record.mlid);
    m_groups.erase(it);
}

const IbMcGroup*
IbSmMulticast::FindByMlid(uint16_t mlid) const
{
    auto it = m_mgidByMlid.find(mlid);
    return it == m_mgidByMlid.end() ? nullptr : &m_groups.at(it->second);
}

uint16_t
IbSmMulticast::Join(const IbSmSubnet& subnet,
                    const IbMcMemberRecord& req,
                    uint64_t mask,
                    IbMcMemberRecord& answer)
{
    if ((mask & kJoinComponents) != kJoinComponents)
    {
        return IbSaStatus::InsufficientComponents;
    }
    if (BadMtuOrRate(req, mask))
    {
        return IbSaStatus::ReqInvalid;
    }
    const uint64_t guid = IbGidPortGuid(req.portGid);
    if (guid == 0)
    {
        return IbSaStatus::InvalidGid; // not this subnet's prefix
    }
    const IbSmLidTarget at = FindEndport(subnet, guid);
    if (at.node < 0)
    {
        return IbSaStatus::ReqInvalid; // no such port in the subnet
    }
    if ((mask & Mcmr::kCompPkey) && (req.pkey & 0x7FFF) == 0)
    {
        return IbSaStatus::ReqInvalid; // the invalid P_Key (base 0, IBA vol. 1 §10.9)
    }
    const uint8_t join = req.joinState & 0x0F;
    if (join == 0)
    {
        return IbSaStatus::ReqInvalid; // o15-0.2.4: a join sets at least one JoinState bit
    }
    // What the joining port carries (a switch's management port: no bound).
    const bool caPort = !subnet.Node(at.node).IsSwitch();
    const IbPortInfo* info = caPort ? &subnet.Node(at.node).ports[at.port].info : nullptr;
    const uint8_t portMtu = info ? PortMtu(*info) : 5;
    const double portGbps = info ? IbSaPortGbps(*info) : 0;

    auto it = m_groups.find(req.mgid); // an all-zero MGID is never a group's
    bool created = false;
    if (it == m_groups.end())
    {
        // A new group (o15-0.2.3): created by a full member that gives its parameters.
        if (!(join & Mcmr::kFullMember))
        {
            return IbSaStatus::ReqInvalid;
        }
        if ((mask & kCreateComponents) != kCreateComponents)
        {
            return IbSaStatus::InsufficientComponents;
        }
        IbGid mgid = req.mgid;
        if (mgid == IbGid{})
        {
            mgid = NewMgid((mask & Mcmr::kCompScope) ? req.scope : kScopeLinkLocal);
            if (mgid == IbGid{})
            {
                return IbSaStatus::NoResources;
            }
        }
        else if (!RequestableMgid(mgid))
        {
            return IbSaStatus::ReqInvalid;
        }
        // MTU and rate the selectors ask for, against the port's (opensm's
        // mgrp_request_is_realizable); without them, the port's own.
        uint8_t mtu = portMtu;
        if ((mask & Mcmr::kCompMtu) && (mask & Mcmr::kCompMtuSelector) && req.mtuSelector != 3)
        {
            switch (req.mtuSelector)
            {
            case kSelectGreater:
                if (req.mtu >= portMtu)
                {
                    return IbSaStatus::ReqInvalid;
                }
                mtu = portMtu;
                break;
            case kSelectLess:
                mtu = req.mtu > portMtu ? portMtu : static_cast<uint8_t>(req.mtu - 1);
                break;
            default:
                mtu = req.mtu;
                break;
            }
            if (mtu < 1 || mtu > 5)
            {
                return IbSaStatus::ReqInvalid;
            }
        }
        uint8_t rate = portGbps > 0 ? IbSaRateCode(portGbps) : 0;
        if ((mask & Mcmr::kCompRate) && (mask & Mcmr::kCompRateSelector) && req.rateSelector != 3)
        {
            const double want = IbSaRateGbps(req.rate);
            switch (req.rateSelector)
            {
            case kSelectGreater:
            case kSelectLess:
                // The port's rate, if it is on the asked-for side (no rate in between is made up).
                if (portGbps == 0 || !Passes(req.rateSelector, portGbps, want))
                {
                    return IbSaStatus::ReqInvalid;
                }
                break;
            default:
                rate = req.rate;
                break;
            }
        }
        if (rate == 0)
        {
            rate = kSlowestRate;
        }
        const uint16_t mlid = FreeMlid((mask & Mcmr::kCompMlid) ? req.mlid : 0);
        if (mlid == 0)
        {
            return IbSaStatus::NoResources;
        }
        IbMcGroup group;
        Mcmr& g = group.record;
        g.mgid = mgid;
        g.qkey = req.qkey;
        g.mlid = mlid;
        g.mtuSelector = kSelectExactly;
        g.mtu = mtu;
        g.tClass = req.tClass;
        g.pkey = req.pkey;
        g.rateSelector = kSelectExactly;
        g.rate = rate;
        g.packetLifeTimeSelector = kSelectExactly;
        g.packetLifeTime =
            (mask & Mcmr::kCompPacketLifeTime) ? req.packetLifeTime : kDefaultPacketLifeTime;
        g.sl = req.sl;
        g.flowLabel = req.flowLabel;
        g.hopLimit = (mask & Mcmr::kCompHopLimit) ? req.hopLimit : 0;
        g.scope = mgid[1] & 0x0F; // the MGID's scope field (§4.1.1)
        it = m_groups.emplace(mgid, std::move(group)).first;
        m_mgidByMlid[mlid] = mgid;
        created = true;
    }
    else if (!Agrees(req, mask, it->second.record))
    {
        return IbSaStatus::ReqInvalid; // o15-0.2.4: every given component matches the group's
    }
    const Mcmr& g = it->second.record;
    // The port must carry the group's MTU and rate (opensm's validate_port_caps).
    if (caPort && (portMtu < g.mtu || (portGbps > 0 && portGbps < IbSaRateGbps(g.rate))))
    {
        if (created)
        {
            Delete(it);
        }
        return IbSaStatus::ReqInvalid;
    }
    IbMcMember& m = it->second.members[guid];
    const uint8_t before = m.joinState;
    m.portGid = req.portGid;
    m.joinState = static_cast<uint8_t>(m.joinState | join);
    if (created || m.joinState != before)
    {
        ++m_changes;
    }
    answer = g;
    answer.portGid = req.portGid;
    answer.joinState = m.joinState;
    answer.proxyJoin = false;
    return 0;
}

uint16_t
IbSmMulticast::Leave(const IbMcMemberRecord& req, uint64_t mask, IbMcMemberRecord& answer)
{
    if ((mask & kJoinComponents) != kJoinComponents)
    {
        return IbSaStatus::InsufficientComponents;
    }
    if (BadMtuOrRate(req, mask))
    {
        return IbSaStatus::ReqInvalid;
    }
    const uint64_t guid = IbGidPortGuid(req.portGid);
    if (guid == 0)
    {
        return IbSaStatus::InvalidGid;
    }
    auto it = m_groups.find(req.mgid);
    if (it == m_groups.end())
    {
        return IbSaStatus::ReqInvalid;
    }
    auto member = it->second.members.find(guid);
    // o15-0.1.14: the port is a member, and the JoinState bits to clear are some of its own
    // (at least one, and no other).
    const uint8_t leave = req.joinState & 0x0F;
    if (member == it->second.members.end() || (leave & member->second.joinState) == 0 ||
        (leave & ~member->second.joinState) != 0)
    {
        return IbSaStatus::ReqInvalid;
    }
    member->second.joinState = static_cast<uint8_t>(member->second.joinState & ~leave);
    ++m_changes;
    answer = it->second.record;
    answer.portGid = member->second.portGid;
    answer.joinState = member->second.joinState;
    answer.proxyJoin = false;
    if (member->second.joinState == 0)
    {
        it->second.members.erase(member);
        if (it->second.members.empty())
        {
            Delete(it); // the last member left: the group and its MLID go (unless well known)
        }
    }
    return 0;
}

void
IbSmMulticast::Query(const IbMcMemberRecord& q,
                     uint64_t mask,
                     bool trusted,
                     std::vector<IbMcMemberRecord>& out) const
{
    const size_t first = out.size();
    const uint8_t stateMask = static_cast<uint8_t>(((mask & Mcmr::kCompScope) ? 0xF0 : 0) |
                                                   ((mask & Mcmr::kCompJoinState) ? 0x0F : 0));
    const uint8_t wanted = static_cast<uint8_t>((q.scope << 4) | (q.joinState & 0x0F));
    auto add = [&](const IbMcGroup& group, const IbGid& portGid, uint8_t joinState) {
        const uint8_t state = static_cast<uint8_t>((group.record.scope << 4) | joinState);
        if ((state & stateMask) != (wanted & stateMask))
        {
            return;
        }
        out.push_back(group.record);
        out.back().portGid = portGid;
        out.back().joinState = joinState;
    };
    for (const auto& [mgid, group] : m_groups)
    {
        const Mcmr& g = group.record;
        if (((mask & Mcmr::kCompMgid) && q.mgid != mgid) ||
            ((mask & Mcmr::kCompMlid) && q.mlid != g.mlid) || !Agrees(q, mask, g) ||
            ((mask & Mcmr::kCompProxyJoin) && q.proxyJoin))
        {
            continue; // (no member is a proxy join here)
        }
        if (mask & Mcmr::kCompPortGid)
        {
            auto m = group.members.find(IbGidPortGuid(q.portGid));
            if (m != group.members.end() && m->second.portGid == q.portGid)
            {
                add(group, m->second.portGid, m->second.joinState);
            }
            continue;
        }
        if (trusted)
        {
            for (const auto& [guid, m] : group.members)
            {
                add(group, m.portGid, m.joinState);
            }
            if (group.members.empty())
            {
                add(group, IbGid{}, 0); // a well-known group nobody joined (opensm's answer)
            }
            continue;
        }
        uint8_t any = 0;
        for (const auto& [guid, m] : group.members)
        {
            any = static_cast<uint8_t>(any | m.joinState);
        }
        add(group, IbGid{}, any);
    }
    if (!trusted)
    {
        // §15.2.5.17: PortGID, JoinState and ProxyJoin read 0 but to a trusted requester.
        for (size_t i = first; i < out.size(); ++i)
        {
            out[i].portGid = IbGid{};
            out[i].joinState = 0;
            out[i].proxyJoin = false;
        }
    }
}

bool
IbSmMulticast::DropAbsentPorts(const IbSmSubnet& subnet)
{
    std::set<uint64_t> present;
    for (const IbSmNode& n : subnet.Nodes())
    {
        if (n.IsSwitch())
        {
            if (n.lid != 0)
            {
                present.insert(n.ports[0].guid);
            }
            continue;
        }
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            if (n.ports[p].lid != 0)
            {
                present.insert(n.ports[p].guid);
            }
        }
    }
    bool changed = false;
    for (auto it = m_groups.begin(); it != m_groups.end();)
    {
        auto& members = it->second.members;
        for (auto m = members.begin(); m != members.end();)
        {
            if (present.count(m->first) == 0)
            {
                m = members.erase(m);
                changed = true;
            }
            else
            {
                ++m;
            }
        }
        auto next = std::next(it);
        if (members.empty())
        {
            Delete(it);
        }
        it = next;
    }
    if (changed)
    {
        ++m_changes;
    }
    return changed;
}

IbMftTables
IbSmMulticast::ComputeMfts(const IbSmSubnet& subnet) const
{
    IbMftTables tables;
    std::vector<int32_t> switches;
    for (int32_t i = 0; i < subnet.NodeCount(); ++i)
    {
        if (subnet.Node(i).IsSwitch())
        {
            tables[i];
            switches.push_back(i);
        }
    }
    if (m_groups.empty() || switches.empty())
    {
        return tables;
    }
    // Where each endport is attached: a CA port's switch and that switch's port to it, a
    // switch's management port its own port 0. A CA port cabled to another CA is attached to
    // no switch (two such ports reach each other without an MFT).
    std::map<uint64_t, std::pair<int32_t, uint8_t>> attachment;
    for (int32_t i = 0; i < subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = subnet.Node(i);
        if (n.IsSwitch())
        {
            attachment[n.ports[0].guid] = {i, 0};
            continue;
        }
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            const IbSmPort& port = n.ports[p];
            if (port.lid != 0 && port.peerNode >= 0 && subnet.Node(port.peerNode).IsSwitch())
            {
                attachment[port.guid] = {port.peerNode, port.peerPort};
            }
        }
    }
    // Hop distances between switches over switch-to-switch links: one BFS per switch, shared by
    // every group's choice of root. They depend on the cabling only, not on the members, so they
    // are kept for the next call while the switch graph is the same (a fingerprint of every
    // switch's ports tells): after a sweep the SM calls this for every join and leave, and a
    // k=16 fat-tree's 1,024 IPoIB joins would otherwise redo 320 BFS each.
    constexpr uint32_t kFar = std::numeric_limits<uint32_t>::max();
    std::map<int32_t, size_t> slot;
    uint64_t key = 1469598103934665603ULL; // FNV-1a over the switch graph
    auto mix = [&key](uint64_t v) {
        key ^= v;
        key *= 1099511628211ULL;
    };
    mix(static_cast<uint64_t>(subnet.NodeCount()));
    for (size_t k = 0; k < switches.size(); ++k)
    {
        slot[switches[k]] = k;
        const IbSmNode& n = subnet.Node(switches[k]);
        mix(static_cast<uint64_t>(switches[k]));
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            const int32_t peer = n.ports[p].peerNode;
            const bool toSwitch = peer >= 0 && subnet.Node(peer).IsSwitch();
            mix((static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 16) |
                (static_cast<uint64_t>(n.ports[p].peerPort) << 8) | (toSwitch ? 1 : 0));
        }
    }
    // Breadth-first from `root`: per switch slot the hop count, and how the tree reaches it (the
    // parent switch, the parent's port and this switch's port); ports in ascending order, so
    // the first link found between two switches is the one the tree uses.
    auto bfs = [&](int32_t root) {
        std::vector<Reach> r(switches.size());
        std::deque<int32_t> queue{root};
        r[slot[root]].hops = 0;
        while (!queue.empty())
        {
            const int32_t cur = queue.front();
            queue.pop_front();
            const IbSmNode& n = subnet.Node(cur);
            for (uint8_t p = 1; p <= n.numPorts; ++p)
            {
                const int32_t peer = n.ports[p].peerNode;
                if (peer < 0 || !subnet.Node(peer).IsSwitch() || r[slot[peer]].hops != kFar)
                {
                    continue;
                }
                r[slot[peer]] = {r[slot[cur]].hops + 1, cur, p, n.ports[p].peerPort};
                queue.push_back(peer);
            }
        }
        return r;
    };
    std::vector<std::vector<Reach>>& from = m_reach;
    auto distances = [&]() {
        if (m_reachKey == key && from.size() == switches.size())
        {
            return;
        }
        from.assign(switches.size(), {});
        for (size_t k = 0; k < switches.size(); ++k)
        {
            from[k] = bfs(switches[k]);
        }
        m_reachKey = key;
    };
    for (const auto& [mgid, group] : m_groups)
    {
        std::vector<std::pair<int32_t, uint8_t>> ends;
        std::set<int32_t> memberSwitches;
        for (const auto& [guid, m] : group.members)
        {
            auto a = attachment.find(guid);
            if (a != attachment.end())
            {
                ends.push_back(a->second);
                memberSwitches.insert(a->second.first);
            }
        }
        if (ends.empty())
        {
            continue; // a well-known group nobody has joined: no BFS for it
        }
        distances();
        // The root: the switch closest to its farthest member switch, then to all of them.
        size_t root = 0;
        std::pair<uint64_t, uint64_t> best{kFar, kFar};
        for (size_t k = 0; k < switches.size(); ++k)
        {
            uint64_t farthest = 0;
            uint64_t total = 0;
            for (int32_t s : memberSwitches)
            {
                const uint64_t h = from[k][slot[s]].hops;
                farthest = std::max(farthest, h);
                total += h == kFar ? 0 : h;
            }
            if (std::make_pair(farthest, total) < best)
            {
                best = {farthest, total};
                root = k;
            }
        }
        const std::vector<Reach>& tree = from[root];
        const size_t entry = group.record.mlid - kFirstMlid;
        auto entryOf = [&](int32_t sw) -> IbMftEntry& {
            std::vector<IbMftEntry>& t = tables[sw];
            if (t.size() <= entry)
            {
                t.resize(entry + 1, IbMftEntry{});
            }
            return t[entry];
        };
        std::set<int32_t> onTree{switches[root]};
        for (const auto& [sw, port] : ends)
        {
            if (tree[slot[sw]].hops == kFar)
            {
                continue; // not reachable from the root: left out
            }
            SetBit(entryOf(sw), port);
            // Up to the root, or to a switch already on the tree, adding both ends of each link.
            for (int32_t cur = sw; onTree.insert(cur).second;)
            {
                const Reach& up = tree[slot[cur]];
                SetBit(entryOf(cur), up.ownPort);
                SetBit(entryOf(up.parent), up.parentPort);
                cur = up.parent;
            }
        }
    }
    return tables;
}

} // namespace ns3
