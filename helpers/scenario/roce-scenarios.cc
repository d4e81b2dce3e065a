// Built-in RoCEv2 RDMA scenarios for `cnuas run`: DCQCN fairness on one bottleneck, N-to-1
// incast under PFC / DCQCN / both, and the seed's "works in testing, collapses under load"
// misconfiguration. validation/roce/ runs them and plots their CSV output.
#include "helpers/formats/parse-util.h"
#include "helpers/formats/roce-hpcc-compat.h"
#include "helpers/rdma/rdma-traffic-run.h"
#include "helpers/roce/roce-ideal-fct.h"
#include "helpers/roce/roce-traffic-pattern.h"
#include "helpers/roce/roce-traffic-run.h"
#include "helpers/scenario/flow-scenario.h"
#include "helpers/scenario/scenario-file.h"
#include "helpers/scenario/scenario.h"
#include "models/common/data-directory.h"

#include "ns3/enum.h"
#include "ns3/nstime.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
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
    if (name == "dctcp")
    {
        return "ns3::RdmaCcDctcp";
    }
    if (name == "timely")
    {
        return "ns3::RdmaCcTimely";
    }
    if (name == "hpcc")
    {
        return "ns3::RdmaCcHpcc";
    }
    throw std::invalid_argument(
        "cc must be none, dcqcn-paper, dcqcn-mlx, dctcp, timely or hpcc, not '" + name + "'");
}

std::vector<std::string>
SplitList(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
    {
        item = TrimSpace(item); // "pfc, dcqcn" as the scenario's list parameters read it
        if (!item.empty())
        {
            out.push_back(item);
        }
    }
    return out;
}

/// The loss-recovery parameters every roce scenario with drops takes (`recovery`, `rto`,
/// `rto-low`, `inflight-cap`). "auto" gives IRN the settings ConWeave's IRN uses (RTO_low
/// 454 us, RTO_high 1350 us, BDP cap 100 KB = 100 packets at 1 KB MTU; anchors §1.3) and
/// go-back-N the QPs' local ACK timeout and no cap.
void
ApplyRecoveryParams(const ScenarioOptions& o, const ScenarioInfo& info,
                    const std::string& recovery, RoceRunSpec& spec)
{
    if (recovery != "gbn" && recovery != "irn")
    {
        throw std::invalid_argument("recovery is gbn or irn, not '" + recovery + "'");
    }
    const bool irn = recovery == "irn";
    spec.recovery = recovery;
    const auto timeOr = [&](const std::string& key, Time dflt) {
        return ScenarioParamString(o, info, key) == "auto"
                   ? dflt
                   : ScenarioParamTime(o, info, key, Time(0), Seconds(1000));
    };
    spec.rtoHigh = timeOr("rto", irn ? MicroSeconds(1350) : Time(0));
    spec.rtoLow = timeOr("rto-low", irn ? MicroSeconds(454) : Time(0));
    if (spec.rtoHigh.IsZero())
    {
        spec.rtoLow = Time(0); // RTO_low only refines an RTO
    }
    const std::string cap = ScenarioParamString(o, info, "inflight-cap");
    spec.maxInflightPackets = cap == "auto" ? (irn ? 100 : 0)
                                            : static_cast<uint32_t>(ScenarioParamUint(
                                                  o, info, "inflight-cap", 0, UINT32_MAX));
}

const std::vector<ScenarioParam> kRecoveryParams = {
    {"recovery", "gbn", "RC loss recovery: gbn (go-back-N) or irn (selective repeat)"},
    {"rto", "auto", "retransmission timeout (auto: irn 1350us, gbn the local ACK timeout)"},
    {"rto-low", "auto", "RTO with at most 3 packets in flight (auto: irn 454us, gbn none)"},
    {"inflight-cap", "auto", "packets in flight per QP (auto: irn 100, gbn no cap)"}};
/// The switch-marking and policy parameters roce-fairness and roce-incast share: `ecn`
/// (red, threshold, off), `kmin`/`kmax` (bytes), `pmax`, and `cc-attrs`, "Name=Value;..." set
/// on every NIC's policy (ns-3 attribute syntax, e.g. "RateAi=200Mbps;Window=100000").
void
ApplyMarkingParams(const ScenarioOptions& o, const ScenarioInfo& info, RoceRunSpec& spec)
{
    const std::string ecn = ScenarioParamChoice(o, info, "ecn", {"red", "threshold", "off"});
    // The switch's Kmin/Kmax attributes are 32-bit byte counts; Pmax is a probability.
    spec.kminBytes = ScenarioParamUint(o, info, "kmin", 0, UINT32_MAX);
    spec.kmaxBytes = ScenarioParamUint(o, info, "kmax", 0, UINT32_MAX);
    spec.pmax = ScenarioParamDouble(o, info, "pmax", 0, 1);
    if (spec.kminBytes > spec.kmaxBytes)
    {
        throw ScenarioParamError("kmin", "scenario '" + info.name + "': kmin=" +
                                             std::to_string(spec.kminBytes) +
                                             " is above kmax=" + std::to_string(spec.kmaxBytes));
    }
    if (ecn == "off")
    {
        spec.ecn = false;
    }
    std::vector<std::pair<std::string, std::string>> attrs;
    std::stringstream in(ScenarioParamString(o, info, "cc-attrs"));
    std::string item;
    while (std::getline(in, item, ';'))
    {
        const size_t eq = item.find('=');
        if (item.empty())
        {
            continue;
        }
        if (eq == std::string::npos || eq == 0)
        {
            throw std::invalid_argument("cc-attrs item '" + item + "' is not Name=Value");
        }
        attrs.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
    // Refuse a name the policy does not have here, before anything is built.
    const TypeId tid = TypeId::LookupByName(spec.cc);
    for (const auto& [name, value] : attrs)
    {
        TypeId::AttributeInformation ai;
        if (!tid.LookupAttributeByName(name, &ai))
        {
            throw std::invalid_argument("cc-attrs: " + spec.cc + " has no attribute " + name);
        }
        // As --set checks a value (a Time needs its unit, a rate must be positive).
        if (const std::string expects = CheckAttributeValue(ai.checker, value); !expects.empty())
        {
            throw ScenarioParamError("cc-attrs", "cc-attrs: '" + value + "' is not a valid " +
                                                     name + " (expects " + expects + ")");
        }
    }
    const bool threshold = ecn == "threshold";
    auto previousFabric = spec.configureFabric;
    spec.configureFabric = [threshold, previousFabric](EthFabricHelper& h) {
        if (previousFabric)
        {
            previousFabric(h);
        }
        if (threshold)
        {
            h.SetMmuAttribute("EcnMode", EnumValue(2)); // DCTCP's single threshold at kmin
        }
    };
    auto previousNics = spec.configureNics;
    spec.configureNics = [attrs, previousNics](RoceHelper& h) {
        if (previousNics)
        {
            previousNics(h);
        }
        for (const auto& [name, value] : attrs)
        {
            h.SetCongestionControlAttribute(name, StringValue(value));
        }
    };
}

/// Transport bytes (what the rate samples count) a fully used link of `bps` carries at path
/// MTU `mtu`: each packet's payload + BTH 12 + ICRC 4 out of that + UDP 8, IPv4 20, Ethernet
/// 14 + FCS 4, preamble 8 and IFG 12 on the wire.
double
TransportCeilingGbps(double bps, uint32_t mtu)
{
    return bps / 1e9 * (mtu + 16.0) / (mtu + 16.0 + 66.0);
}

/// `pcap-hosts`, which every roce-* scenario takes: which host ports --pcap traces. All of them
/// by default; on a large fabric (roce-hpcc's 320 hosts) a list keeps the traces to the hosts
/// of interest. Never none: --pcap always writes the ports it names.
const ScenarioParam kPcapHostsParam{
    "pcap-hosts", "all",
    "with --pcap: the hosts whose ports are traced (all, or host indices: 0,5,17)"};

/**
 * Points `spec` at where --pcap puts the traces of one run: the pcap folder itself, or its
 * subfolder `run` for scenarios of several runs (one per mode, sender count, load...), so that
 * no run overwrites another's traces. The parameter is read even without --pcap, so that a bad
 * value is refused either way.
 */
void
ApplyPcapParams(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& run,
                RoceRunSpec& spec)
{
    std::vector<uint32_t> hosts;
    if (ScenarioParamString(o, info, "pcap-hosts") != "all")
    {
        for (uint64_t h : ScenarioParamUintList(o, info, "pcap-hosts", 0, UINT32_MAX - 1))
        {
            hosts.push_back(static_cast<uint32_t>(h));
        }
    }
    if (o.pcapDir.empty())
    {
        return;
    }
    spec.pcapDir = run.empty() ? o.pcapDir : o.pcapDir + "/" + run;
    spec.pcapHosts = hosts;
}

/// The marking parameters as scenario parameters (DCQCN paper defaults).
std::vector<ScenarioParam>
MarkingParams()
{
    return {{"ecn", "red", "switch marking: red (kmin/kmax/pmax), threshold (at kmin), off"},
            {"kmin", "5000", "ECN Kmin, bytes (DCQCN paper 5 KB)"},
            {"kmax", "200000", "ECN Kmax, bytes (DCQCN paper 200 KB)"},
            {"pmax", "0.01", "ECN marking probability at Kmax (DCQCN paper 1 %)"},
            {"cc-attrs", "", "policy attributes on every NIC, Name=Value;Name=Value"}};
}

/// A run's totals and sampled series as ScenarioResult::counters and ::traces, for programs
/// that read results rather than files (the Python module).
void
RecordRoceRun(const RoceRunResult& r, ScenarioResult& res)
{
    res.counters = {{"pfc_pauses", static_cast<double>(r.pauseFrames)},
                    {"ecn_marks", static_cast<double>(r.ecnMarks)},
                    {"cnps", static_cast<double>(r.cnps)},
                    {"drops", static_cast<double>(r.drops)},
                    {"retransmitted_packets", static_cast<double>(r.retransmittedPackets)},
                    {"peak_queue_bytes", static_cast<double>(r.peakQueueBytes)},
                    {"packets_sent", static_cast<double>(r.packetsSent)},
                    {"packet_hops", static_cast<double>(r.packetHops)},
                    {"events", static_cast<double>(r.events)},
                    {"sim_time_us", r.end.GetSeconds() * 1e6}};
    ScenarioTraces& t = res.traces;
    t.timeUs = r.sampleTimesUs;
    t.maxQueueBytes.assign(r.maxQueueBytes.begin(), r.maxQueueBytes.end());
    t.pfcPauses.assign(r.pauseFramesSoFar.begin(), r.pauseFramesSoFar.end());
    t.ecnMarks.assign(r.ecnMarksSoFar.begin(), r.ecnMarksSoFar.end());
    t.cnps.assign(r.cnpsSoFar.begin(), r.cnpsSoFar.end());
    t.flowRateGbps.clear();
    t.flowRateGbps.reserve(r.flowRateGbps.size() * r.sampleTimesUs.size());
    for (const auto& rates : r.flowRateGbps)
    {
        t.flowRateGbps.insert(t.flowRateGbps.end(), rates.begin(), rates.end());
    }
    t.portNames = r.portNames;
    if (!r.portNames.empty())
    {
        // Egress queue of every port on the RoCE priority (bytes), ports x samples.
        t.AddPerRow("port_queue_bytes", r.portQueueBytes);
    }
}

/// A flow's FCT in ns, NaN if it did not finish.
double
FctNsOrNan(const RoceFlowResult& f)
{
    return f.fct.IsPositive() ? f.fct.GetSeconds() * 1e9 : std::nan("");
}

// ---- roce-fairness ------------------------------------------------------------------------

ScenarioResult
RunFairness(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("roce-fairness");
    CheckScenarioParams(o, info);
    RoceRunSpec spec;
    const uint32_t n = static_cast<uint32_t>(ScenarioParamUint(o, info, "flows", 2, 64));
    spec.topology = MakeStar(n + 1);
    spec.hostRate = ScenarioParamDataRate(o, info, "rate");
    spec.fabricRate = spec.hostRate;
    spec.cc = CcTypeId(ScenarioParamString(o, info, "cc"));
    ApplyMarkingParams(o, info, spec);
    const Time stagger = ScenarioParamTime(o, info, "stagger", Time(0), Seconds(1000));
    const uint64_t bytes = ScenarioParamUint(o, info, "bytes", 1, UINT64_MAX);
    for (uint32_t i = 0; i < n; ++i)
    {
        spec.flows.push_back({i + 1, 0, bytes, stagger * i});
    }
    // The convergence windows are counted in samples: a zero interval has none.
    spec.sampleInterval = ScenarioParamTime(o, info, "sample", PicoSeconds(1), Seconds(1000));
    spec.limit = ScenarioParamTime(o, info, "limit", PicoSeconds(1), Seconds(1000));
    ApplyPcapParams(o, info, "", spec);
    spec.progress = o.progress;
    spec.stopOnInterrupt = o.stopOnInterrupt;
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
    std::ofstream csv(ScenarioOutputFile(o, "roce-fairness.csv"));
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
    // 1 ms windows between the last start and the first end.
    struct Window
    {
        double t0;
        std::vector<double> m; ///< per-flow mean rate, Gb/s
        double spread;         ///< (max - min) / line
        double sum;
        double queueSum = 0;
        uint32_t queueN = 0;
        uint32_t inBand = 0; ///< queue samples in (Kmin, Kmax]
    };
    std::vector<Window> ws;
    for (size_t s = 0; s + win <= r.sampleTimesUs.size(); s += win)
    {
        const double t0 = r.sampleTimesUs[s] - dt;
        if (t0 < lastStart || r.sampleTimesUs[s + win - 1] > firstEnd)
        {
            continue;
        }
        Window w{t0 - lastStart, std::vector<double>(n, 0), 0, 0};
        for (uint32_t i = 0; i < n; ++i)
        {
            for (size_t k = s; k < s + win; ++k)
            {
                w.m[i] += r.flowRateGbps[i][k] / win;
            }
            w.sum += w.m[i];
        }
        const auto [lo, hi] = std::minmax_element(w.m.begin(), w.m.end());
        w.spread = (*hi - *lo) / line;
        for (size_t k = s; k < s + win; ++k)
        {
            const uint64_t q = r.maxQueueBytes[k];
            w.queueSum += q;
            w.queueN++;
            w.inBand += q > spec.kminBytes && q <= spec.kmaxBytes;
        }
        ws.push_back(std::move(w));
    }
    // The first window from which every later one meets `ok` (ws.size() if none).
    auto settledFrom = [&ws](const std::function<bool(const Window&)>& ok) {
        size_t from = ws.size();
        while (from > 0 && ok(ws[from - 1]))
        {
            --from;
        }
        return from;
    };
    const size_t conv10 = settledFrom([](const Window& w) { return w.spread <= 0.10; });
    const size_t conv5 = settledFrom([](const Window& w) { return w.spread <= 0.05; });
    const size_t fill =
        settledFrom([line](const Window& w) { return w.spread <= 0.10 && w.sum >= 0.9 * line; });
    auto at = [&ws](size_t i) { return i < ws.size() ? Fixed(ws[i].t0, 0) : std::string("never"); };
    // Steady state: from the fill time; if the flows never fill the link, every window.
    const size_t from = fill < ws.size() ? fill : 0;
    std::vector<double> avg(n, 0);
    double spreadSum = 0;
    double queueSum = 0;
    uint64_t queueN = 0;
    uint64_t inBand = 0;
    for (size_t i = from; i < ws.size(); ++i)
    {
        for (uint32_t f = 0; f < n; ++f)
        {
            avg[f] += ws[i].m[f];
        }
        spreadSum += ws[i].spread;
        queueSum += ws[i].queueSum;
        queueN += ws[i].queueN;
        inBand += ws[i].inBand;
    }
    const size_t count = ws.size() > from ? ws.size() - from : 1;
    double total = 0;
    for (double& v : avg)
    {
        v /= count;
        total += v;
    }
    const std::string period = fill < ws.size() ? " (steady: from fill time)"
                                                : " (never filled: all windows)";
    ScenarioResult res;
    res.summary.push_back({"flows", std::to_string(n)});
    res.summary.push_back({"all flows done", r.allDone ? "yes" : "no"});
    res.summary.push_back({"convergence time, within 10 % of line (us after last start)",
                           at(conv10)});
    res.summary.push_back({"convergence time, within 5 % of line (us after last start)",
                           at(conv5)});
    res.summary.push_back({"fill time (us after last start, within 10 % and >= 90 % of line)",
                           at(fill)});
    res.summary.push_back({"Jain index" + period, Fixed(JainIndex(avg), 4)});
    res.summary.push_back({"utilisation of the line" + period, Fixed(total / line, 4)});
    const double ceiling = TransportCeilingGbps(spec.hostRate.GetBitRate(),
                                                RdmaMtuBytes(spec.pathMtu));
    res.summary.push_back({"utilisation of the transport ceiling" + period,
                           Fixed(total / ceiling, 4)});
    res.summary.push_back({"mean (max - min) / line of 1 ms windows" + period,
                           Fixed(spreadSum / count, 4)});
    res.summary.push_back({"mean queue bytes" + period,
                           Fixed(queueSum / std::max<uint64_t>(queueN, 1), 0)});
    res.summary.push_back({"queue samples in (Kmin, Kmax]" + period,
                           Fixed(double(inBand) / std::max<uint64_t>(queueN, 1), 4)});
    res.summary.push_back({"peak queue bytes", std::to_string(r.peakQueueBytes)});
    res.summary.push_back({"ECN marks", std::to_string(r.ecnMarks)});
    res.summary.push_back({"CNPs", std::to_string(r.cnps)});
    res.summary.push_back({"PFC pauses", std::to_string(r.pauseFrames)});
    res.summary.push_back({"drops", std::to_string(r.drops)});
    res.artifacts.push_back(ScenarioOutputFile(o, "roce-fairness.csv"));
    RecordRoceRun(r, res);
    for (const auto& f : r.flows)
    {
        AddFlowRow(res.flows, f, f.spec.start.GetSeconds() * 1e9, FctNsOrNan(f), std::nan(""));
    }
    res.artifacts.insert(res.artifacts.end(), r.pcaps.begin(), r.pcaps.end());
    if (r.interrupted)
    {
        ScenarioMarkInterrupted(res, r.end);
    }
    return res;
}

// ---- roce-incast ---------------------------------------------------------------------------

/// Ctrl-C in a sweep of runs: the sweep ends after the run it stopped (that run's row is
/// partial) and runs no later point; the result then says so (ScenarioMarkInterrupted).
struct SweepInterruption
{
    bool stopped = false;
    Time at; ///< simulated time the stopped run ended at

    void Note(const RoceRunResult& r)
    {
        if (r.interrupted)
        {
            stopped = true;
            at = r.end;
        }
    }

    void Mark(ScenarioResult& res) const
    {
        if (stopped)
        {
            ScenarioMarkInterrupted(res, at);
        }
    }
};

/// The incast run of `n` senders into one receiver in `mode` (pfc, dcqcn, both), as both forms
/// of roce-incast build it: a star, one link rate, the switch buffer, the recovery and marking
/// parameters; the caller adds the flows and the limit.
RoceRunSpec
IncastSpec(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& mode,
           uint32_t n)
{
    if (mode != "pfc" && mode != "dcqcn" && mode != "both")
    {
        throw ScenarioParamError("modes", "scenario '" + info.name +
                                              "': modes are pfc, dcqcn, both, not '" + mode +
                                              "'");
    }
    RoceRunSpec spec;
    spec.topology = MakeStar(n + 1);
    spec.hostRate = ScenarioParamDataRate(o, info, "rate");
    spec.fabricRate = spec.hostRate;
    spec.bufferBytes = ScenarioParamUint(o, info, "buffer", 1, UINT32_MAX);
    spec.pfc = mode != "dcqcn";
    spec.ecn = mode != "pfc";
    spec.cc = mode == "pfc" ? "ns3::RdmaCcNone" : CcTypeId(ScenarioParamString(o, info, "cc"));
    ApplyRecoveryParams(o, info, ScenarioParamString(o, info, "recovery"), spec);
    if (mode != "pfc")
    {
        ApplyMarkingParams(o, info, spec);
    }
    return spec;
}

/// The sweep of both forms of roce-incast: for each of `modes` and each of `senders`, IncastSpec
/// with every sender sending `flowBytes` to host 0 from time 0, finished by `configure` (the
/// limit, sampling), with the pcap, progress and Ctrl-C options; `record` takes each run. Ctrl-C
/// ends the sweep after the run it stopped (res marked). Returns the runs' pcaps, which the
/// caller lists after its CSV.
std::vector<std::string>
SweepIncast(const ScenarioOptions& o,
            const ScenarioInfo& info,
            const std::vector<std::string>& modes,
            const std::vector<uint64_t>& senders,
            uint64_t flowBytes,
            const std::function<void(RoceRunSpec&)>& configure,
            const std::function<void(const std::string& mode,
                                     uint32_t senders,
                                     const RoceRunSpec& spec,
                                     const RoceRunResult& r)>& record,
            ScenarioResult& res)
{
    std::vector<std::string> pcaps;
    SweepInterruption interruption;
    for (const auto& mode : modes)
    {
        for (const uint64_t senderCount : senders)
        {
            if (interruption.stopped)
            {
                break;
            }
            const auto n = static_cast<uint32_t>(senderCount);
            RoceRunSpec spec = IncastSpec(o, info, mode, n);
            for (uint32_t i = 0; i < n; ++i)
            {
                spec.flows.push_back({i + 1, 0, flowBytes, Time(0)});
            }
            configure(spec);
            ApplyPcapParams(o, info, mode + "-n" + std::to_string(n), spec);
            spec.progress = o.progress;
            spec.stopOnInterrupt = o.stopOnInterrupt;
            const RoceRunResult r = RunRoceFlows(spec);
            interruption.Note(r);
            pcaps.insert(pcaps.end(), r.pcaps.begin(), r.pcaps.end());
            record(mode, n, spec, r);
        }
    }
    interruption.Mark(res);
    return pcaps;
}

/// roce-incast with `duration` > 0: long-lived senders (the DCQCN paper's incast measures
/// steady throughput, not completion): per-flow rates averaged from `warmup` to `duration`,
/// their sum against the transport ceiling, Jain's index over them, queue and PAUSE counts.
ScenarioResult
RunIncastSteady(const ScenarioOptions& o, const ScenarioInfo& info)
{
    const auto senders = ScenarioParamUintList(o, info, "senders", 1, 1000);
    const auto modes = SplitList(ScenarioParamString(o, info, "modes"));
    const Time duration = ScenarioParamTime(o, info, "duration", Time(0), Seconds(1000));
    const Time warmup = ScenarioParamTime(o, info, "warmup", Time(0), Seconds(1000));
    if (warmup >= duration)
    {
        throw ScenarioParamError("warmup", "scenario '" + info.name +
                                               "': warmup must be shorter than duration");
    }
    std::ofstream csv(ScenarioOutputFile(o, "roce-incast-steady.csv"));
    csv << "mode,senders,throughput_gbps,utilisation,jain,min_flow_gbps,max_flow_gbps,"
           "mean_queue_bytes,peak_queue_bytes,pauses,drops,retransmitted,cnps,marks\n";
    ScenarioResult res;
    auto configure = [&](RoceRunSpec& spec) {
        spec.sampleInterval = MicroSeconds(10);
        spec.limit = duration;
    };
    auto record = [&](const std::string& mode, uint32_t n, const RoceRunSpec& spec,
                      const RoceRunResult& r) {
        std::vector<double> avg(n, 0);
        double queueSum = 0;
        uint32_t samples = 0;
        for (size_t k = 0; k < r.sampleTimesUs.size(); ++k)
        {
            if (r.sampleTimesUs[k] <= warmup.GetSeconds() * 1e6)
            {
                continue;
            }
            for (uint32_t i = 0; i < n; ++i)
            {
                avg[i] += r.flowRateGbps[i][k];
            }
            queueSum += r.maxQueueBytes[k];
            samples++;
        }
        double total = 0;
        for (double& a : avg)
        {
            a /= std::max<uint32_t>(samples, 1);
            total += a;
        }
        const double ceiling =
            TransportCeilingGbps(spec.hostRate.GetBitRate(), RdmaMtuBytes(spec.pathMtu));
        const auto [lo, hi] = std::minmax_element(avg.begin(), avg.end());
        csv << mode << "," << n << "," << Fixed(total, 3) << "," << Fixed(total / ceiling, 4)
            << "," << Fixed(JainIndex(avg), 4) << "," << Fixed(*lo, 3) << "," << Fixed(*hi, 3)
            << "," << Fixed(queueSum / std::max<uint32_t>(samples, 1), 0) << ","
            << r.peakQueueBytes << "," << r.pauseFrames << "," << r.drops << ","
            << r.retransmittedPackets << "," << r.cnps << "," << r.ecnMarks << "\n";
        res.summary.push_back(
            {mode + " N=" + std::to_string(n),
             "throughput " + Fixed(total, 2) + " Gb/s (" + Fixed(100 * total / ceiling, 1) +
                 " % of ceiling), Jain " + Fixed(JainIndex(avg), 4) + ", mean queue " +
                 Fixed(queueSum / std::max<uint32_t>(samples, 1) / 1000, 1) + " KB, pauses " +
                 std::to_string(r.pauseFrames) + ", drops " + std::to_string(r.drops)});
    };
    // 2 GB a sender: more than a 40-400 Gb/s link carries in the run (a long-lived flow).
    const std::vector<std::string> pcaps =
        SweepIncast(o, info, modes, senders, 2000000000ULL, configure, record, res);
    res.artifacts.push_back(ScenarioOutputFile(o, "roce-incast-steady.csv"));
    res.artifacts.insert(res.artifacts.end(), pcaps.begin(), pcaps.end());
    return res;
}

ScenarioResult
RunIncast(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("roce-incast");
    CheckScenarioParams(o, info);
    if (ScenarioParamTime(o, info, "duration", Time(0), Seconds(1000)).IsStrictlyPositive())
    {
        return RunIncastSteady(o, info);
    }
    const auto senders = ScenarioParamUintList(o, info, "senders", 1, 1000);
    const auto modes = SplitList(ScenarioParamString(o, info, "modes"));
    const uint64_t bytes = ScenarioParamUint(o, info, "bytes", 1, UINT64_MAX);
    const Time limit = ScenarioParamTime(o, info, "limit", PicoSeconds(1), Seconds(1000));
    std::ofstream csv(ScenarioOutputFile(o, "roce-incast.csv"));
    csv << "mode,senders,goodput_gbps,peak_queue_bytes,pauses,drops,retransmitted,"
           "cnps,marks,jain_fct,max_fct_us,all_done\n";
    ScenarioResult res;
    auto configure = [&](RoceRunSpec& spec) { spec.limit = limit; };
    auto record = [&](const std::string& mode, uint32_t n, const RoceRunSpec&,
                      const RoceRunResult& r) {
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
        res.summary.push_back({mode + " N=" + std::to_string(n),
                               "goodput " + Fixed(goodput, 2) + " Gb/s, peak queue " +
                                   std::to_string(r.peakQueueBytes) + " B, pauses " +
                                   std::to_string(r.pauseFrames) + ", drops " +
                                   std::to_string(r.drops)});
    };
    const std::vector<std::string> pcaps =
        SweepIncast(o, info, modes, senders, bytes, configure, record, res);
    res.artifacts.push_back(ScenarioOutputFile(o, "roce-incast.csv"));
    res.artifacts.insert(res.artifacts.end(), pcaps.begin(), pcaps.end());
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
    // A load of zero would space the arrivals infinitely far apart.
    const auto loads = ScenarioParamDoubleList(o, info, "loads", 1e-6, 1);
    const auto configs = SplitList(ScenarioParamString(o, info, "configs"));
    const Time arrivals = ScenarioParamTime(o, info, "arrivals", Time(0), Seconds(1000));
    const uint64_t maxBytes = ScenarioParamUint(o, info, "max-flow-bytes", 1, UINT64_MAX);
    const DataRate rate = ScenarioParamDataRate(o, info, "rate");
    const std::string cc = CcTypeId(ScenarioParamString(o, info, "cc"));
    std::ofstream csv(ScenarioOutputFile(o, "roce-collapse.csv"));
    csv << "config,load,flows,done,goodput_gbps,p50_fct_us,p99_fct_us,drops,pauses,"
           "retransmitted,marks\n";
    ScenarioResult res;
    std::vector<std::string> pcaps; // listed after the CSV

    SweepInterruption interruption;
    for (const auto& cfg : configs)
    {
        if (cfg != "consistent" && cfg != "pfc-off" && cfg != "inconsistent" &&
            cfg != "pfc-off-irn")
        {
            throw ScenarioParamError(
                "configs", "scenario '" + info.name + "': configs are consistent, pfc-off, "
                                                      "inconsistent, pfc-off-irn, not '" +
                               cfg + "'");
        }
        for (const double load : loads)
        {
            if (interruption.stopped)
            {
                break;
            }
            std::ostringstream loadText; // as given: "0.1", not "0.10"
            loadText << load;
            const std::string ls = loadText.str();
            RoceRunSpec spec;
            spec.topology = MakeLeafSpine(4, 2, 4); // 16 hosts, 2:1 spread over 2 spines
            spec.hostRate = rate;
            spec.fabricRate = spec.hostRate;
            // pfc-off-irn: IRN's headline case, no PFC and selective repeat (with its RTO and
            // BDP cap) instead of go-back-N.
            spec.pfc = cfg != "pfc-off" && cfg != "pfc-off-irn";
            spec.ecn = true;
            spec.cc = cc;
            ApplyRecoveryParams(o, info,
                                cfg == "pfc-off-irn" ? "irn"
                                                     : ScenarioParamString(o, info, "recovery"),
                                spec);
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
            spec.limit = ScenarioParamTime(o, info, "limit", PicoSeconds(1), Seconds(1000));
            ApplyPcapParams(o, info, cfg + "-load" + ls, spec);
            spec.progress = o.progress;
            spec.stopOnInterrupt = o.stopOnInterrupt;
            const RoceRunResult r = RunRoceFlows(spec);
            interruption.Note(r);
            pcaps.insert(pcaps.end(), r.pcaps.begin(), r.pcaps.end());
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
                << Fixed(goodput, 3) << "," << Fixed(ScenarioPercentile(fct, 0.5), 1) << ","
                << Fixed(ScenarioPercentile(fct, 0.99), 1) << "," << r.drops << ","
                << r.pauseFrames << "," << r.retransmittedPackets << "," << r.ecnMarks << "\n";
            res.summary.push_back(
                {cfg + " load " + ls,
                 std::to_string(done) + "/" + std::to_string(r.flows.size()) + " done, p99 FCT " +
                     Fixed(ScenarioPercentile(fct, 0.99), 0) + " us, drops " +
                     std::to_string(r.drops)});
        }
    }
    interruption.Mark(res);
    res.artifacts.push_back(ScenarioOutputFile(o, "roce-collapse.csv"));
    res.artifacts.insert(res.artifacts.end(), pcaps.begin(), pcaps.end());
    return res;
}

/// What RunRoceFlows sets on every switch buffer, port and NIC from its spec
/// (helpers/roce/roce-traffic-run.cc): --set of these would be overridden.
void
RoceRunSetsAttributes(ScenarioInfo& i,
                      const std::string& otherwise = "nothing: the scenario fixes it")
{
    ScenarioSetsAttributes(i,
                           {{"ns3::SharedBufferMmu::BufferBytes", "buffer"},
                            {"ns3::SharedBufferMmu::KminBytes", "kmin"},
                            {"ns3::SharedBufferMmu::KmaxBytes", "kmax"},
                            {"ns3::SharedBufferMmu::Pmax", "pmax"},
                            {"ns3::SharedBufferMmu::EcnMode", "ecn"},
                            {"ns3::EthNetDevice::PfcEnableMask", "pfc"},
                            {"ns3::EthNetDevice::DataRate", "rate"},
                            {"ns3::EthNetDevice::Mtu", ""},
                            {"ns3::RdmaEngine::AckReqEveryPackets", ""},
                            {"ns3::RdmaEngine::LossRecovery", "recovery"},
                            {"ns3::RdmaEngine::RtoHigh", "rto"},
                            {"ns3::RdmaEngine::RtoLow", "rto-low"},
                            {"ns3::RdmaEngine::MaxInflightPackets", "inflight-cap"}},
                           otherwise);
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
                {"cc", "dcqcn-paper",
                 "none, dcqcn-paper, dcqcn-mlx, dctcp, timely or hpcc"},
                {"bytes", "25000000", "bytes each flow writes"},
                {"stagger", "500us", "start of flow i is i x stagger"},
                {"sample", "10us", "rate sampling interval"},
                {"limit", "20ms", "simulated time limit"}};
    for (const auto& p : MarkingParams())
    {
        i.params.push_back(p);
    }
    i.params.push_back(kPcapHostsParam);
    i.pcap = ScenarioPcap::Wire;
    i.run = RunFairness;
    RoceRunSetsAttributes(i);
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
                {"cc", "dcqcn-paper", "the policy of the dcqcn and both modes"},
                {"limit", "50ms", "simulated time limit per run"},
                {"duration", "0",
                 "> 0: long-lived senders for this long, steady state measured after warmup "
                 "(writes roce-incast-steady.csv)"},
                {"warmup", "10ms", "long-lived mode: rates are averaged from here on"}};
    for (const auto& p : MarkingParams())
    {
        i.params.push_back(p);
    }
    i.params.insert(i.params.end(), kRecoveryParams.begin(), kRecoveryParams.end());
    i.params.push_back(kPcapHostsParam);
    i.pcap = ScenarioPcap::Wire;
    i.run = RunIncast;
    RoceRunSetsAttributes(i);
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
                {"configs", "consistent,pfc-off,inconsistent,pfc-off-irn",
                 "comma-separated: consistent, pfc-off, inconsistent, pfc-off-irn (PFC off, "
                 "recovery irn)"},
                {"arrivals", "1ms", "flows arrive during this time"},
                {"max-flow-bytes", "1000000", "cap on WebSearch flow sizes, bytes"},
                {"rate", "40Gbps", "link rate"},
                {"cc", "dcqcn-paper",
                 "none, dcqcn-paper, dcqcn-mlx, dctcp, timely or hpcc on every NIC"},
                {"limit", "30ms", "simulated time limit per run"}};
    i.params.insert(i.params.end(), kRecoveryParams.begin(), kRecoveryParams.end());
    i.params.push_back(kPcapHostsParam);
    i.pcap = ScenarioPcap::Wire;
    i.run = RunCollapse;
    RoceRunSetsAttributes(i);
    return i;
}

// ---- roce-hpcc -----------------------------------------------------------------------------

/// The `dir` parameter: as given, or (empty) the HPCC-simulator inputs beside the source tree,
/// which their README forbids copying into it. A missing directory is named with the parameter.
std::string
HpccDataDir(const std::string& given)
{
    std::string dir = given;
    if (dir.empty())
    {
        // The shared test data beside the checkout; inputs from anywhere else are given.
        const std::string src = CnuasSourceTree();
        dir = (src.empty() ? std::string("..") : src + "/..") + "/shared/data/hpcc-compat";
    }
    struct stat st;
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    {
        throw InputError("dir: no such directory '" + dir +
                         "' (the HPCC-simulator input files; give --param dir=DIR)");
    }
    return dir;
}

/// A file parameter of roce-hpcc: an absolute path as given, a relative one inside `dir` (the
/// current directory's relative paths go through dir=, itself relative to it). The directory
/// is looked up only when a file needs it, so that absolute files need no `dir`.
std::string
HpccFile(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key)
{
    const std::string file = ScenarioParamString(o, info, key);
    if (!file.empty() && file[0] == '/')
    {
        return file;
    }
    return HpccDataDir(ScenarioParamString(o, info, "dir")) + "/" + file;
}

/// Wall and CPU seconds and the process's peak RSS around one RoCE run, and what they make of
/// its event and packet counts: the figures the speed comparisons with HPCC's simulator and the
/// scaling benchmark (bench/roce-scale-bench.py) read from the summary (docs/performance.md).
class RunCostMeter
{
  public:
    RunCostMeter()
        : m_wall0(std::chrono::steady_clock::now())
    {
        getrusage(RUSAGE_SELF, &m_ru0);
    }

    /// Ends the measurement (the run, not the writing of its files).
    void Stop()
    {
        m_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_wall0).count();
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        // CPU seconds of this process: on a shared machine the wall clock also counts waiting.
        m_cpu = Seconds(ru.ru_utime) - Seconds(m_ru0.ru_utime) + Seconds(ru.ru_stime) -
                Seconds(m_ru0.ru_stime);
        m_peakRssKib = ru.ru_maxrss;
    }

    /// Appends wall and CPU time, events, RoCE packets and packet-hops, their ratios and the
    /// peak RSS (a high-water mark of the whole process, set-up included) to the summary.
    void Summarize(const RoceRunResult& r, ScenarioResult& res) const
    {
        const double wall = m_wall;
        const double cpu = m_cpu;
        const double packets = static_cast<double>(std::max<uint64_t>(1, r.packetsSent));
        const double hops = static_cast<double>(std::max<uint64_t>(1, r.packetHops));
        auto add = [&res](const std::string& k, const std::string& v) {
            res.summary.emplace_back(k, v);
        };
        add("wall time (s)", Fixed(wall, 2));
        add("CPU time (s)", Fixed(cpu, 2));
        add("packets per CPU second", Fixed(r.packetsSent / std::max(cpu, 1e-9), 0));
        add("events", std::to_string(r.events));
        add("RoCE packets sent", std::to_string(r.packetsSent));
        add("packets per wall second", Fixed(r.packetsSent / std::max(wall, 1e-9), 0));
        add("events per packet", Fixed(double(r.events) / packets, 2));
        add("packet-hops", std::to_string(r.packetHops));
        add("events per packet-hop", Fixed(double(r.events) / hops, 2));
        add("packet-hops per wall second", Fixed(r.packetHops / std::max(wall, 1e-9), 0));
        add("peak RSS (MB)", Fixed(m_peakRssKib / 1024.0, 1));
    }

  private:
    static double Seconds(const timeval& t)
    {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    }

    std::chrono::steady_clock::time_point m_wall0;
    struct rusage m_ru0;
    double m_wall = 0;
    double m_cpu = 0;
    long m_peakRssKib = 0; ///< ru_maxrss: kibibytes on Linux
};

ScenarioResult
RunHpcc(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("roce-hpcc");
    CheckScenarioParams(o, info);
    const HpccUnknownKeys unknownKeys =
        ScenarioParamChoice(o, info, "config-unknown-keys", {"error", "warn"}) == "warn"
            ? HpccUnknownKeys::Warn
            : HpccUnknownKeys::Error;
    const HpccTopology topo = ReadHpccTopology(HpccFile(o, info, "topology-file"));
    const double offset = ScenarioParamDouble(o, info, "time-offset", 0, 1e6);
    std::vector<RoceFlowSpec> flows =
        ReadHpccFlows(HpccFile(o, info, "flow-file"), topo, offset);
    const uint64_t maxFlows = ScenarioParamUint(o, info, "max-flows", 0, UINT64_MAX);
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
    std::vector<std::string> unknown;
    uint32_t referencePayload = 1000; // the simulator's PACKET_PAYLOAD_SIZE default
    if (!cfgFile.empty())
    {
        const HpccConfig cfg =
            ReadHpccConfig(HpccFile(o, info, "config-file"), unknownKeys, &unknown);
        used = ApplyHpccConfig(cfg, topo, spec, &ignored);
        referencePayload = HpccPayloadBytes(cfg);
    }
    for (const std::string& w : unknown)
    {
        std::fprintf(stderr, "cnuas: warning: %s\n", w.c_str());
    }
    const std::string cc = ScenarioParamString(o, info, "cc");
    if (!cc.empty())
    {
        spec.cc = CcTypeId(cc);
        spec.configureNics = nullptr; // the config's constants are the firmware DCQCN's
        if (spec.cc == "ns3::RdmaCcHpcc")
        {
            // HPCC's own defaults (run.py), with the base RTT of this topology (GLOBAL_T 1).
            const Time rtt = HpccMaxBaseRtt(topo, RdmaMtuBytes(spec.pathMtu));
            spec.configureNics = [rtt](RoceHelper& h) {
                h.SetCongestionControlAttribute("BaseRtt", TimeValue(rtt));
            };
        }
    }
    spec.limit = ScenarioParamTime(o, info, "limit", PicoSeconds(1), Seconds(1000));
    spec.sampleInterval = ScenarioParamTime(o, info, "sample", Time(0), Seconds(1000));
    // The scheduler orders events as every ns-3 scheduler does; FifoHeapScheduler (a FIFO for
    // the current time, a four-ary heap for later) costs least here (docs/performance.md).
    spec.scheduler = ScenarioParamString(o, info, "scheduler");
    // After the configuration's own (its ECN maps and marking), not instead of it.
    auto configFabric = spec.configureFabric;
    spec.configureFabric = [configFabric](EthFabricHelper& h) {
        if (configFabric)
        {
            configFabric(h);
        }
        // Cables of 200 m (1 us) need more headroom than the default XOFF leaves.
        h.SetPortAttribute("RxBufferBytes", UintegerValue(4 * 1024 * 1024));
    };
    ApplyPcapParams(o, info, "", spec);
    // Minutes of wall time for the paper's workloads: a progress bar (flows finished), and
    // Ctrl-C ends the run with the finished flows reported and every file complete.
    spec.progress = o.progress;
    spec.stopOnInterrupt = o.stopOnInterrupt;
    // The ideal FCTs (Cnuas's CSV) follow the links of the fabric as built.
    RoceRunIdealFct idealFct(spec);
    RunCostMeter cost;
    const RoceRunResult r = RunRoceFlows(spec);
    cost.Stop();
    WriteHpccFct(ScenarioOutputFile(o, "fct.txt"), r, topo, offset, referencePayload);
    std::vector<double> ideals(r.flows.size(), 0.0);
    for (size_t i = 0; i < r.flows.size(); ++i)
    {
        if (r.flows[i].fct.IsPositive())
        {
            ideals[i] = idealFct.Seconds(r.flows[i].spec);
        }
    }

    std::vector<std::vector<double>> slow(kFctSizeBuckets.size());
    std::ofstream csv(ScenarioOutputFile(o, "roce-hpcc-fct.csv"));
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
            // Not clamped at 1: the ideal is exact, and a flow below it would be a fault
            // (RoceIdealFct.NoFlowOfABusyFabricFinishesBelowItsIdeal).
            const double sd = fct / ideal;
            csv << i << "," << f.spec.src << "," << f.spec.dst << "," << f.spec.bytes << ","
                << Fixed(f.spec.start.GetSeconds() * 1e6, 3) << "," << Fixed(fct * 1e6, 3) << ","
                << Fixed(ideal * 1e6, 3) << "," << Fixed(sd, 3) << "\n";
            AddToSizeBucket(slow, f.spec.bytes, sd);
        }
    }
    ScenarioResult res;
    RecordRoceRun(r, res);
    for (size_t i = 0; i < r.flows.size(); ++i)
    {
        const auto& f = r.flows[i];
        AddFlowRow(res.flows, f, f.spec.start.GetSeconds() * 1e9, FctNsOrNan(f),
                   ideals[i] > 0 ? ideals[i] * 1e9 : std::nan(""));
    }
    if (r.interrupted)
    {
        // The files hold the flows that finished (docs/cli.md, "Exit status").
        ScenarioMarkInterrupted(res, r.end);
    }
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
    if (!unknown.empty())
    {
        res.summary.push_back({"config keys unknown (skipped)", std::to_string(unknown.size())});
    }
    res.summary.push_back({"simulated time (ms)", Fixed(r.end.GetSeconds() * 1e3, 3)});
    cost.Summarize(r, res);
    res.summary.push_back({"PFC pauses", std::to_string(r.pauseFrames)});
    res.summary.push_back({"drops", std::to_string(r.drops)});
    res.summary.push_back(
        {"ECN marks / CNPs", std::to_string(r.ecnMarks) + " / " + std::to_string(r.cnps)});
    SummarizeSizeBuckets(slow, res);
    res.artifacts.push_back(ScenarioOutputFile(o, "fct.txt"));
    res.artifacts.push_back(ScenarioOutputFile(o, "roce-hpcc-fct.csv"));
    res.artifacts.insert(res.artifacts.end(), r.pcaps.begin(), r.pcaps.end());
    return res;
}

ScenarioInfo
HpccInfo()
{
    ScenarioInfo i;
    i.name = "roce-hpcc";
    i.description = "Runs HPCC-simulator inputs (topology, flow and KEY value config files) on "
                    "RoCE NICs and writes its FCT format (fct.txt) beside Cnuas's CSV";
    i.params = {{"dir", "", "directory of the HPCC-format files, relative to the current one "
                            "('': ../shared/data/hpcc-compat beside the source tree, the shared "
                            "test data, when present)"},
                {"topology-file", "fat.txt", "HPCC topology file: in dir, or an absolute path"},
                {"flow-file", "ws30_5ms.txt", "HPCC flow file: in dir, or an absolute path"},
                {"config-file", "config_fat_ws30_5ms_dcqcn.txt",
                 "HPCC config: in dir, or an absolute path ('' none)"},
                {"config-unknown-keys", "error",
                 "a config key the HPCC simulator does not know: error, or warn (skip it)"},
                {"cc", "",
                 "override: none, dcqcn-paper, dcqcn-mlx, dctcp, timely, hpcc ('': config's)"},
                {"time-offset", "2", "seconds subtracted from flow start times"},
                {"max-flows", "0", "run only the first N flows (0: all)"},
                {"limit", "100ms", "simulated time limit"},
                {"scheduler", "ns3::FifoHeapScheduler", "ns-3 event scheduler TypeId"},
                {"sample", "0s", "per-flow rate and switch queue sampling interval (0s: none)"}};
    i.params.push_back(kPcapHostsParam);
    i.pcap = ScenarioPcap::Wire;
    i.run = RunHpcc;
    RoceRunSetsAttributes(i, "the HPCC configuration file (config-file=)");
    return i;
}

// ---- roce-fct -------------------------------------------------------------------------------

ScenarioResult
RunRoceFct(const ScenarioOptions& o)
{
    const ScenarioInfo& info = *ScenarioRegistry::Find("roce-fct");
    CheckScenarioParams(o, info);
    RoceRunSpec spec;
    spec.topology = ScenarioParamTopology(o, info);
    spec.hostRate = ScenarioParamDataRate(o, info, "rate");
    spec.fabricRate = ScenarioParamString(o, info, "fabric-rate").empty()
                          ? spec.hostRate
                          : ScenarioParamDataRate(o, info, "fabric-rate");
    spec.cc = CcTypeId(ScenarioParamString(o, info, "cc"));
    spec.pfc = ScenarioParamOnOff(o, info, "pfc");
    spec.ecn = ScenarioParamOnOff(o, info, "ecn");
    spec.limit = ScenarioParamTime(o, info, "limit", PicoSeconds(1), Seconds(1000));
    // Marking and buffer, as roce-incast and roce-fairness take them (the DCQCN paper's
    // defaults); the sweeps of congestion-control studies vary them.
    spec.kminBytes = ScenarioParamUint(o, info, "kmin", 0, UINT32_MAX);
    spec.kmaxBytes = ScenarioParamUint(o, info, "kmax", 0, UINT32_MAX);
    spec.pmax = ScenarioParamDouble(o, info, "pmax", 0, 1);
    if (spec.kminBytes > spec.kmaxBytes)
    {
        throw ScenarioParamError("kmin", "scenario '" + info.name + "': kmin=" +
                                             std::to_string(spec.kminBytes) +
                                             " is above kmax=" + std::to_string(spec.kmaxBytes));
    }
    spec.bufferBytes = ScenarioParamUint(o, info, "buffer", 1, UINT64_MAX);
    spec.sampleInterval = ScenarioParamTime(o, info, "sample", Time(0), Seconds(1000));

    const double linkBps = static_cast<double>(spec.hostRate.GetBitRate());
    const ScenarioTraffic traffic = ReadScenarioTraffic(
        o, info, static_cast<uint32_t>(spec.topology.Hosts().size()), linkBps);
    spec.flows = traffic.flows;
    ApplyPcapParams(o, info, "", spec);
    spec.progress = o.progress;
    spec.stopOnInterrupt = o.stopOnInterrupt;
    // The ideal: the FCT the flow would have alone on its path (RoceIdealFctPs).
    RoceRunIdealFct idealFct(spec);
    RunCostMeter cost;
    const RoceRunResult r = RunRoceFlows(spec);
    cost.Stop();

    const std::string csvPath = ScenarioOutputFile(o, "roce-fct.csv");
    ScenarioResult res;
    const FctTableSummary table = WriteFctTable(
        csvPath, r.flows, [&](size_t i) { return idealFct.Seconds(r.flows[i].spec); }, res);

    RecordRoceRun(r, res);
    res.summary.push_back({"pattern", traffic.patternText});
    res.summary.push_back({"flows done", std::to_string(table.done) + "/" +
                                             std::to_string(r.flows.size())});
    res.summary.push_back({"offered load (requested / generated)", traffic.offeredLoadText});
    res.summary.push_back({"congestion control", spec.cc});
    res.summary.push_back({"PFC / ECN", std::string(spec.pfc ? "on" : "off") + " / " +
                                            (spec.ecn ? "on" : "off")});
    res.summary.push_back({"simulated time (ms)", Fixed(r.end.GetSeconds() * 1e3, 3)});
    AddSlowdownSummary(table, res);
    res.summary.push_back({"PFC pauses / drops", std::to_string(r.pauseFrames) + " / " +
                                                     std::to_string(r.drops)});
    res.summary.push_back(
        {"ECN marks / CNPs", std::to_string(r.ecnMarks) + " / " + std::to_string(r.cnps)});
    // What the run cost (its scaling is a benchmark: bench/roce-scale-bench.py).
    cost.Summarize(r, res);
    FinishFctResult(o, table, r.flows.size(), csvPath, r.pcaps, "roce-fct.png",
                    "RoCE FCT slowdown by flow size", r.interrupted, r.end, res);
    return res;
}

ScenarioInfo
RoceFctInfo()
{
    ScenarioInfo i;
    i.name = "roce-fct";
    i.description = "RoCE flow completion times: all-to-all, permutation or incast flows with "
                    "Poisson arrivals at a load and sizes from a CDF; FCT CSV with slowdown and "
                    "a slowdown-by-size plot";
    i.params = {{"topology", "leaf-spine:leaves=4,spines=2,hosts=4",
                 "fabric (leaf-spine:..., fat-tree:k=..., any topology spec)"},
                {"rate", "40Gbps", "host link rate"},
                {"fabric-rate", "", "switch-to-switch link rate ('': the host rate)"},
                {"cc", "dcqcn-paper", "none, dcqcn-paper, dcqcn-mlx or timely on every NIC"},
                {"pfc", "on", "PFC on the RoCE priority: on or off"},
                {"ecn", "on", "ECN marking in the switches: on or off"},
                {"limit", "200ms", "simulated time limit"},
                {"kmin", "5000", "ECN Kmin, bytes (DCQCN paper 5 KB)"},
                {"kmax", "200000", "ECN Kmax, bytes (DCQCN paper 200 KB)"},
                {"pmax", "0.01", "ECN marking probability at Kmax (DCQCN paper 1 %)"},
                {"buffer", "12582912", "switch shared buffer, bytes"},
                {"sample", "0s", "rate and queue sampling interval (0s: none)"}};
    // The traffic parameters right after the topology, as before they were shared.
    const std::vector<ScenarioParam> traffic = FlowScenarioTrafficParams();
    i.params.insert(i.params.begin() + 1, traffic.begin(), traffic.end());
    i.params.push_back(FlowsFileParam());
    i.params.push_back(kPcapHostsParam);
    i.pcap = ScenarioPcap::Wire;
    i.run = RunRoceFct;
    RoceRunSetsAttributes(i);
    return i;
}

} // namespace

CNUAS_REGISTER_SCENARIO(FairnessInfo());
CNUAS_REGISTER_SCENARIO(HpccInfo());
CNUAS_REGISTER_SCENARIO(IncastInfo());
CNUAS_REGISTER_SCENARIO(CollapseInfo());
CNUAS_REGISTER_SCENARIO(RoceFctInfo());

} // namespace ns3
