// Built-in simulation scenarios: what `cnuas run NAME` runs, also used by tests and benchmarks.
#ifndef CNUAS_HELPERS_SCENARIO_H
#define CNUAS_HELPERS_SCENARIO_H

#include "helpers/formats/topology.h"

#include "ns3/data-rate.h"
#include "ns3/nstime.h"

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ns3
{

/// How a scenario is to be run (filled from the command line or a scenario file).
struct ScenarioOptions
{
    std::string name;        ///< scenario name as registered
    uint64_t seed = 1;       ///< RngSeedManager seed; same seed => byte-identical traces
    uint64_t run = 1;        ///< RngSeedManager run number
    std::string pcapDir;     ///< empty: write no pcap; else one trace per attached port here
    std::string outDir;      ///< where summaries, CSV traces and plots go (created if missing)
    bool progress = true;    ///< show a progress bar on stderr for long runs
    bool plots = true;       ///< render PNG plots of the CSV traces (needs /usr/bin/python3)
    /// Ctrl-C (SIGINT) stops the simulation cleanly instead of ending the process: the scenario
    /// reports what finished (ScenarioMarkInterrupted), completes its files and starts no further
    /// runs of a sweep. `cnuas run` and the Python module set it; a second Ctrl-C kills.
    bool stopOnInterrupt = false;
    /// Scenario parameters, `--param key=value` or `param key=value` in a scenario file.
    /// Every scenario documents the keys it reads; an unknown key is an error.
    std::map<std::string, std::string> params;
};

/**
 * Per-flow outcome of a traffic scenario, one vector per quantity (flow i is element i of each),
 * so that the Python module hands each column to numpy as one block. The numbers are those the
 * scenario writes to its CSV; a flow that did not finish has NaN times and ok = 0.
 */
struct ScenarioFlowTable
{
    std::vector<uint32_t> src; ///< host indices in topology order
    std::vector<uint32_t> dst;
    std::vector<uint64_t> sizeBytes;
    std::vector<double> startNs;
    std::vector<double> fctNs;      ///< start to the sender's completion
    std::vector<double> idealFctNs; ///< alone on its path (NaN where the scenario has none)
    std::vector<double> slowdown;   ///< fctNs / idealFctNs
    std::vector<uint8_t> ok;        ///< 1: completed with success
};

/// Time series a traffic scenario sampled (empty when it did not sample).
struct ScenarioTraces
{
    std::vector<double> timeUs;        ///< sample times
    std::vector<double> maxQueueBytes; ///< largest switch egress queue at each sample
    std::vector<double> pfcPauses;     ///< PFC frames sent so far, whole fabric
    std::vector<double> ecnMarks;      ///< ECN marks so far, all switches
    std::vector<double> cnps;          ///< CNPs sent so far, all NICs
    /// Rate each flow's sender sent at during each interval, Gb/s, flow-major:
    /// flowRateGbps[f * timeUs.size() + i].
    std::vector<double> flowRateGbps;
    /// The ports the per-port series below have a row for ("h0:1", "sw0:3": node name and
    /// port number), host ports first, then switch ports, in topology order.
    std::vector<std::string> portNames;

    /// A further series, flat in C order with its shape (e.g. {ports, samples}).
    struct Series
    {
        std::string name;           ///< as Python's Result.traces names it
        std::vector<double> values; ///< values[((a * shape[1]) + b) * ... ]
        std::vector<size_t> shape;
    };

    /// Series particular to a fabric (per-port queues, InfiniBand credits and stalls, FECN
    /// marks), each named with its unit (docs/python.md lists them).
    std::vector<Series> series;

    /// Appends `rows` (one vector per row, each of timeUs.size() samples) as series `name` of
    /// shape {rows, samples}.
    template <typename T>
    void AddPerRow(const std::string& name, const std::vector<std::vector<T>>& rows)
    {
        Series s{name, {}, {rows.size(), timeUs.size()}};
        s.values.reserve(rows.size() * timeUs.size());
        for (const auto& row : rows)
        {
            s.values.insert(s.values.end(), row.begin(), row.end());
        }
        series.push_back(std::move(s));
    }
};

/// What a scenario reports back.
struct ScenarioResult
{
    int exitCode = 0; ///< non-zero when the scenario found its own run broken
    /// Ordered `key: value` lines printed as the end-of-run summary.
    std::vector<std::pair<std::string, std::string>> summary;
    /// Files written by the run (pcaps, CSV traces, PNG plots), printed after the summary.
    std::vector<std::string> artifacts;
    /// For programs that read the results (the Python module) rather than the files: filled by
    /// the scenarios whose runs have flows (roce-fct, roce-fairness, roce-hpcc).
    ScenarioFlowTable flows;
    ScenarioTraces traces;
    /// Run totals by name ("pfc_pauses", "ecn_marks", "cnps", "drops", ...).
    std::vector<std::pair<std::string, double>> counters;
};

/// One documented scenario parameter.
struct ScenarioParam
{
    std::string key;
    std::string defaultValue;
    std::string help;
};

/**
 * What a scenario does with `--pcap DIR` (ScenarioOptions::pcapDir). Every scenario must say:
 * ScenarioRegistry::Register refuses one that does not, so that no scenario can accept --pcap
 * and write nothing (issue 15: every packet that crosses a modelled wire can be captured).
 */
enum class ScenarioPcap
{
    Unstated, ///< the scenario did not say: it cannot be registered
    Wire,     ///< captures its wire: a run with --pcap lists at least one pcap it wrote
    NoWire,   ///< models no wire (a self-test): nothing to capture, its summary says so
    Refused,  ///< has a wire it cannot capture: `cnuas run` refuses --pcap with an error
};

/// A registered scenario.
/**
 * An ns-3 attribute a scenario sets itself on the objects it builds, from one of its parameters
 * or to a value of its own. A default given with `--set` (or `set` in a scenario file, or
 * `attributes=` in Python) would be overridden without a word, so it is refused, naming what to
 * use instead (ScenarioOwnAttributeProblem).
 */
struct ScenarioOwnAttribute
{
    std::string attribute; ///< "ns3::Class::Attribute", as TypeId declares it
    std::string instead;   ///< what sets it: "--param kmax", "the configuration file", ...
};

struct ScenarioInfo
{
    std::string name;
    std::string description;
    std::vector<ScenarioParam> params;
    std::function<ScenarioResult(const ScenarioOptions&)> run;
    ScenarioPcap pcap = ScenarioPcap::Unstated;
    std::vector<ScenarioOwnAttribute> ownAttributes;
};

/**
 * "" when `declaredName` (the full name CheckAttributeSetting reports, "ns3::Class::Attribute")
 * may be set as a default for a run of `info`; otherwise why not: the scenario sets it itself,
 * and what to use instead.
 */
std::string ScenarioOwnAttributeProblem(const ScenarioInfo& info, const std::string& declaredName);

/**
 * Builds the ownAttributes entries of `info` from (attribute, parameter) pairs: "--param P"
 * when the scenario has that parameter, `otherwise` when it has not (a value it fixes or takes
 * from elsewhere). Call after info.params is filled.
 */
void ScenarioSetsAttributes(ScenarioInfo& info,
                            const std::vector<std::pair<std::string, std::string>>& fromParams,
                            const std::string& otherwise = "nothing: the scenario fixes it");

/// Registry of built-in scenarios (scenarios register from static initializers in libcnuas).
class ScenarioRegistry
{
  public:
    /// Adds a scenario; throws std::logic_error for one without a name or body, one that does
    /// not say what it does with --pcap (ScenarioPcap::Unstated), or under a name already
    /// taken (the first stays). Returns true.
    static bool Register(ScenarioInfo info);
    /// Register for static initialisers (CNUAS_REGISTER_SCENARIO): an error is printed and the
    /// process exits with kDuplicateScenarioExit before main() runs.
    static bool RegisterAtStartup(ScenarioInfo info);
    static constexpr int kDuplicateScenarioExit = 70; ///< EX_SOFTWARE, sysexits.h
    static std::vector<ScenarioInfo> All(); ///< sorted by name
    static const ScenarioInfo* Find(const std::string& name);
};

/**
 * A parameter value a scenario cannot use: one that does not parse, or lies outside what the
 * model supports. `cnuas run` reports it against where the value came from (`--param`, or the
 * scenario file's line): a usage error on the command line, an input error in a file.
 */
class ScenarioParamError : public std::invalid_argument
{
  public:
    ScenarioParamError(const std::string& key, const std::string& message)
        : std::invalid_argument(message),
          m_key(key)
    {
    }

    const std::string& Key() const
    {
        return m_key;
    }

  private:
    std::string m_key;
};

/**
 * Reads a parameter with its documented default; throws ScenarioParamError with a clear
 * message for a value that does not parse or lies outside [min, max]. Every numeric read names
 * its range, so that no value reaches a narrowing cast or an ns-3 attribute checker (which
 * aborts the process) unchecked. Scenarios call CheckParams first so that a misspelt key is
 * refused rather than silently ignored.
 */
std::string ScenarioParamString(const ScenarioOptions& o, const ScenarioInfo& info,
                                const std::string& key);
double ScenarioParamDouble(const ScenarioOptions& o, const ScenarioInfo& info,
                           const std::string& key, double min, double max);
uint64_t ScenarioParamUint(const ScenarioOptions& o, const ScenarioInfo& info,
                           const std::string& key, uint64_t min, uint64_t max);
/// A whole number that must be one of `allowed` (e.g. the VL counts IBA defines).
uint64_t ScenarioParamUintOneOf(const ScenarioOptions& o, const ScenarioInfo& info,
                                const std::string& key, const std::vector<uint64_t>& allowed);
/// A comma-separated list of whole numbers, each in [min, max] (at least one).
std::vector<uint64_t> ScenarioParamUintList(const ScenarioOptions& o, const ScenarioInfo& info,
                                            const std::string& key, uint64_t min, uint64_t max);
/// A comma-separated list of numbers, each in [min, max] (at least one).
std::vector<double> ScenarioParamDoubleList(const ScenarioOptions& o, const ScenarioInfo& info,
                                            const std::string& key, double min, double max);
/// One of the words in `allowed`.
std::string ScenarioParamChoice(const ScenarioOptions& o, const ScenarioInfo& info,
                                const std::string& key, const std::vector<std::string>& allowed);
/// A data rate with a unit ("40Gbps", "100Mb/s"), strictly positive (ParseDataRateBps).
DataRate ScenarioParamDataRate(const ScenarioOptions& o, const ScenarioInfo& info,
                               const std::string& key);
/// Throws std::invalid_argument naming any key in o.params that info does not document.
void CheckScenarioParams(const ScenarioOptions& o, const ScenarioInfo& info);

/**
 * The path of `name` in the scenario's output directory (o.outDir, "." when empty), creating the
 * directory and its parents first: a library caller (a test, the Python module) gets the same
 * "created if missing" as `cnuas run`. Throws std::runtime_error naming the directory and the
 * reason when it cannot be created.
 */
std::string ScenarioOutputFile(const ScenarioOptions& o, const std::string& name);

/**
 * Marks `result` as a run Ctrl-C stopped at simulated time `at`: exit status 130 (128 + SIGINT,
 * as a shell reports it; docs/cli.md) and a first summary line "interrupted: Ctrl-C at T ms
 * simulated: partial results", so that no one takes the numbers below it for a whole run.
 */
void ScenarioMarkInterrupted(ScenarioResult& result, Time at);

/// Throws std::invalid_argument when `o` asks for pcaps (pcapDir set) and `info` refuses them
/// (ScenarioPcap::Refused), so that `cnuas run` reports it before running anything.
void CheckScenarioPcapRequest(const ScenarioOptions& o, const ScenarioInfo& info);

/**
 * After a run with `o.pcapDir` set: throws std::runtime_error unless a ScenarioPcap::Wire
 * scenario listed among its artifacts at least one `.pcap` file under o.pcapDir that exists.
 * The framework's guard against a scenario that takes --pcap and silently writes nothing.
 */
void CheckScenarioPcapsWritten(const ScenarioOptions& o, const ScenarioInfo& info,
                               const ScenarioResult& result);

/**
 * Reads a duration parameter: a number with an ns-3 time unit ("10ms", "1.5us", "200ns",
 * "2s"; units s ms us ns ps fs min h d y); only zero may go without one. Throws
 * ScenarioParamError on a value that does not parse or lies outside [min, max].
 */
Time ScenarioParamTime(const ScenarioOptions& o, const ScenarioInfo& info, const std::string& key,
                       Time min, Time max);
/**
 * Builds the fabric named by the documented `topology` parameter (BuildTopologyFromSpec). A
 * spec that does not parse is a ScenarioParamError; a bad topology file an InputError.
 */
Topology ScenarioParamTopology(const ScenarioOptions& o, const ScenarioInfo& info);

/**
 * Reads a parameter given as a number of microseconds (the `*-us` keys) as a Time, rounded to
 * the picosecond (MicroSeconds(double) would truncate); within [minUs, maxUs].
 */
Time ScenarioParamMicroseconds(const ScenarioOptions& o, const ScenarioInfo& info,
                               const std::string& key, double minUs, double maxUs);

/// `v` with `digits` digits after the point, for summary lines.
std::string ScenarioFixed(double v, int digits);

/**
 * Runs tools/plot/`script` with Debian's python3 (the one with matplotlib) on `csv`; true if
 * it wrote `png`. A missing python3 or matplotlib is no error of the run: the CSV stays.
 */
bool RunPlotScript(const std::string& script, const std::string& csv, const std::string& png,
                   const std::string& title);

/**
 * Copies what every traffic run takes from the options unchanged (pcap and output folders,
 * plots, progress bar, Ctrl-C handling, and the scenario name as the title) into `spec`.
 */
template <typename Spec>
void
ApplyScenarioOutputs(const ScenarioOptions& o, Spec& spec)
{
    spec.pcapDir = o.pcapDir;
    spec.outDir = o.outDir;
    spec.plots = o.plots;
    spec.progress = o.progress;
    spec.stopOnInterrupt = o.stopOnInterrupt;
    spec.title = o.name;
}

/**
 * Parses a duration in the syntax ns-3 accepts for Time attributes, but with the unit required
 * (ns-3 takes a bare number as seconds, which "5" meant as microseconds silently turns into a
 * run a million times too long); a bare zero is the same in every unit and is accepted.
 * Returns false (leaving *out alone) on anything ns-3 would reject or abort on, on a number
 * without a unit, or on a value outside the representable range.
 */
bool ParseTimeString(const std::string& text, Time* out);

} // namespace ns3

#define CNUAS_SCENARIO_CONCAT2(a, b) a##b
#define CNUAS_SCENARIO_CONCAT(a, b) CNUAS_SCENARIO_CONCAT2(a, b)
/// Register a scenario from a .cc file in libcnuas: CNUAS_REGISTER_SCENARIO(MakeInfoFunction());
#define CNUAS_REGISTER_SCENARIO(infoExpr)                                                          \
    static const bool CNUAS_SCENARIO_CONCAT(cnuasScenarioRegistered_, __LINE__) =                 \
        ::ns3::ScenarioRegistry::RegisterAtStartup(infoExpr)

#endif
