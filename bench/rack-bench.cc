// Rack simulation speed: simulated rack-seconds per wall-clock second for an HPR-style rack of
// 178 Modbus devices (four RS-485 segments, one rackmon-like BMC poller on each), from start-up
// discovery through steady polling, with and without the Redfish server's snapshots.
//
//   build/bin/rack-bench                                   (all)
//   build/bin/rack-bench --benchmark_filter=Hpr178/180     (rackmon's 180 s poll period)
//
// Layout: Meta's Ventura2 rack has 178 Modbus devices on several ports (design note
// rack-modbus-orv3.md §1.4); Cnuas models PSUs, BBUs and shelf PMMs, so the 178 are three full
// HPR segments (4 PSU shelves x 6 + 4 BBU shelves x 6 + 8 PMMs = 56 each) and a fourth with one
// PSU shelf of 6, one BBU shelf of 2 and their PMMs (10), all at 115200 8E1.
#include "bench/bench-util.h"
#include "helpers/rack/rack-helper.h"
#include "models/rack/redfish-server.h"

#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

using namespace ns3;

namespace
{

struct Segments
{
    std::vector<Rack> racks;
    std::vector<Ptr<RedfishServer>> servers;
    uint32_t devices = 0;
};

Segments
BuildHpr178(double monitorSeconds, uint32_t scanPasses, bool redfish)
{
    Segments s;
    RackHelper h;
    h.SetBmcAttribute("MonitorInterval", TimeValue(Seconds(monitorSeconds)));
    h.SetBmcAttribute("ScanPasses", UintegerValue(scanPasses));
    for (int port = 0; port < 4; ++port)
    {
        RackConfig c;
        c.hpr = true;
        c.psuShelves = port < 3 ? 4 : 1;
        c.bbuShelves = port < 3 ? 4 : 1;
        c.bbusPerShelf = port < 3 ? 6 : 2;
        Rack r = h.Build(c);
        Ptr<RackConstantLoad> load = CreateObject<RackConstantLoad>();
        load->SetAttribute("Power", DoubleValue(c.psuShelves * 15000.0));
        r.power->SetLoadProfile(load);
        s.devices += static_cast<uint32_t>(r.devices.size());
        if (redfish)
        {
            Ptr<RedfishServer> srv = CreateObject<RedfishServer>();
            srv->SetBmc(r.bmc);
            if (!srv->Start())
            {
                std::abort();
            }
            s.servers.push_back(srv);
        }
        s.racks.push_back(r);
    }
    return s;
}

/// args: simulated seconds, BMC monitor interval (s), scan passes, Redfish on (1) or off (0).
void
Hpr178(benchmark::State& state)
{
    const double simSeconds = static_cast<double>(state.range(0));
    for (auto _ : state)
    {
        Segments s =
            BuildHpr178(static_cast<double>(state.range(1)),
                        static_cast<uint32_t>(state.range(2)), state.range(3) != 0);
        const auto t0 = std::chrono::steady_clock::now();
        const double cpu0 = BenchCpuSeconds();
        Simulator::Stop(Seconds(simSeconds));
        Simulator::Run();
        const double wall = BenchSecondsSince(t0);
        const double cpu = BenchCpuSeconds() - cpu0;
        state.SetIterationTime(wall);
        uint64_t reads = 0;
        uint64_t failures = 0;
        uint64_t probes = 0;
        for (const Rack& r : s.racks)
        {
            reads += r.bmc->GetCounters().reads;
            failures += r.bmc->GetCounters().readFailures;
            probes += r.bmc->GetCounters().probes;
        }
        uint64_t publications = 0;
        for (auto& srv : s.servers)
        {
            publications += srv->GetCounters().publications;
            srv->Stop();
        }
        state.counters["devices"] = s.devices;
        state.counters["sim_s"] = simSeconds;
        state.counters["rack_s_per_wall_s"] = simSeconds / wall;
        // The machine is shared: CPU time of the process (all threads) is the steadier figure.
        state.counters["rack_s_per_cpu_s"] = simSeconds / cpu;
        state.counters["events"] = static_cast<double>(Simulator::GetEventCount());
        state.counters["events_per_wall_s"] = Simulator::GetEventCount() / wall;
        state.counters["bmc_reads"] = static_cast<double>(reads);
        state.counters["bmc_read_failures"] = static_cast<double>(failures);
        state.counters["bmc_probes"] = static_cast<double>(probes);
        state.counters["redfish_snapshots"] = static_cast<double>(publications);
        state.counters["peak_rss_mb"] = BenchPeakRssMb();
        Simulator::Destroy();
    }
}

// Start-up: rackmon's three-pass discovery scan, then polling every 180 s (its default).
BENCHMARK(Hpr178)
    ->Args({300, 180, 3, 0})
    ->Args({300, 180, 3, 1})
    // Steady polling as fast as the buses allow (cycles back to back), one scan pass.
    ->Args({300, 1, 1, 0})
    ->Args({300, 1, 1, 1})
    ->ArgNames({"sim_s", "monitor_s", "scan_passes", "redfish"})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

int
main(int argc, char** argv)
{
    return BenchMain(argc, argv);
}
