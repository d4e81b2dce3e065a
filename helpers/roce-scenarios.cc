// Built-in RoCEv2 RDMA scenarios for `cnuas run`: DCQCN fairness on one bottleneck, N-to-1
// incast under PFC / DCQCN / both, and the seed's "works in testing, collapses under load"
// misconfiguration. validation/roce/ runs them and plots their CSV output.
#include "helpers/roce-hpcc-compat.h"
#include "helpers/roce-traffic-run.h"
#include "helpers/scenario.h"

#include "ns3/rng-seed-manager.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/stat.h>

namespace ns3
{

namespace
{

std::string
Fixed(double v, int digits)
{
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
}

std::string
CcTypeId(const std::string& name)
{
    if (name == "none")
    {
        return "ns3::RdmaCcNone";
    }
    if (name == "dcqcn-paper")
    {
        return "ns3::RdmaCcDcqcnPaper";
    }
    if (name == "dcqcn-mlx")
    {
        return "ns3::RdmaCcDcqcnMlx";
    }
if (name == "timely")
    {
        return "ns3::RdmaCcTimely";
    }
    throw std::invalid_argument("cc must be none, dcqcn-paper, dcqcn-mlx or timely, not '" +
                                name + "'");
}

std::vector<std::string>
SplitList(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
    {
        if (!item.empty())
        {
            out.push_back(item);
        }
    }
    return out;
}

std::string
OutFile(const ScenarioOptions& o, const std::string& name)
{
    const std::string dir = o.outDir.empty() ? "." : o.outDir;
    mkdir(dir.c_str(), 0755);
    return dir + "/" + name;
}

double
Percentile(std::vector<double> v, double p)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * v.size())) - 1);
    return v[i];
}

// ---- roce-fairness ------------------------------------------------------------------------

ScenarioResult
RunFairness(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("roce-fairness");
    CheckScenarioParams(o, info);
    RoceRunSpec spec;
    const uint32_t n = static_cast<uint32_t>(ScenarioParamUint(o, info, "flows"));
    if (n < 2 || n > 64)
    {
        throw std::invalid_argument("flows must be 2..64");
    }
    spec.topology = MakeStar(n + 1);
    spec.hostRate = DataRate(ScenarioParamString(o, info, "rate"));
    spec.fabricRate = spec.hostRate;
    spec.cc = CcTypeId(ScenarioParamString(o, info, "cc"));
    const Time stagger = ScenarioParamTime(o, info, "stagger");
    const uint64_t bytes = ScenarioParamUint(o, info, "bytes");
    for (uint32_t i = 0; i < n; ++i)
    {
        spec.flows.push_back({i + 1, 0, bytes, stagger * i});
    }
    spec.sampleInterval = ScenarioParamTime(o, info, "sample");
    spec.limit = ScenarioParamTime(o, info, "limit");
    const RoceRunResult r = RunRoceFlows(spec);

    // Per sample: each flow's rate; convergence = the first time after the last flow started
    // from which every later 1 ms average has all flows within 10 % of the line of each
    // other, until the first flow finishes; fill = the first such time from which the flows
    // also use >= 90 % of the line.
    const double line = spec.hostRate.GetBitRate() / 1e9;
    const double lastStart = (stagger * (n - 1)).GetSeconds() * 1e6;
    double firstEnd = 1e18;
    for (const auto& f : r.flows)
    {
        if (f.fct.IsPositive())
        {
            firstEnd = std::min(firstEnd, (f.spec.start + f.fct).GetSeconds() * 1e6);
        }
    }
    const double dt = spec.sampleInterval.GetSeconds() * 1e6;
    const size_t win = std::max<size_t>(1, static_cast<size_t>(std::llround(1000.0 / dt)));
    std::ofstream csv(OutFile(o, "roce-fairness.csv"));
    csv << "time_us";
    for (uint32_t i = 0; i < n; ++i)
    {
        csv << ",flow" << i << "_gbps";
    }
    csv << ",max_queue_bytes\n";
    for (size_t s = 0; s < r.sampleTimesUs.size(); ++s)
    {
        csv << Fixed(r.sampleTimesUs[s], 3);
        for (uint32_t i = 0; i < n; ++i)
        {
            csv << "," << Fixed(r.flowRateGbps[i][s], 4);
        }
        csv << "," << r.maxQueueBytes[s] << "\n";
    }
    double converged = -1;
    double filled = -1;
    std::vector<double> avg(n, 0);
    uint32_t windows = 0;
    for (size_t s = 0; s + win <= r.sampleTimesUs.size(); s += win)
    {
        const double t0 = r.sampleTimesUs[s] - dt;
        if (t0 < lastStart || r.sampleTimesUs[s + win - 1] > firstEnd)
        {
            continue;
        }
        std::vector<double> m(n, 0);
        for (uint32_t i = 0; i < n; ++i)
        {
            for (size_t k = s; k < s + win; ++k)
            {
                m[i] += r.flowRateGbps[i][k] / win;
            }
        }
        const auto [lo, hi] = std::minmax_element(m.begin(), m.end());
        double sum = 0;
        for (double v : m)
        {
            sum += v;
        }
        if ((*hi - *lo) / line <= 0.10 && sum >= 0.9 * line)
        {
            filled = filled < 0 ? t0 - lastStart : filled;
        }
        else
        {
            filled = -1;
        }
        if ((*hi - *lo) / line <= 0.10)
        {
            if (converged < 0)
            {
                converged = t0 - lastStart;
                std::fill(avg.begin(), avg.end(), 0);
                windows = 0;
            }
        }
        else
        {
            converged = -1;
        }
        for (uint32_t i = 0; i < n; ++i)
        {
            avg[i] += m[i];
        }
        windows++;
    }
    double total = 0;
    for (double& a : avg)
    {
        a /= std::max<uint32_t>(windows, 1);
        total += a;
    }
    ScenarioResult res;
    res.summary.push_back({"flows", std::to_string(n)});
    res.summary.push_back({"all flows done", r.allDone ? "yes" : "no"});
    res.summary.push_back({"convergence time (us after last start)",
                           converged < 0 ? "not converged" : Fixed(converged, 0)});
    res.summary.push_back({"fill time (us after last start, >= 90 % of line)",
                           filled < 0 ? "never" : Fixed(filled, 0)});
    res.summary.push_back({"Jain index (converged period)", Fixed(JainIndex(avg), 4)});
    res.summary.push_back({"utilisation (converged period)", Fixed(total / line, 4)});
    res.summary.push_back({"peak queue bytes", std::to_string(r.peakQueueBytes)});
    res.summary.push_back({"ECN marks", std::to_string(r.ecnMarks)});
    res.summary.push_back({"CNPs", std::to_string(r.cnps)});
    res.summary.push_back({"PFC pauses", std::to_string(r.pauseFrames)});
    res.summary.push_back({"drops", std::to_string(r.drops)});
    res.artifacts.push_back(OutFile(o, "roce-fairness.csv"));
    return res;
}

// ---- roce-incast ---------------------------------------------------------------------------

ScenarioResult
RunIncast(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("roce-incast");
    CheckScenarioParams(o, info);
    const auto senders = SplitList(ScenarioParamString(o, info, "senders"));
    const auto modes = SplitList(ScenarioParamString(o, info, "modes"));
    const uint64_t bytes = ScenarioParamUint(o, info, "bytes");
    const std::string rate = ScenarioParamString(o, info, "rate");
    const uint64_t buffer = ScenarioParamUint(o, info, "buffer");
    const std::string cc = CcTypeId(ScenarioParamString(o, info, "cc"));
    std::ofstream csv(OutFile(o, "roce-incast.csv"));
    csv << "mode,senders,goodput_gbps,peak_queue_bytes,pauses,drops,retransmitted,"
           "cnps,marks,jain_fct,max_fct_us,all_done\n";
    ScenarioResult res;
    for (const auto& mode : modes)
    {
        if (mode != "pfc" && mode != "dcqcn" && mode != "both")
        {
            throw std::invalid_argument("modes are pfc, dcqcn, both, not '" + mode + "'");
        }
        for (const auto& ns : senders)
        {
            const uint32_t n = static_cast<uint32_t>(std::stoul(ns));
            RoceRunSpec spec;
            spec.topology = MakeStar(n + 1);
            spec.hostRate = DataRate(rate);
            spec.fabricRate = spec.hostRate;
            spec.bufferBytes = buffer;
            spec.pfc = mode != "dcqcn";
            spec.ecn = mode != "pfc";
            spec.cc = mode == "pfc" ? "ns3::RdmaCcNone" : cc;
            for (uint32_t i = 0; i < n; ++i)
            {
                spec.flows.push_back({i + 1, 0, bytes, Time(0)});
            }
            spec.limit = ScenarioParamTime(o, info, "limit");
            const RoceRunResult r = RunRoceFlows(spec);
            std::vector<double> fct;
            double last = 0;
            for (const auto& f : r.flows)
            {
                const double us = f.fct.IsPositive() ? f.fct.GetSeconds() * 1e6 : 0;
                fct.push_back(us);
                last = std::max(last, us);
            }
            const double goodput = last > 0 ? n * bytes * 8.0 / (last * 1e-6) / 1e9 : 0;
            csv << mode << "," << n << "," << Fixed(goodput, 3) << "," << r.peakQueueBytes << ","
                << r.pauseFrames << "," << r.drops << "," << r.retransmittedPackets << "," << r.cnps
                << "," << r.ecnMarks << "," << Fixed(JainIndex(fct), 4) << "," << Fixed(last, 1)
                << "," << (r.allDone ? 1 : 0) << "\n";
            res.summary.push_back(
                {mode + " N=" + ns, "goodput " + Fixed(goodput, 2) + " Gb/s, peak queue " +
                                        std::to_string(r.peakQueueBytes) + " B, pauses " +
                                        std::to_string(r.pauseFrames) + ", drops " +
                                        std::to_string(r.drops)});
        }
    }
    res.artifacts.push_back(OutFile(o, "roce-incast.csv"));
    return res;
}

// ---- roce-collapse -------------------------------------------------------------------------

/// WebSearch flow sizes (DCTCP, SIGCOMM 2010, as tabulated by HPCC's traffic generator):
/// (bytes, cumulative fraction).
const std::vector<std::pair<double, double>> kWebSearchCdf = {
    {0, 0},          {10000, 0.15},   {20000, 0.20},    {30000, 0.30},
    {50000, 0.40},   {80000, 0.53},   {200000, 0.60},   {1000000, 0.70},
    {2000000, 0.80}, {5000000, 0.90}, {10000000, 0.97}, {30000000, 1.0}};

double
SampleCdf(const std::vector<std::pair<double, double>>& cdf, double u)
{
    for (size_t i = 1; i < cdf.size(); ++i)
    {
        if (u <= cdf[i].second)
        {
            const double f = (u - cdf[i - 1].second) / (cdf[i].second - cdf[i - 1].second);
            return cdf[i - 1].first + f * (cdf[i].first - cdf[i - 1].first);
        }
    }
    return cdf.back().first;
}

double
CdfMean(const std::vector<std::pair<double, double>>& cdf)
{
    double m = 0;
    for (size_t i = 1; i < cdf.size(); ++i)
    {
        m += (cdf[i].second - cdf[i - 1].second) * (cdf[i].first + cdf[i - 1].first) / 2;
    }
    return m;
}

ScenarioResult
RunCollapse(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("roce-collapse");
    CheckScenarioParams(o, info);
    const auto loads = SplitList(ScenarioParamString(o, info, "loads"));
    const auto configs = SplitList(ScenarioParamString(o, info, "configs"));
    const Time arrivals = ScenarioParamTime(o, info, "arrivals");
    const uint64_t maxBytes = ScenarioParamUint(o, info, "max-flow-bytes");
    const std::string rate = ScenarioParamString(o, info, "rate");
    const std::string cc = CcTypeId(ScenarioParamString(o, info, "cc"));
    std::ofstream csv(OutFile(o, "roce-collapse.csv"));
    csv << "config,load,flows,done,goodput_gbps,p50_fct_us,p99_fct_us,drops,pauses,"
           "retransmitted,marks\n";
    ScenarioResult res;
    for (const auto& cfg : configs)
    {
        if (cfg != "consistent" && cfg != "pfc-off" && cfg != "inconsistent")
        {
            throw std::invalid_argument("configs are consistent, pfc-off, inconsistent");
        }
        for (const auto& ls : loads)
        {
            const double load = std::stod(ls);
            RoceRunSpec spec;
            spec.topology = MakeLeafSpine(4, 2, 4); // 16 hosts, 2:1 spread over 2 spines
            spec.hostRate = DataRate(rate);
            spec.fabricRate = spec.hostRate;
            spec.pfc = cfg != "pfc-off";
            spec.ecn = true;
            spec.cc = cc;
            spec.bufferBytes = 2 * 1024 * 1024;
            if (cfg == "inconsistent")
            {
                for (uint32_t i = 0; i < spec.topology.nodes.size(); ++i)
                {
                    if (spec.topology.nodes[i].name == "spine1")
                    {
                        spec.misconfiguredSwitches.push_back(i);
                    }
                }
            }
            // Every host a Poisson source at `load` of its link, sizes from WebSearch
            // (capped), destinations uniform over the other hosts; same seed for every config.
            std::mt19937_64 rng(o.seed * 1000003 + static_cast<uint64_t>(load * 1000));
            std::uniform_real_distribution<double> u(0.0, 1.0);
            const uint32_t hosts = 16;
            auto capped = kWebSearchCdf;
            for (auto& p : capped)
            {
                p.first = std::min<double>(p.first, maxBytes);
            }
            const double mean = CdfMean(capped);
            const double gap = mean * 8 / (spec.hostRate.GetBitRate() * load);
            for (uint32_t h = 0; h < hosts; ++h)
            {
                double t = -std::log(1 - u(rng)) * gap;
                while (t < arrivals.GetSeconds())
                {
                    uint32_t d = static_cast<uint32_t>(u(rng) * (hosts - 1));
                    d += d >= h ? 1 : 0;
                    const uint64_t b =
                        std::max<uint64_t>(1, std::llround(SampleCdf(capped, u(rng))));
                    spec.flows.push_back({h, d, b, PicoSeconds(std::llround(t * 1e12))});
                    t += -std::log(1 - u(rng)) * gap;
                }
            }
            spec.limit = ScenarioParamTime(o, info, "limit");
            const RoceRunResult r = RunRoceFlows(spec);
            std::vector<double> fct;
            uint64_t doneBytes = 0;
            uint32_t done = 0;
            for (const auto& f : r.flows)
            {
                if (f.ok)
                {
                    fct.push_back(f.fct.GetSeconds() * 1e6);
                    doneBytes += f.spec.bytes;
                    done++;
                }
            }
            const double goodput = doneBytes * 8.0 / r.end.GetSeconds() / 1e9;
            csv << cfg << "," << ls << "," << r.flows.size() << "," << done << ","
                << Fixed(goodput, 3) << "," << Fixed(Percentile(fct, 0.5), 1) << ","
                << Fixed(Percentile(fct, 0.99), 1) << "," << r.drops << "," << r.pauseFrames << ","
                << r.retransmittedPackets << "," << r.ecnMarks << "\n";
            res.summary.push_back(
                {cfg + " load " + ls, std::to_string(done) + "/" + std::to_string(r.flows.size()) +
                                          " done, p99 FCT " + Fixed(Percentile(fct, 0.99), 0) +
                                          " us, drops " + std::to_string(r.drops)});
        }
    }
    res.artifacts.push_back(OutFile(o, "roce-collapse.csv"));
    return res;
}

ScenarioInfo
FairnessInfo()
{
    ScenarioInfo i;
    i.name = "roce-fairness";
    i.description = "RoCEv2 flows sharing one bottleneck under DCQCN: per-flow rates, "
                    "convergence time and Jain's index (writes roce-fairness.csv)";
    i.params = {{"flows", "2", "flows into one receiver (2..64)"},
                {"rate", "40Gbps", "link rate"},
                {"cc", "dcqcn-paper", "none, dcqcn-paper, dcqcn-mlx or timely"},
                {"bytes", "25000000", "bytes each flow writes"},
                {"stagger", "500us", "start of flow i is i x stagger"},
                {"sample", "10us", "rate sampling interval"},
                {"limit", "20ms", "simulated time limit"}};
    i.run = RunFairness;
    return i;
}

ScenarioInfo
IncastInfo()
{
    ScenarioInfo i;
    i.name = "roce-incast";
    i.description = "RoCEv2 N-to-1 incast with PFC only, DCQCN only and both: goodput, queue, "
                    "PAUSE and drop counts (writes roce-incast.csv)";
    i.params = {{"senders", "2,4,8,16", "comma-separated sender counts"},
                {"modes", "pfc,dcqcn,both", "comma-separated: pfc, dcqcn, both"},
                {"bytes", "2000000", "bytes each sender writes"},
                {"rate", "40Gbps", "link rate"},
                {"buffer", "4194304", "switch shared buffer, bytes"},
                {"cc", "dcqcn-paper", "the DCQCN preset of the dcqcn and both modes"},
                {"limit", "50ms", "simulated time limit per run"}};
    i.run = RunIncast;
    return i;
}

ScenarioInfo
CollapseInfo()
{
    ScenarioInfo i;
    i.name = "roce-collapse";
    i.description = "The same WebSearch load on a 16-host leaf-spine with PFC+ECN consistent, "
                    "PFC off, and one spine misconfigured (writes roce-collapse.csv)";
    i.params = {{"loads", "0.1,0.3,0.5,0.7", "comma-separated offered loads (of host links)"},
                {"configs", "consistent,pfc-off,inconsistent", "comma-separated configs"},
                {"arrivals", "1ms", "flows arrive during this time"},
                {"max-flow-bytes", "1000000", "cap on WebSearch flow sizes, bytes"},
                {"rate", "40Gbps", "link rate"},
                {"cc", "dcqcn-paper", "none, dcqcn-paper, dcqcn-mlx or timely on every NIC"},
                {"limit", "30ms", "simulated time limit per run"}};
    i.run = RunCollapse;
    return i;
}

// ---- roce-hpcc -----------------------------------------------------------------------------

/// FCT slowdown buckets by flow size (upper bounds, bytes), as FCT-by-size plots use them.
const std::vector<double> kSizeBuckets = {1e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 1e12};

ScenarioResult
RunHpcc(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("roce-hpcc");
    CheckScenarioParams(o, info);
    const std::string dir = ScenarioParamString(o, info, "dir");
    const HpccTopology topo =
        ReadHpccTopology(dir + "/" + ScenarioParamString(o, info, "topology-file"));
    const double offset = ScenarioParamDouble(o, info, "time-offset");
    std::vector<RoceFlowSpec> flows =
        ReadHpccFlows(dir + "/" + ScenarioParamString(o, info, "flow-file"), topo, offset);
    const uint64_t maxFlows = ScenarioParamUint(o, info, "max-flows");
    if (maxFlows > 0 && flows.size() > maxFlows)
    {
        flows.resize(maxFlows);
    }
    RoceRunSpec spec;
    spec.topology = topo.topology;
    spec.hostRate = DataRate(topo.hostRate);
    spec.fabricRate = DataRate(topo.fabricRate);
    spec.ethMtu = 9000;
    spec.flows = flows;
    std::vector<std::string> ignored;
    const std::string cfgFile = ScenarioParamString(o, info, "config-file");
    std::vector<std::string> used;
    if (!cfgFile.empty())
    {
        used = ApplyHpccConfig(ReadHpccConfig(dir + "/" + cfgFile), topo, spec, &ignored);
    }
    const std::string cc = ScenarioParamString(o, info, "cc");
    if (!cc.empty())
    {
        spec.cc = CcTypeId(cc);
        spec.configureNics = nullptr; // the config's constants are the firmware DCQCN's
    }
    spec.limit = ScenarioParamTime(o, info, "limit");
    spec.sampleInterval = ScenarioParamTime(o, info, "sample");
    // The scheduler orders events as every ns-3 scheduler does; FifoHeapScheduler (a FIFO for
    // the current time, a four-ary heap for later) costs least here (docs/performance.md).
    spec.scheduler = ScenarioParamString(o, info, "scheduler");
    spec.configureFabric = [](EthFabricHelper& h) {
        // Cables of 200 m (1 us) need more headroom than the default XOFF leaves.
        h.SetPortAttribute("RxBufferBytes", UintegerValue(4 * 1024 * 1024));
    };
    struct rusage ru0;
    getrusage(RUSAGE_SELF, &ru0);
    const auto w0 = std::chrono::steady_clock::now();
    const RoceRunResult r = RunRoceFlows(spec);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const uint32_t mtu = RdmaMtuBytes(spec.pathMtu);
    const std::vector<double> ideals = WriteHpccFct(OutFile(o, "fct.txt"), r, topo, mtu, offset);

    std::vector<std::vector<double>> slow(kSizeBuckets.size());
    std::ofstream csv(OutFile(o, "roce-hpcc-fct.csv"));
    csv << "flow,src,dst,bytes,start_us,fct_us,ideal_us,slowdown\n";
    uint32_t done = 0;
    {
        for (size_t i = 0; i < r.flows.size(); ++i)
        {
            const auto& f = r.flows[i];
            if (!f.ok)
            {
                continue;
            }
            done++;
            const double fct = f.fct.GetSeconds();
            const double ideal = ideals[i];
            const double sd = std::max(1.0, fct / ideal);
            csv << i << "," << f.spec.src << "," << f.spec.dst << "," << f.spec.bytes << ","
                << Fixed(f.spec.start.GetSeconds() * 1e6, 3) << "," << Fixed(fct * 1e6, 3) << ","
                << Fixed(ideal * 1e6, 3) << "," << Fixed(sd, 3) << "\n";
            for (size_t b = 0; b < kSizeBuckets.size(); ++b)
            {
                if (f.spec.bytes <= kSizeBuckets[b])
                {
                    slow[b].push_back(sd);
                    break;
                }
            }
        }
    }
    ScenarioResult res;
    res.summary.push_back(
        {"flows done", std::to_string(done) + "/" + std::to_string(r.flows.size())});
    res.summary.push_back({"congestion control", spec.cc});
    res.summary.push_back({"config keys used", std::to_string(used.size())});
    std::string ign;
    for (const auto& k : ignored)
    {
        ign += (ign.empty() ? "" : " ") + k;
    }
    res.summary.push_back({"config keys without equivalent", ign.empty() ? "-" : ign});
    res.summary.push_back({"simulated time (ms)", Fixed(r.end.GetSeconds() * 1e3, 3)});
    // CPU seconds of this process: on a shared machine the wall clock also counts waiting.
    const double cpu = (ru.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                       (ru.ru_utime.tv_usec - ru0.ru_utime.tv_usec) * 1e-6 +
                       (ru.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                       (ru.ru_stime.tv_usec - ru0.ru_stime.tv_usec) * 1e-6;
    res.summary.push_back({"wall time (s)", Fixed(wall, 2)});
    res.summary.push_back({"CPU time (s)", Fixed(cpu, 2)});
    res.summary.push_back({"packets per CPU second", Fixed(r.packetsSent / cpu, 0)});
    res.summary.push_back({"events", std::to_string(r.events)});
    res.summary.push_back({"RoCE packets sent", std::to_string(r.packetsSent)});
    res.summary.push_back({"packets per wall second", Fixed(r.packetsSent / wall, 0)});
    res.summary.push_back(
        {"events per packet", Fixed(double(r.events) / std::max<uint64_t>(1, r.packetsSent), 2)});
    res.summary.push_back({"peak RSS (MB)", Fixed(ru.ru_maxrss / 1024.0, 1)});
    res.summary.push_back({"PFC pauses", std::to_string(r.pauseFrames)});
    res.summary.push_back({"drops", std::to_string(r.drops)});
    res.summary.push_back(
        {"ECN marks / CNPs", std::to_string(r.ecnMarks) + " / " + std::to_string(r.cnps)});
    double lo = 0;
    for (size_t b = 0; b < kSizeBuckets.size(); ++b)
    {
        if (!slow[b].empty())
        {
            res.summary.push_back(
                {"slowdown " + Fixed(lo, 0) + "-" + Fixed(std::min(kSizeBuckets[b], 3e7), 0) +
                     " B (n=" + std::to_string(slow[b].size()) + ") p50/p95/p99",
                 Fixed(Percentile(slow[b], 0.5), 2) + " / " + Fixed(Percentile(slow[b], 0.95), 2) +
                     " / " + Fixed(Percentile(slow[b], 0.99), 2)});
        }
        lo = kSizeBuckets[b];
    }
    res.artifacts.push_back(OutFile(o, "fct.txt"));
    res.artifacts.push_back(OutFile(o, "roce-hpcc-fct.csv"));
    return res;
}

ScenarioInfo
HpccInfo()
{
    ScenarioInfo i;
    i.name = "roce-hpcc";
    i.description = "Runs HPCC-simulator inputs (topology, flow and KEY value config files) on "
                    "RoCE NICs and writes its FCT format (fct.txt) beside Cnuas's CSV";
    i.params = {{"dir", "/work/shared/data/hpcc-compat", "directory of the HPCC-format files"},
                {"topology-file", "fat.txt", "HPCC topology file in dir"},
                {"flow-file", "ws30_5ms.txt", "HPCC flow file in dir"},
                {"config-file", "config_fat_ws30_5ms_dcqcn.txt", "HPCC config in dir ('' none)"},
                {"cc", "", "override: none, dcqcn-paper, dcqcn-mlx, timely ('': config's)"},
                {"time-offset", "2", "seconds subtracted from flow start times"},
                {"max-flows", "0", "run only the first N flows (0: all)"},
                {"limit", "100ms", "simulated time limit"},
                {"scheduler", "ns3::FifoHeapScheduler", "ns-3 event scheduler TypeId"},
                {"sample", "0s", "per-flow rate and switch queue sampling interval (0s: none)"}};
    i.run = RunHpcc;
    return i;
}

} // namespace

CNUAS_REGISTER_SCENARIO(FairnessInfo());
CNUAS_REGISTER_SCENARIO(HpccInfo());
CNUAS_REGISTER_SCENARIO(IncastInfo());
CNUAS_REGISTER_SCENARIO(CollapseInfo());

} // namespace ns3
