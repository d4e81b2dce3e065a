// Whole-simulation benchmarks of the InfiniBand fabric: simulated packets per wall-clock second,
// ns-3 events per packet-hop and peak memory, on the built-in traffic experiments.
//
//   build/bin/fabric-bench --benchmark_filter=FatTreeAllToAll/8
//
// Run one benchmark per process when reading peak_rss_mb: it is the process's high-water mark.
#include "bench/bench-util.h"
#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/ib/ib-traffic-run.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "models/ib/ib-net-device.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/simulator.h"

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

/**
 * An idle fabric: a k-ary fat-tree brought to Active (static subnet, OperationalVLs 1) and held
 * with no traffic for 10 ms of simulated time, with the flow-control refresh lazy (arg 1 = 1,
 * the default) or one event per refresh (0). Lazy and eager run in the same process, one after
 * the other, so their ratio holds on a shared machine:
 *
 *   build/bin/fabric-bench --benchmark_filter=IdleFabric
 */
void
IdleFabric(benchmark::State& state)
{
    for (auto _ : state)
    {
        Config::SetDefault("ns3::IbNetDevice::LazyFlowControlRefresh",
                           BooleanValue(state.range(1) != 0));
        IbFabricHelper h;
        IbFabric f = h.Build(MakeFatTree(static_cast<uint32_t>(state.range(0))));
        IbStaticSubnetHelper subnet;
        subnet.Configure(f.nodes);
        const uint64_t events0 = Simulator::GetEventCount();
        const double cpu0 = BenchCpuSeconds();
        const auto t0 = std::chrono::steady_clock::now();
        Simulator::Stop(MilliSeconds(10));
        Simulator::Run();
        const double wall = BenchSecondsSince(t0);
        const double cpu = BenchCpuSeconds() - cpu0;
        const uint64_t events = Simulator::GetEventCount() - events0;
        uint64_t fcSent = 0, refreshEvents = 0, lazyRefreshes = 0, active = 0;
        const auto ports = f.AllPorts();
        for (auto& p : ports)
        {
            fcSent += p->GetFlowControlPacketsSent();
            refreshEvents += p->GetRefreshEvents();
            lazyRefreshes += p->GetLazyRefreshes();
            active += p->GetPortState() == IbPortState::Active;
        }
        Simulator::Destroy();
        Config::Reset();
        state.SetIterationTime(wall);
        state.counters["ports"] = static_cast<double>(ports.size());
        state.counters["active_ports"] = static_cast<double>(active);
        state.counters["events"] = static_cast<double>(events);
        state.counters["events_per_port"] = static_cast<double>(events) / ports.size();
        state.counters["fc_packets"] = static_cast<double>(fcSent);
        state.counters["refresh_events"] = static_cast<double>(refreshEvents);
        state.counters["lazy_refreshes"] = static_cast<double>(lazyRefreshes);
        state.counters["wall_s"] = wall;
        state.counters["cpu_s"] = cpu;
    }
}
BENCHMARK(IdleFabric)
    ->Args({8, 1})
    ->Args({8, 0})
    ->Args({16, 1})
    ->Args({16, 0})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
