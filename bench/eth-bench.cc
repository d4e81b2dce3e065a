// Whole-simulation benchmarks of the Ethernet/PFC fabric: simulated packets per wall-clock
// second, events per packet-hop and peak memory.
//
//   build/bin/eth-bench --benchmark_filter=FatTreeAllToAll
//
// Run one benchmark per process when reading peak_rss_mb: it is the process's high-water mark.
// The reference is the HPCC simulator on its 320-host fat-tree WebSearch run, 73 k packets/s
// and 348 MB on this machine (design note roce-dcqcn-anchors.md §3.5, in ../shared/design/notes/
// beside the project).
#include "bench/bench-util.h"
#include "helpers/roce/eth-traffic-run.h"

#include "ns3/uinteger.h"

#include <benchmark/benchmark.h>
#include <cstdlib>
#include <string>

using namespace ns3;

namespace
{
/// ns-3's PriorityQueueScheduler measured fastest here (docs/roce.md); ETH_BENCH_SCHEDULER
/// overrides it to compare.
std::string
Scheduler()
{
    const char* env = getenv("ETH_BENCH_SCHEDULER");
    return env ? env : "ns3::PriorityQueueScheduler";
}

void
Report(benchmark::State& state, const EthTrafficStats& st)
{
    BenchReportTraffic(state,
                       {st.hosts,
                        st.simulated,
                        st.received,
                        st.packetHops,
                        st.events,
                        st.drops,
                        st.wallSeconds,
                        st.aggregateGbps});
    state.counters["cpu_s"] = st.cpuSeconds;
    state.counters["packets_per_cpu_s"] = st.received / st.cpuSeconds;
    state.counters["packet_hops_per_cpu_s"] = st.packetHops / st.cpuSeconds;
    state.counters["pfc_frames"] = double(st.pfcFramesSent);
    state.counters["frames_pooled"] = double(st.framesCreated);
}

/// k-ary fat-tree (k^3/4 hosts) at 100 Gb/s, every host sending to every other host in turn,
/// PFC on priority 3.
void
FatTreeAllToAll(benchmark::State& state)
{
    for (auto _ : state)
    {
        EthTrafficSpec spec;
        spec.topology = "fat-tree:k=" + std::to_string(state.range(0));
        spec.pattern = EthTrafficSpec::Pattern::AllToAll;
        spec.duration = MicroSeconds(state.range(1));
        spec.scheduler = Scheduler();
        Report(state, RunEthTraffic(spec));
    }
}
BENCHMARK(FatTreeAllToAll)
    ->Args({4, 200})
    ->Args({8, 100})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// The size of the HPCC paper's fabric: 320 hosts at 100 Gb/s under 20 leaves with 400 Gb/s
/// uplinks to 16 spines (two tiers here, three in HPCC's fat-tree), all-to-all, PFC on.
void
LeafSpine320AllToAll(benchmark::State& state)
{
    for (auto _ : state)
    {
        EthTrafficSpec spec;
        spec.topology = "leaf-spine:leaves=20,spines=16,hosts=16";
        spec.pattern = EthTrafficSpec::Pattern::AllToAll;
        spec.fabricRate = DataRate("400Gbps");
        spec.scheduler = Scheduler();
        spec.duration = MicroSeconds(state.range(0));
        spec.configure = [](EthFabricHelper& h) {
            h.SetMmuAttribute("BufferBytes", UintegerValue(32 * 1024 * 1024));
        };
        Report(state, RunEthTraffic(spec));
    }
}
BENCHMARK(LeafSpine320AllToAll)
    ->Arg(50)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// N-to-1 incast through one switch with a small buffer (MiB given; each port's reserved space
/// and headroom come out of it first): PFC pauses all the time.
void
Incast(benchmark::State& state)
{
    for (auto _ : state)
    {
        EthTrafficSpec spec;
        spec.topology = "star:hosts=" + std::to_string(state.range(0) + 1);
        spec.pattern = EthTrafficSpec::Pattern::Incast;
        spec.scheduler = Scheduler();
        spec.duration = MicroSeconds(2000);
        const uint64_t buffer = state.range(1) * 1024 * 1024;
        spec.configure = [buffer](EthFabricHelper& h) {
            h.SetMmuAttribute("BufferBytes", UintegerValue(buffer));
        };
        Report(state, RunEthTraffic(spec));
    }
}
BENCHMARK(Incast)->Args({8, 1})->Args({32, 4})->Iterations(1)->UseManualTime()->Unit(
    benchmark::kMillisecond);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
