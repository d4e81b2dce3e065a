#include "topology.h"

#include "parse-util.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace ns3
{

// ---------------------------------------------------------------------------------------------
// Topology methods
// ---------------------------------------------------------------------------------------------

std::vector<uint32_t>
Topology::Hosts() const
{
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < nodes.size(); ++i)
    {
        if (nodes[i].kind == TopoNodeKind::Host)
        {
            out.push_back(i);
        }
    }
    return out;
}

std::vector<uint32_t>
Topology::Switches() const
{
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < nodes.size(); ++i)
    {
        if (nodes[i].kind == TopoNodeKind::Switch)
        {
            out.push_back(i);
        }
    }
    return out;
}

std::optional<uint32_t>
Topology::Find(const std::string& nodeName) const
{
    for (uint32_t i = 0; i < nodes.size(); ++i)
    {
        if (nodes[i].name == nodeName)
        {
            return i;
        }
    }
    return std::nullopt;
}

uint32_t
Topology::AddNode(const std::string& nodeName, TopoNodeKind kind, uint32_t portCount, int tier)
{
    nodes.push_back(TopoNode{nodeName, kind, portCount, tier});
    return static_cast<uint32_t>(nodes.size() - 1);
}

uint32_t
Topology::AddLink(uint32_t nodeA,
                  uint32_t portA,
                  uint32_t nodeB,
                  uint32_t portB,
                  const std::string& linkRate,
                  double meters)
{
    links.push_back(TopoLink{nodeA, portA, nodeB, portB, linkRate, meters});
    return static_cast<uint32_t>(links.size() - 1);
}

std::optional<uint32_t>
Topology::LinkAt(uint32_t node, uint32_t port) const
{
    for (uint32_t i = 0; i < links.size(); ++i)
    {
        const TopoLink& l = links[i];
        if ((l.a == node && l.aPort == port) || (l.b == node && l.bPort == port))
        {
            return i;
        }
    }
    return std::nullopt;
}

std::string
Topology::PortName(uint32_t node, uint32_t port) const
{
    std::string n = node < nodes.size() ? "'" + nodes[node].name + "'"
                                         : "node #" + std::to_string(node);
    return n + "[" + std::to_string(port) + "]";
}

std::string
Topology::Validate() const
{
    if (nodes.empty())
    {
        return "topology has no nodes";
    }
    std::map<std::string, uint32_t> byName;
    for (uint32_t i = 0; i < nodes.size(); ++i)
    {
        const TopoNode& n = nodes[i];
        if (n.name.empty())
        {
            return "node #" + std::to_string(i) + " has an empty name";
        }
        // Names are written between double quotes, one node per line, in topology files.
        for (char c : n.name)
        {
            if (c == '"' || std::iscntrl(static_cast<unsigned char>(c)))
            {
                return "node name '" + n.name + "' contains a quote or control character";
            }
        }
        auto [it, inserted] = byName.emplace(n.name, i);
        if (!inserted)
        {
            return "duplicate node name '" + n.name + "' (nodes #" + std::to_string(it->second) +
                   " and #" + std::to_string(i) + ")";
        }
        if (n.ports == 0)
        {
            return "node '" + n.name + "' has no ports";
        }
    }

    std::map<std::pair<uint32_t, uint32_t>, uint32_t> used; // (node, port) -> link index
    for (uint32_t i = 0; i < links.size(); ++i)
    {
        const TopoLink& l = links[i];
        std::string what = "link #" + std::to_string(i);
        if (l.a >= nodes.size() || l.b >= nodes.size())
        {
            return what + " refers to node #" + std::to_string(std::max(l.a, l.b)) +
                   " but there are only " + std::to_string(nodes.size()) + " nodes";
        }
        what += " (" + PortName(l.a, l.aPort) + " - " + PortName(l.b, l.bPort) + ")";
        for (auto [node, port] : {std::pair{l.a, l.aPort}, std::pair{l.b, l.bPort}})
        {
            if (port == 0 || port > nodes[node].ports)
            {
                return what + ": port " + std::to_string(port) + " out of range 1.." +
                       std::to_string(nodes[node].ports) + " on '" + nodes[node].name + "'";
            }
        }
        if (l.a == l.b)
        {
            return what + ": self-loop (both ends on '" + nodes[l.a].name + "')";
        }
        for (auto end : {std::pair{l.a, l.aPort}, std::pair{l.b, l.bPort}})
        {
            auto [it, inserted] = used.emplace(end, i);
            if (!inserted)
            {
                return what + ": port " + PortName(end.first, end.second) +
                       " is already used by link #" + std::to_string(it->second);
            }
        }
        if (!l.rate.empty() && !ParseLinkRate(l.rate))
        {
            return what + ": bad rate '" + l.rate +
                   "' (expected WIDTHxSPEED, e.g. 4xHDR; widths 1 2 4 8 12, speeds SDR DDR QDR "
                   "FDR10 FDR EDR HDR NDR XDR)";
        }
        if (std::isnan(l.lengthMeters) || std::isinf(l.lengthMeters))
        {
            return what + ": length is not a finite number";
        }
    }

    // Connectivity: breadth-first search from node 0 over the links.
    std::vector<std::vector<uint32_t>> adj(nodes.size());
    for (const TopoLink& l : links)
    {
        adj[l.a].push_back(l.b);
        adj[l.b].push_back(l.a);
    }
    std::vector<bool> seen(nodes.size(), false);
    std::vector<uint32_t> queue{0};
    seen[0] = true;
    for (size_t q = 0; q < queue.size(); ++q)
    {
        for (uint32_t n : adj[queue[q]])
        {
            if (!seen[n])
            {
                seen[n] = true;
                queue.push_back(n);
            }
        }
    }
    for (uint32_t i = 0; i < nodes.size(); ++i)
    {
        if (!seen[i])
        {
            return "topology is disconnected: '" + nodes[i].name + "' cannot be reached from '" +
                   nodes[0].name + "'";
        }
    }
    return "";
}

bool
ParseLinkRate(const std::string& rate, std::string* canonical)
{
    size_t x = rate.find_first_of("xX");
    if (x == std::string::npos || x == 0 || x > 2)
    {
        return false;
    }
    std::string width = rate.substr(0, x);
    if (width != "1" && width != "2" && width != "4" && width != "8" && width != "12")
    {
        return false;
    }
    std::string speed = rate.substr(x + 1);
    for (char& c : speed)
    {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    static const char* const kSpeeds[] = {"SDR", "DDR", "QDR", "FDR10", "FDR",
                                          "EDR", "HDR", "NDR", "XDR"};
    for (const char* s : kSpeeds)
    {
        if (speed == s)
        {
            if (canonical)
            {
                *canonical = width + "x" + speed;
            }
            return true;
        }
    }
    return false;
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

namespace
{

std::string
HostName(uint32_t i)
{
    return "h" + std::to_string(i);
}

void
Require(bool ok, const std::string& message)
{
    if (!ok)
    {
        throw std::invalid_argument(message);
    }
}

// Generated sizes are capped so that a typo ("fat-tree:k=400") fails fast instead of
// allocating millions of nodes.
constexpr uint64_t kMaxGeneratedNodes = 1000000;

} // namespace

Topology
MakeTwoHostsOneSwitch()
{
    Topology t;
    t.name = "pair";
    uint32_t h0 = t.AddNode("h0", TopoNodeKind::Host, 1, 0);
    uint32_t h1 = t.AddNode("h1", TopoNodeKind::Host, 1, 0);
    uint32_t sw = t.AddNode("sw0", TopoNodeKind::Switch, 2, 1);
    t.AddLink(h0, 1, sw, 1);
    t.AddLink(h1, 1, sw, 2);
    return t;
}

Topology
MakeStar(uint32_t hosts)
{
    Require(hosts >= 1, "star: hosts must be >= 1");
    Require(hosts < kMaxGeneratedNodes, "star: too many hosts");
    Topology t;
    t.name = "star:hosts=" + std::to_string(hosts);
    for (uint32_t i = 0; i < hosts; ++i)
    {
        t.AddNode(HostName(i), TopoNodeKind::Host, 1, 0);
    }
    uint32_t sw = t.AddNode("sw0", TopoNodeKind::Switch, hosts, 1);
    for (uint32_t i = 0; i < hosts; ++i)
    {
        t.AddLink(i, 1, sw, i + 1);
    }
    return t;
}

Topology
MakeDumbbell(uint32_t left, uint32_t right)
{
    Require(left >= 1 && right >= 1, "dumbbell: left and right must be >= 1");
    Require(uint64_t{left} + right < kMaxGeneratedNodes, "dumbbell: too many hosts");
    Topology t;
    t.name = "dumbbell:left=" + std::to_string(left) + ",right=" + std::to_string(right);
    for (uint32_t i = 0; i < left + right; ++i)
    {
        t.AddNode(HostName(i), TopoNodeKind::Host, 1, 0);
    }
    uint32_t swL = t.AddNode("swL", TopoNodeKind::Switch, left + 1, 1);
    uint32_t swR = t.AddNode("swR", TopoNodeKind::Switch, right + 1, 1);
    for (uint32_t i = 0; i < left; ++i)
    {
        t.AddLink(i, 1, swL, i + 1);
    }
    for (uint32_t i = 0; i < right; ++i)
    {
        t.AddLink(left + i, 1, swR, i + 1);
    }
    t.AddLink(swL, left + 1, swR, right + 1);
    return t;
}

Topology
MakeLeafSpine(uint32_t leaves, uint32_t spines, uint32_t hostsPerLeaf)
{
    Require(leaves >= 1 && spines >= 1 && hostsPerLeaf >= 1,
            "leaf-spine: leaves, spines and hosts must be >= 1");
    Require(uint64_t{leaves} * (hostsPerLeaf + 1) + spines < kMaxGeneratedNodes,
            "leaf-spine: too many nodes");
    Topology t;
    t.name = "leaf-spine:leaves=" + std::to_string(leaves) + ",spines=" + std::to_string(spines) +
             ",hosts=" + std::to_string(hostsPerLeaf);
    for (uint32_t i = 0; i < leaves * hostsPerLeaf; ++i)
    {
        t.AddNode(HostName(i), TopoNodeKind::Host, 1, 0);
    }
    uint32_t firstLeaf = static_cast<uint32_t>(t.nodes.size());
    for (uint32_t l = 0; l < leaves; ++l)
    {
        t.AddNode("leaf" + std::to_string(l), TopoNodeKind::Switch, hostsPerLeaf + spines, 1);
    }
    uint32_t firstSpine = static_cast<uint32_t>(t.nodes.size());
    for (uint32_t s = 0; s < spines; ++s)
    {
        t.AddNode("spine" + std::to_string(s), TopoNodeKind::Switch, leaves, 2);
    }
    for (uint32_t l = 0; l < leaves; ++l)
    {
        for (uint32_t h = 0; h < hostsPerLeaf; ++h)
        {
            t.AddLink(l * hostsPerLeaf + h, 1, firstLeaf + l, h + 1);
        }
        for (uint32_t s = 0; s < spines; ++s)
        {
            t.AddLink(firstLeaf + l, hostsPerLeaf + 1 + s, firstSpine + s, l + 1);
        }
    }
    return t;
}

Topology
MakeFatTree(uint32_t k)
{
    Require(k >= 2 && k % 2 == 0, "fat-tree: k must be even and >= 2, got " + std::to_string(k));
    Require(uint64_t{k} * k * k / 4 < kMaxGeneratedNodes, "fat-tree: k too large");
    const uint32_t half = k / 2;
    Topology t;
    t.name = "fat-tree:k=" + std::to_string(k);
    const uint32_t hosts = k * half * half;
    for (uint32_t i = 0; i < hosts; ++i)
    {
        t.AddNode(HostName(i), TopoNodeKind::Host, 1, 0);
    }
    auto edge = [&](uint32_t pod, uint32_t e) { return hosts + pod * half + e; };
    auto agg = [&](uint32_t pod, uint32_t a) { return hosts + k * half + pod * half + a; };
    auto core = [&](uint32_t c) { return hosts + 2 * k * half + c; };
    for (uint32_t p = 0; p < k; ++p)
    {
        for (uint32_t e = 0; e < half; ++e)
        {
            t.AddNode("edge" + std::to_string(p) + "_" + std::to_string(e),
                      TopoNodeKind::Switch, k, 1);
        }
    }
    for (uint32_t p = 0; p < k; ++p)
    {
        for (uint32_t a = 0; a < half; ++a)
        {
            t.AddNode("agg" + std::to_string(p) + "_" + std::to_string(a),
                      TopoNodeKind::Switch, k, 2);
        }
    }
    for (uint32_t c = 0; c < half * half; ++c)
    {
        t.AddNode("core" + std::to_string(c), TopoNodeKind::Switch, k, 3);
    }
    for (uint32_t p = 0; p < k; ++p)
    {
        for (uint32_t e = 0; e < half; ++e)
        {
            for (uint32_t i = 0; i < half; ++i)
            {
                t.AddLink(p * half * half + e * half + i, 1, edge(p, e), i + 1);
            }
        }
        for (uint32_t e = 0; e < half; ++e)
        {
            for (uint32_t a = 0; a < half; ++a)
            {
                t.AddLink(edge(p, e), half + 1 + a, agg(p, a), e + 1);
            }
        }
        for (uint32_t a = 0; a < half; ++a)
        {
            for (uint32_t i = 0; i < half; ++i)
            {
                t.AddLink(agg(p, a), half + 1 + i, core(a * half + i), p + 1);
            }
        }
    }
    return t;
}

// ---------------------------------------------------------------------------------------------
// Topology file parser (ibnetdiscover / ibsim net format)
// ---------------------------------------------------------------------------------------------

namespace
{

/// Everything wrong in a topology file is the file's problem: InputError names it and the line.
[[noreturn]] void
Fail(const std::string& where, const std::string& message)
{
    throw InputError(where + ": " + message);
}

/// "10m", "2.5m", "50cm", "300mm", "1.2km" -> meters.
bool
ParseLength(const std::string& s, double* meters)
{
    const char* begin = s.c_str();
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(begin, &end);
    // Plain decimal notation only: strtod would also take "inf", "nan" and hex floats.
    if (end == begin || errno != 0 || !std::isfinite(v) || v < 0 ||
        s.substr(0, static_cast<size_t>(end - begin)).find_first_not_of("0123456789.eE+-") !=
            std::string::npos)
    {
        return false;
    }
    std::string unit(end);
    double scale;
    if (unit == "m")
    {
        scale = 1;
    }
    else if (unit == "cm")
    {
        scale = 0.01;
    }
    else if (unit == "mm")
    {
        scale = 0.001;
    }
    else if (unit == "km")
    {
        scale = 1000;
    }
    else
    {
        return false;
    }
    *meters = v * scale;
    return true;
}

/// Shortest decimal spelling of v that parses back to exactly v.
std::string
FormatDouble(double v)
{
    char buf[64];
    for (int precision = 1; precision <= 17; ++precision)
    {
        std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v)
        {
            break;
        }
    }
    return buf;
}

/// Position of the first '#' outside double quotes, or npos.
size_t
FindComment(const std::string& line)
{
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i)
    {
        if (line[i] == '"')
        {
            quoted = !quoted;
        }
        else if (line[i] == '#' && !quoted)
        {
            return i;
        }
    }
    return std::string::npos;
}

/// Whitespace-separated words of s, skipping double-quoted strings entirely.
std::vector<std::string>
UnquotedWords(const std::string& s)
{
    std::vector<std::string> words;
    std::string cur;
    bool quoted = false;
    for (char c : s)
    {
        if (c == '"')
        {
            if (!cur.empty())
            {
                words.push_back(cur);
                cur.clear();
            }
            quoted = !quoted;
        }
        else if (quoted)
        {
            continue;
        }
        else if (std::isspace(static_cast<unsigned char>(c)))
        {
            if (!cur.empty())
            {
                words.push_back(cur);
                cur.clear();
            }
        }
        else
        {
            cur += c;
        }
    }
    if (!cur.empty())
    {
        words.push_back(cur);
    }
    return words;
}

/// True for words shaped like a link rate ("4xHDR", "4xQQR") but not hex numbers ("0xabc").
bool
LooksLikeRate(const std::string& w)
{
    size_t x = w.find('x');
    if (x == std::string::npos || x == 0 || x + 1 >= w.size())
    {
        return false;
    }
    std::string width = w.substr(0, x);
    if (width != "1" && width != "2" && width != "4" && width != "8" && width != "12")
    {
        return false;
    }
    return std::isalpha(static_cast<unsigned char>(w[x + 1])) != 0;
}

/// A tiny cursor over one line, for the bracket/quote syntax of port lines.
class LineScanner
{
  public:
    explicit LineScanner(const std::string& s)
        : m_s(s)
    {
    }

    void SkipSpace()
    {
        while (m_pos < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_pos])))
        {
            ++m_pos;
        }
    }

    bool AtEnd() const
    {
        return m_pos >= m_s.size();
    }

    char Peek() const
    {
        return AtEnd() ? '\0' : m_s[m_pos];
    }

    /// Reads "[digits]"; false (without consuming) if the next thing is not that.
    bool ReadPortNumber(std::string* digits)
    {
        if (Peek() != '[')
        {
            return false;
        }
        size_t close = m_s.find(']', m_pos);
        if (close == std::string::npos)
        {
            return false;
        }
        std::string inner = m_s.substr(m_pos + 1, close - m_pos - 1);
        if (inner.rfind("ext", 0) == 0)
        {
            return false;
        }
        *digits = inner;
        m_pos = close + 1;
        return true;
    }

    /// Skips ibnetdiscover's decorations after a port number: "[ext N]" and "(guid)".
    void SkipPortDecorations()
    {
        for (;;)
        {
            if (m_s.compare(m_pos, 4, "[ext") == 0)
            {
                size_t close = m_s.find(']', m_pos);
                m_pos = close == std::string::npos ? m_s.size() : close + 1;
            }
            else if (Peek() == '(')
            {
                size_t close = m_s.find(')', m_pos);
                m_pos = close == std::string::npos ? m_s.size() : close + 1;
            }
            else
            {
                return;
            }
        }
    }

    /// Reads "\"text\""; false if the next thing is not a complete quoted string.
    bool ReadQuoted(std::string* text)
    {
        if (Peek() != '"')
        {
            return false;
        }
        size_t close = m_s.find('"', m_pos + 1);
        if (close == std::string::npos)
        {
            return false;
        }
        *text = m_s.substr(m_pos + 1, close - m_pos - 1);
        m_pos = close + 1;
        return true;
    }

    /// Reads characters up to the next space or double quote.
    std::string ReadWord()
    {
        size_t start = m_pos;
        while (!AtEnd() && !std::isspace(static_cast<unsigned char>(m_s[m_pos])) &&
               m_s[m_pos] != '"')
        {
            ++m_pos;
        }
        return m_s.substr(start, m_pos - start);
    }

    std::string Rest() const
    {
        return AtEnd() ? "" : m_s.substr(m_pos);
    }

  private:
    const std::string& m_s;
    size_t m_pos = 0;
};

/// One port line, before the peer name is resolved.
struct PortEntry
{
    uint32_t node;
    uint32_t port;
    std::string peer;
    uint32_t peerPort;
    std::string rate;
    double length = -1;
    std::string where; ///< "file:line"
    uint32_t peerIndex = 0;
};

class NetFileParser
{
  public:
    Topology Parse(const std::string& text, const std::string& sourceName)
    {
        ParseText(text, sourceName);
        if (m_topo.nodes.empty())
        {
            Fail(sourceName, "no Switch, Hca or Ca blocks found: not a topology file");
        }
        Resolve();
        if (m_topo.name.empty())
        {
            m_topo.name = std::filesystem::path(sourceName).stem().string();
        }
        std::string problem = m_topo.Validate();
        if (!problem.empty())
        {
            Fail(sourceName, problem);
        }
        // Well formed, but nothing could run on it: the subnet manager, the RDMA traffic and
        // host 0's traces all live on hosts.
        if (m_topo.Hosts().empty())
        {
            Fail(sourceName, "topology has no hosts (no Ca or Hca block): Cnuas runs the subnet "
                             "manager and the traffic on hosts");
        }
        return std::move(m_topo);
    }

  private:
    void ParseText(const std::string& text, const std::string& source)
    {
        m_includeStack.push_back(source);
        std::istringstream in(text);
        std::string raw;
        int lineNo = 0;
        // Port lines attach to the most recent node header of the same file.
        // (-1: none; a sentinel rather than std::optional, which trips GCC 12's
        // -Wmaybe-uninitialized.)
        int64_t current = -1;
        while (std::getline(in, raw))
        {
            ++lineNo;
            std::string where = source + ":" + std::to_string(lineNo);
            std::string line = TrimSpace(raw);
            if (line.empty() || line[0] == '#')
            {
                continue;
            }
            std::string word = line.substr(0, line.find_first_of(kBlankChars));
            if (line[0] == '[')
            {
                if (current < 0)
                {
                    Fail(where, "port line before any Switch/Hca/Ca header");
                }
                ParsePortLine(line, static_cast<uint32_t>(current), where);
            }
            else if (word == "Switch" || word == "Hca" || word == "Ca")
            {
                current = ParseHeader(line, word, where);
            }
            else if (word == "Rt")
            {
                Fail(where, "routers (Rt) are not supported: Cnuas models one subnet");
            }
            else if (word == "include")
            {
                current = -1;
                Include(TrimSpace(line.substr(7)), source, where);
            }
            else if (word == "name")
            {
                std::string value = TrimSpace(line.substr(4));
                if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
                {
                    value = value.substr(1, value.size() - 2);
                }
                if (value.empty())
                {
                    Fail(where, "'name' needs a value");
                }
                m_topo.name = value;
            }
            else if (word == "do")
            {
                Fail(where, "ibsim 'do' console commands are not supported");
            }
            else if (line[0] == '@')
            {
                Fail(where, "ibsim port aliases ('@' lines) are not supported");
            }
            else if (line.find('=') != std::string::npos && IsIgnoredSetting(line))
            {
                // Identity lines ibnetdiscover writes before each node; they end a block.
                current = -1;
            }
            else
            {
                Fail(where, "unrecognised line '" + line +
                                "' (expected a Switch/Hca/Ca header, a port line "
                                "'[port] \"peer\"[port]', 'include FILE' or a # comment)");
            }
        }
        m_includeStack.pop_back();
    }

    static bool IsIgnoredSetting(const std::string& line)
    {
        static const char* const kKeys[] = {"vendid",   "devid",  "sysimgguid",
                                            "switchguid", "caguid", "rtguid"};
        std::string key = TrimSpace(line.substr(0, line.find('=')));
        for (const char* k : kKeys)
        {
            if (key == k)
            {
                return true;
            }
        }
        return false;
    }

    void Include(const std::string& arg, const std::string& source, const std::string& where)
    {
        std::string file = arg;
        if (file.size() >= 2 && file.front() == '"' && file.back() == '"')
        {
            file = file.substr(1, file.size() - 2);
        }
        if (file.empty())
        {
            Fail(where, "'include' needs a file name");
        }
        std::filesystem::path p(file);
        if (p.is_relative())
        {
            p = std::filesystem::path(source).parent_path() / p;
        }
        std::string path = p.lexically_normal().string();
        for (const std::string& open : m_includeStack)
        {
            if (std::filesystem::path(open).lexically_normal().string() == path)
            {
                Fail(where, "include cycle: '" + path + "' is already being read");
            }
        }
        if (m_includeStack.size() > 32)
        {
            Fail(where, "includes nested too deeply");
        }
        std::ifstream in(path);
        if (!in)
        {
            Fail(where, "cannot open included file '" + path + "'");
        }
        std::stringstream ss;
        ss << in.rdbuf();
        ParseText(ss.str(), path);
    }

    uint32_t ParseHeader(const std::string& line, const std::string& word, const std::string& where)
    {
        std::string body = line.substr(word.size());
        size_t hash = FindComment(body);
        if (hash != std::string::npos)
        {
            body = body.substr(0, hash); // node description, lid, lmc: not needed
        }
        LineScanner sc(body);
        sc.SkipSpace();
        std::string count = sc.ReadWord();
        uint64_t ports = 0;
        if (!ParseDecimalUint(count, 65535, &ports) || ports == 0)
        {
            Fail(where, word + " header: port count '" + count +
                            "' is not a number in 1..65535 (expected: " + word +
                            " PORTS \"name\")");
        }
        sc.SkipSpace();
        std::string name;
        if (!sc.ReadQuoted(&name))
        {
            Fail(where, word + " header: expected the node name in double quotes after the port "
                               "count (expected: " +
                            word + " PORTS \"name\")");
        }
        if (name.empty())
        {
            Fail(where, word + " header: empty node name");
        }
        int level = -1;
        for (const std::string& w : UnquotedWords(sc.Rest()))
        {
            uint64_t v = 0;
            if (w.rfind("level=", 0) == 0 && ParseDecimalUint(w.substr(6), 3, &v))
            {
                level = static_cast<int>(v);
            }
            else
            {
                Fail(where, word + " header: unexpected '" + w +
                                "' after the node name (only 'level=0..3' or a # comment may "
                                "follow)");
            }
        }
        auto [it, inserted] = m_index.emplace(name, static_cast<uint32_t>(m_topo.nodes.size()));
        if (!inserted)
        {
            Fail(where, "node '" + name + "' is already defined at " + m_nodeWhere[it->second]);
        }
        m_nodeWhere.push_back(where);
        return m_topo.AddNode(name,
                              word == "Switch" ? TopoNodeKind::Switch : TopoNodeKind::Host,
                              static_cast<uint32_t>(ports),
                              level);
    }

    void ParsePortLine(const std::string& line, uint32_t node, const std::string& where)
    {
        const TopoNode& n = m_topo.nodes[node];
        LineScanner sc(line);
        std::string digits;
        uint64_t port = 0;
        if (!sc.ReadPortNumber(&digits))
        {
            Fail(where, "port line must start with the local port number in brackets, e.g. "
                        "[1] \"peer\"[2]");
        }
        if (!ParseDecimalUint(digits, 65535, &port))
        {
            Fail(where, "bad port number '[" + digits + "]' (expected [1]..[" +
                            std::to_string(n.ports) + "])");
        }
        if (port == 0 || port > n.ports)
        {
            Fail(where, "port " + std::to_string(port) + " out of range: '" + n.name + "' has " +
                            std::to_string(n.ports) + " ports (1.." + std::to_string(n.ports) +
                            ")");
        }
        sc.SkipPortDecorations();
        sc.SkipSpace();
        PortEntry e;
        e.node = node;
        e.port = static_cast<uint32_t>(port);
        e.where = where;
        if (!sc.ReadQuoted(&e.peer) || e.peer.empty())
        {
            Fail(where, "expected the peer node name in double quotes after [" + digits + "]");
        }
        // ibsim defaults a missing remote port to 1.
        e.peerPort = 1;
        if (sc.Peek() == '[')
        {
            uint64_t pp = 0;
            if (!sc.ReadPortNumber(&digits) || !ParseDecimalUint(digits, 65535, &pp) || pp == 0)
            {
                Fail(where, "bad peer port number after \"" + e.peer + "\"");
            }
            e.peerPort = static_cast<uint32_t>(pp);
        }
        sc.SkipPortDecorations();

        std::string rest = sc.Rest();
        size_t hash = FindComment(rest);
        std::string options = rest.substr(0, hash);
        std::string comment = hash == std::string::npos ? "" : rest.substr(hash + 1);
        for (const std::string& w : UnquotedWords(options))
        {
            if (w.rfind("length=", 0) == 0)
            {
                ParseLengthWord(w, where, &e.length);
            }
            else if (w.size() > 2 && (w[0] == 'w' || w[0] == 's' || w[0] == 'e') && w[1] == '=')
            {
                // ibsim's enabled width/speed options: superseded by the NxSPEED rate.
                continue;
            }
            else
            {
                Fail(where, "unexpected '" + w + "' on port line (allowed after the peer: "
                                                 "length=LEN, ibsim w=/s=/e=, a # comment)");
            }
        }
        // ibnetdiscover writes the active rate as the last word of the comment
        // ("# "desc" lid 5 4xHDR"); the Cnuas length extension may sit there as well.
        for (const std::string& w : UnquotedWords(comment))
        {
            if (w.rfind("length=", 0) == 0)
            {
                ParseLengthWord(w, where, &e.length);
            }
            else if (LooksLikeRate(w))
            {
                if (!ParseLinkRate(w, &e.rate))
                {
                    Fail(where, "unknown link rate '" + w +
                                    "' (speeds: SDR DDR QDR FDR10 FDR EDR HDR NDR XDR)");
                }
            }
        }
        auto [it, inserted] = m_portIndex.emplace(std::pair{node, e.port}, m_entries.size());
        if (!inserted)
        {
            Fail(where, "port " + std::to_string(e.port) + " of '" + n.name +
                            "' is already listed at " + m_entries[it->second].where);
        }
        m_entries.push_back(e);
    }

    static void ParseLengthWord(const std::string& w, const std::string& where, double* meters)
    {
        if (!ParseLength(w.substr(7), meters))
        {
            Fail(where, "bad cable length '" + w.substr(7) +
                            "' (expected a non-negative number with a unit: mm, cm, m or km, "
                            "e.g. length=10m)");
        }
    }

    /// Matches port lines into links: a link may be listed from both ends (then both must
    /// agree) or from one end only.
    void Resolve()
    {
        for (PortEntry& e : m_entries)
        {
            auto it = m_index.find(e.peer);
            if (it == m_index.end())
            {
                Fail(e.where, "unknown node '" + e.peer + "' (no Switch/Hca/Ca block defines it)");
            }
            e.peerIndex = it->second;
            const TopoNode& peer = m_topo.nodes[e.peerIndex];
            if (e.peerPort > peer.ports)
            {
                Fail(e.where, "peer port " + std::to_string(e.peerPort) + " out of range: '" +
                                  peer.name + "' has " + std::to_string(peer.ports) + " ports");
            }
            if (e.peerIndex == e.node)
            {
                Fail(e.where, "self-loop: port " + std::to_string(e.port) + " of '" + peer.name +
                                  "' is cabled to its own port " + std::to_string(e.peerPort));
            }
        }
        // Far ends claimed by one-sided listings: (node, port) -> entry index.
        std::map<std::pair<uint32_t, uint32_t>, size_t> claimed;
        for (size_t i = 0; i < m_entries.size(); ++i)
        {
            const PortEntry& e = m_entries[i];
            std::pair<uint32_t, uint32_t> far{e.peerIndex, e.peerPort};
            std::string self = m_topo.PortName(e.node, e.port);
            std::string farName = m_topo.PortName(far.first, far.second);
            auto own = m_portIndex.find(far);
            if (own != m_portIndex.end())
            {
                const PortEntry& f = m_entries[own->second];
                if (f.peerIndex != e.node || f.peerPort != e.port)
                {
                    Fail(e.where, self + " is listed as cabled to " + farName + ", but " +
                                      f.where + " lists " + farName + " as cabled to " +
                                      m_topo.PortName(f.peerIndex, f.peerPort));
                }
                if (own->second < i)
                {
                    continue; // link already made from the other end
                }
                const PortEntry& later = m_entries[own->second];
                if (!e.rate.empty() && !later.rate.empty() && e.rate != later.rate)
                {
                    Fail(later.where, "rate " + later.rate + " disagrees with " + e.rate +
                                          " given for the other end at " + e.where);
                }
                if (e.length >= 0 && later.length >= 0 && e.length != later.length)
                {
                    Fail(later.where, "length " + FormatDouble(later.length) +
                                          "m disagrees with " + FormatDouble(e.length) +
                                          "m given for the other end at " + e.where);
                }
                m_topo.AddLink(e.node,
                               e.port,
                               far.first,
                               far.second,
                               e.rate.empty() ? later.rate : e.rate,
                               e.length >= 0 ? e.length : later.length);
            }
            else
            {
                auto [it, inserted] = claimed.emplace(far, i);
                if (!inserted)
                {
                    const PortEntry& other = m_entries[it->second];
                    Fail(e.where, self + " is listed as cabled to " + farName + ", which " +
                                      other.where + " already cabled to " +
                                      m_topo.PortName(other.node, other.port));
                }
                m_topo.AddLink(e.node, e.port, far.first, far.second, e.rate, e.length);
            }
        }
    }

    Topology m_topo;
    std::map<std::string, uint32_t> m_index;                  ///< node name -> index
    std::vector<std::string> m_nodeWhere;                     ///< where each node was defined
    std::vector<PortEntry> m_entries;                         ///< every port line, in order
    std::map<std::pair<uint32_t, uint32_t>, size_t> m_portIndex; ///< (node, port) -> entry
    std::vector<std::string> m_includeStack;                  ///< files being read
};

} // namespace

Topology
ParseTopologyText(const std::string& text, const std::string& sourceName)
{
    return NetFileParser().Parse(text, sourceName);
}

Topology
ParseTopologyFile(const std::string& path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
    {
        throw InputError(path + ": is a directory, not a topology file");
    }
    std::ifstream in(path);
    if (!in)
    {
        throw InputError(path + ": cannot open topology file");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return ParseTopologyText(ss.str(), path);
}

// ---------------------------------------------------------------------------------------------
// Spec strings
// ---------------------------------------------------------------------------------------------

Topology
BuildTopologyFromSpec(const std::string& spec, const std::string& baseDir)
{
    auto fail = [&](const std::string& message) {
        throw std::invalid_argument("topology spec '" + spec + "': " + message);
    };
    if (spec.rfind("file:", 0) == 0)
    {
        std::filesystem::path p(spec.substr(5));
        if (p.empty())
        {
            fail("'file:' needs a path");
        }
        if (p.is_relative())
        {
            p = std::filesystem::path(baseDir) / p;
        }
        return ParseTopologyFile(p.lexically_normal().string());
    }
    size_t colon = spec.find(':');
    std::string kind = spec.substr(0, colon);
    std::map<std::string, uint64_t> args;
    if (colon != std::string::npos)
    {
        std::istringstream in(spec.substr(colon + 1));
        std::string item;
        while (std::getline(in, item, ','))
        {
            size_t eq = item.find('=');
            if (eq == std::string::npos)
            {
                fail("expected KEY=VALUE, got '" + item + "'");
            }
            std::string key = item.substr(0, eq);
            uint64_t v = 0;
            if (!ParseDecimalUint(item.substr(eq + 1), 1000000, &v))
            {
                fail("value of '" + key + "' is not a whole number: '" + item.substr(eq + 1) + "'");
            }
            if (!args.emplace(key, v).second)
            {
                fail("'" + key + "' given twice");
            }
        }
    }
    // Known kinds with their keys and defaults.
    static const std::map<std::string, std::vector<std::pair<std::string, uint64_t>>> kKinds = {
        {"pair", {}},
        {"star", {{"hosts", 4}}},
        {"dumbbell", {{"left", 2}, {"right", 2}}},
        {"leaf-spine", {{"leaves", 4}, {"spines", 2}, {"hosts", 4}}},
        {"fat-tree", {{"k", 4}}},
    };
    auto known = kKinds.find(kind);
    if (known == kKinds.end())
    {
        fail("unknown topology '" + kind +
             "' (known: pair, star, dumbbell, leaf-spine, fat-tree, file:PATH)");
    }
    std::map<std::string, uint32_t> v;
    for (const auto& [key, def] : known->second)
    {
        v[key] = static_cast<uint32_t>(def);
    }
    for (const auto& [key, value] : args)
    {
        if (v.count(key) == 0)
        {
            std::string keys;
            for (const auto& kd : known->second)
            {
                keys += (keys.empty() ? "" : ", ") + kd.first;
            }
            fail("'" + kind + "' has no parameter '" + key + "'" +
                 (keys.empty() ? " (it takes none)" : " (it takes: " + keys + ")"));
        }
        v[key] = static_cast<uint32_t>(value);
    }
    try
    {
        if (kind == "pair")
        {
            return MakeTwoHostsOneSwitch();
        }
        if (kind == "star")
        {
            return MakeStar(v["hosts"]);
        }
        if (kind == "dumbbell")
        {
            return MakeDumbbell(v["left"], v["right"]);
        }
        if (kind == "leaf-spine")
        {
            return MakeLeafSpine(v["leaves"], v["spines"], v["hosts"]);
        }
        return MakeFatTree(v["k"]);
    }
    catch (const std::invalid_argument& e)
    {
        fail(e.what());
    }
    return {}; // not reached: fail() throws
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

std::string
WriteTopologyText(const Topology& t)
{
    // Per port: the peer and the link's attributes, so every link is written from both ends as
    // ibnetdiscover does.
    std::vector<std::map<uint32_t, const TopoLink*>> byPort(t.nodes.size());
    for (const TopoLink& l : t.links)
    {
        if (l.a < t.nodes.size() && l.b < t.nodes.size())
        {
            byPort[l.a][l.aPort] = &l;
            byPort[l.b][l.bPort] = &l;
        }
    }
    std::ostringstream out;
    out << "# Cnuas topology in ibnetdiscover/ibsim net format.\n";
    out << "# " << t.nodes.size() << " nodes, " << t.links.size() << " links.\n";
    if (!t.name.empty())
    {
        out << "name \"" << t.name << "\"\n";
    }
    for (uint32_t i = 0; i < t.nodes.size(); ++i)
    {
        const TopoNode& n = t.nodes[i];
        out << "\n"
            << (n.kind == TopoNodeKind::Switch ? "Switch" : "Hca") << "\t" << n.ports << " \""
            << n.name << "\"";
        if (n.level >= 0)
        {
            out << "\tlevel=" << n.level;
        }
        out << "\n";
        for (const auto& [port, l] : byPort[i])
        {
            bool atA = l->a == i && l->aPort == port;
            uint32_t peer = atA ? l->b : l->a;
            uint32_t peerPort = atA ? l->bPort : l->aPort;
            out << "[" << port << "]\t\"" << t.nodes[peer].name << "\"[" << peerPort << "]";
            if (!l->rate.empty())
            {
                out << "\t\t# " << l->rate;
            }
            if (l->lengthMeters >= 0)
            {
                out << (l->rate.empty() ? "\t" : " ") << "length=" << FormatDouble(l->lengthMeters)
                    << "m";
            }
            out << "\n";
        }
    }
    return out.str();
}

} // namespace ns3
