// What every whole-simulation benchmark program shares: the process's peak memory and CPU time,
// the counters a traffic run reports, and main().
#ifndef CNUAS_BENCH_UTIL_H
#define CNUAS_BENCH_UTIL_H

#include "models/common/cnuas-init.h"

#include "ns3/nstime.h"

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <ctime>

namespace ns3
{

/// The process's high-water resident set, MiB: run one benchmark per process to read it per run.
inline double
BenchPeakRssMb()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; // kilobytes on Linux
}

/// CPU time of the process (all threads), seconds: steadier than wall time on a shared machine.
inline double
BenchCpuSeconds()
{
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

/// Wall-clock seconds since `t0`.
inline double
BenchSecondsSince(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The figures every fabric traffic run (InfiniBand or Ethernet) has.
struct BenchTrafficFigures
{
    uint32_t hosts = 0;
    Time simulated;
    uint64_t packets = 0; ///< delivered at destination hosts
    uint64_t packetHops = 0;
    uint64_t events = 0;
    uint64_t drops = 0;
    double wallSeconds = 0;
    double aggregateGbps = 0;
};

/// Sets the iteration time (manual timing) and the counters common to the traffic benchmarks.
inline void
BenchReportTraffic(benchmark::State& state, const BenchTrafficFigures& f)
{
    state.SetIterationTime(f.wallSeconds);
    state.counters["hosts"] = f.hosts;
    state.counters["sim_us"] = f.simulated.GetSeconds() * 1e6;
    state.counters["packets"] = double(f.packets);
    state.counters["packet_hops"] = double(f.packetHops);
    state.counters["packets_per_wall_s"] = f.packets / f.wallSeconds;
    state.counters["packet_hops_per_wall_s"] = f.packetHops / f.wallSeconds;
    state.counters["events_per_packet_hop"] = double(f.events) / double(f.packetHops);
    state.counters["events_per_wall_s"] = f.events / f.wallSeconds;
    state.counters["aggregate_gbps"] = f.aggregateGbps;
    state.counters["drops"] = double(f.drops);
    state.counters["peak_rss_mb"] = BenchPeakRssMb();
}

/// main() of a benchmark program: Cnuas's global settings (picosecond time), then Google
/// Benchmark; a misspelt flag is an error rather than a silently empty run.
inline int
BenchMain(int argc, char** argv)
{
    CnuasInit();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
    {
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

} // namespace ns3

#endif
