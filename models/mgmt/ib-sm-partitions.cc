#include "ib-sm-partitions.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace ns3
{

namespace
{

constexpr uint16_t kDefaultPkey = 0x7FFF; ///< IBA vol. 1 §10.9.1.2: the default partition
constexpr uint16_t kFullMember = 0x8000;

std::string
Trim(const std::string& s)
{
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos)
    {
        return "";
    }
    const auto e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

std::vector<std::string>
Split(const std::string& s, char sep)
{
    std::vector<std::string> out;
    size_t at = 0;
    while (true)
    {
        const size_t next = s.find(sep, at);
        const size_t len = next == std::string::npos ? std::string::npos : next - at;
        out.push_back(Trim(s.substr(at, len)));
        if (next == std::string::npos)
        {
            return out;
        }
        at = next + 1;
    }
}

/// A whole unsigned number, decimal or 0x-hex.
bool
ParseNumber(const std::string& s, uint64_t& v)
{
    if (s.empty() || s[0] == '-' || s[0] == '+')
    {
        return false;
    }
    errno = 0;
    char* end = nullptr;
    v = std::strtoull(s.c_str(), &end, 0);
    return errno == 0 && end != nullptr && *end == '\0';
}

bool
ParseMembership(const std::string& s, IbPartitionMembership& m)
{
    if (s == "full")
    {
        m = IbPartitionMembership::Full;
    }
    else if (s == "limited")
    {
        m = IbPartitionMembership::Limited;
    }
    else if (s == "both")
    {
        m = IbPartitionMembership::Both;
    }
    else
    {
        return false;
    }
    return true;
}

/// "key=value" split at the first '=' (value "" and *hasValue false without one).
std::string
KeyOf(const std::string& token, std::string* value, bool* hasValue)
{
    const auto eq = token.find('=');
    *hasValue = eq != std::string::npos;
    *value = *hasValue ? Trim(token.substr(eq + 1)) : "";
    return Trim(token.substr(0, eq));
}

} // namespace

bool
IbPartitionPolicy::Parse(const std::string& text, std::string* error)
{
    m_partitions.clear();
    std::set<uint16_t> keys;
    int line = 1;
    int statementLine = 1;
    std::string statement;
    bool statementStarted = false; ///< `statement` holds more than blanks
    std::string why;
    // One definition, `head : members`, without its ';'. Sets `why` on a fault.
    auto define = [&](const std::string& def) {
        const auto colon = def.find(':');
        if (colon == std::string::npos)
        {
            why = "no ':' between the partition and its members in '" + Trim(def) + "'";
            return;
        }
        const std::vector<std::string> head = Split(def.substr(0, colon), ',');
        IbPartition p;
        std::string value;
        bool hasValue = false;
        p.name = KeyOf(head[0], &value, &hasValue);
        if (p.name.empty())
        {
            why = "a partition without a name";
            return;
        }
        uint64_t pkey = 0;
        if (!hasValue)
        {
            why = "partition '" + p.name + "' has no P_Key (" + p.name + "=0x...)";
            return;
        }
        if (!ParseNumber(value, pkey) || pkey == 0 || pkey > kDefaultPkey)
        {
            why = "partition '" + p.name + "': P_Key '" + value +
                  "' is not in 0x0001-0x7fff (full membership is a member's '=full')";
            return;
        }
        p.pkey = static_cast<uint16_t>(pkey);
        if (!keys.insert(p.pkey).second)
        {
            why = "P_Key " + value + " is defined twice";
            return;
        }
        IbPartitionMembership defaultMembership = IbPartitionMembership::Limited;
        static const std::set<std::string> kGroupFlags = {"rate", "mtu", "sl", "scope",
                                                          "Q_Key", "TClass", "FlowLabel"};
        for (size_t i = 1; i < head.size(); ++i)
        {
            const std::string flag = KeyOf(head[i], &value, &hasValue);
            if (flag == "ipoib" && !hasValue)
            {
                p.ipoib = true;
            }
            else if (flag == "indx0" && !hasValue)
            {
            }
            else if (flag == "defmember" && hasValue)
            {
                if (!ParseMembership(value, defaultMembership))
                {
                    why = "defmember must be full, limited or both, not '" + value + "'";
                    return;
                }
            }
            else if (kGroupFlags.count(flag) != 0 && hasValue && !value.empty())
            {
                // The IPoIB broadcast group's parameters: the built-in SM's group keeps its own.
            }
            else
            {
                why = "unknown flag '" + head[i] + "' of partition '" + p.name + "'";
                return;
            }
        }
        const std::string body = Trim(def.substr(colon + 1));
        if (!body.empty())
        {
            for (const std::string& token : Split(body, ','))
            {
                IbPartitionMember m;
                m.membership = defaultMembership;
                const std::string who = KeyOf(token, &value, &hasValue);
                uint64_t guid = 0;
                if (who == "ALL")
                {
                    m.kind = IbPartitionMember::Kind::All;
                }
                else if (who == "ALL_CAS")
                {
                    m.kind = IbPartitionMember::Kind::AllCas;
                }
                else if (who == "ALL_SWITCHES")
                {
                    m.kind = IbPartitionMember::Kind::AllSwitches;
                }
                else if (who == "ALL_ROUTERS")
                {
                    m.kind = IbPartitionMember::Kind::AllRouters;
                }
                else if (who == "SELF")
                {
                    m.kind = IbPartitionMember::Kind::Self;
                }
                else if (ParseNumber(who, guid) && guid != 0)
                {
                    m.kind = IbPartitionMember::Kind::Guid;
                    m.guid = guid;
                }
                else
                {
                    why = "unknown member '" + who +
                          "' (a port GUID, ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS or SELF)";
                    return;
                }
                if (hasValue && !ParseMembership(value, m.membership))
                {
                    why = "membership of '" + who + "' must be full, limited or both, not '" +
                          value + "'";
                    return;
                }
                p.members.push_back(m);
            }
        }
        m_partitions.push_back(std::move(p));
    };
    for (size_t i = 0; i < text.size() && why.empty(); ++i)
    {
        const char c = text[i];
        if (c == '#')
        {
            while (i + 1 < text.size() && text[i + 1] != '\n')
            {
                ++i; // a comment runs to the end of its line
            }
            continue;
        }
        if (c == '\n')
        {
            ++line;
            statement += ' ';
            continue;
        }
        if (c == ';')
        {
            define(statement);
            statement.clear();
            statementStarted = false;
            continue;
        }
        if (!statementStarted && c != ' ' && c != '\t' && c != '\r')
        {
            statementStarted = true; // its first character: the line an error names
            statementLine = line;
        }
        statement += c;
    }
    if (why.empty() && statementStarted)
    {
        why = "a definition without its closing ';'";
    }
    if (why.empty() && keys.count(kDefaultPkey) == 0)
    {
        statementLine = line;
        why = "the default partition is not defined (as opensm's files begin: "
              "'Default=0x7fff, ipoib : ALL=full ;')";
    }
    if (!why.empty())
    {
        if (error != nullptr)
        {
            *error = "line " + std::to_string(statementLine) + ": " + why;
        }
        m_partitions.clear();
        return false;
    }
    return true;
}

bool
IbPartitionPolicy::ReadFile(const std::string& path, std::string* error)
{
    m_partitions.clear();
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    std::string why = "cannot be read";
    if (in && Parse(text.str(), &why))
    {
        return true;
    }
    if (error != nullptr)
    {
        *error = path + ": " + why;
    }
    return false;
}

std::vector<std::array<uint16_t, 32>>
IbPartitionPolicy::CaPortPkeyBlocks(uint64_t portGuid, bool isSmPort) const
{
    const std::vector<uint16_t> keys = CaPortPkeys(portGuid, isSmPort);
    std::vector<std::array<uint16_t, 32>> blocks(std::max<size_t>(1, (keys.size() + 31) / 32));
    for (auto& b : blocks)
    {
        b.fill(0);
    }
    for (size_t i = 0; i < keys.size(); ++i)
    {
        blocks[i / 32][i % 32] = keys[i];
    }
    return blocks;
}

std::vector<uint16_t>
IbPartitionPolicy::CaPortPkeys(uint64_t portGuid, bool isSmPort) const
{
    // The default partition first (entry 0), then the others as defined.
    std::vector<const IbPartition*> order;
    for (const IbPartition& p : m_partitions)
    {
        if (p.pkey == kDefaultPkey)
        {
            order.insert(order.begin(), &p);
        }
        else
        {
            order.push_back(&p);
        }
    }
    std::vector<uint16_t> out;
    for (const IbPartition* p : order)
    {
        bool limited = false;
        bool full = false;
        for (const IbPartitionMember& m : p->members)
        {
            const bool names = m.kind == IbPartitionMember::Kind::All ||
                               m.kind == IbPartitionMember::Kind::AllCas ||
                               (m.kind == IbPartitionMember::Kind::Self && isSmPort) ||
                               (m.kind == IbPartitionMember::Kind::Guid && m.guid == portGuid);
            if (names)
            {
                limited |= m.membership != IbPartitionMembership::Full;
                full |= m.membership != IbPartitionMembership::Limited;
            }
        }
        if (limited)
        {
            out.push_back(p->pkey);
        }
        if (full)
        {
            out.push_back(static_cast<uint16_t>(p->pkey | kFullMember));
        }
    }
    return out;
}

} // namespace ns3
