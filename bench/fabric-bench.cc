// Whole-simulation benchmarks of the InfiniBand fabric: simulated packets per wall-clock second,
// ns-3 events per packet-hop and peak memory, on the built-in traffic experiments.
//
//   build/bin/fabric-bench --benchmark_filter=FatTreeAllToAll/8
//
// Run one benchmark per process when reading peak_rss_mb: it is the process's high-water mark.
#include "bench/bench-util.h"
#include "helpers/ib/ib-traffic-run.h"

#include <benchmark/benchmark.h>

using namespace ns3;

namespace
{
void
Report(benchmark::State& state, const IbTrafficStats& st)
{
    BenchReportTraffic(state,
                       {st.hosts,
                        st.simulated,
                        st.packetsReceived,
                        st.packetHops,
                        st.events,
                        st.drops,
                        st.wallSeconds,
                        st.aggregateGbps});
}

/// k-ary fat-tree (k^3/4 hosts), every host sending to every other host in turn.
void
FatTreeAllToAll(benchmark::State& state)
{
    for (auto _ : state)
    {
        IbTrafficSpec spec;
        spec.topology = "fat-tree:k=" + std::to_string(state.range(0));
        spec.pattern = IbTrafficSpec::Pattern::AllToAll;
        spec.duration = MicroSeconds(state.range(1));
        Report(state, RunIbTraffic(spec));
    }
}
BENCHMARK(FatTreeAllToAll)
    ->Args({4, 200})
    ->Args({8, 100})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// The demo's incast: 8 senders to one host plus a victim flow, across a dumbbell.
void
Incast(benchmark::State& state)
{
    for (auto _ : state)
    {
        IbTrafficSpec spec;
        spec.topology = "dumbbell:left=2,right=9";
        spec.pattern = IbTrafficSpec::Pattern::Incast;
        spec.duration = MicroSeconds(1000);
        Report(state, RunIbTraffic(spec));
    }
}
BENCHMARK(Incast)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

/// Small packets stress the per-packet cost: 256-byte payloads on a k=4 fat-tree.
void
FatTreeSmallPackets(benchmark::State& state)
{
    for (auto _ : state)
    {
        IbTrafficSpec spec;
        spec.topology = "fat-tree:k=4";
        spec.pattern = IbTrafficSpec::Pattern::AllToAll;
        spec.payloadBytes = 256;
        spec.duration = MicroSeconds(100);
        Report(state, RunIbTraffic(spec));
    }
}
BENCHMARK(FatTreeSmallPackets)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
