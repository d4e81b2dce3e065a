// Whole-simulation benchmarks of the RDMA transport over InfiniBand: messages per second and
// goodput of one RC QP and of 1,000 RC QPs on one HCA, in simulated time, and the wall-clock
// cost per simulated transport packet.
//
//   build/bin/rdma-traffic-bench --benchmark_filter=OneQp/4096/16/
//
// Run one benchmark per process when reading peak_rss_mb: it is the process's high-water mark.
#include "bench/bench-util.h"
#include "helpers/rdma/rdma-traffic-run.h"

#include <benchmark/benchmark.h>

using namespace ns3;

namespace
{
void
Report(benchmark::State& state, const RdmaTrafficStats& st)
{
    state.SetIterationTime(st.wallSeconds);
    state.counters["qps"] = double(st.connections);
    state.counters["sim_us"] = st.simulated.GetSeconds() * 1e6;
    state.counters["messages"] = double(st.messagesCompleted);
    state.counters["sim_msgs_per_s"] = st.messagesPerSecond;
    state.counters["goodput_gbps"] = st.goodputGbps;
    state.counters["goodput_pct_of_link"] = 100 * st.goodputGbps * 1e9 / st.linkDataRate;
    state.counters["transport_packets"] = double(st.transportPackets);
    state.counters["wall_ns_per_packet"] = st.wallSeconds * 1e9 / double(st.transportPackets);
    state.counters["events_per_packet"] = double(st.events) / double(st.transportPackets);
    state.counters["packet_hops"] = double(st.packetHops);
    state.counters["failed"] = double(st.messagesFailed + st.postErrors);
    state.counters["peak_rss_mb"] = BenchPeakRssMb();
}

/// One RC QP between two hosts behind one switch (4x HDR): RDMA WRITEs of range(0) bytes,
/// range(1) in flight, issued for range(2) us (long enough for many messages of the size).
void
OneQp(benchmark::State& state)
{
    for (auto _ : state)
    {
        RdmaTrafficSpec spec;
        spec.pattern = RdmaTrafficSpec::Pattern::Qps;
        spec.topology = "pair";
        spec.qps = 1;
        spec.size = static_cast<uint64_t>(state.range(0));
        spec.outstanding = static_cast<uint32_t>(state.range(1));
        spec.duration = MicroSeconds(state.range(2));
        Report(state, RunRdmaTraffic(spec));
    }
}
BENCHMARK(OneQp)
    ->Args({64, 1, 200})
    ->Args({64, 16, 200})
    ->Args({64, 128, 200})
    ->Args({4096, 16, 200})
    ->Args({65536, 4, 400})
    ->Args({1 << 20, 2, 4000})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// range(0) RC QPs from one HCA to another, each a closed loop of one range(1)-byte WRITE.
void
ManyQps(benchmark::State& state)
{
    for (auto _ : state)
    {
        RdmaTrafficSpec spec;
        spec.pattern = RdmaTrafficSpec::Pattern::Qps;
        spec.topology = "pair";
        spec.qps = static_cast<uint32_t>(state.range(0));
        spec.size = static_cast<uint64_t>(state.range(1));
        spec.outstanding = 1;
        spec.duration = MicroSeconds(200);
        Report(state, RunRdmaTraffic(spec));
    }
}
BENCHMARK(ManyQps)
    ->Args({1000, 64})
    ->Args({1000, 4096})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// The FCT scenario's default: WebSearch sizes at 30 % load on a k=4 fat-tree, 1 ms of arrivals.
void
FctWebSearch(benchmark::State& state)
{
    for (auto _ : state)
    {
        RdmaTrafficSpec spec;
        spec.pattern = RdmaTrafficSpec::Pattern::Fct;
        spec.topology = "fat-tree:k=4";
        spec.cdf = RdmaShippedCdf("websearch.cdf");
        spec.load = 0.3;
        spec.duration = MicroSeconds(1000);
        Report(state, RunRdmaTraffic(spec));
    }
}
BENCHMARK(FctWebSearch)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
