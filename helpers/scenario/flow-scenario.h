// What the flow-completion-time scenarios share (roce-fct on RoCE, ib-fct on InfiniBand): the
// traffic parameters (a pattern at a load from a flow-size CDF, or an explicit flows file), the
// per-flow CSV with ideal FCT and slowdown, its summary lines, and the results the Python module
// reads. Each scenario only builds its fabric and says what a flow's ideal FCT is.
#ifndef CNUAS_FLOW_SCENARIO_H
#define CNUAS_FLOW_SCENARIO_H

#include "helpers/rdma/rdma-flow-driver.h"
#include "helpers/scenario/scenario.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ns3
{

/// The traffic parameters both FCT scenarios document, with their help texts: pattern, cdf,
/// load, duration, senders, max-flows; and flows-file, which overrides them.
std::vector<ScenarioParam> FlowScenarioTrafficParams();
/// flows-file, which overrides the traffic parameters. A function, not a global: scenarios
/// register from static initializers in other translation units, whose order is unspecified
/// (a link-time-optimised build ran them before a global of this file was constructed).
ScenarioParam FlowsFileParam();

/// The flows a run of a FCT scenario carries, and how its summary describes them.
struct ScenarioTraffic
{
    std::vector<RdmaFlowSpec> flows;
    std::string patternText;     ///< "all-to-all", or "flows-file PATH"
    std::string offeredLoadText; ///< "requested / generated", or "- (flows-file)"
};

/**
 * The flows of the traffic parameters (FlowScenarioTrafficParams): a pattern (all-to-all,
 * permutation, incast) with Poisson arrivals at `load` of a host link of `linkBps` during
 * `duration`, sizes from `cdf` (MakeRoceTraffic), or the lines of `flows-file`; cut to
 * `max-flows`. The seed is the run's.
 */
ScenarioTraffic ReadScenarioTraffic(const ScenarioOptions& o, const ScenarioInfo& info,
                                    uint32_t hosts, double linkBps);

/**
 * A `flows-file`: one flow a line, `SRC DST BYTES START` (host indices in topology order, a byte
 * count, a start time with its unit such as 10us); blank lines and '#' comments are skipped.
 * Throws InputError naming the file and line.
 */
std::vector<RdmaFlowSpec> ReadScenarioFlowList(const std::string& path, uint32_t hosts);

/// "on"/"yes"/"true"/"1" or "off"/"no"/"false"/"0"; anything else is an error naming the key.
bool ScenarioParamOnOff(const ScenarioOptions& o, const ScenarioInfo& info,
                        const std::string& key);

/// The nearest-rank percentile p (0..1] of `v` (0 for an empty list).
double ScenarioPercentile(std::vector<double> v, double p);

/// FCT slowdown buckets by flow size (upper bounds, bytes), as FCT-by-size plots use them.
extern const std::vector<double> kFctSizeBuckets;
/// Files slowdown `sd` of a flow of `bytes` under its kFctSizeBuckets bucket.
void AddToSizeBucket(std::vector<std::vector<double>>& slow, uint64_t bytes, double sd);
/// One summary line per non-empty size bucket: its range, count and p50/p95/p99 slowdown.
void SummarizeSizeBuckets(const std::vector<std::vector<double>>& slow, ScenarioResult& res);

/// One flow's row of ScenarioResult::flows; NaN for what the flow does not have.
void AddFlowRow(ScenarioFlowTable& t, const RdmaFlowResult& f, double startNs, double fctNs,
                double idealNs);

/// What WriteFctTable found.
struct FctTableSummary
{
    uint32_t done = 0;             ///< flows completed with success
    std::vector<double> slowdowns; ///< theirs
    std::vector<std::vector<double>> bySize; ///< theirs by kFctSizeBuckets bucket
};

/// The "slowdown p50/p95/p99" summary line and one per size bucket (SummarizeSizeBuckets).
void AddSlowdownSummary(const FctTableSummary& t, ScenarioResult& res);

/**
 * Writes `csvPath` (id,src,dst,size_bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,status; an
 * unfinished flow has empty times and status "unfinished") and fills res.flows with the same
 * numbers; `idealSeconds(i)` is flow i's FCT alone on its path (slowdown = FCT / ideal, the HPCC
 * simulator's definition, so flows of every size and path compare). Throws std::runtime_error
 * when the file cannot be written.
 */
FctTableSummary WriteFctTable(const std::string& csvPath, const std::vector<RdmaFlowResult>& flows,
                              const std::function<double(size_t)>& idealSeconds,
                              ScenarioResult& res);

/**
 * The end of an FCT scenario's result, the same on every fabric: the CSV and the pcaps as
 * artifacts, the slowdown-by-size plot `pngName` titled `plotTitle` (when plots are on and a flow
 * completed), exit code 0 only when all `flows` completed, and the mark of a run Ctrl-C stopped
 * at `end`.
 */
void FinishFctResult(const ScenarioOptions& o, const FctTableSummary& table, size_t flows,
                     const std::string& csvPath, const std::vector<std::string>& pcaps,
                     const std::string& pngName, const std::string& plotTitle, bool interrupted,
                     Time end, ScenarioResult& res);

} // namespace ns3

#endif
