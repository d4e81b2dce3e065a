#include "ib-traffic-run.h"

#include "helpers/formats/topology.h"
#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/scenario/scenario.h"
#include "helpers/scenario/sim-progress.h"
#include "helpers/trace/ib-trace-helper.h"
#include "models/ib/ib-net-device.h"
#include "helpers/ib/ib-packet-source.h"

#include "ns3/boolean.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace ns3
{

IbTrafficStats
RunIbTraffic(const IbTrafficSpec& spec)
{
    using Pattern = IbTrafficSpec::Pattern;
    if (spec.duration <= Time(0))
    {
        throw std::invalid_argument("the traffic duration must be positive");
    }
    Topology topo = BuildTopologyFromSpec(spec.topology);
    IbFabricHelper fh;
    fh.SetDefaultRate(spec.rate);
    IbFabric f = fh.Build(topo);
    // Before the subnet manager: it needs host 0, and the traffic two hosts.
    const uint32_t nHosts = f.hosts.GetN();
    if (nHosts < 2)
    {
        throw std::invalid_argument("the topology needs at least two hosts, '" + topo.name +
                                    "' has " + std::to_string(nHosts));
    }
    // A port keeps its OperationalVLs when asked for more than its VLCap: refuse rather than
    // run with fewer VLs than requested.
    if (spec.vls > f.HostPort(0)->GetVlCap())
    {
        throw std::invalid_argument(std::to_string(spec.vls) + " data VLs requested, but the "
                                    "ports have VLCap " +
                                    std::to_string(f.HostPort(0)->GetVlCap()) +
                                    " (--set ns3::IbNetDevice::VlCap=15 for more)");
    }
    // The traces start at time zero, before the subnet manager: its sweep (SMPs on VL15) is
    // part of the wire, and a capture that began after bring-up would not show it.
    IbPcapHelper pcap;
    std::vector<std::string> pcapPaths;
    if (!spec.pcapDir.empty())
    {
        pcapPaths = EnableHostPcaps(pcap, f, spec.pcapDir);
        // Host 0's link flow-control packets, in their own trace (see IbPcapHelper).
        const std::string fcPath =
            spec.pcapDir + "/" + topo.nodes[topo.Hosts()[0]].name + "-flow-control.pcap";
        if (!pcap.EnableFlowControl(f.HostPort(0), fcPath))
        {
            throw std::runtime_error("cannot write " + fcPath);
        }
        pcapPaths.push_back(fcPath);
    }
    IbStaticSubnetHelper subnet;
    Time start = MicroSeconds(5);
    IbSmBringUp smUp;
    if (spec.subnetManager == "static")
    {
        subnet.SetOperationalVls(spec.vls);
        subnet.Configure(f.nodes);
    }
    else if (spec.subnetManager == "builtin")
    {
        // The SM runs first; the traffic starts once every port is Active.
        smUp = IbBringUpWithSm(f, spec.vls);
        start = Simulator::Now() + MicroSeconds(1);
    }
    else
    {
        throw std::invalid_argument("subnet manager must be builtin or static, not '" +
                                    spec.subnetManager + "'");
    }
    // A host's LID as its port holds it, whoever assigned it.
    auto lidOf = [&f](uint32_t host) { return f.HostPort(host)->GetLid(); };
    const Time stop = start + spec.duration;
    auto hostName = [&](uint32_t i) { return topo.nodes[f.hostNodes[i]].name; };
    std::vector<Ptr<IbPacketSink>> sinks(nHosts);
    for (uint32_t i = 0; i < nHosts; ++i)
    {
        sinks[i] = CreateObject<IbPacketSink>();
        f.hosts.Get(i)->AddApplication(sinks[i]);
        sinks[i]->SetStartTime(Seconds(0));
    }
    std::vector<Ptr<IbPacketSource>> sources;
    auto addSource = [&](uint32_t from) {
        Ptr<IbPacketSource> s = CreateObject<IbPacketSource>();
        s->SetAttribute("PayloadBytes", UintegerValue(spec.payloadBytes));
        f.hosts.Get(from)->AddApplication(s);
        s->SetStartTime(start - Simulator::Now()); // relative: the SM may have run already
        s->SetStopTime(stop - Simulator::Now());
        sources.push_back(s);
        return s;
    };
    std::vector<std::pair<uint32_t, uint32_t>> flows; // (source host, destination host)
    auto addFlow = [&](uint32_t from, uint32_t to) {
        addSource(from)->SetAttribute("DestinationLid",
                                      UintegerValue(lidOf(to)));
        flows.emplace_back(from, to);
    };
    uint32_t hot = 1;
    int victimSrc = -1;
    int victimDst = -1;
    int sharedWithVictim = -1; // the flow index crossing the victim's shared link
    switch (spec.pattern)
    {
    case Pattern::Pair:
        addFlow(0, 1);
        break;
    case Pattern::Incast:
    {
        // Hosts: 0 and 1 on one side of the fabric (a dumbbell's left switch), the rest on the
        // other. Host 0 and hosts 2..senders send to the hot spot (the last host); with a victim,
        // host 1 sends to the idle host before it, across the same inter-switch link as host 0.
        // Host 0's packets, throttled by the hot spot, then sit in the input buffer the victim's
        // packets share: head-of-line blocking spreads the hot spot's congestion to the victim.
        // Senders use hosts 0, 2, 3, ...; a victim needs host 1 and the host before the hot spot.
        const uint32_t needed = spec.victim ? spec.senders + 3 : spec.senders + 1;
        if (needed > nHosts)
        {
            throw std::invalid_argument("the topology has " + std::to_string(nHosts) +
                                        " hosts, too few for " + std::to_string(spec.senders) +
                                        " senders (" + std::to_string(needed) + " needed)");
        }
        hot = nHosts - 1;
        for (uint32_t i = 0; i < spec.senders; ++i)
        {
            addFlow(i == 0 || !spec.victim ? i : i + 1, hot);
        }
        if (spec.victim)
        {
            // Host 0's flow matters to the victim only if their routes share a cable.
            if (spec.senders > 0)
            {
                auto a = IbFabricRoute(f, 0, lidOf(hot));
                auto b = IbFabricRoute(f, 1, lidOf(nHosts - 2));
                for (const auto& hop : b)
                {
                    if (std::find(a.begin(), a.end(), hop) != a.end())
                    {
                        sharedWithVictim = 0;
                    }
                }
            }
            victimSrc = 1;
            victimDst = static_cast<int>(nHosts - 2);
            addFlow(victimSrc, victimDst);
        }
        break;
    }
    case Pattern::Shift:
        for (uint32_t i = 0; i < nHosts; ++i)
        {
            addFlow(i, (i + nHosts / 2) % nHosts);
        }
        break;
    case Pattern::AllToAll:
        for (uint32_t i = 0; i < nHosts; ++i)
        {
            // Each host starts its round at a different peer, so that no destination is
            // everybody's first target at once.
            std::vector<uint16_t> lids;
            for (uint32_t k = 1; k < nHosts; ++k)
            {
                lids.push_back(lidOf((i + k) % nHosts));
            }
            addSource(i)->SetDestinations(lids);
        }
        break;
    }

    // Per-source throughput series only where the report reads them (the victim's, and each
    // flow's when there are few enough to list): an all-to-all would keep hosts squared series.
    // Per-source totals nowhere: the report reads the series and the sinks' own totals, and a
    // source's record per delivered packet was a cache miss (k=16: 9 % of the run).
    for (uint32_t i = 0; i < nHosts; ++i)
    {
        sinks[i]->SetAttribute("PerSourceTotals", BooleanValue(false));
        const bool listed = flows.size() <= 64 &&
                            std::any_of(flows.begin(), flows.end(),
                                        [i](const auto& fl) { return fl.second == i; });
        if (!listed && static_cast<int>(i) != victimDst)
        {
            sinks[i]->SetAttribute("PerSourceSeries", BooleanValue(false));
        }
    }

    IbTrafficStats st;
    st.subnetUp = smUp.upAt;
    st.smpsSent = smUp.smps;
    st.smWallSeconds = smUp.wallSeconds;
    st.artifacts = pcapPaths;
    IbCreditTraceHelper credits;
    std::string creditCsv;
    if (!spec.outDir.empty())
    {
        std::filesystem::create_directories(spec.outDir);
        creditCsv = spec.outDir + "/credits.csv";
        if (!credits.Open(creditCsv))
        {
            throw std::runtime_error("cannot write " + creditCsv);
        }
        credits.Trace(f.HostPort(0), hostName(0));
        st.artifacts.push_back(creditCsv);
    }

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
    // Whether the fabric is up when the sources start: on a fabric that never came up (ports
    // still training, say) they send nothing, and 0 sent = 0 received is no result.
    // The event owns what it uses (a copy of the fabric's handles, a shared result): it must
    // not point into this frame, which a throw could leave before the event runs.
    auto notActive = std::make_shared<std::string>();
    Simulator::Schedule(start - Simulator::Now(),
                        [f, notActive]() { *notActive = IbFabricNotActive(f); });
    const auto wallStart = std::chrono::steady_clock::now();
    SimProgress progress(stop, spec.progress);
    if (spec.stopOnInterrupt)
    {
        progress.StopOnInterrupt();
    }
    progress.Start();
    Simulator::Stop(stop - Simulator::Now());
    Simulator::Run();
    progress.Finish();
    st.interrupted = progress.WasInterrupted();
    // The sources stopped at `stop`; let what they queued drain (bounded) so that "sent" and
    // "received" compare like with like. Not after Ctrl-C: the user asked to stop now.
    for (int i = 0; !st.interrupted && i < 1000 && countReceived() < countSent(); ++i)
    {
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
    }
    st.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    pcap.Close();
    credits.Close();
    if (!notActive->empty())
    {
        throw std::runtime_error("the fabric did not come up: when the traffic started at " +
                                 ScenarioFixed(start.GetSeconds() * 1e6, 1) + " us, " +
                                 *notActive + "; no packet could be sent");
    }

    // ---- measurements ----
    // The first quarter is warm-up; the window is whole sink bins (SampleInterval), so that no
    // partial bin inflates a rate.
    const int64_t binPs = sinks[0]->GetSampleInterval().GetPicoSeconds();
    const Time from = PicoSeconds(((start + (stop - start) / 4).GetPicoSeconds() + binPs - 1) /
                                  binPs * binPs);
    // After Ctrl-C the window ends where the run did.
    const Time end = st.interrupted ? std::min(stop, Simulator::Now()) : stop;
    const Time until = PicoSeconds(end.GetPicoSeconds() / binPs * binPs);
    st.ratesMeasured = until > from;
    // With no whole bin to measure over, rates read 0 (and the summary says "not measured").
    const double window = st.ratesMeasured ? (until - from).GetSeconds() : 1e300;
    st.sharedWithVictim = sharedWithVictim;
    st.topology = topo.name;
    st.hosts = nHosts;
    st.switches = f.switches.GetN();
    st.linkDataRate = f.HostPort(0)->GetActiveRate().DataRate();
    st.linkRateName = f.HostPort(0)->GetActiveRate().ToString();
    st.packetsSent = countSent();
    st.packetsReceived = countReceived();
    st.events = Simulator::GetEventCount();
    st.simulated = Simulator::Now();
    for (auto& p : f.AllPorts())
    {
        for (int reason = 0; reason <= static_cast<int>(IbDropReason::LinkDown); ++reason)
        {
            st.drops += p->GetDropCount(static_cast<IbDropReason>(reason));
        }
        for (uint8_t vl = 0; vl < spec.vls; ++vl)
        {
            st.maxBufferUsed = std::max(st.maxBufferUsed, p->GetMaxReceiveBufferUsed(vl));
        }
        st.bufferCapacity = p->GetReceiveBufferBlocks();
        st.packetHops += p->GetCounters().extXmitPkts;
        st.wakeEvents += p->GetWakeEvents();
        st.wakeData += p->GetWakeBreakdown().data;
        st.wakeFlowControl += p->GetWakeBreakdown().flowControl;
        st.wakeManagement += p->GetWakeBreakdown().management;
        st.wakeNothing += p->GetWakeBreakdown().nothing;
        st.flowControlEvents += p->GetFlowControlEvents();
        st.flowControlStashed += p->GetFlowControlStashed();
        st.refreshEvents += p->GetRefreshEvents();
    }
    st.hotName = hostName(hot);
    st.hotGbps = sinks[hot]->GetWireBytesBetween(from, until) * 8 / window / 1e9;
    if (victimSrc >= 0)
    {
        st.victimName = hostName(victimSrc) + " -> " + hostName(victimDst);
        st.victimGbps = sinks[victimDst]->GetWireBytesBetween(
                            from, until, lidOf(victimSrc)) *
                        8 / window / 1e9;
    }
    for (auto& s : sinks)
    {
        st.aggregateGbps += s->GetWireBytesBetween(from, until) * 8 / window / 1e9;
    }
    if (flows.size() <= 64)
    {
        for (auto& [a, b] : flows)
        {
            IbTrafficStats::Flow fl;
            fl.name = hostName(a) + " -> " + hostName(b);
            fl.gbps = sinks[b]->GetWireBytesBetween(from, until, lidOf(a)) *
                      8 / window / 1e9;
            st.flows.push_back(fl);
        }
    }
    st.creditStall = f.HostPort(0)->GetCreditStallTime(0);

    if (!spec.outDir.empty())
    {
        const std::string tputCsv = spec.outDir + "/throughput.csv";
        std::ofstream t(tputCsv);
        t << "time_us,flow,gbps\n";
        for (auto& [tm, bytes] : sinks[hot]->GetSeries())
        {
            t << tm.GetSeconds() * 1e6 << ",into-" << st.hotName << "," << bytes * 8 / 1e-6 / 1e9
              << "\n";
        }
        if (victimSrc >= 0)
        {
            for (auto& [tm, bytes] :
                 sinks[victimDst]->GetSeries(lidOf(victimSrc)))
            {
                t << tm.GetSeconds() * 1e6 << ",victim " << st.victimName << ","
                  << bytes * 8 / 1e-6 / 1e9 << "\n";
            }
        }
        t.close();
        st.artifacts.push_back(tputCsv);
        if (spec.plots)
        {
            if (RunPlotScript("plot-throughput.py", tputCsv, spec.outDir + "/throughput.png",
                              spec.title + ": throughput"))
            {
                st.artifacts.push_back(spec.outDir + "/throughput.png");
            }
            if (RunPlotScript("plot-credits.py", creditCsv, spec.outDir + "/credits.png",
                              spec.title + ": credits of " + hostName(0)))
            {
                st.artifacts.push_back(spec.outDir + "/credits.png");
            }
        }
    }
    Simulator::Destroy();
    return st;
}

} // namespace ns3
