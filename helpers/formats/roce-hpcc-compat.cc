#include "roce-hpcc-compat.h"

#include "helpers/formats/parse-util.h"
#include "models/rdma/rdma-cc-dcqcn.h"
#include "models/rdma/rdma-cc-dctcp.h"

#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/nstime.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ns3
{

namespace
{
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr double kSecondsPerMeter = 5e-9; ///< EthChannel's default DelayPerMeter

/// Everything wrong in an HPCC-format file is the file's problem (InputError, with the line).
[[noreturn]] void
Fail(const std::string& path, size_t line, const std::string& what)
{
    throw InputError(path + ":" + std::to_string(line) + ": " + what);
}

/// Next non-blank line; false at the end.
bool
NextLine(std::istream& in, std::string& line, size_t& number)
{
    while (std::getline(in, line))
    {
        ++number;
        if (line.find_first_not_of(kBlankChars) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

/// "100Gbps", "20Mb/s" -> bit/s; false unless it parses as a positive rate (ParseDataRateBps).
bool
ParseRate(const std::string& s, double& out)
{
    uint64_t bps = 0;
    if (!ParseDataRateBps(s, &bps))
    {
        return false;
    }
    out = static_cast<double>(bps);
    return true;
}

/// "1000ns", "0.001ms", "1us" -> seconds; false unless a number >= 0 with one of these units.
bool
ParseDelay(const std::string& s, double& out)
{
    static const std::vector<std::pair<std::string, double>> units = {
        {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
    for (const auto& [u, f] : units)
    {
        if (s.size() > u.size() && s.compare(s.size() - u.size(), u.size(), u) == 0)
        {
            double v = 0;
            if (!ParseFiniteDouble(s.substr(0, s.size() - u.size()), &v) || v < 0)
            {
                return false;
            }
            out = v * f;
            return true;
        }
    }
    return false;
}

/**
 * `in >> Whole{x}` reads one word as a decimal whole number (ParseDecimalUint): `in >> x` for
 * an unsigned x takes "-1" as 2^64 - 1, which turns a negative flow size into an 18 EB flow.
 */
template <typename T>
struct Whole
{
    T& value;
};

template <typename T>
std::istream&
operator>>(std::istream& in, Whole<T> w)
{
    std::string word;
    uint64_t v = 0;
    if ((in >> word) && ParseDecimalUint(word, std::numeric_limits<T>::max(), &v))
    {
        w.value = static_cast<T>(v);
    }
    else
    {
        in.setstate(std::ios::failbit);
    }
    return in;
}

std::string
RateString(double bps)
{
    std::ostringstream s;
    s << std::llround(bps) << "bps";
    return s.str();
}

/// Links one way between every pair of hosts, by BFS from each source on demand.
class HopCounter
{
  public:
    explicit HopCounter(const Topology& t) : m_t(t), m_adj(t.nodes.size())
    {
        for (const auto& l : t.links)
        {
            m_adj[l.a].push_back(l.b);
            m_adj[l.b].push_back(l.a);
        }
    }

    uint32_t Hops(uint32_t from, uint32_t to)
    {
        auto it = m_dist.find(from);
        if (it == m_dist.end())
        {
            std::vector<uint32_t> d(m_t.nodes.size(), kNone);
            std::deque<uint32_t> q{from};
            d[from] = 0;
            while (!q.empty())
            {
                const uint32_t n = q.front();
                q.pop_front();
                for (uint32_t m : m_adj[n])
                {
                    if (d[m] == kNone)
                    {
                        d[m] = d[n] + 1;
                        q.push_back(m);
                    }
                }
            }
            it = m_dist.emplace(from, std::move(d)).first;
        }
        return it->second[to];
    }

  private:
    const Topology& m_t;
    std::vector<std::vector<uint32_t>> m_adj;
    std::map<uint32_t, std::vector<uint32_t>> m_dist;
};
} // namespace

HpccTopology
ReadHpccTopology(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw InputError(path + ": cannot open");
    }
    std::string line;
    size_t n = 0;
    uint64_t nodes = 0;
    uint64_t switches = 0;
    uint64_t links = 0;
    if (!NextLine(in, line, n) ||
        !(std::istringstream(line) >> Whole<uint64_t>{nodes} >> Whole<uint64_t>{switches} >>
          Whole<uint64_t>{links}) ||
        nodes == 0 || switches >= nodes || nodes > 1000000)
    {
        Fail(path, n, "expected 'nodes switches links'");
    }
    std::vector<bool> isSwitch(nodes, false);
    if (switches > 0)
    {
        if (!NextLine(in, line, n))
        {
            Fail(path, n, "missing the switch id line");
        }
        std::istringstream s(line);
        for (uint64_t i = 0; i < switches; ++i)
        {
            uint64_t id = 0;
            if (!(s >> Whole<uint64_t>{id}) || id >= nodes)
            {
                Fail(path, n, "switch id " + std::to_string(i) + " missing or out of range");
            }
            isSwitch[id] = true;
        }
    }
    struct L
    {
        uint32_t a, b;
        double rate, delay;
    };
    std::vector<L> ls;
    std::vector<uint32_t> degree(nodes, 0);
    for (uint64_t i = 0; i < links; ++i)
    {
        if (!NextLine(in, line, n))
        {
            Fail(path, n,
                 "expected " + std::to_string(links) + " links, found " + std::to_string(i));
        }
        std::istringstream s(line);
        uint64_t a = 0;
        uint64_t b = 0;
        std::string rate;
        std::string delay;
        double err = 0;
        L l;
        if (!(s >> Whole<uint64_t>{a} >> Whole<uint64_t>{b} >> rate >> delay) || a >= nodes ||
            b >= nodes || a == b ||
            !ParseRate(rate, l.rate) || !ParseDelay(delay, l.delay))
        {
            Fail(path, n,
                 "expected 'a b rate delay [error_rate]' with node ids below " +
                     std::to_string(nodes));
        }
        if ((s >> err) && err != 0)
        {
            Fail(path, n, "per-link error rates are not supported (use PacketLossModel)");
        }
        l.a = static_cast<uint32_t>(a);
        l.b = static_cast<uint32_t>(b);
        ls.push_back(l);
        degree[a]++;
        degree[b]++;
    }
    HpccTopology t;
    t.topology.name = "hpcc:" + path;
    t.hostOfNode.assign(nodes, kNone);
    for (uint32_t i = 0; i < nodes; ++i)
    {
        if (isSwitch[i])
        {
            t.topology.AddNode("sw" + std::to_string(i), TopoNodeKind::Switch,
                               std::max<uint32_t>(degree[i], 1), 1);
        }
        else
        {
            if (degree[i] != 1)
            {
                Fail(path, n,
                     "host " + std::to_string(i) + " has " + std::to_string(degree[i]) +
                         " links (one NIC port per host is supported)");
            }
            t.hostOfNode[i] = static_cast<uint32_t>(t.nodeOfHost.size());
            t.nodeOfHost.push_back(i);
            t.topology.AddNode("h" + std::to_string(i), TopoNodeKind::Host, 1, 0);
        }
    }
    std::vector<uint32_t> nextPort(nodes, 1);
    double hostRate = 0;
    double fabricRate = 0;
    for (size_t i = 0; i < ls.size(); ++i)
    {
        const L& l = ls[i];
        const bool fabric = isSwitch[l.a] && isSwitch[l.b];
        double& r = fabric ? fabricRate : hostRate;
        if (r != 0 && r != l.rate)
        {
            throw InputError(path + ": mixed " + (fabric ? "fabric" : "host") +
                             " link rates are not supported");
        }
        r = l.rate;
        if (i > 0 && l.delay != t.linkDelaySeconds)
        {
            throw InputError(path + ": mixed link delays are not supported");
        }
        t.linkDelaySeconds = l.delay;
        t.topology.AddLink(l.a, nextPort[l.a]++, l.b, nextPort[l.b]++, "",
                           l.delay / kSecondsPerMeter);
    }
    t.hostRate = RateString(hostRate);
    t.fabricRate = RateString(fabricRate != 0 ? fabricRate : hostRate);
    const std::string problem = t.topology.Validate();
    if (!problem.empty())
    {
        throw InputError(path + ": " + problem);
    }
    return t;
}

std::vector<RoceFlowSpec>
ReadHpccFlows(const std::string& path, const HpccTopology& topo, double timeOffset)
{
    std::ifstream in(path);
    if (!in)
    {
        throw InputError(path + ": cannot open");
    }
    std::string line;
    size_t n = 0;
    uint64_t count = 0;
    if (!NextLine(in, line, n) || !(std::istringstream(line) >> Whole<uint64_t>{count}))
    {
        Fail(path, n, "expected the flow count");
    }
    std::vector<RoceFlowSpec> flows;
    while (NextLine(in, line, n))
    {
        std::istringstream s(line);
        uint64_t src = 0;
        uint64_t dst = 0;
        uint32_t prio = 0;
        uint32_t dport = 0;
        uint64_t size = 0;
        double start = 0;
        if (!(s >> Whole<uint64_t>{src} >> Whole<uint64_t>{dst} >> Whole<uint32_t>{prio} >>
              Whole<uint32_t>{dport} >> Whole<uint64_t>{size} >> start) ||
            size == 0 || !std::isfinite(start))
        {
            Fail(path, n, "expected 'src dst priority dport size start_s'");
        }
        if (src >= topo.hostOfNode.size() || dst >= topo.hostOfNode.size() ||
            topo.hostOfNode[src] == kNone || topo.hostOfNode[dst] == kNone || src == dst)
        {
            Fail(path, n, "flow end points must be two different hosts");
        }
        const double t = start - timeOffset;
        if (t < 0)
        {
            Fail(path, n, "flow starts before the time offset");
        }
        RoceFlowSpec f;
        f.src = topo.hostOfNode[src];
        f.dst = topo.hostOfNode[dst];
        f.bytes = size;
        f.start = PicoSeconds(std::llround(t * 1e12));
        flows.push_back(f);
    }
    if (flows.size() != count)
    {
        throw InputError(path + ": header says " + std::to_string(count) + " flows, file has " +
                         std::to_string(flows.size()));
    }
    return flows;
}

namespace
{
/// Every key the HPCC simulator's third.cc reads (its mix/config*.txt files use them all).
/// Keys outside this list are most likely misspelt; within it, ApplyHpccConfig decides which
/// have a Cnuas equivalent and lists the others as ignored.
const std::set<std::string> kHpccKeys = {
    "ACK_HIGH_PRIO", "ALPHA_RESUME_INTERVAL", "BUFFER_SIZE", "CC_MODE", "CLAMP_TARGET_RATE",
    "DCTCP_RATE_AI", "ENABLE_QCN", "ENABLE_TRACE", "ERROR_RATE_PER_LINK", "EWMA_GAIN",
    "FAST_REACT", "FAST_RECOVERY_TIMES", "FCT_OUTPUT_FILE", "FLOW_FILE", "GLOBAL_T", "HAS_WIN",
    "INT_MULTI", "KMAX_MAP", "KMIN_MAP", "L2_ACK_INTERVAL", "L2_BACK_TO_ZERO", "L2_CHUNK_SIZE",
    "LINK_DOWN", "MIN_RATE", "MI_THRESH", "MULTI_RATE", "PACKET_PAYLOAD_SIZE",
    "PFC_OUTPUT_FILE", "PINT_LOG_BASE", "PINT_PROB", "PMAX_MAP", "QLEN_MON_END",
    "QLEN_MON_FILE", "QLEN_MON_START", "RATE_AI", "RATE_BOUND", "RATE_DECREASE_INTERVAL",
    "RATE_HAI", "RP_TIMER", "SAMPLE_FEEDBACK", "SIMULATOR_STOP_TIME", "TOPOLOGY_FILE",
    "TRACE_FILE", "TRACE_OUTPUT_FILE", "USE_DYNAMIC_PFC_THRESHOLD", "U_TARGET", "VAR_WIN"};

/// The known key closest to a misspelt one (at most two edits away), or "".
std::string
ClosestHpccKey(const std::string& key)
{
    std::string best;
    size_t bestDistance = 3;
    for (const std::string& k : kHpccKeys)
    {
        std::vector<size_t> row(k.size() + 1);
        for (size_t j = 0; j <= k.size(); ++j)
        {
            row[j] = j;
        }
        for (size_t i = 1; i <= key.size(); ++i)
        {
            size_t diag = row[0];
            row[0] = i;
            for (size_t j = 1; j <= k.size(); ++j)
            {
                const size_t up = row[j];
                row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (key[i - 1] != k[j - 1])});
                diag = up;
            }
        }
        if (row[k.size()] < bestDistance)
        {
            best = k;
            bestDistance = row[k.size()];
        }
    }
    return best;
}
} // namespace

std::string
HpccConfig::Where(const std::string& key) const
{
    auto it = lines.find(key);
    return it == lines.end() || path.empty() ? "HPCC config"
                                             : path + ":" + std::to_string(it->second);
}

HpccConfig
ReadHpccConfig(const std::string& path, HpccUnknownKeys unknown, std::vector<std::string>* warnings)
{
    std::ifstream in(path);
    if (!in)
    {
        throw InputError(path + ": cannot open");
    }
    HpccConfig cfg;
    cfg.path = path;
    std::string line;
    size_t n = 0;
    while (NextLine(in, line, n))
    {
        const std::vector<std::string> words = SplitWords(line);
        if (words.empty() || words[0][0] == '#')
        {
            continue;
        }
        const std::string& key = words[0];
        if (kHpccKeys.count(key) == 0)
        {
            const std::string close = ClosestHpccKey(key);
            const std::string what =
                "unknown key '" + key + "'" +
                (close.empty() ? std::string() : " (did you mean " + close + "?)");
            if (unknown == HpccUnknownKeys::Error)
            {
                Fail(path, n,
                     what + "; neither Cnuas nor the HPCC simulator reads it "
                            "(--param config-unknown-keys=warn skips such keys)");
            }
            if (warnings)
            {
                warnings->push_back(path + ":" + std::to_string(n) + ": " + what + ", skipped");
            }
            continue;
        }
        if (auto first = cfg.lines.find(key); first != cfg.lines.end())
        {
            // The simulator keeps the last value, which silently changes what the file means
            // to a reader who stopped at the first one.
            Fail(path, n,
                 key + " given twice (first at line " + std::to_string(first->second) + ")");
        }
        const size_t b = line.find(key) + key.size();
        cfg[key] = TrimSpace(line.substr(b));
        cfg.lines[key] = n;
    }
    return cfg;
}

namespace
{
[[noreturn]] void
FailKey(const HpccConfig& cfg, const std::string& key, const std::string& what)
{
    throw InputError(cfg.Where(key) + ": " + key + " " + what);
}

/// The number a key holds, within [min, max]; `whole` also requires an integer.
double
Num(const HpccConfig& cfg, const std::string& key, double min, double max, bool whole = false)
{
    double v = 0;
    if (!ParseFiniteDouble(cfg.at(key), &v) || v < min || v > max ||
        (whole && v != std::floor(v)))
    {
        std::ostringstream range;
        range << (whole ? "a whole number" : "a number") << " in [" << min << ", " << max << "]";
        FailKey(cfg, key, "'" + cfg.at(key) + "' is not " + range.str());
    }
    return v;
}

/// A 0/1 switch of the HPCC simulator.
bool
Flag(const HpccConfig& cfg, const std::string& key)
{
    return Num(cfg, key, 0, 1, true) != 0;
}

/// What a map key's values may be: Kmin/Kmax in KB (>= 0), Pmax a probability.
struct MapLimits
{
    double min;
    double max;
};

MapLimits
LimitsOf(const std::string& key)
{
    return key == "PMAX_MAP" ? MapLimits{0, 1} : MapLimits{0, 1e9};
}

/// "2 100000000000 400 400000000000 1600": the (rate, value) pairs, checked: a whole count
/// N >= 1, exactly N positive rates each with a value within the key's limits.
std::vector<std::pair<double, double>>
MapEntries(const HpccConfig& cfg, const std::string& key)
{
    const std::vector<std::string> w = SplitWords(cfg.at(key));
    uint64_t n = 0;
    if (w.empty() || !ParseDecimalUint(w[0], 1000, &n) || n == 0 || w.size() != 1 + 2 * n)
    {
        FailKey(cfg, key, "'" + cfg.at(key) + "' is not 'N RATE VALUE ...' with N pairs");
    }
    const MapLimits lim = LimitsOf(key);
    std::vector<std::pair<double, double>> out;
    for (uint64_t i = 0; i < n; ++i)
    {
        double rate = 0;
        double v = 0;
        if (!ParseFiniteDouble(w[1 + 2 * i], &rate) || !(rate >= 1))
        {
            FailKey(cfg, key, "rate '" + w[1 + 2 * i] + "' is not a positive bit rate");
        }
        if (!ParseFiniteDouble(w[2 + 2 * i], &v) || v < lim.min || v > lim.max)
        {
            std::ostringstream range;
            range << "[" << lim.min << ", " << lim.max << "]";
            FailKey(cfg, key, "value '" + w[2 + 2 * i] + "' is not in " + range.str());
        }
        out.emplace_back(rate, v);
    }
    return out;
}

/// The value a map key gives for `rateBps`.
double
MapValue(const HpccConfig& cfg, const std::string& key, double rateBps)
{
    for (const auto& [rate, v] : MapEntries(cfg, key))
    {
        if (std::abs(rate - rateBps) < 1)
        {
            return v;
        }
    }
    FailKey(cfg, key, "has no entry for " + RateString(rateBps));
}

/// KMIN_MAP/KMAX_MAP/PMAX_MAP as a SharedBufferMmu EcnRateMap ("RATE KMIN KMAX PMAX; ...").
std::string
EcnRateMapOf(const HpccConfig& cfg)
{
    std::ostringstream map;
    for (const auto& [rate, kmin] : MapEntries(cfg, "KMIN_MAP"))
    {
        // The HPCC simulator gives Kmin and Kmax in KB of 1000 bytes.
        map << std::llround(rate) << " " << std::llround(kmin * 1000) << " "
            << std::llround(MapValue(cfg, "KMAX_MAP", rate) * 1000) << " "
            << MapValue(cfg, "PMAX_MAP", rate) << "; ";
    }
    return map.str();
}

/// A rate key ("20Mb/s"): positive, as every rate the policies take must be.
DataRate
RateKey(const HpccConfig& cfg, const std::string& k)
{
    double bps = 0;
    if (!ParseRate(cfg.at(k), bps))
    {
        FailKey(cfg, k, "'" + cfg.at(k) + "' is not a positive rate (e.g. 20Mb/s)");
    }
    return DataRate(static_cast<uint64_t>(std::llround(bps)));
}

/// EWMA_GAIN: the policies' G, a gain in [0, 1].
double
EwmaGain(const HpccConfig& cfg)
{
    return Num(cfg, "EWMA_GAIN", 0, 1);
}

/// PACKET_PAYLOAD_SIZE, bytes: one RoCE packet's payload, at most the 4096-byte IB MTU.
double
PayloadSize(const HpccConfig& cfg)
{
    return Num(cfg, "PACKET_PAYLOAD_SIZE", 1, 4096, true);
}

/// CC_MODE 8: the DCTCP policy with EWMA_GAIN, DCTCP_RATE_AI and MIN_RATE.
void
ApplyDctcpKeys(const HpccConfig& cfg, RoceRunSpec& spec,
               std::vector<std::function<void(RoceHelper&)>>& nic,
               std::vector<std::string>& used)
{
    spec.cc = "ns3::RdmaCcDctcp";
    used.push_back("CC_MODE");
    if (cfg.count("EWMA_GAIN"))
    {
        const double g = EwmaGain(cfg);
        nic.push_back([g](RoceHelper& h) { h.SetCongestionControlAttribute("G", DoubleValue(g)); });
        used.push_back("EWMA_GAIN");
    }
    const std::vector<std::pair<std::string, std::string>> rates = {
        {"DCTCP_RATE_AI", "RateAi"}, {"MIN_RATE", "MinRate"}};
    for (const auto& [k, attr] : rates)
    {
        if (cfg.count(k))
        {
            const DataRate r = RateKey(cfg, k);
            nic.push_back([attr = attr, r](RoceHelper& h) {
                h.SetCongestionControlAttribute(attr, DataRateValue(r));
            });
            used.push_back(k);
        }
    }
}

/**
 * HAS_WIN, VAR_WIN, GLOBAL_T: a window of the base-RTT BDP as the HPCC simulator's third.cc
 * computes it: per pair, twice the path's propagation delay plus one PACKET_PAYLOAD_SIZE
 * packet's serialization at every hop, times the host rate; the largest over all host pairs
 * for every QP (GLOBAL_T 1), or each flow's own pair's (GLOBAL_T 0, set on the sender's QP as
 * the flow starts).
 */
void
ApplyWindowKeys(const HpccConfig& cfg, const HpccTopology& topo,
                RoceRunSpec& spec, std::vector<std::function<void(RoceHelper&)>>& nic,
                std::vector<std::string>& used)
{
    if (!cfg.count("HAS_WIN"))
    {
        return;
    }
    used.push_back("HAS_WIN");
    const bool varWin = cfg.count("VAR_WIN") && Flag(cfg, "VAR_WIN");
    if (cfg.count("VAR_WIN"))
    {
        used.push_back("VAR_WIN");
    }
    if (cfg.count("GLOBAL_T"))
    {
        used.push_back("GLOBAL_T");
    }
    if (!Flag(cfg, "HAS_WIN"))
    {
        return;
    }
    const double payload = cfg.count("PACKET_PAYLOAD_SIZE") ? PayloadSize(cfg) : 1000.0;
    const double hostBps = DataRate(topo.hostRate).GetBitRate();
    const double fabricBps = DataRate(topo.fabricRate).GetBitRate();
    // The base RTT of a path of `h` links: two host links, the rest fabric links (every host
    // has one NIC port on a switch).
    const double delay = topo.linkDelaySeconds;
    auto bdpOf = [payload, hostBps, fabricBps, delay](uint32_t h) {
        const uint32_t fabricHops = h >= 2 ? h - 2 : 0;
        const double rtt = 2.0 * h * delay + payload * 8 / hostBps * 2 +
                           payload * 8 / fabricBps * fabricHops;
        return static_cast<uint64_t>(rtt * hostBps / 8);
    };
    if (cfg.count("GLOBAL_T") && !Flag(cfg, "GLOBAL_T"))
    {
        // A window per host pair: each flow's sender QP gets its own path's BDP.
        auto t = std::make_shared<HpccTopology>(topo);
        auto hops = std::make_shared<HopCounter>(t->topology);
        auto previous = spec.onFlowStart;
        spec.onFlowStart = [t, hops, bdpOf, previous](const RoceFlowSpec& fs, uint32_t qpn,
                                                      const RoceHca& src) {
            if (previous)
            {
                previous(fs, qpn, src);
            }
            const uint64_t w = bdpOf(hops->Hops(t->nodeOfHost[fs.src], t->nodeOfHost[fs.dst]));
            if (auto d = DynamicCast<RdmaCcDcqcn>(src.cc))
            {
                d->SetQpWindow(qpn, w);
            }
            else if (auto c = DynamicCast<RdmaCcDctcp>(src.cc))
            {
                c->SetQpWindow(qpn, w);
            }
        };
        nic.push_back([varWin](RoceHelper& h) {
            h.SetCongestionControlAttribute("VariableWindow", BooleanValue(varWin));
        });
        return;
    }
    HopCounter hops(topo.topology);
    uint32_t maxHops = 0;
    for (uint32_t a : topo.nodeOfHost)
    {
        for (uint32_t b : topo.nodeOfHost)
        {
            if (a != b)
            {
                maxHops = std::max(maxHops, hops.Hops(a, b));
            }
        }
    }
    const uint64_t bdp = bdpOf(maxHops);
    nic.push_back([bdp, varWin](RoceHelper& h) {
        h.SetCongestionControlAttribute("Window", UintegerValue(bdp));
        h.SetCongestionControlAttribute("VariableWindow", BooleanValue(varWin));
    });
}
} // namespace

namespace
{
/// CC_MODE 3: ns3::RdmaCcHpcc with the keys the HPCC simulator's HPCC reads (its third.cc and
/// rdma-hw.cc), and INT on every NIC.
void
ApplyHpccMode3(const HpccConfig& cfg, const HpccTopology& topo,
               RoceRunSpec& spec, std::vector<std::function<void(RoceHelper&)>>& nic,
               std::vector<std::string>& used)
{
    auto has = [&](const std::string& k) { return cfg.count(k) != 0; };
    auto flag = [&](const std::string& k) { return Flag(cfg, k); };
    spec.cc = "ns3::RdmaCcHpcc";
    spec.intMaxHops = kIntDefaultMaxHops; // the simulator's IntHeader::maxHop
    auto set = [&nic](const std::string& attr, std::shared_ptr<AttributeValue> v) {
        nic.push_back([attr, v](RoceHelper& h) { h.SetCongestionControlAttribute(attr, *v); });
    };
    if (has("U_TARGET"))
    {
        // HPCC's eta: a utilisation target, above 0 and at most 1.
        set("TargetUtilization", std::make_shared<DoubleValue>(Num(cfg, "U_TARGET", 1e-6, 1)));
        used.push_back("U_TARGET");
    }
    if (has("MI_THRESH"))
    {
        set("MaxStage",
            std::make_shared<UintegerValue>(
                static_cast<uint32_t>(Num(cfg, "MI_THRESH", 0, UINT32_MAX, true))));
        used.push_back("MI_THRESH");
    }
    const std::vector<std::pair<std::string, std::string>> rates = {{"RATE_AI", "RateAi"},
                                                                    {"MIN_RATE", "MinRate"}};
    for (const auto& [k, attr] : rates)
    {
        if (!has(k))
        {
            continue;
        }
        set(attr, std::make_shared<DataRateValue>(RateKey(cfg, k)));
        used.push_back(k);
    }
    const std::vector<std::pair<std::string, std::string>> flags = {
        {"HAS_WIN", "HasWindow"}, {"VAR_WIN", "VarWindow"}, {"FAST_REACT", "FastReact"}};
    for (const auto& [k, attr] : flags)
    {
        if (has(k))
        {
            set(attr, std::make_shared<BooleanValue>(flag(k)));
            used.push_back(k);
        }
    }
    for (const char* k : {"MULTI_RATE", "SAMPLE_FEEDBACK"})
    {
        if (has(k) && flag(k))
        {
            FailKey(cfg, k, "1 (per-hop rates / sampled feedback) is not modelled");
        }
        if (has(k))
        {
            used.push_back(k); // 0: the behaviour Cnuas has
        }
    }
    if (has("GLOBAL_T") && !flag("GLOBAL_T"))
    {
        FailKey(cfg, "GLOBAL_T",
                "0 (a per-pair base RTT) is not modelled; Cnuas uses the fabric's largest "
                "(GLOBAL_T 1)");
    }
    if (has("GLOBAL_T"))
    {
        used.push_back("GLOBAL_T");
    }
    const uint32_t payload =
        has("PACKET_PAYLOAD_SIZE") ? static_cast<uint32_t>(PayloadSize(cfg)) : 1000;
    const Time rtt = HpccMaxBaseRtt(topo, payload);
    nic.push_back([rtt](RoceHelper& h) {
        h.SetCongestionControlAttribute("BaseRtt", TimeValue(rtt));
    });
}
} // namespace

uint64_t
HpccPairBaseRttNs(const HpccTopology& topo, uint32_t hops, uint32_t payloadBytes)
{
    // third.cc CalculateRoute/CalculateRoutes: per link its delay and one payload's
    // serialization, packet_payload_size * 1e9 * 8 / bw in integer ns (no header bytes); the
    // round trip is twice the delays plus those serializations once.
    const uint64_t host = static_cast<uint64_t>(DataRate(topo.hostRate).GetBitRate());
    const uint64_t fabric = static_cast<uint64_t>(DataRate(topo.fabricRate).GetBitRate());
    const uint64_t delayNs = static_cast<uint64_t>(std::llround(topo.linkDelaySeconds * 1e9));
    const uint32_t hostLinks = std::min<uint32_t>(2, hops);
    const uint64_t perHost = uint64_t(payloadBytes) * 1000000000ULL * 8 / host;
    const uint64_t perFabric = uint64_t(payloadBytes) * 1000000000ULL * 8 / fabric;
    return 2 * hops * delayNs + hostLinks * perHost + (hops - hostLinks) * perFabric;
}

uint64_t
HpccStandaloneFctNs(const HpccTopology& topo, uint64_t bytes, uint32_t payloadBytes,
                    uint32_t hops)
{
    // third.cc qp_finish: base RTT + the flow's bytes with 48 header bytes a packet
    // (CustomHeader::GetStaticWholeHeaderSize without INT: 14 + 20 + 8 + 6) at the path's
    // slowest rate, in integer ns; the byte count is a uint32_t there.
    const uint64_t packets = bytes == 0 ? 1 : (bytes - 1) / payloadBytes + 1;
    const uint32_t total = static_cast<uint32_t>(bytes + packets * 48);
    const uint64_t host = static_cast<uint64_t>(DataRate(topo.hostRate).GetBitRate());
    const uint64_t fabric = static_cast<uint64_t>(DataRate(topo.fabricRate).GetBitRate());
    const uint64_t bw = hops > 2 ? std::min(host, fabric) : host;
    return HpccPairBaseRttNs(topo, hops, payloadBytes) + uint64_t(total) * 8000000000ULL / bw;
}

Time
HpccMaxBaseRtt(const HpccTopology& topo, uint32_t payloadBytes)
{
    HopCounter hops(topo.topology);
    uint32_t maxHops = 0;
    const std::vector<uint32_t> hosts = topo.topology.Hosts();
    // Every source's BFS (the simulator takes the maximum over all pairs).
    for (uint32_t a : hosts)
    {
        for (uint32_t b : hosts)
        {
            if (a != b)
            {
                const uint32_t h = hops.Hops(a, b);
                if (h != std::numeric_limits<uint32_t>::max())
                {
                    maxHops = std::max(maxHops, h);
                }
            }
        }
    }
    if (maxHops == 0)
    {
        return Time(0);
    }
    return NanoSeconds(HpccPairBaseRttNs(topo, maxHops, payloadBytes));
}

uint32_t
HpccPayloadBytes(const HpccConfig& cfg)
{
    return cfg.count("PACKET_PAYLOAD_SIZE") ? static_cast<uint32_t>(PayloadSize(cfg)) : 1000;
}

namespace
{
/// The keys each CC_MODE of the simulator reads (rdma-hw.cc; the window keys apply to all).
const std::map<int, std::set<std::string>> kHpccModeKeys = {
    {1,
     {"ALPHA_RESUME_INTERVAL", "RATE_DECREASE_INTERVAL", "CLAMP_TARGET_RATE", "RP_TIMER",
      "EWMA_GAIN", "FAST_RECOVERY_TIMES", "RATE_AI", "RATE_HAI", "MIN_RATE"}},
    {3,
     {"U_TARGET", "MI_THRESH", "FAST_REACT", "MULTI_RATE", "SAMPLE_FEEDBACK", "INT_MULTI",
      "RATE_AI", "MIN_RATE"}},
    {8, {"EWMA_GAIN", "DCTCP_RATE_AI", "MIN_RATE"}},
    {10, {"PINT_LOG_BASE", "PINT_PROB", "U_TARGET", "MI_THRESH", "FAST_REACT", "RATE_AI",
          "MIN_RATE"}},
};

/**
 * The keys that are not congestion control: each has the Cnuas equivalent of the value the
 * configuration gives, or is refused with the reason (a value Cnuas would silently not model).
 * Output files and run plumbing are the scenario's own options; a mode's keys are without
 * effect in the other modes, in the simulator as here.
 */
void
ApplyRunKeys(const HpccConfig& cfg, RoceRunSpec& spec, std::vector<std::string>& used)
{
    auto has = [&](const std::string& k) { return cfg.count(k) != 0; };
    auto use = [&](const std::string& k) {
        if (has(k) && std::find(used.begin(), used.end(), k) == used.end())
        {
            used.push_back(k);
        }
    };
    // Files, traces, the queue monitor and the stop time: `roce-hpcc`'s topology-file,
    // flow-file, --out (fct.txt and the CSV), --pcap, sample and limit stand for them.
    for (const char* k : {"TOPOLOGY_FILE", "FLOW_FILE", "FCT_OUTPUT_FILE", "PFC_OUTPUT_FILE",
                          "TRACE_FILE", "TRACE_OUTPUT_FILE", "ENABLE_TRACE", "QLEN_MON_FILE",
                          "QLEN_MON_START", "QLEN_MON_END", "SIMULATOR_STOP_TIME"})
    {
        use(k);
    }
    if (has("RATE_BOUND"))
    {
        if (!Flag(cfg, "RATE_BOUND"))
        {
            FailKey(cfg, "RATE_BOUND",
                    "0 (pace every QP at the line rate whatever its rate) is not modelled; the "
                    "requester always paces at the policy's rate (RATE_BOUND 1)");
        }
        use("RATE_BOUND");
    }
    if (has("L2_BACK_TO_ZERO"))
    {
        if (Flag(cfg, "L2_BACK_TO_ZERO"))
        {
            FailKey(cfg, "L2_BACK_TO_ZERO",
                    "1 (go back to the start of the chunk) is not modelled; the RC requester "
                    "goes back to the NAK's PSN (L2_BACK_TO_ZERO 0, IBA go-back-N)");
        }
        use("L2_BACK_TO_ZERO");
    }
    // Chunk boundaries only add ACKs between the ACK_INTERVAL ones; with every packet
    // acknowledged there are none to add.
    if (has("L2_CHUNK_SIZE") && (!has("L2_ACK_INTERVAL") || spec.ackEveryPackets <= 1))
    {
        use("L2_CHUNK_SIZE");
    }
    if (has("ERROR_RATE_PER_LINK"))
    {
        if (Num(cfg, "ERROR_RATE_PER_LINK", 0, 1) != 0)
        {
            FailKey(cfg, "ERROR_RATE_PER_LINK",
                    "other than 0 (random packet loss on every link) is not modelled here");
        }
        use("ERROR_RATE_PER_LINK");
    }
    if (has("LINK_DOWN"))
    {
        const std::vector<std::string> w = SplitWords(cfg.at("LINK_DOWN"));
        if (w.empty() || w[0] != "0")
        {
            FailKey(cfg, "LINK_DOWN", "a link taken down (time other than 0) is not modelled");
        }
        use("LINK_DOWN");
    }
    if (has("USE_DYNAMIC_PFC_THRESHOLD"))
    {
        // Parsed but unused by the simulator: its MMU always takes the dynamic threshold
        // (switch-mmu.cc), as SharedBufferMmu's Dynamic mode does.
        Flag(cfg, "USE_DYNAMIC_PFC_THRESHOLD");
        auto previousFabric = spec.configureFabric;
        spec.configureFabric = [previousFabric](EthFabricHelper& h) {
            if (previousFabric)
            {
                previousFabric(h);
            }
            h.SetMmuAttribute("ThresholdMode", StringValue("Dynamic"));
        };
        use("USE_DYNAMIC_PFC_THRESHOLD");
    }
    if (has("CC_MODE"))
    {
        const int mode = static_cast<int>(Num(cfg, "CC_MODE", 0, 100, true));
        const auto mine = kHpccModeKeys.find(mode);
        for (const auto& [m, keys] : kHpccModeKeys)
        {
            for (const std::string& k : keys)
            {
                if (m != mode && (mine == kHpccModeKeys.end() || !mine->second.count(k)))
                {
                    use(k); // another mode's: no effect in this one
                }
            }
        }
    }
}
} // namespace

std::vector<std::string>
ApplyHpccConfig(const HpccConfig& cfg, const HpccTopology& topo,
                RoceRunSpec& spec, std::vector<std::string>* ignored)
{
    std::vector<std::string> used;
    auto has = [&](const std::string& k) { return cfg.count(k) != 0; };
    auto use = [&](const std::string& k) { used.push_back(k); };
    std::vector<std::function<void(RoceHelper&)>> nic;
    if (has("CC_MODE"))
    {
        const int mode = static_cast<int>(Num(cfg, "CC_MODE", 0, 100, true));
        if (mode != 1 && mode != 3 && mode != 8)
        {
            FailKey(cfg, "CC_MODE",
                    std::to_string(mode) +
                        " has no Cnuas policy yet (only 1 DCQCN, 3 HPCC and 8 DCTCP)");
        }
        if (mode == 8)
        {
            ApplyDctcpKeys(cfg, spec, nic, used);
        }
        if (mode == 3)
        {
            use("CC_MODE");
            ApplyHpccMode3(cfg, topo, spec, nic, used);
        }
    }
    if (has("CC_MODE") && static_cast<int>(Num(cfg, "CC_MODE", 0, 100, true)) == 1)
    {
        spec.cc = "ns3::RdmaCcDcqcnMlx";
        use("CC_MODE");
        const std::vector<std::pair<std::string, std::string>> times = {
            {"ALPHA_RESUME_INTERVAL", "AlphaInterval"},
            {"RATE_DECREASE_INTERVAL", "DecreaseInterval"},
            {"RP_TIMER", "IncreaseTimer"}};
        for (const auto& [k, attr] : times)
        {
            if (has(k))
            {
                // Given in us; a zero period would make the timer fire without end.
                const Time t = PicoSeconds(std::llround(Num(cfg, k, 1e-6, 1e9) * 1e6));
                nic.push_back([attr = attr, t](RoceHelper& h) {
                    h.SetCongestionControlAttribute(attr, TimeValue(t));
                });
                use(k);
            }
        }
        if (has("EWMA_GAIN"))
        {
            const double g = EwmaGain(cfg);
            nic.push_back(
                [g](RoceHelper& h) { h.SetCongestionControlAttribute("G", DoubleValue(g)); });
            use("EWMA_GAIN");
        }
        if (has("FAST_RECOVERY_TIMES"))
        {
            const uint32_t f =
                static_cast<uint32_t>(Num(cfg, "FAST_RECOVERY_TIMES", 0, UINT32_MAX, true));
            nic.push_back(
                [f](RoceHelper& h) { h.SetCongestionControlAttribute("F", UintegerValue(f)); });
            use("FAST_RECOVERY_TIMES");
        }
        const std::vector<std::pair<std::string, std::string>> rates = {
            {"RATE_AI", "RateAi"}, {"RATE_HAI", "RateHai"}, {"MIN_RATE", "MinRate"}};
        for (const auto& [k, attr] : rates)
        {
            if (has(k))
            {
                const DataRate r = RateKey(cfg, k);
                nic.push_back([attr = attr, r](RoceHelper& h) {
                    h.SetCongestionControlAttribute(attr, DataRateValue(r));
                });
                use(k);
            }
        }
        if (has("CLAMP_TARGET_RATE"))
        {
            const bool c = Flag(cfg, "CLAMP_TARGET_RATE");
            nic.push_back([c](RoceHelper& h) {
                h.SetCongestionControlAttribute("ClampTargetRate", BooleanValue(c));
            });
            use("CLAMP_TARGET_RATE");
        }
        // The simulator's notification point flags the ACK of every CE-marked packet
        // (rdma-hw.cc ReceiveUdp, seqh.SetCnp()), and its reaction point's 1 us alpha tick
        // counts any flag in its period: a CNP for every marked packet, not one per 4 us.
        nic.push_back([](RoceHelper& h) {
            h.SetCongestionControlAttribute("CnpInterval", TimeValue(Time(0)));
        });
    }
    if (has("BUFFER_SIZE"))
    {
        // MB; a switch needs some buffer, and 1 TB is beyond any switch.
        spec.bufferBytes =
            static_cast<uint64_t>(Num(cfg, "BUFFER_SIZE", 1e-6, 1e6) * 1024 * 1024);
        use("BUFFER_SIZE");
    }
    const double hostBps = DataRate(topo.hostRate).GetBitRate();
    // The three maps configure the marking together: one alone would be dropped silently.
    const std::vector<std::string> maps = {"KMIN_MAP", "KMAX_MAP", "PMAX_MAP"};
    for (const std::string& m : maps)
    {
        for (const std::string& other : maps)
        {
            if (has(m) && !has(other))
            {
                FailKey(cfg, m,
                        "is given without " + other + " (ECN marking needs all three maps)");
            }
        }
    }
    if (has("KMIN_MAP") && has("KMAX_MAP") && has("PMAX_MAP"))
    {
        // The HPCC simulator gives Kmin and Kmax in KB of 1000 bytes.
        spec.kminBytes = static_cast<uint64_t>(MapValue(cfg, "KMIN_MAP", hostBps) * 1000);
        spec.kmaxBytes = static_cast<uint64_t>(MapValue(cfg, "KMAX_MAP", hostBps) * 1000);
        spec.pmax = MapValue(cfg, "PMAX_MAP", hostBps);
        // Every speed of the maps (host and fabric ports differ) as the switches' EcnRateMap;
        // the host-rate set above stays the fallback for speeds the maps do not name.
        const std::string map = EcnRateMapOf(cfg);
        auto previousFabric = spec.configureFabric;
        spec.configureFabric = [map, previousFabric](EthFabricHelper& h) {
            if (previousFabric)
            {
                previousFabric(h);
            }
            h.SetMmuAttribute("EcnRateMap", StringValue(map));
        };
        use("KMIN_MAP");
        use("KMAX_MAP");
        use("PMAX_MAP");
    }
    if (has("ENABLE_QCN"))
    {
        spec.ecn = Flag(cfg, "ENABLE_QCN");
        use("ENABLE_QCN");
    }
    {
        // The simulator's switches mark as a packet leaves the queue, on the bytes still
        // queued behind it (switch-node.cc SwitchNotifyDequeue, switch-mmu.cc ShouldSendCN);
        // marking at enqueue would tell the sender a queueing delay later.
        auto previousFabric = spec.configureFabric;
        spec.configureFabric = [previousFabric](EthFabricHelper& h) {
            if (previousFabric)
            {
                previousFabric(h);
            }
            h.SetMmuAttribute("EcnAtDequeue", BooleanValue(true));
        };
    }
    if (has("PACKET_PAYLOAD_SIZE"))
    {
        // The IB MTU nearest the payload size (1000 -> 1024): RoCE payloads come in IB MTUs.
        const double p = PayloadSize(cfg);
        const RdmaMtu all[] = {RdmaMtu::MTU_256, RdmaMtu::MTU_512, RdmaMtu::MTU_1024,
                               RdmaMtu::MTU_2048, RdmaMtu::MTU_4096};
        spec.pathMtu = RdmaMtu::MTU_256;
        for (RdmaMtu m : all)
        {
            if (std::abs(RdmaMtuBytes(m) - p) < std::abs(RdmaMtuBytes(spec.pathMtu) - p))
            {
                spec.pathMtu = m;
            }
        }
        use("PACKET_PAYLOAD_SIZE");
    }
    if (spec.cc != "ns3::RdmaCcHpcc")
    {
        // HPCC reads HAS_WIN/VAR_WIN/GLOBAL_T itself (ApplyHpccMode3).
        ApplyWindowKeys(cfg, topo, spec, nic, used);
    }
    if (has("L2_ACK_INTERVAL"))
    {
        spec.ackEveryPackets =
            std::max<uint32_t>(1, static_cast<uint32_t>(
                                      Num(cfg, "L2_ACK_INTERVAL", 0, UINT32_MAX, true)));
        use("L2_ACK_INTERVAL");
    }
    ApplyRunKeys(cfg, spec, used);
    auto previous = spec.configureNics;
    spec.configureNics = [nic, previous](RoceHelper& h) {
        if (previous)
        {
            previous(h);
        }
        for (const auto& f : nic)
        {
            f(h);
        }
    };
    if (ignored)
    {
        for (const auto& [k, v] : cfg)
        {
            if (std::find(used.begin(), used.end(), k) == used.end())
            {
                ignored->push_back(k);
            }
        }
    }
    return used;
}

void
WriteHpccFct(const std::string& path, const RoceRunResult& r, const HpccTopology& topo,
             double timeOffset, uint32_t referencePayloadBytes)
{
    std::ofstream out(path);
    if (!out)
    {
        throw std::runtime_error(path + ": cannot write");
    }
    HopCounter hops(topo.topology);
    for (size_t i = 0; i < r.flows.size(); ++i)
    {
        const RoceFlowResult& f = r.flows[i];
        if (!f.ok)
        {
            continue;
        }
        const uint32_t h = hops.Hops(topo.nodeOfHost[f.spec.src], topo.nodeOfHost[f.spec.dst]);
        // The file's standalone FCT is the reference simulator's own, so that slowdowns from
        // this file and from its fct.txt share one denominator (docs/validation.md (5)).
        const uint64_t standalone =
            HpccStandaloneFctNs(topo, f.spec.bytes, referencePayloadBytes, h);
        out << std::hex << std::setw(8) << std::setfill('0')
            << EthFabricHelper::HostAddress(f.spec.src) << " " << std::setw(8)
            << EthFabricHelper::HostAddress(f.spec.dst) << std::dec << std::setfill(' ') << " " << i
            << " 100 " << f.spec.bytes << " "
            << std::llround((f.spec.start.GetSeconds() + timeOffset) * 1e9) << " "
            << f.fct.GetNanoSeconds() << " " << standalone << "\n";
    }
    if (!out.flush())
    {
        throw std::runtime_error(path + ": cannot write");
    }
}

} // namespace ns3
