#include "ib-flow-run.h"

#include "helpers/ib/ib-fabric-helper.h"
#include "helpers/mgmt/ib-cc-helper.h"
#include "helpers/mgmt/ib-sm-helper.h"
#include "helpers/mgmt/ib-static-subnet-helper.h"
#include "helpers/rdma/rdma-helper.h"
#include "helpers/scenario/sim-progress.h"
#include "helpers/trace/ib-trace-helper.h"
#include "models/ib/ib-channel.h"
#include "models/ib/ib-frame.h"
#include "models/ib/ib-net-device.h"
#include "models/ib/ib-switch.h"
#include "models/mgmt/ib-routing-engine.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

namespace ns3
{

namespace
{

/// What the sampler reads, every sampleInterval from the traffic start.
struct Sampler
{
    const IbFlowRunSpec& spec;
    IbFlowRunResult& res;
    const IbFabric& fabric;
    const std::vector<RdmaHca>& hcas;
    RdmaFlowDriver& flows;
    std::vector<Ptr<IbNetDevice>> ports; ///< res.portNames, in order
    std::vector<bool> isSwitchPort;
    std::vector<uint64_t> sentAtLastSample;
    uint8_t vls;

    void Sample()
    {
        const double dt = spec.sampleInterval.GetSeconds();
        const Time since = Simulator::Now() - res.trafficStart;
        res.sampleTimesUs.push_back(since.GetPicoSeconds() / 1e6); // exact to the picosecond
        for (uint32_t f = 0; f < sentAtLastSample.size(); ++f)
        {
            const uint64_t sent = flows.SentBytes(f);
            res.flowRateGbps[f].push_back(8.0 * (sent - sentAtLastSample[f]) / dt / 1e9);
            sentAtLastSample[f] = sent;
        }
        uint64_t maxQueue = 0;
        for (size_t p = 0; p < ports.size(); ++p)
        {
            uint64_t used = 0;
            for (uint8_t vl = 0; vl < vls; ++vl)
            {
                used += ports[p]->GetReceiveBufferUsed(vl);
                res.portCredits[p][vl].push_back(ports[p]->GetCreditsAvailable(vl));
                res.portCreditStallUs[p][vl].push_back(
                    ports[p]->GetCreditStallTime(vl).GetSeconds() * 1e6);
            }
            const uint64_t bytes = used * kIbCreditBlockBytes;
            res.portQueueBytes[p].push_back(bytes);
            if (isSwitchPort[p])
            {
                maxQueue = std::max(maxQueue, bytes);
            }
        }
        res.maxQueueBytes.push_back(maxQueue);
        uint64_t marks = 0;
        for (uint32_t i = 0; i < fabric.switches.GetN(); ++i)
        {
            marks += fabric.switches.Get(i)->GetObject<IbSwitch>()->GetFecnMarked();
        }
        res.fecnMarksSoFar.push_back(marks);
        uint64_t cnps = 0;
        for (const auto& h : hcas)
        {
            cnps += h.engine->GetCounters().cnpsSent;
        }
        res.cnpsSoFar.push_back(cnps);
        Simulator::Schedule(spec.sampleInterval, &Sampler::Sample, this);
    }
};

} // namespace

IbFlowRunResult
RunIbFlows(const IbFlowRunSpec& spec)
{
    if (spec.subnetManager != "builtin" && spec.subnetManager != "static")
    {
        throw std::invalid_argument("ib run: sm is builtin or static, not '" +
                                    spec.subnetManager + "'");
    }
    if (spec.routing != "updown" && spec.routing != "minhop")
    {
        throw std::invalid_argument("ib run: routing is updown or minhop, not '" + spec.routing +
                                    "'");
    }
    if (spec.congestionControl && spec.subnetManager != "builtin")
    {
        // The CC manager sits beside the SM and sends its Set MADs when the SM's sweep has
        // the subnet up; a statically configured subnet has no SM to hang it on.
        throw std::invalid_argument("ib run: congestion control needs the built-in subnet "
                                    "manager (sm=builtin): its CC manager configures the "
                                    "switches and HCAs with CC MADs after the sweep");
    }
    IbFlowRunResult res;
    IbFabricHelper fh;
    fh.SetDefaultRate(spec.rate);
    fh.SetPortAttribute("VlBufferBytes", UintegerValue(spec.vlBufferBytes));
    const IbFabric fabric = fh.Build(spec.topology);
    const uint32_t nHosts = fabric.hosts.GetN();
    if (nHosts < 2)
    {
        throw std::invalid_argument("ib run: the topology has fewer than two hosts");
    }

    RdmaHelper rh;
    rh.SetEngineAttribute("AckReqEveryPackets", UintegerValue(spec.ackEveryPackets));
    if (spec.congestionControl)
    {
        // Annex A10 §A10.2.2: the destination returns a BECN for every FECN-marked packet; in
        // a CNP at once rather than in an ACK that may be a message away (IbBecnByCnp).
        rh.SetCongestionControl("ns3::RdmaCcIba");
        rh.SetEngineAttribute("CnpInterval", TimeValue(Time(0)));
        rh.SetEngineAttribute("IbBecnByCnp", BooleanValue(true));
    }
    const std::vector<RdmaHca> hcas = rh.Install(fabric);

    // --pcap: every host port from time zero, so that the SM's sweep and the CC MADs are in
    // the traces with the data.
    IbPcapHelper pcap;
    if (!spec.pcapDir.empty())
    {
        res.pcaps = EnableHostPcaps(pcap, fabric, spec.pcapDir);
    }

    Ptr<IbCcManager> ccManager;
    if (spec.subnetManager == "builtin")
    {
        IbSmHelper smh;
        smh.SetSmAttribute("OperationalVls", UintegerValue(spec.vls));
        smh.SetSmAttribute("RoutingEngine",
                           EnumValue(static_cast<int>(spec.routing == "minhop"
                                                          ? IbRoutingAlgorithm::MinHop
                                                          : IbRoutingAlgorithm::UpDown)));
        Ptr<IbSubnetManager> sm = smh.Install(fabric, fabric.hosts.Get(0), MicroSeconds(2));
        if (spec.congestionControl)
        {
            IbCcHelper ch;
            ch.SetManagerAttribute("Threshold", UintegerValue(spec.ccThreshold));
            ch.SetManagerAttribute("MarkingRate", UintegerValue(spec.ccMarkingRate));
            ch.SetManagerAttribute("CctiTimer", UintegerValue(spec.ccCctiTimer));
            ch.SetManagerAttribute("CctiIncrease", UintegerValue(spec.ccCctiIncrease));
            ch.SetManagerAttribute("CctiLimit", UintegerValue(spec.ccCctiLimit));
            ch.SetManagerAttribute("CctStep", UintegerValue(spec.ccCctStep));
            ch.InstallAgents(fabric, hcas);
            ccManager = ch.InstallManager(fabric.hosts.Get(0));
        }
        while (sm->GetLastSubnetUp() < Seconds(0) && Simulator::Now() < MilliSeconds(20))
        {
            Simulator::Stop(MicroSeconds(10));
            Simulator::Run();
        }
        if (sm->GetLastSubnetUp() < Seconds(0))
        {
            throw std::runtime_error("ib run: the subnet manager did not bring the subnet up "
                                     "in 20 ms");
        }
        res.subnetUp = sm->GetLastSubnetUp();
        res.smps = sm->GetSmpsSent();
        // The CC manager's Set MADs follow the sweep at once; 20 us lets them land (as
        // ib-cc-incast does) before the first flow starts.
        Simulator::Stop(MicroSeconds(20));
        Simulator::Run();
    }
    else
    {
        IbStaticSubnetHelper subnet;
        subnet.SetOperationalVls(spec.vls);
        subnet.Configure(fabric.nodes);
        // Training, then Init -> Armed -> Active as the helper schedules it.
        Simulator::Stop(MicroSeconds(10));
        Simulator::Run();
    }
    if (const std::string notActive = IbFabricNotActive(fabric); !notActive.empty())
    {
        throw std::runtime_error("ib run: the fabric did not come up: " + notActive);
    }
    if (ccManager)
    {
        res.ccMads = ccManager->GetMadsSent();
    }
    res.trafficStart = Simulator::Now();

    // What the ideal FCT needs: the host link's rate, a cable's delay, the switch latency.
    res.hostRate = fabric.HostPort(0)->GetActiveRate();
    res.hostDataRateBps = res.hostRate.DataRate();
    TimeValue perMeter;
    DoubleValue length;
    fabric.cables[0]->GetAttribute("DelayPerMeter", perMeter);
    fabric.cables[0]->GetAttribute("Length", length);
    res.cableDelay = PicoSeconds(std::llround(perMeter.Get().GetPicoSeconds() * length.Get()));
    TimeValue latency(NanoSeconds(100));
    if (fabric.switches.GetN() > 0)
    {
        fabric.switches.Get(0)->GetObject<IbSwitch>()->GetAttribute("Latency", latency);
    }
    res.switchLatency = latency.Get();
    for (const RdmaFlowSpec& fl : spec.flows)
    {
        if (fl.src >= nHosts || fl.dst >= nHosts)
        {
            throw std::invalid_argument("ib run: a flow names a host the fabric does not have (" +
                                        std::to_string(nHosts) + " hosts)");
        }
        res.flowHops.push_back(static_cast<uint32_t>(
            IbFabricRoute(fabric, fl.src, fabric.HostPort(fl.dst)->GetLid()).size()));
    }

    const bool sampling = spec.sampleInterval.IsStrictlyPositive();
    std::vector<RdmaFlowHost> flowHosts;
    for (const RdmaHca& h : hcas)
    {
        flowHosts.push_back({h.device, h.engine, h.port});
    }
    RdmaFlowDriver flows(std::move(flowHosts), spec.flows, spec.pathMtu, sampling);
    flows.Install(res.trafficStart);

    Sampler sampler{spec, res, fabric, hcas, flows, {}, {}, {}, spec.vls};
    if (sampling)
    {
        sampler.sentAtLastSample.assign(spec.flows.size(), 0);
        res.flowRateGbps.resize(spec.flows.size());
        // Every port, host ports first, then switch ports, each group in topology order.
        for (bool switches : {false, true})
        {
            for (uint32_t n = 0; n < fabric.ports.size(); ++n)
            {
                if ((spec.topology.nodes[n].kind == TopoNodeKind::Switch) != switches)
                {
                    continue;
                }
                for (uint32_t p = 0; p < fabric.ports[n].size(); ++p)
                {
                    if (fabric.ports[n][p] && fabric.ports[n][p]->GetPeer())
                    {
                        sampler.ports.push_back(fabric.ports[n][p]);
                        sampler.isSwitchPort.push_back(switches);
                        res.portNames.push_back(spec.topology.nodes[n].name + ":" +
                                                std::to_string(p + 1));
                    }
                }
            }
        }
        res.portQueueBytes.resize(sampler.ports.size());
        res.portCredits.assign(sampler.ports.size(),
                               std::vector<std::vector<uint32_t>>(spec.vls));
        res.portCreditStallUs.assign(sampler.ports.size(),
                                     std::vector<std::vector<double>>(spec.vls));
        Simulator::Schedule(spec.sampleInterval, &Sampler::Sample, &sampler);
    }

    const uint64_t events0 = Simulator::GetEventCount();
    Simulator::Stop(spec.limit);
    SimProgress progress(res.trafficStart + spec.limit, spec.progress);
    const uint64_t flowCount = spec.flows.size();
    progress.SetWork(
        [&flows, flowCount]() { return std::make_pair(uint64_t(flows.FlowsDone()), flowCount); },
        "flows");
    if (spec.stopOnInterrupt)
    {
        progress.StopOnInterrupt();
    }
    if (!spec.flows.empty())
    {
        progress.Start();
        Simulator::Run();
        progress.Finish();
    }
    res.interrupted = progress.WasInterrupted();
    pcap.Close();
    res.end = Simulator::Now() - res.trafficStart;
    res.events = Simulator::GetEventCount() - events0;
    res.flows = std::move(flows.Results());
    res.allDone = flows.FlowsDone() == spec.flows.size();
    for (const auto& f : res.flows)
    {
        res.allDone &= f.ok;
    }
    for (const auto& port : fabric.AllPorts())
    {
        for (uint8_t reason = 0; reason <= static_cast<uint8_t>(IbDropReason::ExceedsPeerBuffer);
             ++reason)
        {
            res.drops += port->GetDropCount(static_cast<IbDropReason>(reason));
        }
        for (uint8_t vl = 0; vl < spec.vls; ++vl)
        {
            res.creditStallUs += port->GetCreditStallTime(vl).GetSeconds() * 1e6;
            if (port->IsSwitchPort())
            {
                res.peakQueueBytes = std::max<uint64_t>(
                    res.peakQueueBytes,
                    uint64_t(port->GetMaxReceiveBufferUsed(vl)) * kIbCreditBlockBytes);
            }
        }
    }
    for (uint32_t i = 0; i < fabric.switches.GetN(); ++i)
    {
        res.fecnMarks += fabric.switches.Get(i)->GetObject<IbSwitch>()->GetFecnMarked();
    }
    for (const auto& h : hcas)
    {
        res.cnps += h.engine->GetCounters().cnpsSent;
        res.retransmittedPackets += h.engine->GetCounters().retransmittedPackets;
        res.packetsSent += h.engine->GetCounters().packetsSent;
    }
    Simulator::Destroy();
    return res;
}

} // namespace ns3
