#include "ib-sm-subnet.h"

#include <algorithm>
#include <sstream>

namespace ns3
{

int32_t
IbSmSubnet::AddNode(uint64_t nodeGuid, uint8_t type, uint8_t numPorts)
{
    auto it = m_byGuid.find(nodeGuid);
    if (it != m_byGuid.end())
    {
        return it->second;
    }
    IbSmNode n;
    n.nodeGuid = nodeGuid;
    n.type = type;
    n.numPorts = numPorts;
    n.ports.resize(numPorts + 1u);
    m_nodes.push_back(std::move(n));
    const auto idx = static_cast<int32_t>(m_nodes.size() - 1);
    m_byGuid[nodeGuid] = idx;
    return idx;
}

int32_t
IbSmSubnet::Find(uint64_t nodeGuid) const
{
    auto it = m_byGuid.find(nodeGuid);
    return it == m_byGuid.end() ? -1 : it->second;
}

bool
IbSmSubnet::Connect(int32_t a, uint8_t portA, int32_t b, uint8_t portB)
{
    if (a < 0 || b < 0 || a >= NodeCount() || b >= NodeCount() || portA == 0 || portB == 0 ||
        portA > m_nodes[a].numPorts || portB > m_nodes[b].numPorts)
    {
        return false;
    }
    m_nodes[a].ports[portA].peerNode = b;
    m_nodes[a].ports[portA].peerPort = portB;
    m_nodes[b].ports[portB].peerNode = a;
    m_nodes[b].ports[portB].peerPort = portA;
    return true;
}

void
IbSmSubnet::Clear()
{
    m_nodes.clear();
    m_byGuid.clear();
    m_lids.clear();
}

uint16_t
IbSmSubnet::LidOf(int32_t node, uint8_t port) const
{
    const IbSmNode& n = m_nodes.at(node);
    if (n.IsSwitch())
    {
        return n.lid;
    }
    return port < n.ports.size() ? n.ports[port].lid : 0;
}

void
IbSmSubnet::IndexLids()
{
    m_lids.clear();
    for (int32_t i = 0; i < NodeCount(); ++i)
    {
        const IbSmNode& n = m_nodes[i];
        if (n.IsSwitch())
        {
            if (n.lid != 0)
            {
                m_lids.emplace(n.lid, IbSmLidTarget{i, 0});
            }
            continue;
        }
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            if (n.ports[p].lid != 0)
            {
                m_lids.emplace(n.ports[p].lid, IbSmLidTarget{i, p});
            }
        }
    }
}

uint16_t
IbSmSubnet::MaxLid() const
{
    return m_lids.empty() ? 0 : m_lids.rbegin()->first;
}

std::string
IbSmSubnet::CheckLids() const
{
    std::map<uint16_t, std::string> owner;
    auto claim = [&owner](uint16_t lid, const std::string& who) -> std::string {
        if (lid < kIbFirstUnicastLid || lid > kIbLastUnicastLid)
        {
            return who + " has LID " + std::to_string(lid) + ", not a unicast LID";
        }
        auto [it, fresh] = owner.emplace(lid, who);
        if (!fresh)
        {
            return "LID " + std::to_string(lid) + " given to both " + it->second + " and " + who;
        }
        return "";
    };
    for (const IbSmNode& n : m_nodes)
    {
        std::ostringstream name;
        name << "0x" << std::hex << n.nodeGuid;
        if (n.IsSwitch())
        {
            std::string e = claim(n.lid, "switch " + name.str());
            if (!e.empty())
            {
                return e;
            }
            continue;
        }
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            if (n.ports[p].peerNode < 0)
            {
                continue;
            }
            std::string e = claim(n.ports[p].lid, "CA " + name.str() + " port " +
                                                      std::to_string(p));
            if (!e.empty())
            {
                return e;
            }
        }
    }
    return "";
}

// ---- LID assignment -------------------------------------------------------------------------

uint16_t
IbSmLidTable::Lookup(uint64_t guid) const
{
    auto it = m_lidByGuid.find(guid);
    return it == m_lidByGuid.end() ? 0 : it->second;
}

uint16_t
IbSmLidTable::TakeFreeLid()
{
    for (uint32_t lid = m_searchFrom; lid <= kIbLastUnicastLid; ++lid)
    {
        if (!m_guidByLid.count(static_cast<uint16_t>(lid)))
        {
            m_searchFrom = static_cast<uint16_t>(lid + 1);
            return static_cast<uint16_t>(lid);
        }
    }
    return 0;
}

int
IbSmLidTable::Assign(IbSmSubnet& subnet)
{
    // Who needs a LID: every switch (its port 0, by node GUID) and every CA port that is cabled
    // (a CA port's GUID: NodeInfo.PortGUID read through that port).
    struct Want
    {
        uint64_t guid;
        int32_t node;
        uint8_t port;
    };
    std::vector<Want> wants;
    for (int32_t i = 0; i < subnet.NodeCount(); ++i)
    {
        const IbSmNode& n = subnet.Node(i);
        if (n.IsSwitch())
        {
            wants.push_back({n.nodeGuid, i, 0});
            continue;
        }
        for (uint8_t p = 1; p <= n.numPorts; ++p)
        {
            if (n.ports[p].peerNode >= 0)
            {
                wants.push_back({n.ports[p].guid, i, p});
            }
        }
    }
    std::sort(wants.begin(), wants.end(),
              [](const Want& a, const Want& b) { return a.guid < b.guid; });
    int fresh = 0;
    bool exhausted = false;
    // A GUID new to this table whose port already holds a valid unicast LID that nobody else
    // has keeps it (as opensm's LID manager does): an SM taking over from a dead master, whose
    // table it never saw, leaves every address handle in the fabric valid. First come in GUID
    // order; a port whose LID is taken gets a fresh one below.
    for (const Want& w : wants)
    {
        const IbSmNode& n = subnet.Node(w.node);
        const IbSmPort& port = n.ports[w.port];
        const uint16_t held = port.hasInfo ? port.info.lid : 0;
        if (Lookup(w.guid) == 0 && held >= kIbFirstUnicastLid && held <= kIbLastUnicastLid &&
            m_guidByLid.count(held) == 0)
        {
            m_lidByGuid[w.guid] = held;
            m_guidByLid[held] = w.guid;
            ++fresh;
        }
    }
    for (const Want& w : wants)
    {
        uint16_t lid = Lookup(w.guid);
        if (lid == 0)
        {
            lid = TakeFreeLid();
            if (lid == 0)
            {
                exhausted = true;
                continue;
            }
            m_lidByGuid[w.guid] = lid;
            m_guidByLid[lid] = w.guid;
            ++fresh;
        }
        IbSmNode& n = subnet.Node(w.node);
        if (w.port == 0)
        {
            n.lid = lid;
        }
        else
        {
            n.ports[w.port].lid = lid;
        }
    }
    subnet.IndexLids();
    return exhausted ? -1 : fresh;
}

} // namespace ns3
