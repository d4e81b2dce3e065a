#include "flow-scenario.h"

#include "helpers/formats/parse-util.h"
#include "helpers/rdma/rdma-traffic-run.h"
#include "helpers/roce/roce-traffic-pattern.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace ns3
{

std::vector<ScenarioParam>
FlowScenarioTrafficParams()
{
    return {{"pattern", "all-to-all", "all-to-all, permutation or incast (senders -> h0)"},
            {"cdf", "websearch.cdf",
             "flow-size CDF: a file, or a name in data/cdf/ (websearch.cdf, fb-hadoop.cdf)"},
            {"load", "0.3", "offered load, fraction of a sender's link (incast: of h0's)"},
            {"duration", "10ms", "flows arrive during this time"},
            {"senders", "8", "incast: number of senders"},
            {"max-flows", "0", "run only the first N flows (0: all)"}};
}

ScenarioParam
FlowsFileParam()
{
    return {"flows-file", "",
            "explicit flows instead of pattern/cdf/load: lines SRC DST BYTES START (host indices, "
            "bytes, a time with its unit)"};
}

ScenarioTraffic
ReadScenarioTraffic(const ScenarioOptions& o, const ScenarioInfo& info, uint32_t hosts,
                    double linkBps)
{
    RoceTrafficSpec t;
    t.pattern = ParseRocePattern(ScenarioParamString(o, info, "pattern"));
    t.hosts = hosts;
    t.linkBps = linkBps;
    t.load = ScenarioParamDouble(o, info, "load", 1e-6, 1);
    // The generated load is measured over the arrival window: it must have a length.
    t.duration = ScenarioParamTime(o, info, "duration", PicoSeconds(1), Seconds(1000));
    t.cdfFile = RdmaResolveCdf(ScenarioParamString(o, info, "cdf"));
    t.incastSenders =
        static_cast<uint32_t>(ScenarioParamUint(o, info, "senders", 1, UINT32_MAX));
    t.seed = o.seed;
    const std::string flowsFile = ScenarioParamString(o, info, "flows-file");
    ScenarioTraffic out;
    out.offeredLoadText = "- (flows-file)";
    if (flowsFile.empty())
    {
        RoceTraffic traffic = MakeRoceTraffic(t);
        // The load the generated flows offer, measured from them (flow bytes over the senders'
        // links and the arrival window), beside the requested one; before max-flows cuts them.
        double bytes = 0;
        for (const auto& f : traffic.flows)
        {
            bytes += f.bytes;
        }
        const double links = t.pattern == RocePattern::Incast ? 1.0 : traffic.senders;
        const double offered = bytes * 8 / (t.duration.GetSeconds() * t.linkBps * links);
        out.offeredLoadText = ScenarioFixed(t.load, 3) + " / " + ScenarioFixed(offered, 3);
        out.flows = std::move(traffic.flows);
        out.patternText = ScenarioParamString(o, info, "pattern");
    }
    else
    {
        out.flows = ReadScenarioFlowList(flowsFile, hosts);
        out.patternText = "flows-file " + flowsFile;
    }
    const uint64_t maxFlows = ScenarioParamUint(o, info, "max-flows", 0, UINT64_MAX);
    if (maxFlows > 0 && out.flows.size() > maxFlows)
    {
        out.flows.resize(maxFlows);
    }
    return out;
}

std::vector<RdmaFlowSpec>
ReadScenarioFlowList(const std::string& path, uint32_t hosts)
{
    std::ifstream in(path);
    if (!in)
    {
        throw InputError(path + ": cannot read the flows file");
    }
    if (hosts < 2)
    {
        throw InputError(path + ": the fabric has fewer than two hosts");
    }
    std::vector<RdmaFlowSpec> flows;
    std::string line;
    for (size_t number = 1; std::getline(in, line); ++number)
    {
        const std::string where = path + ":" + std::to_string(number) + ": ";
        const std::vector<std::string> words = SplitWords(line.substr(0, line.find('#')));
        if (words.empty())
        {
            continue;
        }
        if (words.size() != 4)
        {
            throw InputError(where + "expected SRC DST BYTES START, got '" + TrimSpace(line) +
                             "'");
        }
        RdmaFlowSpec f;
        uint64_t src = 0;
        uint64_t dst = 0;
        if (!ParseDecimalUint(words[0], hosts - 1, &src) ||
            !ParseDecimalUint(words[1], hosts - 1, &dst) || src == dst)
        {
            throw InputError(where + "SRC and DST are two different host indices below " +
                             std::to_string(hosts));
        }
        // One RDMA WRITE carries a flow: below 2^31 bytes, as the generated flows are capped.
        if (!ParseDecimalUint(words[2], (1ULL << 31) - 1, &f.bytes) || f.bytes == 0)
        {
            throw InputError(where + "BYTES is a whole number in [1, 2147483647], not '" +
                             words[2] + "'");
        }
        if (!ParseTimeString(words[3], &f.start) || f.start.IsStrictlyNegative())
        {
            throw InputError(where + "START is a time with its unit (0, 10us, 1.5ms), not '" +
                             words[3] + "'");
        }
        f.src = static_cast<uint32_t>(src);
        f.dst = static_cast<uint32_t>(dst);
        flows.push_back(f);
    }
    if (flows.empty())
    {
        throw InputError(path + ": no flows");
    }
    return flows;
}

bool
ScenarioParamOnOff(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key)
{
    const std::string v = ScenarioParamString(o, info, key);
    if (v == "on" || v == "yes" || v == "true" || v == "1")
    {
        return true;
    }
    if (v == "off" || v == "no" || v == "false" || v == "0")
    {
        return false;
    }
    throw std::invalid_argument(key + " must be on or off, not '" + v + "'");
}

double
ScenarioPercentile(std::vector<double> v, double p)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * v.size())) - 1);
    return v[i];
}

const std::vector<double> kFctSizeBuckets = {1e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 1e12};

void
AddToSizeBucket(std::vector<std::vector<double>>& slow, uint64_t bytes, double sd)
{
    for (size_t b = 0; b < kFctSizeBuckets.size(); ++b)
    {
        if (bytes <= kFctSizeBuckets[b])
        {
            slow[b].push_back(sd);
            break;
        }
    }
}

void
SummarizeSizeBuckets(const std::vector<std::vector<double>>& slow, ScenarioResult& res)
{
    double lo = 0;
    for (size_t b = 0; b < kFctSizeBuckets.size(); ++b)
    {
        if (!slow[b].empty())
        {
            res.summary.push_back(
                {"slowdown " + ScenarioFixed(lo, 0) + "-" +
                     ScenarioFixed(std::min(kFctSizeBuckets[b], 3e7), 0) +
                     " B (n=" + std::to_string(slow[b].size()) + ") p50/p95/p99",
                 ScenarioFixed(ScenarioPercentile(slow[b], 0.5), 2) + " / " +
                     ScenarioFixed(ScenarioPercentile(slow[b], 0.95), 2) + " / " +
                     ScenarioFixed(ScenarioPercentile(slow[b], 0.99), 2)});
        }
        lo = kFctSizeBuckets[b];
    }
}

void
AddFlowRow(ScenarioFlowTable& t, const RdmaFlowResult& f, double startNs, double fctNs,
           double idealNs)
{
    t.src.push_back(f.spec.src);
    t.dst.push_back(f.spec.dst);
    t.sizeBytes.push_back(f.spec.bytes);
    t.startNs.push_back(startNs);
    t.fctNs.push_back(fctNs);
    t.idealFctNs.push_back(idealNs);
    t.slowdown.push_back(fctNs / idealNs);
    t.ok.push_back(f.ok ? 1 : 0);
}

FctTableSummary
WriteFctTable(const std::string& csvPath, const std::vector<RdmaFlowResult>& flows,
              const std::function<double(size_t)>& idealSeconds, ScenarioResult& res)
{
    std::ofstream csv(csvPath);
    if (!csv)
    {
        throw std::runtime_error("cannot write " + csvPath);
    }
    csv << "id,src,dst,size_bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,status\n";
    FctTableSummary t;
    t.bySize.resize(kFctSizeBuckets.size());
    for (size_t i = 0; i < flows.size(); ++i)
    {
        const RdmaFlowResult& f = flows[i];
        const double start = f.spec.start.GetSeconds() * 1e9;
        csv << i << "," << f.spec.src << "," << f.spec.dst << "," << f.spec.bytes << ","
            << ScenarioFixed(start, 3) << ",";
        if (!f.fct.IsPositive())
        {
            csv << ",,,,unfinished\n";
            AddFlowRow(res.flows, f, start, std::nan(""), std::nan(""));
            continue;
        }
        const double ideal = idealSeconds(i);
        const double fct = f.fct.GetSeconds();
        const double sd = fct / ideal;
        // The same doubles the CSV prints, so Python's arrays and the CSV agree to the digit.
        AddFlowRow(res.flows, f, start, fct * 1e9, ideal * 1e9);
        csv << ScenarioFixed(start + fct * 1e9, 3) << "," << ScenarioFixed(fct * 1e9, 3) << ","
            << ScenarioFixed(ideal * 1e9, 3) << "," << ScenarioFixed(sd, 4) << ","
            << (f.ok ? "success" : "error") << "\n";
        if (!f.ok)
        {
            continue;
        }
        t.done++;
        t.slowdowns.push_back(sd);
        AddToSizeBucket(t.bySize, f.spec.bytes, sd);
    }
    csv.close();
    if (!csv)
    {
        throw std::runtime_error("cannot write " + csvPath);
    }
    return t;
}

void
AddSlowdownSummary(const FctTableSummary& t, ScenarioResult& res)
{
    res.summary.push_back({"slowdown p50/p95/p99",
                           ScenarioFixed(ScenarioPercentile(t.slowdowns, 0.5), 2) + " / " +
                               ScenarioFixed(ScenarioPercentile(t.slowdowns, 0.95), 2) + " / " +
                               ScenarioFixed(ScenarioPercentile(t.slowdowns, 0.99), 2)});
    SummarizeSizeBuckets(t.bySize, res);
}

void
FinishFctResult(const ScenarioOptions& o, const FctTableSummary& table, size_t flows,
                const std::string& csvPath, const std::vector<std::string>& pcaps,
                const std::string& pngName, const std::string& plotTitle, bool interrupted,
                Time end, ScenarioResult& res)
{
    res.artifacts.push_back(csvPath);
    res.artifacts.insert(res.artifacts.end(), pcaps.begin(), pcaps.end());
    const std::string png = ScenarioOutputFile(o, pngName);
    if (o.plots && table.done > 0 && RunPlotScript("plot-fct.py", csvPath, png, plotTitle))
    {
        res.artifacts.push_back(png);
    }
    res.exitCode = table.done == flows ? 0 : 1;
    if (interrupted)
    {
        ScenarioMarkInterrupted(res, end);
    }
}

} // namespace ns3
