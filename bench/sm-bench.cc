// The built-in subnet manager bringing up a fat-tree: wall-clock time, SMPs, and simulated time
// until every port is Active (first heavy sweep), then until the SM is quiet (any sweep a trap
// started has finished; with Trap 128 only for links coming and going, none should).
//
//   build/bin/sm-bench --benchmark_filter=FatTreeBringUp/8
//
// Run one benchmark per process when reading peak_rss_mb: it is the process's high-water mark.
#include "bench/bench-util.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "models/ib/ib-net-device.h"
#include "models/mgmt/ib-subnet-manager.h"

#include "ns3/config.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"

#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdlib>

using namespace ns3;

namespace
{
/// k-ary fat-tree (k^3/4 hosts, 5k^2/4 switches), SM on host 0; range(1): 0 up/down, 1 min-hop.
void
FatTreeBringUp(benchmark::State& state)
{
    for (auto _ : state)
    {
        if (const char* sched = std::getenv("SM_BENCH_SCHEDULER"); sched && *sched)
        {
            ObjectFactory f;
            f.SetTypeId(sched);
            Simulator::SetScheduler(f);
        }
        const auto t0 = std::chrono::steady_clock::now();
        IbFabric f = IbFabricHelper().Build(
            BuildTopologyFromSpec("fat-tree:k=" + std::to_string(state.range(0))));
        const double buildSeconds = BenchSecondsSince(t0);
        Config::SetDefault("ns3::IbSubnetManager::RoutingEngine",
                           EnumValue(static_cast<int>(state.range(1) == 0
                                                          ? IbRoutingAlgorithm::UpDown
                                                          : IbRoutingAlgorithm::MinHop)));
        const uint64_t events0 = Simulator::GetEventCount();
        const double cpu0 = BenchCpuSeconds();
        IbSmBringUp up = IbBringUpWithSm(f, 1, Seconds(10));
        const double cpuToActive = BenchCpuSeconds() - cpu0;
        const uint64_t eventsToActive = Simulator::GetEventCount() - events0;
        // Until the SM is quiet: a trap during the first sweep would cost a second heavy sweep
        // (heavy_sweeps > 1); the SM's own Arm/Activate Sets raise none (IBA vol. 1 §14.2.5.4).
        const auto t1 = std::chrono::steady_clock::now();
        Ptr<IbSubnetManager> sm = up.sm;
        while (sm->GetPhase() != IbSweepPhase::Up)
        {
            Simulator::Stop(MicroSeconds(10));
            Simulator::Run();
        }
        const double quietSeconds = BenchSecondsSince(t1);
        state.SetIterationTime(up.wallSeconds);
        state.counters["hosts"] = f.hosts.GetN();
        state.counters["switches"] = f.switches.GetN();
        state.counters["build_wall_s"] = buildSeconds;
        state.counters["smps_to_active"] = double(up.smps);
        state.counters["sim_us_to_active"] = up.upAt.GetSeconds() * 1e6;
        state.counters["smps_to_quiet"] = double(sm->GetSmpsSent());
        state.counters["sim_us_to_quiet"] = Simulator::Now().GetSeconds() * 1e6;
        state.counters["wall_s_to_quiet"] = up.wallSeconds + quietSeconds;
        state.counters["heavy_sweeps"] = double(sm->GetHeavySweeps());
        state.counters["smp_timeouts"] = double(sm->GetSmpsTimedOut());
        state.counters["routes_ok"] = sm->GetRouteCheck().Ok() ? 1 : 0;
        state.counters["peak_rss_mb"] = BenchPeakRssMb();
        state.counters["cpu_s_to_active"] = cpuToActive;
        state.counters["events_to_active"] = double(eventsToActive);
        state.counters["events_per_smp"] = double(eventsToActive) / double(up.smps);
        uint64_t refreshEvents = 0;
        uint64_t fcEvents = 0;
        uint64_t wakeEvents = 0;
        for (const auto& p : f.AllPorts())
        {
            refreshEvents += p->GetRefreshEvents();
            fcEvents += p->GetFlowControlEvents();
            wakeEvents += p->GetWakeEvents();
        }
        state.counters["wake_events"] = double(wakeEvents);
        // A digest of every LFT the SM computed (FNV-1a, low 32 bits, exact in a double): equal
        // digests across builds mean the same routes.
        uint64_t digest = 1469598103934665603ULL;
        for (const auto& lft : sm->GetRoutingTables().lft)
        {
            for (uint8_t port : lft)
            {
                digest = (digest ^ port) * 1099511628211ULL;
            }
            digest = (digest ^ 0xFF) * 1099511628211ULL;
        }
        state.counters["lft_digest"] = double(digest & 0xFFFFFFFFu);
        state.counters["refresh_events"] = double(refreshEvents);
        state.counters["fc_events"] = double(fcEvents);
        Simulator::Destroy();
    }
}
BENCHMARK(FatTreeBringUp)
    ->Args({8, 0})
    ->Args({16, 0})
    ->Args({24, 0})
    ->Args({8, 1})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
