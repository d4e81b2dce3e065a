// `selftest-timer`: a scenario with no network in it, so that the scenario runner (parameter
// passing, seeds, progress bar, summary and artifact printing, exit status) can be tested end to
// end without depending on any fabric model.
#include "scenario.h"
#include "sim-progress.h"

#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ns3
{

namespace
{

struct TimerRun
{
    uint64_t target = 0;
    uint64_t ran = 0;
    int64_t durationSteps = 0;
    Time last;
};

/// Time of event i (0-based) of n spread evenly over the duration, the last one at its end.
/// 128-bit arithmetic keeps this exact for any duration and event count.
Time
EventTime(const TimerRun& r, uint64_t i)
{
    __int128 steps = static_cast<__int128>(r.durationSteps) * static_cast<__int128>(i + 1) /
                     static_cast<__int128>(r.target);
    return TimeStep(static_cast<uint64_t>(steps));
}

void
Fire(TimerRun* r)
{
    ++r->ran;
    r->last = Simulator::Now();
    // Events are chained one at a time so that the queue stays small for any event count.
    if (r->ran < r->target)
    {
        Simulator::Schedule(EventTime(*r, r->ran) - Simulator::Now(), &Fire, r);
    }
}

ScenarioResult RunSelftestTimer(const ScenarioOptions& o);

const ScenarioInfo&
SelftestTimerInfo()
{
    static const ScenarioInfo info{
        "selftest-timer",
        "Runner self-test, not a network: schedules `events` no-op ns-3 events evenly over "
        "`duration` and reports how many ran; exists to test `cnuas run` itself.",
        {
            {"events", "1000", "number of events to schedule"},
            {"duration", "10ms", "simulated time the events are spread over (last one at the end)"},
            {"exit-code", "0", "exit status to report when the run is correct (tests the runner)"},
        },
        &RunSelftestTimer,
        // No wire: --pcap is taken (the runner's own tests use it) and the summary echoes it.
        ScenarioPcap::NoWire,
        {}, // sets no attribute of its own
    };
    return info;
}

ScenarioResult
RunSelftestTimer(const ScenarioOptions& o)
{
    const ScenarioInfo& info = SelftestTimerInfo();
    CheckScenarioParams(o, info);
    TimerRun r;
    // Every event is a scheduled object: a bound keeps a typo from exhausting memory.
    r.target = ScenarioParamUint(o, info, "events", 0, 100000000);
    Time duration = ScenarioParamTime(o, info, "duration", PicoSeconds(1), Time::Max());
    uint64_t exitCode = ScenarioParamUint(o, info, "exit-code", 0, 255);
    r.durationSteps = duration.GetTimeStep();

    if (r.target > 0)
    {
        Simulator::Schedule(EventTime(r, 0), &Fire, &r);
    }
    SimProgress progress(duration, o.progress);
    if (o.stopOnInterrupt)
    {
        progress.StopOnInterrupt();
    }
    progress.Start();
    Simulator::Run();
    progress.Finish();
    const Time stoppedAt = Simulator::Now();
    Simulator::Destroy();

    ScenarioResult result;
    // The run checks itself: every scheduled event must have run, the last at `duration`.
    bool correct = r.ran == r.target && (r.target == 0 || r.last == duration);
    result.exitCode = correct ? static_cast<int>(exitCode) : 1;
    result.summary = {
        {"events-requested", std::to_string(r.target)},
        {"events-run", std::to_string(r.ran)},
        {"final-sim-time",
         SimProgress::FormatSimTime(r.last) + " (" + std::to_string(r.last.GetPicoSeconds()) +
             " ps)"},
        {"seed", std::to_string(RngSeedManager::GetSeed())},
        {"run", std::to_string(RngSeedManager::GetRun())},
        {"pcap", o.pcapDir.empty() ? "off" : o.pcapDir + " (no wire: nothing captured)"},
        {"check", correct ? "ok" : "FAILED: not every event ran on time"},
    };
    if (!o.outDir.empty())
    {
        const std::string path = ScenarioOutputFile(o, "summary.csv");
        std::ofstream out(path);
        if (!out)
        {
            throw std::runtime_error("cannot write " + path);
        }
        out << "key,value\n";
        for (const auto& [key, value] : result.summary)
        {
            out << key << "," << value << "\n";
        }
        result.artifacts.push_back(path);
    }
    if (progress.WasInterrupted())
    {
        ScenarioMarkInterrupted(result, stoppedAt);
    }
    return result;
}

} // namespace

CNUAS_REGISTER_SCENARIO(SelftestTimerInfo());

} // namespace ns3
