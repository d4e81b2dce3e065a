// Built-in InfiniBand link-layer scenarios for `cnuas run`: traffic on a fabric, measured.
#include "helpers/ib-fabric-helper.h"
#include "helpers/ib-static-subnet-helper.h"
#include "helpers/ib-trace-helper.h"
#include "helpers/scenario.h"
#include "helpers/sim-progress.h"
#include "helpers/topology.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-packet-source.h"
#include "models/ib/ib-switch.h"

#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace ns3
{

namespace
{

std::string
Fixed(double v, int digits)
{
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
}

/// Runs a plotting script from tools/plot with Debian's python3; returns true if it wrote `png`.
bool
Plot(const std::string& script, const std::string& csv, const std::string& png,
     const std::string& title)
{
#ifdef CNUAS_SOURCE_TREE
    const std::string dir = CNUAS_SOURCE_TREE;
#else
    const std::string dir = ".";
#endif
    std::string cmd = "/usr/bin/python3 '" + dir + "/tools/plot/" + script + "' '" + csv + "' '" +
                      png + "' '" + title + "' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 && std::filesystem::exists(png);
}

enum class Pattern
{
    Incast,      ///< senders -> one hot spot (+ an optional victim flow)
    AllToAll,    ///< every host to every other host, one flow per host at a time (shift)
    Pair,        ///< host 0 -> host 1
};

struct Measured
{
    ScenarioResult result;
};

ScenarioResult
RunIbScenario(const ScenarioOptions& o, const ScenarioInfo& info, Pattern pattern)
{
    CheckScenarioParams(o, info);
    const std::string topoSpec = ScenarioParamString(o, info, "topology");
    const std::string rate = ScenarioParamString(o, info, "rate");
    const double durationUs = ScenarioParamDouble(o, info, "duration-us");
    const uint64_t vls = ScenarioParamUint(o, info, "vls");
    if (durationUs <= 0)
    {
        throw std::invalid_argument("duration-us must be positive");
    }
    Topology topo = BuildTopologyFromSpec(topoSpec);
    IbFabricHelper fh;
    fh.SetDefaultRate(rate);
    IbFabric f = fh.Build(topo);
    IbStaticSubnetHelper subnet;
    subnet.SetOperationalVls(static_cast<uint8_t>(vls));
    subnet.Configure(f.nodes);

    const Time start = MicroSeconds(5);
    const Time stop = start + MicroSeconds(durationUs);
    const Time end = stop + MicroSeconds(20);
    const uint32_t nHosts = f.hosts.GetN();
    if (nHosts < 2)
    {
        throw std::invalid_argument("the topology needs at least two hosts");
    }
    std::vector<Ptr<IbPacketSink>> sinks(nHosts);
    for (uint32_t i = 0; i < nHosts; ++i)
    {
        sinks[i] = CreateObject<IbPacketSink>();
        f.hosts.Get(i)->AddApplication(sinks[i]);
        sinks[i]->SetStartTime(Seconds(0));
    }
    std::vector<Ptr<IbPacketSource>> sources;
    auto addFlow = [&](uint32_t from, uint32_t to) {
        Ptr<IbPacketSource> s = CreateObject<IbPacketSource>();
        s->SetAttribute("DestinationLid", UintegerValue(subnet.GetLid(f.hosts.Get(to))));
        f.hosts.Get(from)->AddApplication(s);
        s->SetStartTime(start);
        s->SetStopTime(stop);
        sources.push_back(s);
    };
    uint32_t hot = nHosts - 1;
    int victimSrc = -1;
    int victimDst = -1;
    if (pattern == Pattern::Incast)
    {
        const uint64_t senders = ScenarioParamUint(o, info, "senders");
        const bool victim = ScenarioParamUint(o, info, "victim") != 0;
        if (senders + (victim ? 3 : 1) > nHosts)
        {
            throw std::invalid_argument("topology has " + std::to_string(nHosts) +
                                        " hosts, too few for " + std::to_string(senders) +
                                        " senders" + (victim ? " and a victim flow" : ""));
        }
        hot = victim ? nHosts - 2 : nHosts - 1;
        for (uint32_t i = 0; i < senders; ++i)
        {
            addFlow(i, hot);
        }
        if (victim)
        {
            victimSrc = static_cast<int>(senders);
            victimDst = static_cast<int>(nHosts - 1);
            addFlow(victimSrc, victimDst);
        }
    }
    else if (pattern == Pattern::AllToAll)
    {
        // A shift permutation: host i sends to host i + n/2 (mod n), crossing the fabric's core.
        for (uint32_t i = 0; i < nHosts; ++i)
        {
            addFlow(i, (i + nHosts / 2) % nHosts);
        }
    }
    else
    {
        addFlow(0, 1);
        hot = 1;
    }

    std::filesystem::create_directories(o.outDir);
    ScenarioResult r;
    IbPcapHelper pcap;
    if (!o.pcapDir.empty())
    {
        std::filesystem::create_directories(o.pcapDir);
        for (uint32_t i = 0; i < nHosts; ++i)
        {
            const std::string path = o.pcapDir + "/" + topo.nodes[topo.Hosts()[i]].name + ".pcap";
            if (!pcap.Enable(f.HostPort(i), path))
            {
                throw std::runtime_error("cannot write " + path);
            }
            r.artifacts.push_back(path);
        }
    }
    IbCreditTraceHelper credits;
    const std::string creditCsv = o.outDir + "/credits.csv";
    if (!credits.Open(creditCsv))
    {
        throw std::runtime_error("cannot write " + creditCsv);
    }
    credits.Trace(f.HostPort(0), topo.nodes[topo.Hosts()[0]].name);
    r.artifacts.push_back(creditCsv);

    SimProgress progress(end, o.progress);
    progress.Start();
    Simulator::Stop(end);
    Simulator::Run();
    progress.Finish();
    // The sources stopped at `stop`; let what they queued drain (bounded), so that "sent" and
    // "received" compare like with like.
    auto countReceived = [&]() {
        uint64_t n = 0;
        for (auto& s : sinks)
        {
            n += s->GetTotalPackets();
        }
        return n;
    };
    auto countSent = [&]() {
        uint64_t n = 0;
        for (auto& s : sources)
        {
            n += s->GetPacketsSent();
        }
        return n;
    };
    for (int i = 0; i < 1000 && countReceived() < countSent(); ++i)
    {
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
    }
    pcap.Close();
    credits.Close();

    // ---- measurements ----
    const Time from = start + (stop - start) / 4; // skip the first quarter: warm-up
    const double window = (stop - from).GetSeconds();
    uint64_t sent = 0;
    for (auto& s : sources)
    {
        sent += s->GetPacketsSent();
    }
    uint64_t received = 0;
    for (auto& s : sinks)
    {
        received += s->GetTotalPackets();
    }
    uint64_t drops = 0;
    uint32_t maxUsed = 0;
    uint32_t capacity = 0;
    for (auto& p : f.AllPorts())
    {
        for (int reason = 0; reason <= static_cast<int>(IbDropReason::LinkDown); ++reason)
        {
            drops += p->GetDropCount(static_cast<IbDropReason>(reason));
        }
        for (uint8_t vl = 0; vl < vls; ++vl)
        {
            maxUsed = std::max(maxUsed, p->GetMaxReceiveBufferUsed(vl));
        }
        capacity = p->GetReceiveBufferBlocks();
    }
    r.summary.emplace_back("topology", topo.name + " (" + std::to_string(nHosts) + " hosts, " +
                                           std::to_string(f.switches.GetN()) + " switches)");
    r.summary.emplace_back("link rate", rate + " (" +
                                            Fixed(f.HostPort(0)->GetActiveRate().DataRate() / 1e9, 1) +
                                            " Gb/s data)");
    r.summary.emplace_back("simulated", Fixed(Simulator::Now().GetSeconds() * 1e6, 1) + " us, " +
                                            std::to_string(Simulator::GetEventCount()) + " events");
    r.summary.emplace_back("packets", std::to_string(sent) + " sent, " + std::to_string(received) +
                                          " received, " + std::to_string(drops) + " dropped");
    r.summary.emplace_back("max VL buffer use",
                           std::to_string(maxUsed) + " of " + std::to_string(capacity) +
                               " blocks (64 B)");
    const double dataRate = f.HostPort(hot)->GetActiveRate().DataRate();
    const double hotBytes = sinks[hot]->GetWireBytesBetween(from, stop);
    r.summary.emplace_back("throughput into " + topo.nodes[topo.Hosts()[hot]].name,
                           Fixed(hotBytes * 8 / window / 1e9, 2) + " Gb/s (" +
                               Fixed(100 * hotBytes * 8 / window / dataRate, 1) +
                               "% of the link's data rate, headers included)");
    if (victimSrc >= 0)
    {
        uint16_t vlid = subnet.GetLid(f.hosts.Get(victimSrc));
        double vb = sinks[victimDst]->GetWireBytesBetween(from, stop, vlid);
        r.summary.emplace_back("victim flow " + topo.nodes[topo.Hosts()[victimSrc]].name + " -> " +
                                   topo.nodes[topo.Hosts()[victimDst]].name,
                               Fixed(vb * 8 / window / 1e9, 2) +
                                   " Gb/s (its destination is idle: congestion spreading)");
    }
    if (pattern == Pattern::AllToAll)
    {
        double total = 0;
        for (auto& s : sinks)
        {
            total += s->GetWireBytesBetween(from, stop);
        }
        r.summary.emplace_back("aggregate throughput", Fixed(total * 8 / window / 1e9, 1) + " Gb/s");
    }
    r.summary.emplace_back("credit stall at " + topo.nodes[topo.Hosts()[0]].name,
                           Fixed(f.HostPort(0)->GetCreditStallTime(0).GetSeconds() * 1e6, 2) +
                               " us waiting for credit");

    // Throughput series of the hot spot (and victim) for a plot.
    const std::string tputCsv = o.outDir + "/throughput.csv";
    {
        std::ofstream t(tputCsv);
        t << "time_us,flow,gbps\n";
        auto series = sinks[hot]->GetSeries();
        for (auto& [tm, bytes] : series)
        {
            t << tm.GetSeconds() * 1e6 << ",into-" << topo.nodes[topo.Hosts()[hot]].name << ","
              << bytes * 8 / 1e-6 / 1e9 << "\n";
        }
        if (victimSrc >= 0)
        {
            for (auto& [tm, bytes] :
                 sinks[victimDst]->GetSeries(subnet.GetLid(f.hosts.Get(victimSrc))))
            {
                t << tm.GetSeconds() * 1e6 << ",victim," << bytes * 8 / 1e-6 / 1e9 << "\n";
            }
        }
    }
    r.artifacts.push_back(tputCsv);
    if (o.plots)
    {
        if (Plot("plot-throughput.py", tputCsv, o.outDir + "/throughput.png",
                 o.name + ": throughput (1 us bins)"))
        {
            r.artifacts.push_back(o.outDir + "/throughput.png");
        }
        if (Plot("plot-credits.py", creditCsv, o.outDir + "/credits.png", o.name + ": credits"))
        {
            r.artifacts.push_back(o.outDir + "/credits.png");
        }
    }
    r.exitCode = (drops == 0 && received == sent) ? 0 : 1;
    Simulator::Destroy();
    return r;
}

ScenarioInfo
IncastInfo()
{
    ScenarioInfo i;
    i.name = "ib-incast";
    i.description = "InfiniBand N-to-1 incast with a victim flow: credit flow control keeps it "
                    "lossless and spreads the congestion";
    i.params = {{"topology", "dumbbell:left=9,right=2", "fabric (see docs/cli.md)"},
                {"senders", "8", "hosts sending to the hot spot"},
                {"victim", "1", "1: add a flow to an idle host that shares the inter-switch link"},
                {"rate", "4xHDR", "default link rate"},
                {"duration-us", "200", "how long the sources send, microseconds"},
                {"vls", "1", "operational data VLs"}};
    i.run = [](const ScenarioOptions& o) {
        return RunIbScenario(o, *ScenarioRegistry::Find("ib-incast"), Pattern::Incast);
    };
    return i;
}

ScenarioInfo
FatTreeInfo()
{
    ScenarioInfo i;
    i.name = "ib-fat-tree";
    i.description = "InfiniBand k-ary fat-tree under a shift permutation (every host sends to "
                    "the host n/2 away), min-hop routes";
    i.params = {{"topology", "fat-tree:k=4", "fabric (see docs/cli.md)"},
                {"rate", "4xHDR", "default link rate"},
                {"duration-us", "50", "how long the sources send, microseconds"},
                {"vls", "1", "operational data VLs"}};
    i.run = [](const ScenarioOptions& o) {
        return RunIbScenario(o, *ScenarioRegistry::Find("ib-fat-tree"), Pattern::AllToAll);
    };
    return i;
}

ScenarioInfo
PairInfo()
{
    ScenarioInfo i;
    i.name = "ib-pair";
    i.description = "Two InfiniBand hosts through one switch: one greedy flow";
    i.params = {{"topology", "pair", "fabric (see docs/cli.md)"},
                {"rate", "4xHDR", "default link rate"},
                {"duration-us", "5", "how long the source sends, microseconds"},
                {"vls", "1", "operational data VLs"}};
    i.run = [](const ScenarioOptions& o) {
        return RunIbScenario(o, *ScenarioRegistry::Find("ib-pair"), Pattern::Pair);
    };
    return i;
}

} // namespace

CNUAS_REGISTER_SCENARIO(IncastInfo());
CNUAS_REGISTER_SCENARIO(FatTreeInfo());
CNUAS_REGISTER_SCENARIO(PairInfo());

} // namespace ns3
